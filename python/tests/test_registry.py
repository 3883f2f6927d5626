# Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
"""kelt.EltLoop with landing_schema="registry:<subject>": Avro records that
confluent-kafka's AvroSerializer wrote land with the subject's schema. Needs the broker
and a Schema Registry (KELT_REGISTRY_ENV: scripts/registry.sh start); missing is a
failure, never a skip."""
import json
import os
from pathlib import Path

import pyarrow.dataset as ds
import pytest
from confluent_kafka import Producer
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

import kelt
from conftest import TOPIC_SUBJECTS, registry_client

CLICK = {"type": "record", "name": "Click", "fields": [
    {"name": "user", "type": "long"},
    {"name": "page", "type": "string"},
    {"name": "tags", "type": {"type": "array", "items": "string"}}]}


@pytest.fixture(scope="session")
def registry_url() -> str:
    env_file = os.environ.get("KELT_REGISTRY_ENV")
    if not env_file or not Path(env_file).is_file():
        pytest.fail("no Schema Registry: set KELT_REGISTRY_ENV to the env file of "
                    "`bash scripts/registry.sh start --dir DIR` (DIR/env)")
    for line in Path(env_file).read_text().splitlines():
        key, _, value = line.partition("=")
        if key == "KELT_REGISTRY_URL":
            return value
    pytest.fail(f"{env_file} names no KELT_REGISTRY_URL")


def test_an_avro_topic_lands_with_the_subjects_schema(broker, registry_url, fresh, tmp_path):
    topic, group = fresh("avro"), fresh("g")
    serialize = AvroSerializer(registry_client(registry_url), json.dumps(CLICK), conf=TOPIC_SUBJECTS)
    ctx = SerializationContext(topic, MessageField.VALUE)
    producer = Producer({"bootstrap.servers": broker})
    for i in range(25):
        producer.produce(topic, value=serialize(
            {"user": i, "page": f"/p{i % 3}", "tags": ["a"] * (i % 2)}, ctx))
    assert producer.flush(30) == 0

    with kelt.EltLoop(broker, group, topic, f"registry:{topic}-value",
                      [kelt.ParquetSink(root=str(tmp_path))], registry_url=registry_url,
                      until_caught_up=True) as loop:
        stats = loop.run()
    assert stats["rows"] == 25 and stats["bad_records"] == 0
    table = ds.dataset(str(tmp_path / topic), format="parquet").to_table()
    assert table.schema.names[:3] == ["user", "page", "tags"]
    rows = sorted(table.select(["user", "page", "tags"]).to_pylist(), key=lambda r: r["user"])
    assert rows[4] == {"user": 4, "page": "/p1", "tags": []}
    assert rows[7] == {"user": 7, "page": "/p1", "tags": ["a"]}


def test_a_wrong_registry_url_is_a_clear_error(broker, fresh, tmp_path):
    with pytest.raises(kelt.KeltError) as e:
        kelt.EltLoop(broker, fresh("g"), fresh("t"), "registry:orders-value",
                     [kelt.ParquetSink(root=str(tmp_path))],
                     registry_url="http://127.0.0.1:9/apis/ccompat/v7")
    assert "127.0.0.1:9" in str(e.value)


def test_registry_keys_land_in_a_kafka_key_column(broker, registry_url, fresh, tmp_path):
    topic, group = fresh("avrokey"), fresh("g")
    client = registry_client(registry_url)
    values = AvroSerializer(client, json.dumps(CLICK), conf=TOPIC_SUBJECTS)
    keys = AvroSerializer(client, '"string"', conf=TOPIC_SUBJECTS)
    vctx = SerializationContext(topic, MessageField.VALUE)
    kctx = SerializationContext(topic, MessageField.KEY)
    producer = Producer({"bootstrap.servers": broker})
    for i in range(6):
        producer.produce(topic, key=keys(f"user-{i}", kctx), value=values(
            {"user": i, "page": "/", "tags": []}, vctx))
    assert producer.flush(30) == 0

    with kelt.EltLoop(broker, group, topic, f"registry:{topic}-value",
                      [kelt.ParquetSink(root=str(tmp_path))], registry_url=registry_url,
                      key_format="registry", until_caught_up=True) as loop:
        stats = loop.run()
    assert stats["rows"] == 6 and stats["bad_records"] == 0
    table = ds.dataset(str(tmp_path / topic), format="parquet").to_table()
    assert str(table.schema.field("_kafka_key").type) == "string"
    assert sorted(table.select(["user", "_kafka_key"]).to_pylist(),
                  key=lambda r: r["user"])[5] == {"user": 5, "_kafka_key": "user-5"}
