# Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
"""Against the real broker (KELT_KAFKA_BOOTSTRAP or KELT_KAFKA_ENV; missing fails): RDP's
calls, the consumer, and the Python leg of the tri-language Uber scenario (RDP_COMPATIBILITY.md §9)."""

from __future__ import annotations

import csv
import json

import pyarrow as pa

import kelt
from conftest import FIXTURES

UBER = FIXTURES / "uber"


def test_rdp_calls_against_the_broker(broker, fresh):
    topic, group = fresh("rdp"), fresh("g")
    data = pa.table({"user_id": [1, 2, 3], "event": ["view", "purchase", "view"]})
    assert kelt.export_dataset_to_kafka(broker, topic, data, key_column="user_id") == 3
    records = json.loads(kelt.poll_kafka_window(broker, group, topic, max_records=2))
    assert [r["key"] for r in records["records"]] == ["1", "2"]
    w = kelt.poll_kafka_window_loaded(broker, group, topic,
                                      [{"name": "user_id", "data_type": "int64"},
                                       {"name": "event", "data_type": "string"},
                                       {"name": "_kafka_key", "data_type": "utf8"}])
    assert w.to_rows() == [[3, "view", "3"]]  # the first call committed its window


def test_consumer_against_the_broker(broker, fresh):
    topic, group = fresh("cons"), fresh("g")
    kelt.export_dataset_to_kafka(broker, topic, pa.table({"id": list(range(100))}))
    schema = [{"name": "id", "data_type": "int64"}]
    with kelt.Consumer(broker, group, topic) as c:
        w = c.poll(schema, max_records=60)
        assert w.row_count() == 60 and w.end_reason == "max_records"
        c.commit(w)
        assert c.committed() == {(topic, 0): 60}
        assert [l.lag for l in c.lag()] == [40]
    with kelt.Consumer(broker, group, topic) as c:
        c.start_catch_up()
        rest = c.poll(schema, max_records=1000)
        assert [r[0] for r in rest.to_rows()] == list(range(60, 100))
        assert c.caught_up


def read_uber_csv():
    with open(UBER / "uber_apr14_sample.csv", newline="") as f:
        return list(csv.DictReader(f))


def test_uber_tri_language_scenario_python_leg(broker, fresh):
    """RDP_COMPATIBILITY.md §9: one one-row dataset per CSV row, one poll with a fresh group and
    max_records = rows produced; every row's content must match the CSV."""
    rows = read_uber_csv()
    assert len(rows) == 3000 and list(rows[0]) == ["Date/Time", "Lat", "Lon", "Base"]
    topic = fresh("uber")
    fields = [{"name": "pickup_time", "data_type": "Utf8"},
              {"name": "lat", "data_type": "Float64"},
              {"name": "lon", "data_type": "Float64"},
              {"name": "base_code", "data_type": "Utf8"}]
    produced = 0
    for row in rows:
        dataset = {"schema": {"fields": fields},
                   "rows": [[{"Utf8": row["Date/Time"]}, {"Float64": float(row["Lat"])},
                             {"Float64": float(row["Lon"])}, {"Utf8": row["Base"]}]]}
        produced += kelt.export_dataset_to_kafka(broker, topic, dataset)
    assert produced == len(rows)

    landing = json.loads((UBER / "landing_schema.json").read_text())
    w = kelt.poll_kafka_window_loaded(broker, fresh("uber-g"), topic, landing,
                                      max_records=produced, max_wait_ms=60_000)
    assert w.row_count() == produced
    assert w.column_names() == ["pickup_time", "lat", "lon", "base_code", "_kafka_offset",
                                "_kafka_partition"]
    landed = sorted(w.to_rows(), key=lambda r: (r[5], r[4]))
    # One partition: offsets 0..n-1 in production order, so row i is CSV line i.
    assert [r[4] for r in landed] == list(range(produced))
    for i, (row, got) in enumerate(zip(rows, landed)):
        want = [row["Date/Time"], float(row["Lat"]), float(row["Lon"]), row["Base"], i, 0]
        assert got == want, f"CSV row {i}: {got} != {want}"
