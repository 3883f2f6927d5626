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
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.schema_registry.json_schema import JSONDeserializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.json_format import MessageToDict

from conftest import create_topic, registry_client


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
        deserialize = AvroDeserializer(registry_client(registry_url))
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


def land_subject(kelt, broker, registry_url, topic, schema, tmp_path):
    """`kelt run` lands `topic` by `schema` (a registry subject) into Parquet: rows by id."""
    config = tmp_path / "kelt.yaml"
    config.write_text(json.dumps({
        "brokers": broker["KELT_KAFKA_BOOTSTRAP"], "group": topic + "-g", "topics": [topic],
        "schema": schema, "registry": {"url": registry_url},
        "until_caught_up": True, "on_bad_record": "fail",
        "sinks": [{"parquet": {"root": str(tmp_path / "landing")}}],
    }))
    run = subprocess.run([kelt, "run", "--config", str(config), "--progress", "none"],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    landed = ds.dataset(str(tmp_path / "landing" / topic), format="parquet").to_table()
    return sorted(landed.to_pylist(), key=lambda r: r["id"])


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
    rows = land_subject(kelt, broker, registry_url, topic, f"registry:{subject}", tmp_path)
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


# --- Protobuf -----------------------------------------------------------------------------

ORDER_PROTO = """syntax = "proto3";
package shop;
import "google/protobuf/timestamp.proto";

message Note {
  string text = 1;
}
message Order {
  enum Status { NEW = 0; PAID = 1; SHIPPED = 2; }
  message Address {
    string city = 1;
    optional string zip = 2;
  }
  int64 id = 1;
  optional string customer = 2;
  double score = 3;
  bool paid = 4;
  Status status = 5;
  repeated string tags = 6;
  Address address = 7;
  google.protobuf.Timestamp placed = 8;
  uint32 qty = 9;
}
"""


def register_text(rest, subject, text, schema_type):
    status, answer = rest.post(f"/subjects/{subject}/versions",
                               {"schema": text, "schemaType": schema_type})
    assert status == 200, answer
    return answer["id"]


def message_class(text, name, tmp_path):
    """The message `name` of .proto `text` (a registered schema), compiled by protoc into
    a descriptor pool of its own."""
    src = tmp_path / ("proto-" + uuid.uuid4().hex[:8])
    src.mkdir()
    (src / "schema.proto").write_text(text)
    out = src / "schema.pb"
    subprocess.run(["protoc", f"--descriptor_set_out={out}", "--include_imports",
                    f"-I{src}", "schema.proto"], check=True, capture_output=True, timeout=60)
    pool = descriptor_pool.DescriptorPool()
    for f in descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes()).file:
        pool.Add(f)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(name))


def proto_order_line(i):
    """Order i as an NDJSON line and as the values read back (None: absent)."""
    placed = T0 + datetime.timedelta(seconds=i, microseconds=i)
    line = {"id": i, "customer": None if i % 4 == 0 else f"c{i}", "score": i / 8,
            "paid": i % 2 == 0, "status": ["NEW", "PAID", "SHIPPED"][i % 3],
            "tags": [f"t{k}" for k in range(i % 3)],
            "address": None if i % 5 == 0 else {"city": f"city{i}",
                                                "zip": None if i % 2 else str(10000 + i)},
            "placed": placed.strftime("%Y-%m-%dT%H:%M:%S.%fZ"), "qty": i * 3}
    value = dict(line, placed=(int(placed.timestamp()), i * 1000))
    return json.dumps(line), value


def proto_value(m):
    status = m.DESCRIPTOR.fields_by_name["status"].enum_type.values_by_number[m.status]
    address = None
    if m.HasField("address"):
        address = {"city": m.address.city,
                   "zip": m.address.zip if m.address.HasField("zip") else None}
    return {"id": m.id, "customer": m.customer if m.HasField("customer") else None,
            "score": m.score, "paid": m.paid, "status": status.name, "tags": list(m.tags),
            "address": address, "placed": (m.placed.seconds, m.placed.nanos),
            "qty": m.qty}


def proto_deserializer(cls):
    return ProtobufDeserializer(cls, {"use.deprecated.format": False})


def test_ndjson_becomes_protobuf_records_of_the_named_message(
        kelt, broker, registry_url, rest, tmp_path):
    topic = "produce-pb-" + uuid.uuid4().hex[:10]
    subject = topic + "-value"
    create_topic(kelt, broker, topic)
    schema_id = register_text(rest, subject, ORDER_PROTO, "PROTOBUF")
    lines, expected = zip(*(proto_order_line(i) for i in range(1, 31)))
    path = tmp_path / "orders.ndjson"
    path.write_text("\n".join(lines) + "\n")

    done = produce(kelt, broker, topic, path, "--subject", subject, "--message",
                   "shop.Order", registry_url=registry_url, fmt="protobuf")
    assert done.returncode == 0, done.stderr
    assert "produced 30 messages" in done.stdout

    cls = message_class(rest.get(f"/schemas/ids/{schema_id}")[1]["schema"], "shop.Order",
                        tmp_path)
    got = read_back(broker, registry_url, topic, 30, deserialize=proto_deserializer(cls))
    assert len(got) == 30
    for (_, value, raw), want in zip(got, expected):
        # magic 0, the id, then the message indexes [1] (count 1, index 1; zigzag): 2, 2
        assert raw[0] == 0 and int.from_bytes(raw[1:5], "big") == schema_id
        assert raw[5:7] == b"\x02\x02"
        assert proto_value(value) == want

    # The round trip: kelt lands the message it wrote.
    rows = land_subject(kelt, broker, registry_url, topic,
                        {"registry": {"subject": subject, "message": "shop.Order"}}, tmp_path)
    assert len(rows) == 30
    for row, want in zip(rows, expected):
        for k in ("customer", "score", "paid", "status", "tags", "address", "qty"):
            assert row[k] == want[k], (k, row, want)


def produce_two_clicks_auto_registered(kelt, broker, registry_url, rest, tmp_path, fmt,
                                       schema_type):
    """Two NDJSON clicks produced with --auto-register to a new topic: (topic, subject,
    the subject's latest schema as the registry returns it)."""
    topic = f"produce-{fmt}-" + uuid.uuid4().hex[:10]
    subject = topic + "-value"
    create_topic(kelt, broker, topic)
    path = tmp_path / "clicks.ndjson"
    path.write_text('{"user": "u1", "n": 3, "ok": true, "w": 0.5, "pos": {"x": 1}}\n'
                    '{"user": null, "n": -4, "ok": false, "w": 2, "pos": null}\n')
    done = produce(kelt, broker, topic, path, "--subject", subject, "--auto-register",
                   registry_url=registry_url, fmt=fmt)
    assert done.returncode == 0, done.stderr
    status, latest = rest.get(f"/subjects/{subject}/versions/latest")
    assert status == 200 and latest["schemaType"] == schema_type, latest
    return topic, subject, latest


def test_auto_register_derives_a_proto_and_the_first_message_is_written(
        kelt, broker, registry_url, rest, tmp_path):
    topic, subject, latest = produce_two_clicks_auto_registered(
        kelt, broker, registry_url, rest, tmp_path, "protobuf", "PROTOBUF")
    path = tmp_path / "clicks.ndjson"  # written again below
    name = subject.replace("-", "_")
    assert f"message {name} {{" in latest["schema"]
    assert "optional int64 n = 2;" in latest["schema"]
    cls = message_class(latest["schema"], name, tmp_path)
    got = read_back(broker, registry_url, topic, 2, deserialize=proto_deserializer(cls))
    values = [MessageToDict(v, preserving_proto_field_name=True) for _, v, _ in got]
    # int64 is a string in protobuf's JSON mapping; absent fields are left out.
    assert values == [{"user": "u1", "n": "3", "ok": True, "w": 0.5, "pos": {"x": "1"}},
                      {"n": "-4", "ok": False, "w": 2.0}]
    for _, _, raw in got:
        assert int.from_bytes(raw[1:5], "big") == latest["id"] and raw[5:6] == b"\x00"

    # n as a string is not BACKWARD-compatible with n as an int64: the registry refuses.
    path.write_text('{"user": "u1", "n": "three", "ok": true, "w": 0.5}\n')
    refused = produce(kelt, broker, topic, path, "--subject", subject, "--auto-register",
                      registry_url=registry_url, fmt="protobuf")
    assert refused.returncode == 1, refused.stdout
    assert f"registering the rows' Protobuf schema under subject '{subject}'" in (
        refused.stderr)


def test_protobuf_records_that_do_not_fit_and_wrong_messages_fail_clearly(
        kelt, broker, registry_url, rest, tmp_path):
    topic = "produce-pb-" + uuid.uuid4().hex[:10]
    subject = topic + "-value"
    create_topic(kelt, broker, topic)
    register_text(rest, subject, ORDER_PROTO, "PROTOBUF")
    good, _ = proto_order_line(1)
    path = tmp_path / "orders.ndjson"

    def fails(*lines, args=("--message", "shop.Order")):
        path.write_text("\n".join(lines) + "\n")
        done = produce(kelt, broker, topic, path, "--subject", subject, *args,
                       registry_url=registry_url, fmt="protobuf")
        assert done.returncode == 1, done.stdout
        return done.stderr

    lost = dict(json.loads(good), status="LOST")
    err = fails(good, json.dumps(lost))
    assert "status" in err and "row 1" in err and "LOST" in err, err
    # A value Arrow's JSON reader cannot read as the field's type: its words, the records.
    negative = dict(json.loads(good), qty=-1)
    err = fails(json.dumps(negative))
    assert "records 1-1" in err and "uint32" in err and "-1" in err, err
    extra = dict(json.loads(good), coupon="X")
    err = fails(good, json.dumps(extra))
    assert "record 2: 'coupon' is not a field of the subject's schema" in err, err
    err = fails(good, args=("--message", "shop.Nope"))
    assert "has no message shop.Nope" in err, err
    # Without --message the first message (shop.Note) is written: an Order is no Note.
    err = fails(good, args=())
    assert "record 1: 'id' is not a field of the subject's schema" in err, err
    assert read_back(broker, registry_url, topic, 1, wait=5,
                     deserialize=lambda v, c: v) == []
    # A JSON Schema subject is not written as Protobuf.
    js = topic + "-js"
    register_text(rest, js, json.dumps({"type": "object", "properties": {}}), "JSON")
    done = produce(kelt, broker, topic, path, "--subject", js, registry_url=registry_url,
                   fmt="protobuf")
    assert done.returncode == 1
    assert f"subject '{js}' holds a JSON schema" in done.stderr, done.stderr


# --- JSON Schema --------------------------------------------------------------------------

JSON_ORDER = {
    "$schema": "http://json-schema.org/draft-07/schema#", "title": "Order",
    "type": "object",
    "properties": {
        "id": {"type": "integer"},
        "customer": {"type": ["string", "null"]},
        "score": {"type": "number"},
        "paid": {"type": "boolean"},
        "placed": {"type": "string", "format": "date-time"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "address": {"type": "object", "properties": {
            "city": {"type": "string"}, "zip": {"type": ["string", "null"]}}},
    },
    "required": ["id"],
}


def json_order_line(i):
    """Order i as an NDJSON line and as JSONDeserializer gives it back: nulls are left
    out, the time is RFC 3339 with microseconds."""
    placed = T0 + datetime.timedelta(seconds=i, microseconds=i)
    line = {"id": i, "customer": None if i % 4 == 0 else f"c{i}", "score": i / 8,
            "paid": i % 2 == 0, "placed": placed.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            "tags": [f"t{k}" for k in range(i % 3)],
            "address": None if i % 5 == 0 else {"city": f"city{i}",
                                                "zip": None if i % 2 else str(10000 + i)}}
    value = {k: v for k, v in line.items() if v is not None}
    if "address" in value:
        value["address"] = {k: v for k, v in value["address"].items() if v is not None}
    return json.dumps(line), value


def json_deserializer(registry_url):
    """JSONDeserializer with the writer schema from the registry: it validates each
    record against the registered JSON Schema."""
    return JSONDeserializer(None, schema_registry_client=registry_client(registry_url))


def test_ndjson_becomes_json_schema_records_of_the_subjects_latest_schema(
        kelt, broker, registry_url, rest, tmp_path):
    topic = "produce-js-" + uuid.uuid4().hex[:10]
    subject = topic + "-value"
    create_topic(kelt, broker, topic)
    schema_id = register_text(rest, subject, json.dumps(JSON_ORDER), "JSON")
    lines, expected = zip(*(json_order_line(i) for i in range(1, 31)))
    path = tmp_path / "orders.ndjson"
    path.write_text("\n".join(lines) + "\n")
    done = produce(kelt, broker, topic, path, "--subject", subject,
                   registry_url=registry_url, fmt="json-schema")
    assert done.returncode == 0, done.stderr
    got = read_back(broker, registry_url, topic, 30,
                    deserialize=json_deserializer(registry_url))
    assert len(got) == 30
    for (_, value, raw), want in zip(got, expected):
        assert raw[0] == 0 and int.from_bytes(raw[1:5], "big") == schema_id
        assert json.loads(raw[5:].decode("utf-8")) == value
        assert value == want

    # The round trip: kelt lands them by the subject's JSON Schema.
    rows = land_subject(kelt, broker, registry_url, topic, f"registry:{subject}", tmp_path)
    assert len(rows) == 30
    for row, want in zip(rows, expected):
        assert (row["customer"], row["score"], row["paid"]) == (
            want.get("customer"), want["score"], want["paid"])
        assert row["placed"] == datetime.datetime.fromisoformat(
            want["placed"].replace("Z", "+00:00"))
        assert json.loads(row["tags"]) == want["tags"]
        assert row["address_city"] == want.get("address", {}).get("city")
        assert row["address_zip"] == want.get("address", {}).get("zip")


def test_json_schema_auto_register_and_records_that_do_not_fit(
        kelt, broker, registry_url, rest, tmp_path):
    topic, subject, latest = produce_two_clicks_auto_registered(
        kelt, broker, registry_url, rest, tmp_path, "json-schema", "JSON")
    path = tmp_path / "clicks.ndjson"  # written again below
    schema = json.loads(latest["schema"])
    assert schema["$schema"] == "http://json-schema.org/draft-07/schema#"
    assert schema["properties"]["n"] == {"type": ["integer", "null"]}
    assert schema["properties"]["pos"]["properties"] == {"x": {"type": ["integer", "null"]}}
    got = read_back(broker, registry_url, topic, 2,
                    deserialize=json_deserializer(registry_url))
    assert [v for _, v, _ in got] == [{"user": "u1", "n": 3, "ok": True, "w": 0.5,
                                       "pos": {"x": 1}},
                                      {"n": -4, "ok": False, "w": 2.0}]

    # With the subject's latest schema each value is checked: the record and field named.
    def fails(*lines):
        path.write_text("\n".join(lines) + "\n")
        done = produce(kelt, broker, topic, path, "--subject", subject,
                       registry_url=registry_url, fmt="json-schema")
        assert done.returncode == 1, done.stdout
        return done.stderr

    err = fails('{"user": "a", "n": 1}', '{"user": "b", "n": 2.5}')
    assert "record 1: field 'n': 2.5 is not an integer" in err, err
    err = fails('{"user": 7}')
    assert "record 0: field 'user': an integer where the schema wants a string" in err, err
    err = fails('{"n": 1}', '{"n": 2, "coupon": "X"}')
    assert "record 1: field 'coupon': not a property of the subject's JSON Schema" in err
    err = fails('{"pos": {"x": "left"}}')
    assert "record 0: field 'pos.x': a string where the schema wants an integer" in err, err
    assert len(read_back(broker, registry_url, topic, 3, wait=5,
                         deserialize=lambda v, c: v)) == 2  # nothing more was sent


@pytest.mark.python_package
def test_python_export_dataset_to_kafka_writes_protobuf_and_json_schema(
        kelt_py, broker, registry_url, rest, tmp_path):
    table = pa.table({"id": pa.array([1, 2], pa.int32()), "name": ["a", None]})
    topic = "export-pb-" + uuid.uuid4().hex[:10]
    subject = topic + "-value"
    schema_id = register_text(rest, subject, ORDER_PROTO, "PROTOBUF")
    sent = kelt_py.export_dataset_to_kafka(
        broker["KELT_KAFKA_BOOTSTRAP"], topic, table.rename_columns(["id", "customer"]),
        key_column="id", value_format="protobuf", subject=subject, message="shop.Order",
        registry_url=registry_url)
    assert sent == 2
    cls = message_class(ORDER_PROTO, "shop.Order", tmp_path)
    got = read_back(broker, registry_url, topic, 2, deserialize=proto_deserializer(cls))
    assert [(k, v.id, v.customer if v.HasField("customer") else None)
            for k, v, _ in got] == [("1", 1, "a"), ("2", 2, None)]
    assert all(int.from_bytes(raw[1:5], "big") == schema_id for _, _, raw in got)
    with pytest.raises(Exception, match="no message shop.Nope"):
        kelt_py.export_dataset_to_kafka(
            broker["KELT_KAFKA_BOOTSTRAP"], topic, table.select(["id"]),
            value_format="protobuf", subject=subject, message="shop.Nope",
            registry_url=registry_url)

    # A DataSet JSON document: the producer config JSON path the C ABI's
    # rdp_kafka_export_dataset_json takes too.
    dataset = {"schema": {"fields": [{"name": "id", "data_type": "Int64"},
                                     {"name": "name", "data_type": "Utf8"}]},
               "rows": [[{"Int64": 1}, {"Utf8": "a"}], [{"Int64": 2}, None]]}
    topic = "export-js-" + uuid.uuid4().hex[:10]
    sent = kelt_py.export_dataset_to_kafka(
        broker["KELT_KAFKA_BOOTSTRAP"], topic, dataset, value_format="json-schema",
        subject=topic + "-value", registry_url=registry_url, auto_register=True)
    assert sent == 2
    got = read_back(broker, registry_url, topic, 2,
                    deserialize=json_deserializer(registry_url))
    assert [v for _, v, _ in got] == [{"id": 1, "name": "a"}, {"id": 2}]
    # A record that does not fit the subject's (now registered) JSON Schema.
    bad = {"schema": {"fields": [{"name": "id", "data_type": "Utf8"}]},
           "rows": [[{"Utf8": "x"}]]}
    with pytest.raises(Exception, match="record 0: field 'id': a string where the schema"):
        kelt_py.export_dataset_to_kafka(
            broker["KELT_KAFKA_BOOTSTRAP"], topic, bad, value_format="json-schema",
            subject=topic + "-value", registry_url=registry_url)

