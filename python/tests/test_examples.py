# Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
"""The Python examples (examples/python) run and print what they promise."""

from __future__ import annotations

import json
import subprocess
import sys

import pyarrow as pa

import kelt
from conftest import REPO

EXAMPLES = REPO / "examples" / "python"


def run(*args: str) -> str:
    out = subprocess.run([sys.executable, *args], capture_output=True, text=True,
                         timeout=300, cwd=REPO)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_byo_load_example():
    out = run(str(EXAMPLES / "byo_load.py"))
    assert "2 ['user_id', 'event', '_kafka_offset']" in out
    assert "[[1, 'click', 1], [2, 'purchase', 2]]" in out


def test_elt_parquet_example_lands_then_resumes(broker, fresh, tmp_path):
    topic, group = fresh("ex"), fresh("g")
    rows = pa.table({"id": list(range(250)), "name": [f"row {i}" for i in range(250)]})
    assert kelt.export_dataset_to_kafka(broker, topic, rows) == 250
    first = run(str(EXAMPLES / "elt_parquet.py"), broker, topic, group, str(tmp_path))
    assert "landed 250 rows from 250 records" in first
    assert f"{topic}[0] durable up to offset 250" in first
    assert "[{'rows': 250, 'ids': 250}]" in first
    second = run(str(EXAMPLES / "elt_parquet.py"), broker, topic, group, str(tmp_path))
    assert "landed 0 rows" in second and "[{'rows': 250, 'ids': 250}]" in second
