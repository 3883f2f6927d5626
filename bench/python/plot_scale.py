#!/usr/bin/env python3
# Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
"""Plot kafka_benchmark --scale's CSV (issue 18): throughput and peak RSS of the ELT
loop and of the bare drain against the number of partitions read.

    python bench/python/plot_scale.py build/scale.csv bench/scale.png
"""
from __future__ import annotations

import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main() -> int:
    if len(sys.argv) != 3:
        print("usage: plot_scale.py SCALE.csv OUT.png", file=sys.stderr)
        return 2
    with open(sys.argv[1], newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        print(f"plot_scale.py: {sys.argv[1]} holds no rows", file=sys.stderr)
        return 1
    single = [r for r in rows if int(r["topics"]) == 1]
    multi = [r for r in rows if int(r["topics"]) > 1]
    records = None
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    for series, style, label in ((single, "o-", "one topic"), (multi, "s", "topics by regex")):
        if not series:
            continue
        x = [int(r["partitions"]) for r in series]
        elt = [float(r["elt_records_per_s"]) / 1e6 for r in series]
        # The same records in both: the drain's rate is records / its wall.
        drain = [float(r["elt_records_per_s"]) * float(r["elt_s"]) / float(r["drain_s"]) / 1e6
                 for r in series]
        ax1.plot(x, elt, style, color="C0", label=f"ELT -> Parquet ({label})")
        ax1.plot(x, drain, style, color="C1", mfc="none", label=f"bare drain ({label})")
        ax2.plot(x, [float(r["elt_rss_mb"]) for r in series], style, color="C0",
                 label=f"ELT ({label})")
        ax2.plot(x, [float(r["drain_rss_mb"]) for r in series], style, color="C1",
                 mfc="none", label=f"bare drain ({label})")
        for r in series:
            ax1.annotate(f'{int(r["files"])} files', (int(r["partitions"]),
                         float(r["elt_records_per_s"]) / 1e6), fontsize=7,
                         textcoords="offset points", xytext=(4, -10))
        records = records or float(series[0]["elt_records_per_s"]) * float(series[0]["elt_s"])
    for ax in (ax1, ax2):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("partitions read")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    ax1.set_ylabel("M records/s (wall, incl. process start and join)")
    ax1.set_ylim(bottom=0)
    ax2.set_ylabel("peak RSS (MB)")
    ax2.set_ylim(bottom=0)
    title = "kafka_benchmark --scale"
    if records:
        title += f": {records / 1e6:.1f} M records, medians of paired runs"
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=110)
    print(f"wrote {sys.argv[2]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
