# Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
"""`kelt produce --value-format avro|protobuf|json-schema --subject S`: NDJSON lines sent
as Avro, Protobuf or JSON Schema records in the Confluent wire format, read back by
confluent-kafka's AvroDeserializer, ProtobufDeserializer (a message class built at run time
from the registered schema by protoc) and JSONDeserializer (exactly the values) and landed
by `kelt run --schema registry:S` (the round trip); --auto-register; --message; a schema
the registry's compatibility rule refuses; records that do not fit; a registry that does
not answer.

Needs the registry (KELT_REGISTRY_ENV), the broker (KELT_KAFKA_ENV) and the binary under
test (KELT_BIN): tests/CMakeLists.txt's registry_tests.
"""
import datetime
import decimal
import inspect
import json
import os
import pathlib
import subprocess
import uuid

import pyarrow as pa
import pyarrow.dataset as ds
import pytest
from confluent_kafka import Consumer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.schema_registry.json_schema import JSONDeserializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.json_format import MessageToDict

from conftest import create_topic


ORDER = {
    "type": "record", "name": "Order", "namespace": "shop",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "customer", "type": ["null", "string"], "default": None},
        {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal",
                                    "precision": 10, "scale": 2}},
        {"name": "placed", "type": {"type": "long", "logicalType": "timestamp-micros"}},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "status", "type": {"type": "enum", "name": "Status",
                                    "symbols": ["NEW", "PAID", "SHIPPED"]}},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "score", "type": "double"},
        {"name": "paid", "type": "boolean"},
        {"name": "address", "type": ["null", {
            "type": "record", "name": "Address",
            "fields": [{"name": "city", "type": "string"},
                       {"name": "zip", "type": ["null", "string"], "default": None}]}],
         "default": None},
        {"name": "channel", "type": "string", "default": "web"},
    ],
}

T0 = datetime.datetime(2026, 12, 1, 12, 0, tzinfo=datetime.timezone.utc)
EPOCH = datetime.date(1970, 1, 1)


def order_line(i):
    """Record i as an NDJSON line (the text forms kelt produce documents) and as the
    value AvroDeserializer gives back."""
    placed = T0 + datetime.timedelta(seconds=i, microseconds=i)
    day = datetime.date(2026, 1, 1) + datetime.timedelta(days=i)
    line = {"id": i, "customer": None if i % 4 == 0 else f"c{i}",
            "amount": str(decimal.Decimal(i * 7 - 20) / 4),
            "placed": placed.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            "day": (day - EPOCH).days, "status": ["NEW", "PAID", "SHIPPED"][i % 3],
            "tags": [f"t{k}" for k in range(i % 3)], "score": i / 8, "paid": i % 2 == 0,
            "address": None if i % 5 == 0 else {"city": f"city{i}",
                                                "zip": None if i % 2 else str(10000 + i)}}
    if i % 3 == 0:
        line["channel"] = "shop"          # else absent: the field's default
    value = dict(line, amount=decimal.Decimal(line["amount"]), placed=placed, day=day,
                 channel=line.get("channel", "web"))
    if value["address"] is not None and value["address"]["zip"] is None:
        value["address"] = dict(value["address"], zip=None)
    return json.dumps(line), value


def produce(kelt, broker, topic, path, *args, registry_url=None, fmt="avro"):
    env = dict(os.environ)
    env.pop("KELT_REGISTRY_URL", None)
    cmd = [kelt, "produce", "--brokers", broker["KELT_KAFKA_BOOTSTRAP"], "--topic", topic,
           "--file", str(path), "--value-format", fmt, *args]
    if registry_url:
        cmd += ["--registry-url", registry_url]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)


def read_back(broker, registry_url, topic, count, wait=60, deserialize=None):
    """(key, value, raw) of the topic's first `count` records, values by
    `deserialize` (default: AvroDeserializer)."""
    if deserialize is None:
        deserialize = AvroDeserializer(SchemaRegistryClient({"url": registry_url}))
    ctx = SerializationContext(topic, MessageField.VALUE)
    consumer = Consumer({"bootstrap.servers": broker["KELT_KAFKA_BOOTSTRAP"],
                         "group.id": topic + "-check", "auto.offset.reset": "earliest",
                         "enable.auto.commit": False})
    consumer.subscribe([topic])
    out = []
    try:
        deadline = datetime.datetime.now() + datetime.timedelta(seconds=wait)
        while len(out) < count and datetime.datetime.now() < deadline:
            m = consumer.poll(1.0)
            if m is None or m.error():
                continue
            out.append((m.key().decode(), deserialize(m.value(), ctx), m.value()))
    finally:
        consumer.close()
    return out


def register(rest, subject, schema):
    status, answer = rest.post(f"/subjects/{subject}/versions",
                               {"schema": json.dumps(schema)})
    assert status == 200, answer
    return answer["id"]


def test_ndjson_becomes_avro_records_of_the_subjects_latest_schema(
        kelt, broker, registry_url, rest, tmp_path):
    topic = "produce-" + uuid.uuid4().hex[:10]
    subject = topic + "-value"
    create_topic(kelt, broker, topic)
    schema_id = register(rest, subject, ORDER)
    lines, expected = zip(*(order_line(i) for i in range(1, 41)))
    path = tmp_path / "orders.ndjson"
    path.write_text("\n".join(lines) + "\n")

    done = produce(kelt, broker, topic, path, "--subject", subject,
                   registry_url=registry_url)
    assert done.returncode == 0, done.stderr
    assert "produced 40 messages" in done.stdout

    got = read_back(broker, registry_url, topic, 40)
    assert [k for k, _, _ in got] == [str(n) for n in range(1, 41)]  # line numbers
    for (_, value, raw), want in zip(got, expected):
        assert raw[0] == 0 and int.from_bytes(raw[1:5], "big") == schema_id
        assert value == want

    # The round trip: kelt's own consumer lands the same values.
    config = tmp_path / "kelt.yaml"
    config.write_text(json.dumps({
        "brokers": broker["KELT_KAFKA_BOOTSTRAP"], "group": topic + "-g", "topics": [topic],
        "schema": f"registry:{subject}", "registry": {"url": registry_url},
        "until_caught_up": True, "on_bad_record": "fail",
        "sinks": [{"parquet": {"root": str(tmp_path / "landing")}}],
    }))
    run = subprocess.run([kelt, "run", "--config", str(config), "--progress", "none"],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    landed = ds.dataset(str(tmp_path / "landing" / topic), format="parquet").to_table()
    rows = sorted(landed.to_pylist(), key=lambda r: r["id"])
    assert len(rows) == 40
    for row, want in zip(rows, expected):
        assert row["amount"] == want["amount"]
        assert row["placed"] == want["placed"]
        assert row["day"] == want["day"]
        assert (row["status"], row["tags"], row["channel"]) == (
            want["status"], want["tags"], want["channel"])
        assert row["address"] == want["address"]


def test_a_record_the_schema_cannot_hold_fails_before_anything_is_sent(
        kelt, broker, registry_url, rest, tmp_path):
    topic = "produce-" + uuid.uuid4().hex[:10]
    subject = topic + "-value"
    create_topic(kelt, broker, topic)
    register(rest, subject, ORDER)
    good, _ = order_line(1)
    bad = json.loads(order_line(2)[0])
    bad["status"] = "LOST"
    path = tmp_path / "orders.ndjson"
    path.write_text(good + "\n" + json.dumps(bad) + "\n")
    done = produce(kelt, broker, topic, path, "--subject", subject,
                   registry_url=registry_url)
    assert done.returncode == 1
    assert "field 'status', row 1: 'LOST', not a symbol of the enum" in done.stderr
    assert read_back(broker, registry_url, topic, 1, wait=5) == []
    # A key the schema does not have is named, with its record.
    extra = json.loads(good)
    extra["coupon"] = "X"
    path.write_text(good + "\n" + json.dumps(extra) + "\n")
    done = produce(kelt, broker, topic, path, "--subject", subject,
                   registry_url=registry_url)
    assert done.returncode == 1
    assert "record 2: 'coupon' is not a field of the subject's schema" in done.stderr


def test_auto_register_derives_the_schema_and_the_registry_may_refuse_it(
        kelt, broker, registry_url, rest, tmp_path):
    topic = "produce-" + uuid.uuid4().hex[:10]
    subject = topic + "-value"
    create_topic(kelt, broker, topic)
    path = tmp_path / "clicks.ndjson"
    path.write_text('{"user": "u1", "n": 3, "ok": true, "w": 0.5}\n'
                    '{"user": null, "n": -4, "ok": false, "w": 2}\n')
    done = produce(kelt, broker, topic, path, "--subject", subject, "--auto-register",
                   registry_url=registry_url)
    assert done.returncode == 0, done.stderr
    status, latest = rest.get(f"/subjects/{subject}/versions/latest")
    assert status == 200, latest
    fields = {f["name"]: f["type"] for f in json.loads(latest["schema"])["fields"]}
    assert fields == {"user": ["null", "string"], "n": ["null", "long"],
                      "ok": ["null", "boolean"], "w": ["null", "double"]}
    got = read_back(broker, registry_url, topic, 2)
    assert [v for _, v, _ in got] == [{"user": "u1", "n": 3, "ok": True, "w": 0.5},
                                      {"user": None, "n": -4, "ok": False, "w": 2.0}]
    assert all(int.from_bytes(raw[1:5], "big") == latest["id"] for _, _, raw in got)

    # n as a string is not BACKWARD-compatible with n as a long: the registry refuses.
    path.write_text('{"user": "u1", "n": "three", "ok": true, "w": 0.5}\n')
    refused = produce(kelt, broker, topic, path, "--subject", subject, "--auto-register",
                      registry_url=registry_url)
    assert refused.returncode == 1, refused.stdout
    assert f"registering the rows' Avro schema under subject '{subject}'" in refused.stderr


def test_without_a_subject_version_or_a_registry_it_fails_clearly(
        kelt, broker, registry_url, tmp_path):
    path = tmp_path / "one.ndjson"
    path.write_text('{"id": 1}\n')
    unknown = "nobody-" + uuid.uuid4().hex[:8] + "-value"
    done = produce(kelt, broker, "t-" + uuid.uuid4().hex[:8], path, "--subject", unknown,
                   registry_url=registry_url)
    assert done.returncode == 1
    assert unknown in done.stderr, done.stderr

    down = produce(kelt, broker, "t-" + uuid.uuid4().hex[:8], path, "--subject", unknown,
                   registry_url="http://127.0.0.1:9")
    assert down.returncode == 1
    assert "127.0.0.1:9" in down.stderr, down.stderr

    missing = produce(kelt, broker, "t", path, "--subject", unknown)
    assert missing.returncode == 1
    assert "needs --registry-url" in missing.stderr

    for fmt in ("protobuf", "json-schema"):
        done = produce(kelt, broker, "t-" + uuid.uuid4().hex[:8], path, "--subject",
                       unknown, registry_url=registry_url, fmt=fmt)
        assert done.returncode == 1, (fmt, done.stdout)
        assert unknown in done.stderr, done.stderr


@pytest.fixture
def kelt_py():
    """The kelt Python package, when it is one that writes Avro (ctest runs the venv's)."""
    import kelt as module  # scripts/test.sh runs these after `pip install .`
    if "value_format" not in inspect.signature(module.export_dataset_to_kafka).parameters:
        pytest.fail("the installed kelt Python package predates value_format")
    return module


@pytest.mark.python_package
def test_python_export_dataset_to_kafka_writes_avro(kelt_py, broker, registry_url, rest):
    topic = "export-" + uuid.uuid4().hex[:10]
    subject = topic + "-value"
    register(rest, subject, {"type": "record", "name": "Row", "fields": [
        {"name": "id", "type": "long"},
        {"name": "name", "type": ["null", "string"], "default": None},
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}}]})
    at = datetime.datetime(2026, 12, 4, 1, 2, 3, 456000, tzinfo=datetime.timezone.utc)
    table = pa.table({"id": pa.array([1, 2], pa.int32()), "name": ["a", None],
                      "at": pa.array([at, at], pa.timestamp("ms", tz="UTC")),
                      "extra": [True, False]})
    sent = kelt_py.export_dataset_to_kafka(
        broker["KELT_KAFKA_BOOTSTRAP"], topic, table, key_column="id", value_format="avro",
        subject=subject, registry_url=registry_url)
    assert sent == 2
    got = read_back(broker, registry_url, topic, 2)
    assert [(k, v) for k, v, _ in got] == [("1", {"id": 1, "name": "a", "at": at}),
                                           ("2", {"id": 2, "name": None, "at": at})]
    # A column the subject's schema cannot take fails before anything is sent.
    with pytest.raises(Exception, match="field 'id'"):
        kelt_py.export_dataset_to_kafka(
            broker["KELT_KAFKA_BOOTSTRAP"], topic, pa.table({"id": ["x"]}),
            value_format="avro", subject=subject, registry_url=registry_url)


@pytest.mark.python_package
def test_the_pipeline_jsons_kafka_sink_writes_avro(kelt_py, broker, registry_url, rest,
                                                   tmp_path):
    topic = "pipeline-" + uuid.uuid4().hex[:10]
    subject = topic + "-value"
    register(rest, subject, {"type": "record", "name": "Sum", "fields": [
        {"name": "user_id", "type": "long"}, {"name": "total", "type": "double"},
        {"name": "origin", "type": "string", "default": "pipeline"}]})
    source = tmp_path / "events.csv"
    source.write_text("user_id,amount\n1,2.5\n1,1.5\n2,4\n")
    sink = {"kind": "kafka", "brokers": broker["KELT_KAFKA_BOOTSTRAP"], "topic": topic,
            "key_column": "user_id", "value_format": "avro", "subject": subject,
            "registry": {"url": registry_url}}
    pipeline = {"pipeline_spec_version": 1,
                "sources": {"paths": [str(source)], "options": {"format": "csv"},
                            "schema": {"fields": [
                                {"name": "user_id", "data_type": "Int64"},
                                {"name": "amount", "data_type": "Float64"}]}},
                "transform": {"sql": "SELECT user_id, sum(amount) AS total FROM df "
                                     "GROUP BY user_id ORDER BY user_id"},
                "sinks": [sink]}
    result = json.loads(kelt_py.run_pipeline_json(pipeline))
    assert result["ok"], result
    got = read_back(broker, registry_url, topic, 2)
    assert [(k, v) for k, v, _ in got] == [
        ("1", {"user_id": 1, "total": 4.0, "origin": "pipeline"}),
        ("2", {"user_id": 2, "total": 4.0, "origin": "pipeline"})]
    # A registry setting the sink cannot use is the parse stage's error.
    bad = dict(pipeline, sinks=[dict(sink, registry={"url": registry_url, "user": "x"})])
    result = json.loads(kelt_py.run_pipeline_json(bad))
    assert not result["ok"]
    assert "registry.user: unknown key" in result["error"]["message"], result
