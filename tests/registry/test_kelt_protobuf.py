# Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
"""`kelt run --schema registry:<subject>` on a topic that confluent-kafka's
ProtobufSerializer wrote, with two versions of the subject's schema mid-topic and an
imported file registered as a reference, into Parquet, DuckDB and PostgreSQL: nested
messages, repeated fields, maps, oneofs, enums, Timestamps and wrappers, a tombstone, a
record not in the wire format and one whose body is cut short.

The message classes come from the .proto files under proto/ at run time: protoc (Debian's
protobuf-compiler, scripts/bootstrap.sh) writes a descriptor set, google.protobuf builds
the classes from it; no generated code is kept. Needs what test_kelt_avro.py needs.
"""
import datetime
import json
import pathlib
import signal
import subprocess
import uuid

import duckdb
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
from confluent_kafka import Producer
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from conftest import (TOPIC_SUBJECTS, create_topic, every_sink_config, registry_client,
                      start_run, validated, wait_for_ids)

PROTO = pathlib.Path(__file__).resolve().parent / "proto"
T0 = datetime.datetime(2026, 12, 1, 12, 0, tzinfo=datetime.timezone.utc)
STATUS = ["NEW", "PAID", "SHIPPED"]


def order_class(version, tmp_path):
    """shop.Order of proto/shop/order.proto (version 2: with a coupon), which imports
    proto/shop/address.proto and well-known types, in a descriptor pool of its own."""
    src = tmp_path / version
    (src / "shop").mkdir(parents=True, exist_ok=True)
    text = (PROTO / "shop/order.proto").read_text()
    if version == "v2":
        last = "  optional double discount = 10;\n"
        text = text.replace(last, last + "  string coupon = 11;\n")
    (src / "shop/order.proto").write_text(text)
    (src / "shop/address.proto").write_text((PROTO / "shop/address.proto").read_text())
    out = tmp_path / f"{version}.pb"
    subprocess.run(["protoc", f"--descriptor_set_out={out}", "--include_imports",
                    f"-I{src}", "shop/order.proto"],
                   check=True, capture_output=True, timeout=60)
    pool = descriptor_pool.DescriptorPool()
    for f in descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes()).file:
        pool.Add(f)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("shop.Order"))


def order(i, v2=False):
    """The values of order i, as kelt should land them (None: null)."""
    o = {"id": i, "customer": f"c{i % 7}",
         "placed_ns": int(T0.timestamp()) * 10**9 + i * 10**9 + i * 1000,
         "status": STATUS[i % 3], "tags": [f"t{k}" for k in range(i % 3)],
         "counts": {f"k{k}": k * i for k in range(i % 2 + 1)},
         "address": None if i % 5 == 0 else {"city": f"city{i % 4}",
                                             "zip": None if i % 2 else str(10000 + i)},
         "card": f"card{i}" if i % 2 == 0 else None,
         "voucher": None if i % 2 == 0 else i,
         "discount": None if i % 3 == 0 else i / 4}
    o["coupon"] = (f"SAVE{i}" if i % 2 == 0 else "") if v2 else None
    return o


def message(cls, o):
    m = cls(id=o["id"], customer=o["customer"], status=o["status"], tags=o["tags"])
    m.placed.seconds, m.placed.nanos = divmod(o["placed_ns"], 10**9)
    for k, v in o["counts"].items():
        m.counts[k] = v
    if o["address"] is not None:
        m.address.city = o["address"]["city"]
        if o["address"]["zip"] is not None:
            m.address.zip.value = o["address"]["zip"]
    if o["card"] is not None:
        m.card = o["card"]
    else:
        m.voucher = o["voucher"]
    if o["discount"] is not None:
        m.discount = o["discount"]
    if o["coupon"]:
        m.coupon = o["coupon"]
    return m


def produce_orders(topic, registry_url, broker, tmp_path):
    """40 orders of version 1, 30 of version 2, a tombstone, a JSON record and a cut
    version-2 record; returns the expected rows by id and the cut record's bytes."""
    client = registry_client(registry_url)
    ctx = SerializationContext(topic, MessageField.VALUE)
    producer = Producer({"bootstrap.servers": broker["KELT_KAFKA_BOOTSTRAP"]})
    expected = {}
    for version, ids in (("v1", range(40)), ("v2", range(40, 70))):
        cls = order_class(version, tmp_path)
        serialize = ProtobufSerializer(cls, client, conf=TOPIC_SUBJECTS)
        for i in ids:
            expected[i] = order(i, version == "v2")
            producer.produce(topic, key=str(i).encode(), partition=i % 2,
                             value=serialize(message(cls, expected[i]), ctx))
    # Coupon (field 11, the last on the wire) cut short: TRUNCATED at field 'coupon'.
    cut = serialize(message(cls, order(70, True)), ctx)[:-2]
    producer.produce(topic, key=b"cut", value=cut, partition=0)
    producer.produce(topic, key=b"gone", value=None, partition=0)            # a tombstone
    producer.produce(topic, key=b"json", value=b'{"id": 1}', partition=1)    # no header
    assert producer.flush(30) == 0
    return expected, cut


def test_a_protobuf_topic_of_two_schema_versions_lands_in_every_sink(
        kelt, broker, pg, registry_url, tmp_path):
    topic = "proto-" + uuid.uuid4().hex[:10]
    subject = topic + "-value"
    create_topic(kelt, broker, topic, 2)
    expected, cut = produce_orders(topic, registry_url, broker, tmp_path)

    conninfo = pg["KELT_PG_CONNINFO"]
    schema = {"registry": {"subject": subject, "message": "shop.Order"}}
    config, table = every_sink_config(tmp_path, broker, pg, topic, schema, registry_url)
    shown = validated(kelt, config)
    assert f"subject {subject} version 2" in shown, shown
    for column in ("placed: timestamp[ns, tz=UTC]", "counts: map<string, int32>",
                   "address: struct<city: string, zip: string>", "voucher: int64",
                   "coupon: string"):
        assert column in shown, shown

    run = subprocess.run([kelt, "run", "--config", str(config), "--progress", "none"],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr

    # Parquet: the Arrow types of the reader (version 2), every value.
    landed = ds.dataset(str(tmp_path / "landing" / topic), format="parquet").to_table()
    schema = landed.schema
    assert str(schema.field("placed").type) == "timestamp[ns, tz=UTC]"
    assert pa.types.is_dictionary(schema.field("status").type)
    assert str(schema.field("tags").type.value_type) == "string"
    counts = schema.field("counts").type
    assert pa.types.is_map(counts) and (str(counts.key_type), str(counts.item_type)) == (
        "string", "int32")
    assert schema.field("address").type.num_fields == 2
    assert str(schema.field("discount").type) == "double"
    placed = landed.column("placed").cast(pa.int64()).to_pylist()
    rows = {}
    for r, ns in zip(landed.to_pylist(), placed):
        r["placed_ns"] = ns
        r["counts"] = None if r["counts"] is None else dict(r["counts"])
        rows.setdefault(r["id"], []).append(r)
    assert sorted(k for k in rows if k is not None) == list(range(70))
    for i, o in expected.items():
        [r] = rows[i]
        for k, v in o.items():
            assert r[k] == v, (i, k, r[k], v)
    [tombstone] = rows[None]
    assert tombstone["_kafka_partition"] == 0 and tombstone["customer"] is None
    dead = ds.dataset(str(tmp_path / "landing" / "_dead_letter" / topic),
                      format="parquet").to_table().sort_by("_kafka_partition").to_pylist()
    assert [(d["_error_code"], d["_error_field"]) for d in dead] == [
        ("TRUNCATED", "coupon"), ("MALFORMED_PAYLOAD", None)]
    assert dead[0]["_kafka_value"] == cut

    # DuckDB: nested columns as STRUCT / LIST / MAP, the enum as text.
    with duckdb.connect(str(tmp_path / "orders.duckdb"), read_only=True) as db:
        got = db.execute(
            "SELECT id, status, len(tags), cardinality(counts), address.city, address.zip, "
            "card, voucher, discount, coupon FROM orders WHERE id IN (7, 44) "
            "ORDER BY id").fetchall()
    assert got == [(7, "PAID", 1, 2, "city3", None, None, 7, 1.75, None),
                   (44, "SHIPPED", 2, 1, "city0", "10044", "card44", None, 11.0, "SAVE44")]

    # PostgreSQL: timestamptz, nested values as jsonb.
    psql = subprocess.run(
        ["psql", conninfo, "-At", "-c",
         "SELECT id, status, to_char(placed AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US'), "
         "address->>'zip', counts::text, card, voucher, coupon "
         f"FROM \"{table}\" WHERE id IN (7, 44) ORDER BY id"],
        capture_output=True, text=True, timeout=60)
    assert psql.returncode == 0, psql.stderr
    assert psql.stdout.splitlines() == [
        '7|PAID|2026-12-01 12:00:07.000007||{"k0": 0, "k1": 7}||7|',
        '44|SHIPPED|2026-12-01 12:00:44.000044|10044|{"k0": 0}|card44||SAVE44']


def test_a_protobuf_subject_of_a_new_version_mid_run_adds_a_column(
        kelt, broker, registry_url, tmp_path):
    """The subject moves on while kelt runs: the landing grows by the new field."""
    topic = "proto-" + uuid.uuid4().hex[:10]
    create_topic(kelt, broker, topic, 1)
    client = registry_client(registry_url)
    ctx = SerializationContext(topic, MessageField.VALUE)
    producer = Producer({"bootstrap.servers": broker["KELT_KAFKA_BOOTSTRAP"]})
    v1 = order_class("v1", tmp_path)
    for i in range(10):
        producer.produce(topic, value=ProtobufSerializer(v1, client, conf=TOPIC_SUBJECTS)(message(v1, order(i)),
                                                                     ctx))
    assert producer.flush(30) == 0
    config = tmp_path / "kelt.yaml"
    config.write_text(json.dumps({
        "brokers": broker["KELT_KAFKA_BOOTSTRAP"], "group": topic + "-g", "topics": [topic],
        "schema": f"registry:{topic}-value", "registry": {"url": registry_url},
        "window": {"max_wait_ms": 200},
        "sinks": [{"parquet": {"root": str(tmp_path / "landing"), "rotate_age_ms": 300}}],
    }))
    proc = start_run(kelt, config)
    root = tmp_path / "landing" / topic
    try:
        wait_for_ids(proc, root, 10)
        v2 = order_class("v2", tmp_path)
        serialize = ProtobufSerializer(v2, client, conf=TOPIC_SUBJECTS)
        for i in range(10, 16):
            producer.produce(topic, value=serialize(message(v2, order(i, True)), ctx))
        assert producer.flush(30) == 0
        wait_for_ids(proc, root, 16)
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, out + err
    assert "columns added: coupon" in err, err
    rows = {r["id"]: r.get("coupon") for f in root.rglob("*.parquet")
            for r in pq.read_table(f).to_pylist()}
    assert [rows[i] for i in range(10)] == [None] * 10
    assert [rows[i] for i in range(10, 16)] == [order(i, True)["coupon"] for i in range(10, 16)]


def test_a_protobuf_message_the_schema_lacks_is_a_config_error(
        kelt, broker, registry_url, tmp_path):
    topic = "proto-" + uuid.uuid4().hex[:10]
    client = registry_client(registry_url)
    cls = order_class("v1", tmp_path)
    ProtobufSerializer(cls, client, conf=TOPIC_SUBJECTS)(message(cls, order(1)),
                                    SerializationContext(topic, MessageField.VALUE))
    config = tmp_path / "kelt.yaml"
    config.write_text(json.dumps({
        "brokers": broker["KELT_KAFKA_BOOTSTRAP"], "group": "g", "topics": [topic],
        "schema": {"registry": {"subject": topic + "-value", "message": "shop.Nope"}},
        "registry": {"url": registry_url}, "sinks": [{"parquet": {"root": str(tmp_path)}}],
    }))
    run = subprocess.run([kelt, "validate", "--config", str(config)], capture_output=True,
                         text=True, timeout=60)
    assert run.returncode != 0
    assert "has no message shop.Nope" in run.stderr, run.stderr


if __name__ == "__main__":
    pytest.main([__file__])
