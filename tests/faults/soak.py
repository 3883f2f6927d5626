# Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
"""The soak (issue 17, item 5): `kelt run` as a service for a while at a steady produce
rate, its RSS, open file descriptors and threads sampled at a fixed interval. After the
warm-up each must stay flat: RSS (the median of the last third of the samples) within
--max-growth (default 5 %) of its level just after the warm-up (the first third's median), file descriptors and threads not above theirs plus a small slack
(a rotation may hold one more file for a moment). At the end the producer stops, the run
catches up, takes SIGTERM and exits 0, and the Parquet landing holds every produced offset
exactly once.

    python tests/faults/soak.py --kelt build/release/cli/kelt --brokers HOST:PORT \
        --minutes 2 [--interval 5] [--rate 2000] [--png soak.png] [--json soak.json]

The short variant (2 minutes) runs in scripts/test.sh against the release binary (an
ASan build's RSS says nothing); scripts/soak_test.sh runs the long one (30 minutes) and
plots the samples to a PNG (matplotlib, installed into the venv on demand).
Exit status: 0 flat and exactly once, 1 otherwise (the reason is printed).
"""
import argparse
import json
import os
import pathlib
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid

import pyarrow.parquet as pq


def sample(pid):
    """(rss_mb, fds, threads) of a live process, from /proc."""
    status = pathlib.Path(f"/proc/{pid}/status").read_text()
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    rss_kb = int(fields["VmRSS"].split()[0])
    threads = int(fields["Threads"])
    fds = len(os.listdir(f"/proc/{pid}/fd"))
    return rss_kb / 1024.0, fds, threads


class Producer(threading.Thread):
    """Writes `rate` records per second (ids 0, 1, …) until stopped."""

    def __init__(self, brokers, topic, rate):
        super().__init__(daemon=True)
        from confluent_kafka import Producer as KafkaProducer
        self.producer = KafkaProducer({"bootstrap.servers": brokers, "linger.ms": 20,
                                       "enable.idempotence": True})
        self.topic = topic
        self.rate = rate
        self.sent = 0
        self.failed = []
        self.stop = threading.Event()

    def _delivered(self, err, _msg):
        if err is not None:
            self.failed.append(str(err))

    def run(self):
        pad = "x" * 120
        start = time.monotonic()
        while not self.stop.is_set():
            due = int((time.monotonic() - start) * self.rate)
            while self.sent < due:
                value = json.dumps({"id": self.sent, "pad": pad})
                while True:
                    try:
                        self.producer.produce(self.topic, value.encode(),
                                              on_delivery=self._delivered)
                        break
                    except BufferError:
                        self.producer.poll(0.05)
                self.sent += 1
            self.producer.poll(0)
            time.sleep(0.01)
        self.producer.flush(60)


def landed_ids(root, topic):
    """Every (partition, offset) of the published Parquet files under root/topic."""
    seen = []
    for f in sorted(pathlib.Path(root).rglob("*.parquet")):
        if any(part.startswith(".") for part in f.relative_to(root).parts):
            continue  # in-progress files are hidden
        t = pq.read_table(f, columns=["_kafka_partition", "_kafka_offset"])
        seen.extend(zip(t.column(0).to_pylist(), t.column(1).to_pylist()))
    return seen


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kelt", required=True)
    ap.add_argument("--brokers", required=True)
    ap.add_argument("--minutes", type=float, default=2.0)
    ap.add_argument("--interval", type=float, default=None,
                    help="seconds between samples (default: 10, 5 under 10 minutes)")
    ap.add_argument("--warmup", type=float, default=None,
                    help="seconds of warm-up (default: a quarter of the run, at least 30)")
    ap.add_argument("--rate", type=int, default=2000, help="records per second")
    ap.add_argument("--max-growth", type=float, default=0.05)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--png")
    ap.add_argument("--json")
    a = ap.parse_args()
    duration = a.minutes * 60
    interval = a.interval or (5.0 if a.minutes < 10 else 10.0)
    warmup = a.warmup if a.warmup is not None else max(30.0, duration / 4)

    work = pathlib.Path(tempfile.mkdtemp(prefix="kelt-soak-"))
    topic = "soak-" + uuid.uuid4().hex[:10]
    subprocess.run([a.kelt, "topics", "create", topic, "--partitions", str(a.partitions),
                    "--bootstrap", a.brokers], check=True, capture_output=True, text=True)
    (work / "schema.json").write_text(json.dumps({"fields": [
        {"name": "id", "data_type": "Int64"}, {"name": "pad", "data_type": "Utf8"}]}))
    (work / "kelt.yaml").write_text(f"""brokers: {a.brokers}
group: g-{topic}
topics: [{topic}]
auto_offset_reset: earliest
schema: schema.json
window: {{max_records: 5000, max_wait_ms: 1000}}
sinks:
  - parquet: {{root: landing, rotate_records: {a.rate * 10}}}
""")
    producer = Producer(a.brokers, topic, a.rate)
    producer.start()
    run = subprocess.Popen([a.kelt, "run", "-c", str(work / "kelt.yaml"), "--progress",
                            "none", "--log-level", "warning"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    samples = []  # (seconds, rss_mb, fds, threads)
    t0 = time.monotonic()
    ok = True
    try:
        while (now := time.monotonic() - t0) < duration:
            if run.poll() is not None:
                print(f"soak: kelt run ended early (exit {run.returncode}):\n"
                      f"{run.stderr.read()}", file=sys.stderr)
                return 1
            samples.append((round(now, 1), *sample(run.pid)))
            time.sleep(max(0.0, interval - (time.monotonic() - t0 - now)))
        samples.append((round(time.monotonic() - t0, 1), *sample(run.pid)))
    finally:
        producer.stop.set()
        producer.join(timeout=90)
    produced = producer.sent
    if producer.failed:
        print(f"soak: {len(producer.failed)} deliveries failed: {producer.failed[:3]}",
              file=sys.stderr)
        ok = False

    # Catch up: wait until the landing holds what was produced (rotations publish at
    # the rotate size or when the run stops), then stop the run and count.
    time.sleep(3)
    run.send_signal(signal.SIGTERM)
    try:
        _, err = run.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        run.kill()
        _, err = run.communicate()
        print("soak: kelt run did not stop within 120 s of SIGTERM", file=sys.stderr)
        ok = False
    if run.returncode != 0:
        print(f"soak: kelt run exited {run.returncode}:\n{err}", file=sys.stderr)
        ok = False
    # What the stopped run did not land yet, a catch-up run lands (same group).
    subprocess.run([a.kelt, "run", "-c", str(work / "kelt.yaml"), "--until-caught-up",
                    "--progress", "none", "--log-level", "warning"], check=True,
                   capture_output=True, text=True, timeout=300)
    ids = landed_ids(work / "landing", topic)
    unique = set(ids)
    if len(ids) != produced or len(unique) != produced:
        print(f"soak: produced {produced}, landed {len(ids)} rows ({len(unique)} distinct "
              "offsets): not exactly once", file=sys.stderr)
        ok = False

    after = [s for s in samples if s[0] >= warmup]
    if len(after) < 3:
        print(f"soak: only {len(after)} samples after a warm-up of {warmup:.0f} s",
              file=sys.stderr)
        return 1
    # The median of the first and of the last third after the warm-up: one sample taken
    # while a rotation's buffers are full does not decide it.
    third = max(1, len(after) // 3)
    base_rss = statistics.median(s[1] for s in after[:third])
    end_rss = statistics.median(s[1] for s in after[-third:])
    peak_rss = max(s[1] for s in after)
    growth = (end_rss - base_rss) / base_rss
    base_fds, base_threads = max(s[2] for s in after[:2]), max(s[3] for s in after[:2])
    end_fds, end_threads = after[-1][2], after[-1][3]

    print(f"{'t/s':>7} {'RSS/MB':>8} {'fds':>5} {'threads':>7}")
    for s in samples:
        mark = "" if s[0] >= warmup else "  (warm-up)"
        print(f"{s[0]:7.1f} {s[1]:8.1f} {s[2]:5d} {s[3]:7d}{mark}")
    summary = {"minutes": a.minutes, "rate": a.rate, "produced": produced,
               "landed": len(ids), "warmup_s": warmup, "rss_after_warmup_mb": round(base_rss, 1),
               "rss_end_mb": round(end_rss, 1), "rss_peak_mb": round(peak_rss, 1),
               "rss_growth": round(growth, 4), "fds": [base_fds, end_fds],
               "threads": [base_threads, end_threads]}
    print("soak: " + json.dumps(summary))
    if growth > a.max_growth:
        print(f"soak: RSS grew {growth:.1%} after the warm-up ({base_rss:.1f} → "
              f"{end_rss:.1f} MB), more than {a.max_growth:.0%}", file=sys.stderr)
        ok = False
    if end_fds > base_fds + 2:
        print(f"soak: open files grew from {base_fds} to {end_fds}", file=sys.stderr)
        ok = False
    if end_threads > base_threads:
        print(f"soak: threads grew from {base_threads} to {end_threads}", file=sys.stderr)
        ok = False
    if a.json:
        pathlib.Path(a.json).write_text(json.dumps({**summary, "samples": samples}, indent=1))
    if a.png:
        plot(samples, warmup, a.png, summary)
    return 0 if ok else 1


def plot(samples, warmup, path, summary):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    t = [s[0] / 60 for s in samples]
    fig, axes = plt.subplots(3, 1, figsize=(8, 7), sharex=True)
    for ax, i, label in zip(axes, (1, 2, 3), ("RSS (MB)", "open fds", "threads")):
        ax.plot(t, [s[i] for s in samples], marker=".")
        ax.axvline(warmup / 60, color="grey", linestyle="--", linewidth=1)
        ax.set_ylabel(label)
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
    axes[-1].set_xlabel("minutes (dashed: end of warm-up)")
    fig.suptitle(f"kelt run soak: {summary['rate']} records/s, {summary['produced']:,} "
                 f"records, RSS growth after warm-up {summary['rss_growth']:.1%}")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    print(f"soak: plot written to {path}")


if __name__ == "__main__":
    sys.exit(main())
