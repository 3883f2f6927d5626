# Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
"""Run every ```python block of docs/USER_GUIDE.md section 11, in order, in one namespace."""

from __future__ import annotations

import re

import pyarrow as pa

import kelt
from conftest import REPO


def python_blocks() -> list[str]:
    guide = (REPO / "docs" / "USER_GUIDE.md").read_text()
    section = guide[guide.index("## 11. Python"):]
    nxt = re.search(r"\n## \d+\. ", section[10:])
    if nxt:
        section = section[:nxt.start() + 10]
    return re.findall(r"```python\n(.*?)```", section, flags=re.S)


def test_the_python_section_runs(broker, fresh, tmp_path):
    blocks = python_blocks()
    assert len(blocks) >= 5
    topic = fresh("guide")
    rows = pa.table({"id": list(range(100)), "name": [f"row {i}" for i in range(100)]})
    assert kelt.export_dataset_to_kafka(broker, topic, rows) == 100
    namespace = {"BOOTSTRAP": broker, "TOPIC": topic, "DIR": str(tmp_path)}
    for i, block in enumerate(blocks):
        # fresh group names per run, so the guide's fixed names never collide
        code = block.replace('"guide-', f'"{topic}-')
        exec(compile(code, f"USER_GUIDE.md python block {i}", "exec"), namespace)
