# Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
"""kelt.EltLoop landing into an Iceberg table (kelt.IcebergSink: SQL catalog on SQLite,
local warehouse) on librdkafka's mock cluster, read back by pyiceberg's SqlCatalog and by
kelt.SqlSession: rows, dead letters in the sibling table, offsets in the snapshot summary,
and a second run that adds only the new records."""
from __future__ import annotations

import json

import pyarrow as pa
from pyiceberg.catalog.sql import SqlCatalog

import kelt

SCHEMA = [{"name": "id", "data_type": "int64"}, {"name": "name", "data_type": "utf8"}]
FAST = {"session.timeout.ms": "6000", "heartbeat.interval.ms": "500"}


def produce(bootstrap, topic, ids):
    data = pa.table({"id": list(ids), "name": [f"n{i}" for i in ids]})
    return kelt.export_dataset_to_kafka(bootstrap, topic, data, key_column="id")


def test_elt_loop_lands_in_an_iceberg_table_that_pyiceberg_reads(mock_cluster, fresh,
                                                                 tmp_path):
    topic, group = fresh("ice"), fresh("g")
    mock_cluster.create_topic(topic, 2)
    produce(mock_cluster.bootstraps, topic, range(40))
    # Two records whose id is text: dead letters under the loop's default policy.
    kelt.export_dataset_to_kafka(mock_cluster.bootstraps, topic,
                                 pa.table({"id": ["x", "y"]}))
    sink = kelt.IcebergSink(catalog=str(tmp_path / "catalog.db"),
                            warehouse=str(tmp_path / "wh"), namespace="py", table="events")
    with kelt.EltLoop(mock_cluster.bootstraps, group, topic, SCHEMA, [sink],
                      max_records=15, until_caught_up=True, properties=FAST) as loop:
        stats = loop.run()
    assert stats["rows"] == 40 and stats["dead_lettered"] == 2, stats
    assert sum(stats["committed"].values()) == 42

    catalog = SqlCatalog("kelt", uri=f"sqlite:///{tmp_path / 'catalog.db'}",
                         warehouse=f"file://{tmp_path / 'wh'}")
    table = catalog.load_table("py.events")
    rows = table.scan().to_arrow()
    assert sorted(rows.column("id").to_pylist()) == list(range(40))
    keys = list(zip(rows.column("_kafka_partition").to_pylist(),
                    rows.column("_kafka_offset").to_pylist()))
    dead = catalog.load_table("py.events_dead_letter").scan().to_arrow()
    assert sorted(json.loads(v)["id"] for v in dead.column("_kafka_value").to_pylist()) == [
        "x", "y"]
    keys += zip(dead.column("_kafka_partition").to_pylist(),
                dead.column("_kafka_offset").to_pylist())
    assert len(keys) == len(set(keys)) == 42  # every record once, row or dead letter
    # The group's next offsets (partitions start at 0): all 42 records are covered.
    summary = table.current_snapshot().summary.additional_properties
    offsets = json.loads(summary[f"kelt.offsets.{group}"])
    assert list(offsets) == [topic] and sum(offsets[topic].values()) == 42, offsets

    # A second run adds exactly the new records; kelt.SqlSession reads the same table.
    produce(mock_cluster.bootstraps, topic, range(40, 45))
    with kelt.EltLoop(mock_cluster.bootstraps, group, topic, SCHEMA, [sink],
                      until_caught_up=True, properties=FAST) as loop:
        assert loop.run()["rows"] == 5
    s = kelt.SqlSession()
    s.register_landing("ice", str(tmp_path / "catalog.db"), format="iceberg",
                       table="py.events")
    assert s.query("SELECT count(*) AS c, count(DISTINCT id) AS n FROM ice").to_pylist() == [
        {"c": 45, "n": 45}]
    assert catalog.load_table("py.events").scan().to_arrow().num_rows == 45
