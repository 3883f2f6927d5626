# Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
"""`kelt run --schema registry:<subject>` on a topic that confluent-kafka's AvroSerializer
wrote, with two versions of the subject's schema mid-topic, into Parquet, DuckDB and
PostgreSQL: the landed types and values, tombstones, and a record kelt cannot read.

Needs the registry (KELT_REGISTRY_ENV), the broker (KELT_KAFKA_ENV), PostgreSQL
(KELT_PG_ENV) and the binary under test (KELT_BIN): tests/CMakeLists.txt's registry_tests.
"""
import datetime
import decimal
import json
import signal
import subprocess
import threading
import time
import uuid

import duckdb
import pyarrow.dataset as ds
import pyarrow.parquet as pq
from confluent_kafka import Producer
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from conftest import (TOPIC_SUBJECTS, AvroTopic, create_topic, every_sink_config,
                      registry_client, start_run, validated, wait_for_ids)

ORDER_V1 = {
    "type": "record", "name": "Order", "namespace": "shop",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "customer", "type": "string"},
        {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal",
                                    "precision": 10, "scale": 2}},
        {"name": "placed", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "status", "type": {"type": "enum", "name": "Status",
                                    "symbols": ["NEW", "PAID", "SHIPPED"]}},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "address", "type": ["null", {
            "type": "record", "name": "Address",
            "fields": [{"name": "city", "type": "string"},
                       {"name": "zip", "type": ["null", "string"], "default": None}]}],
         "default": None},
    ],
}
# Version 2 adds an optional field (a BACKWARD-compatible change).
ORDER_V2 = dict(ORDER_V1, fields=ORDER_V1["fields"] + [
    {"name": "coupon", "type": ["null", "string"], "default": None}])

T0 = datetime.datetime(2026, 12, 1, 12, 0, tzinfo=datetime.timezone.utc)


def order(i, v2=False):
    o = {"id": i, "customer": f"c{i % 7}", "amount": decimal.Decimal(i) / 4,
         "placed": T0 + datetime.timedelta(seconds=i),
         "status": ["NEW", "PAID", "SHIPPED"][i % 3],
         "tags": [f"t{k}" for k in range(i % 3)],
         "address": None if i % 5 == 0 else {"city": f"city{i % 4}",
                                             "zip": None if i % 2 else str(10000 + i)}}
    if v2:
        o["coupon"] = f"SAVE{i}" if i % 2 == 0 else None
    return o


def test_an_avro_topic_of_two_schema_versions_lands_in_every_sink(
        kelt, broker, pg, registry_url, psql, tmp_path):
    topic = "avro-" + uuid.uuid4().hex[:10]
    subject = topic + "-value"
    create_topic(kelt, broker, topic, 2)
    client = registry_client(registry_url)
    ctx = SerializationContext(topic, MessageField.VALUE)
    v1 = AvroSerializer(client, json.dumps(ORDER_V1), conf=TOPIC_SUBJECTS)
    v2 = AvroSerializer(client, json.dumps(ORDER_V2), conf=TOPIC_SUBJECTS)
    producer = Producer({"bootstrap.servers": broker["KELT_KAFKA_BOOTSTRAP"]})
    expected = {}
    for i in range(60):
        producer.produce(topic, key=str(i).encode(), value=v1(order(i), ctx), partition=i % 2)
        expected[i] = order(i)
    for i in range(60, 100):
        producer.produce(topic, key=str(i).encode(), value=v2(order(i, True), ctx),
                         partition=i % 2)
        expected[i] = order(i, True)
    producer.produce(topic, key=b"gone", value=None, partition=0)            # a tombstone
    producer.produce(topic, key=b"json", value=b'{"id": 1}', partition=1)    # not Avro
    assert producer.flush(30) == 0

    conninfo = pg["KELT_PG_CONNINFO"]
    config, table = every_sink_config(tmp_path, broker, pg, topic, f"registry:{subject}",
                                      registry_url)
    shown = validated(kelt, config)
    assert f"subject {subject} version 2" in shown, shown
    assert "address: struct<city: string, zip: string>" in shown, shown
    assert "amount: decimal128(10, 2)" in shown, shown

    run = subprocess.run([kelt, "run", "--config", str(config), "--progress", "none"],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr

    # Parquet: the Arrow types of the reader schema (version 2), every value.
    landed = ds.dataset(str(tmp_path / "landing" / topic), format="parquet").to_table()
    schema = landed.schema
    assert str(schema.field("amount").type) == "decimal128(10, 2)"
    assert str(schema.field("placed").type) == "timestamp[ms, tz=UTC]"
    assert str(schema.field("tags").type.value_type) == "string"
    assert schema.field("address").type.num_fields == 2
    assert str(schema.field("coupon").type) == "string"
    rows = {r["id"]: r for r in landed.to_pylist() if r["id"] is not None}
    assert sorted(rows) == list(range(100))
    for i, o in expected.items():
        r = rows[i]
        for k in ("customer", "amount", "placed", "status", "tags", "address"):
            assert r[k] == o[k], (i, k, r[k], o[k])
        assert r["coupon"] == o.get("coupon"), i
    tombstones = [r for r in landed.to_pylist() if r["id"] is None]
    assert len(tombstones) == 1 and tombstones[0]["_kafka_partition"] == 0
    dead = ds.dataset(str(tmp_path / "landing" / "_dead_letter" / topic),
                      format="parquet").to_table().to_pylist()
    assert [d["_error_code"] for d in dead] == ["MALFORMED_PAYLOAD"]

    # DuckDB: nested columns as STRUCT / LIST, the enum as text.
    with duckdb.connect(str(tmp_path / "orders.duckdb"), read_only=True) as db:
        got = db.execute(
            "SELECT id, amount::VARCHAR, status, len(tags), address.city, coupon "
            "FROM orders WHERE id IN (7, 64) ORDER BY id").fetchall()
    assert got == [(7, "1.75", "PAID", 1, "city3", None), (64, "16.00", "PAID", 1, "city0",
                                                           "SAVE64")]

    # PostgreSQL: numeric, timestamptz, nested values as jsonb.
    assert psql(f"SELECT id, amount, status, tags::text, address->>'city', coupon "
                f"FROM \"{table}\" WHERE id IN (7, 64) ORDER BY id") == [
        '7|1.75|PAID|["t0"]|city3|', '64|16.00|PAID|["t0"]|city0|SAVE64']


def test_a_subject_that_does_not_exist_is_a_config_error(validate_subject):
    run = validate_subject("no-such-subject-value")
    assert run.returncode != 0
    assert "no-such-subject-value" in run.stderr, run.stderr


def test_a_new_schema_version_mid_run_adds_a_column_in_every_sink(
        kelt, broker, pg, registry_url, psql, tmp_path):
    """The subject moves on while kelt runs: the landing grows by the new column in
    Parquet (new files), DuckDB and PostgreSQL (ALTER TABLE), old rows read null."""
    orders = AvroTopic(kelt, broker, registry_url)
    topic, subject = orders.topic, orders.subject
    orders.produce(ORDER_V1, [order(i) for i in range(20)])

    conninfo = pg["KELT_PG_CONNINFO"]
    table = "orders_" + uuid.uuid4().hex[:8]
    config = orders.write_config(
        tmp_path / "kelt.yaml", broker, registry_url,
        [{"parquet": {"root": str(tmp_path / "landing"), "rotate_age_ms": 300}},
         {"duckdb": {"path": str(tmp_path / "orders.duckdb"), "table": "orders"}},
         {"postgres": {"conninfo": conninfo, "table": table}}])
    proc = start_run(kelt, config)
    try:
        # The Parquet sink publishes a file per rotation: rotate by age quickly.
        wait_for_ids(proc, tmp_path / "landing" / topic, 20)
        orders.produce(ORDER_V2, [order(i, True) for i in range(20, 30)])
        wait_for_ids(proc, tmp_path / "landing" / topic, 30)
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, out + err
    assert "the landing schema grows" in err, err
    assert "columns added: coupon" in err, err

    files = list((tmp_path / "landing" / topic).rglob("*.parquet"))
    assert len(files) >= 2
    with_coupon = [f for f in files if "coupon" in pq.read_schema(f).names]
    assert with_coupon and len(with_coupon) < len(files)
    rows = {}
    for f in files:
        for r in pq.read_table(f).to_pylist():
            rows[r["id"]] = r.get("coupon")
    assert sorted(rows) == list(range(30))
    assert all(rows[i] is None for i in range(20))
    assert [rows[i] for i in range(20, 30)] == [order(i, True)["coupon"] for i in range(20, 30)]

    with duckdb.connect(str(tmp_path / "orders.duckdb"), read_only=True) as db:
        got = db.execute("SELECT id, coupon FROM orders ORDER BY id").fetchall()
    assert got == [(i, None) for i in range(20)] + \
        [(i, order(i, True)["coupon"]) for i in range(20, 30)]
    assert psql(f"SELECT count(*), count(coupon) FROM \"{table}\"") == ["30|5"]


def test_a_schema_version_met_inside_a_window_reads_the_window_again_with_it(
        kelt, broker, registry_url, tmp_path):
    """A window is loaded in chunks: when a chunk meets the subject's new version, the
    chunks of the same window loaded before it (read with the older reader schema) are
    given back and the whole window is read again with the grown one, landing as one
    batch of the grown schema, every record once."""
    orders = AvroTopic(kelt, broker, registry_url)
    topic, subject = orders.topic, orders.subject
    orders.produce(ORDER_V1, [order(i) for i in range(20)])
    # One window of all 30 records (it waits up to 15 s for them; SIGTERM is taken between
    # windows), loaded in chunks of 2 a loader.
    config = orders.write_config(
        tmp_path / "kelt.yaml", broker, registry_url,
        [{"parquet": {"root": str(tmp_path / "landing"), "rotate_age_ms": 300}}],
        window={"max_records": 30, "max_wait_ms": 15000, "stop_at_end": False},
        min_records_per_loader=2)
    proc = start_run(kelt, config)
    err_lines = []
    reader = threading.Thread(target=lambda: err_lines.extend(proc.stderr), daemon=True)
    reader.start()
    try:
        # Version 2 only once the run (its reader schema version 1) has its partition.
        deadline = time.time() + 120
        while time.time() < deadline and not any("assigned" in x for x in err_lines):
            assert proc.poll() is None, "".join(err_lines)
            time.sleep(0.1)
        assert any("assigned" in x for x in err_lines), "".join(err_lines)
        orders.produce(ORDER_V2, [order(i, True) for i in range(20, 30)])
        wait_for_ids(proc, tmp_path / "landing" / topic, 30, seconds=120)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
        reader.join(timeout=10)
    err = "".join(err_lines)
    assert proc.returncode == 0, err
    assert "columns added: coupon" in err, err
    assert "the landing schema grew in the middle of a window" in err, err
    files = list((tmp_path / "landing" / topic).rglob("*.parquet"))
    assert files and all("coupon" in pq.read_schema(f).names for f in files), files
    rows = {}
    for f in files:
        for r in pq.read_table(f).to_pylist():
            assert r["id"] not in rows, r["id"]
            rows[r["id"]] = r["coupon"]
    assert sorted(rows) == list(range(30))
    assert [rows[i] for i in range(30)] == [None] * 20 + \
        [order(i, True)["coupon"] for i in range(20, 30)]


ORDER_KEY = {"type": "record", "name": "OrderKey", "namespace": "shop",
             "fields": [{"name": "id", "type": "long"}, {"name": "region", "type": "string"}]}


def test_avro_keys_land_as_a_struct_column_in_every_sink(kelt, broker, pg, registry_url,
                                                         psql, tmp_path):
    """`key.format: registry`: keys that AvroSerializer wrote under <topic>-key land as
    `_kafka_key`, a struct in Parquet and DuckDB and jsonb in PostgreSQL; a record
    without a key lands with a null key, a delete (tombstone) keeps its key, and a key
    that is not in the wire format is a dead letter naming `_kafka_key`."""
    topic = "avro-" + uuid.uuid4().hex[:10]
    create_topic(kelt, broker, topic, 1)
    client = registry_client(registry_url)
    values = AvroSerializer(client, json.dumps(ORDER_V1), conf=TOPIC_SUBJECTS)
    keys = AvroSerializer(client, json.dumps(ORDER_KEY), conf=TOPIC_SUBJECTS)
    vctx = SerializationContext(topic, MessageField.VALUE)
    kctx = SerializationContext(topic, MessageField.KEY)
    producer = Producer({"bootstrap.servers": broker["KELT_KAFKA_BOOTSTRAP"]})
    for i in range(10):
        producer.produce(topic, key=keys({"id": i, "region": f"r{i % 3}"}, kctx),
                         value=values(order(i), vctx))
    producer.produce(topic, value=values(order(10), vctx))                     # no key
    producer.produce(topic, key=keys({"id": 3, "region": "r0"}, kctx), value=None)
    producer.produce(topic, key=b"plain", value=values(order(12), vctx))      # bad key
    assert producer.flush(30) == 0

    conninfo = pg["KELT_PG_CONNINFO"]
    table = "keyed_" + uuid.uuid4().hex[:8]
    config = tmp_path / "kelt.yaml"
    config.write_text(json.dumps({
        "brokers": broker["KELT_KAFKA_BOOTSTRAP"], "group": topic + "-g", "topics": [topic],
        "schema": f"registry:{topic}-value", "registry": {"url": registry_url},
        "key": {"format": "registry"},
        "until_caught_up": True, "on_bad_record": "dead_letter",
        "sinks": [{"parquet": {"root": str(tmp_path / "landing")}},
                  {"duckdb": {"path": str(tmp_path / "k.duckdb"), "table": "orders"}},
                  {"postgres": {"conninfo": conninfo, "table": table}}],
    }))
    shown = subprocess.run([kelt, "validate", "--config", str(config)], capture_output=True,
                           text=True, timeout=60)
    assert shown.returncode == 0, shown.stderr
    assert "_kafka_key: struct<id: int64, region: string>" in shown.stdout, shown.stdout
    run = subprocess.run([kelt, "run", "--config", str(config), "--progress", "none"],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr

    landed = ds.dataset(str(tmp_path / "landing" / topic), format="parquet").to_table()
    by_offset = {r["_kafka_offset"]: r for r in landed.to_pylist()}
    assert sorted(by_offset) == list(range(12))
    for i in range(10):
        assert by_offset[i]["_kafka_key"] == {"id": i, "region": f"r{i % 3}"}
        assert by_offset[i]["id"] == i
    assert by_offset[10]["_kafka_key"] is None and by_offset[10]["id"] == 10
    assert by_offset[11]["_kafka_key"] == {"id": 3, "region": "r0"}
    assert by_offset[11]["id"] is None
    dead = ds.dataset(str(tmp_path / "landing" / "_dead_letter" / topic),
                      format="parquet").to_table().to_pylist()
    assert [(d["_kafka_offset"], d["_error_code"], d["_error_field"]) for d in dead] == \
        [(12, "MALFORMED_PAYLOAD", "_kafka_key")]

    with duckdb.connect(str(tmp_path / "k.duckdb"), read_only=True) as db:
        got = db.execute("SELECT _kafka_offset, _kafka_key.id, _kafka_key.region, id "
                         "FROM orders WHERE _kafka_offset IN (4, 10, 11) "
                         "ORDER BY _kafka_offset").fetchall()
    assert got == [(4, 4, "r1", 4), (10, None, None, 10), (11, 3, "r0", None)]
    assert psql(f"SELECT _kafka_offset, _kafka_key->>'region', (_kafka_key->>'id')::int "
                f"FROM \"{table}\" WHERE _kafka_offset IN (4, 10) "
                f"ORDER BY _kafka_offset") == ["4|r1|4", "10||"]


def test_registry_keys_need_a_subject_when_topics_are_a_pattern(kelt, broker, registry_url,
                                                                tmp_path):
    run = subprocess.run(
        [kelt, "validate", "--brokers", broker["KELT_KAFKA_BOOTSTRAP"], "--group", "g",
         "--topic", "^orders-.*", "--schema", '{"fields":[{"name":"n","data_type":"Int64"}]}',
         "--key-format", "registry", "--registry-url", registry_url,
         "--parquet", str(tmp_path)],
        capture_output=True, text=True, timeout=60)
    assert run.returncode != 0
    assert "key.subject" in run.stderr and "<topic>-key" in run.stderr, run.stderr
