# Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
"""`kelt run --schema registry:<subject>` on a topic that confluent-kafka's JSONSerializer
wrote for a JSON Schema subject, into Parquet, DuckDB and PostgreSQL: the landed types
(the subject's JSON Schema mapped to columns, a nested object flattened), the values, a
tombstone, and records kelt cannot read (no header, an unknown schema id, a value of the
wrong type) as dead letters with their codes.

Needs the registry (KELT_REGISTRY_ENV), the broker (KELT_KAFKA_ENV), PostgreSQL
(KELT_PG_ENV) and the binary under test (KELT_BIN): tests/CMakeLists.txt's registry_tests.
"""
import datetime
import json
import struct
import subprocess
import uuid

import duckdb
import pyarrow.dataset as ds
from confluent_kafka import Producer
from confluent_kafka.schema_registry import Schema
from confluent_kafka.schema_registry.json_schema import JSONSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from conftest import TOPIC_SUBJECTS, create_topic, every_sink_config, registry_client

ORDER = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "Order",
    "type": "object",
    "properties": {
        "id": {"type": "integer"},
        "customer": {"type": "string"},
        "amount": {"type": "number"},
        "paid": {"type": "boolean"},
        "placed": {"type": "string", "format": "date-time"},
        "day": {"type": "string", "format": "date"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "address": {"oneOf": [{"type": "null"}, {"$ref": "#/definitions/Address"}]},
        "note": {"type": ["string", "null"]},
    },
    "required": ["id", "customer"],
    "definitions": {
        "Address": {"type": "object",
                    "properties": {"city": {"type": "string"},
                                   "zip": {"type": ["string", "null"]}}},
    },
}

T0 = datetime.datetime(2026, 12, 1, 12, 0, tzinfo=datetime.timezone.utc)
D0 = datetime.date(2026, 12, 1)


def order(i):
    return {"id": i, "customer": f"c{i % 7}", "amount": i / 4, "paid": i % 2 == 0,
            "placed": (T0 + datetime.timedelta(seconds=i)).isoformat(),
            "day": (D0 + datetime.timedelta(days=i)).isoformat(),
            "tags": [f"t{k}" for k in range(i % 3)],
            "address": None if i % 5 == 0 else {"city": f"city{i % 4}",
                                                "zip": None if i % 2 else str(10000 + i)},
            "note": f"n{i}" if i % 3 == 0 else None}


def test_a_json_schema_topic_lands_in_every_sink(kelt, broker, registry_url, pg, psql,
                                                 tmp_path):
    topic = "json-" + uuid.uuid4().hex[:10]
    subject = topic + "-value"
    create_topic(kelt, broker, topic, 2)
    client = registry_client(registry_url)
    ctx = SerializationContext(topic, MessageField.VALUE)
    serialize = JSONSerializer(json.dumps(ORDER), client, conf=TOPIC_SUBJECTS)
    producer = Producer({"bootstrap.servers": broker["KELT_KAFKA_BOOTSTRAP"]})
    for i in range(50):
        producer.produce(topic, key=str(i).encode(), value=serialize(order(i), ctx),
                         partition=i % 2)
    schema_id = client.get_latest_version(subject).schema_id
    header = struct.pack(">bI", 0, schema_id)
    producer.produce(topic, key=b"gone", value=None, partition=0)             # tombstone
    producer.produce(topic, key=b"plain", value=b'{"id": 100}', partition=1)  # no header
    producer.produce(topic, key=b"unknown", value=struct.pack(">bI", 0, 987654) +
                     b'{"id": 101}', partition=1)
    producer.produce(topic, key=b"mistyped", value=header + b'{"id": "one hundred two"}',
                     partition=0)
    assert producer.flush(30) == 0

    config, table = every_sink_config(tmp_path, broker, pg, topic, f"registry:{subject}",
                                      registry_url)
    shown = subprocess.run([kelt, "validate", "--config", str(config)], capture_output=True,
                           text=True, timeout=60)
    assert shown.returncode == 0, shown.stderr
    assert f"subject {subject} version 1 (id {schema_id})" in shown.stdout, shown.stdout
    assert ("14 columns: _kafka_topic:Utf8 _kafka_partition:Int64 _kafka_offset:Int64 "
            "_kafka_timestamp:Timestamp id:Int64 customer:Utf8 amount:Float64 paid:Bool "
            "placed:Timestamp day:Date tags:Utf8 address_city:Utf8 address_zip:Utf8 "
            "note:Utf8") in shown.stdout, shown.stdout

    run = subprocess.run([kelt, "run", "--config", str(config), "--progress", "none"],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr

    # Parquet: the mapped types, every value.
    landed = ds.dataset(str(tmp_path / "landing" / topic), format="parquet").to_table()
    types = {f.name: str(f.type) for f in landed.schema}
    assert types["id"] == "int64" and types["amount"] == "double"
    assert types["paid"] == "bool" and types["tags"] == "string"
    assert types["placed"] == "timestamp[us, tz=UTC]" and types["day"] == "date32[day]"
    assert types["address_city"] == "string" and types["_kafka_timestamp"].startswith(
        "timestamp")
    rows = {r["id"]: r for r in landed.to_pylist() if r["id"] is not None}
    assert sorted(rows) == list(range(50))
    for i in range(50):
        o, r = order(i), rows[i]
        for k in ("customer", "amount", "paid", "note"):
            assert r[k] == o[k], (i, k, r[k], o[k])
        assert r["placed"] == T0 + datetime.timedelta(seconds=i), i
        assert r["day"] == D0 + datetime.timedelta(days=i), i
        assert json.loads(r["tags"]) == o["tags"], i
        address = o["address"] or {}
        assert (r["address_city"], r["address_zip"]) == (address.get("city"),
                                                         address.get("zip")), i
    tombstones = [r for r in landed.to_pylist() if r["id"] is None]
    assert len(tombstones) == 1 and tombstones[0]["_kafka_partition"] == 0
    dead = ds.dataset(str(tmp_path / "landing" / "_dead_letter" / topic),
                      format="parquet").to_table().to_pylist()
    codes = {d["_kafka_key"]: (d["_error_code"], d["_error_field"]) for d in dead}
    assert codes == {b"plain": ("MALFORMED_PAYLOAD", None),
                     b"unknown": ("UNKNOWN_SCHEMA_ID", None),
                     b"mistyped": ("TYPE_MISMATCH", "id")}
    raw = {d["_kafka_key"]: d["_kafka_value"] for d in dead}
    assert raw[b"mistyped"] == header + b'{"id": "one hundred two"}'

    # DuckDB: the flattened address, the array as JSON text.
    with duckdb.connect(str(tmp_path / "orders.duckdb"), read_only=True) as db:
        got = db.execute(
            "SELECT id, amount, paid, day, tags, address_city, address_zip, note "
            "FROM orders WHERE id IN (7, 12) ORDER BY id").fetchall()
    assert got == [(7, 1.75, False, datetime.date(2026, 12, 8), '["t0"]', "city3", None,
                    None),
                   (12, 3.0, True, datetime.date(2026, 12, 13), "[]", "city0", "10012",
                    "n12")]

    # PostgreSQL: bigint, double precision, timestamptz, date.
    assert psql("SELECT id, amount, paid, to_char(placed AT TIME ZONE 'UTC', "
                "'YYYY-MM-DD HH24:MI:SS'), day, address_city, count(*) OVER () "
                f"FROM \"{table}\" WHERE id IN (7, 12) ORDER BY id") == [
        "7|1.75|f|2026-12-01 12:00:07|2026-12-08|city3|2",
        "12|3|t|2026-12-01 12:00:12|2026-12-13|city0|2"]


def test_a_json_schema_that_cannot_map_is_a_config_error(registry_url, validate_subject):
    """The subject's schema is refused with the JSON pointer of what cannot map."""
    subject = f"json-{uuid.uuid4().hex[:10]}-value"
    client = registry_client(registry_url)
    tree = {"type": "object", "$defs": {"Node": {"type": "object", "properties": {
        "name": {"type": "string"}, "parent": {"$ref": "#/$defs/Node"}}}},
        "properties": {"node": {"$ref": "#/$defs/Node"}}}
    client.register_schema(subject, Schema(json.dumps(tree), "JSON"))
    run = validate_subject(subject)
    assert run.returncode != 0
    assert "#/$defs/Node/properties/parent: $ref '#/$defs/Node' refers back" in run.stderr, \
        run.stderr


def test_a_2020_12_schema_with_defs_and_allof_lands(kelt, broker, registry_url,
                                                     tmp_path):
    """2020-12 keywords: `$defs`, `allOf` merging a base object, `prefixItems` (an array:
    JSON text), a `$ref` beside `properties`."""
    topic = "json-" + uuid.uuid4().hex[:10]
    subject = topic + "-value"
    create_topic(kelt, broker, topic, 1)
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$defs": {"Base": {"type": "object", "properties": {
            "id": {"type": "integer"}, "at": {"type": "string", "format": "date-time"}}}},
        "$ref": "#/$defs/Base",
        "allOf": [{"properties": {"score": {"type": ["number", "integer", "null"]}}}],
        "properties": {"pair": {"type": "array",
                                "prefixItems": [{"type": "string"}, {"type": "integer"}]}},
    }
    client = registry_client(registry_url)
    ctx = SerializationContext(topic, MessageField.VALUE)
    serialize = JSONSerializer(json.dumps(schema), client, conf=TOPIC_SUBJECTS)
    producer = Producer({"bootstrap.servers": broker["KELT_KAFKA_BOOTSTRAP"]})
    for i in range(3):
        producer.produce(topic, value=serialize(
            {"id": i, "at": f"2026-12-0{i + 1}T00:00:00Z", "score": i * 1.5 if i else None,
             "pair": ["p", i]}, ctx))
    assert producer.flush(30) == 0
    config = tmp_path / "kelt.yaml"
    config.write_text(json.dumps({
        "brokers": broker["KELT_KAFKA_BOOTSTRAP"], "group": topic + "-g", "topics": [topic],
        "schema": f"registry:{subject}", "registry": {"url": registry_url},
        "until_caught_up": True, "sinks": [{"parquet": {"root": str(tmp_path / "landing")}}],
    }))
    run = subprocess.run([kelt, "run", "--config", str(config), "--progress", "none"],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    landed = ds.dataset(str(tmp_path / "landing" / topic), format="parquet").to_table()
    assert [f.name for f in landed.schema][4:] == ["id", "at", "pair", "score"]
    rows = sorted(landed.select(["id", "at", "score", "pair"]).to_pylist(),
                  key=lambda r: r["id"])
    assert [(r["id"], r["at"].day, r["score"], json.loads(r["pair"])) for r in rows] == [
        (0, 1, None, ["p", 0]), (1, 2, 1.5, ["p", 1]), (2, 3, 3.0, ["p", 2])]
