# Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
"""A real Schema Registry for issue #14: Avro, Protobuf and JSON schemas register and read
back by id, BACKWARD compatibility refuses an incompatible change, and confluent-kafka's
serializers round-trip records against it in Confluent's wire format (no broker needed).
These are the registry behaviours the decoders and the produce side will rely on."""
import base64
import json
import struct

import pytest
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from conftest import TOPIC_SUBJECTS, registry_client

AVRO_CLICK = {
    "type": "record", "name": "Click", "namespace": "kelt.test",
    "fields": [
        {"name": "user", "type": "string"},
        {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "amount", "type": ["null", "double"], "default": None},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
    ],
}
PROTO_CLICK = """\
syntax = "proto3";
package kelt.test;

message Click {
  string user = 1;
  int64 ts = 2;
  repeated string tags = 3;
}
"""
JSON_CLICK = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "Click", "type": "object",
    "properties": {"user": {"type": "string"}, "ts": {"type": "integer"}},
    "required": ["user", "ts"],
}


def with_field(schema, field):
    return {**schema, "fields": [*schema["fields"], field]}


def confluent_header(payload):
    """(magic byte, schema id) of a record in Confluent's wire format."""
    return payload[0], struct.unpack(">I", payload[1:5])[0]


def register(rest, subject, schema, schema_type=None):
    body = {"schema": schema if isinstance(schema, str) else json.dumps(schema)}
    if schema_type:
        body["schemaType"] = schema_type
    status, answer = rest.post(f"/subjects/{subject}/versions", body)
    assert status == 200, answer
    return answer["id"]


def test_the_registry_is_backward_by_default(rest):
    status, config = rest.get("/config")
    assert (status, config["compatibilityLevel"]) == (200, "BACKWARD")


def test_an_avro_schema_registers_and_reads_back_by_id(rest, subject):
    schema_id = register(rest, subject, AVRO_CLICK)
    status, by_id = rest.get(f"/schemas/ids/{schema_id}")
    assert status == 200
    assert by_id.get("schemaType", "AVRO") == "AVRO"
    assert json.loads(by_id["schema"]) == AVRO_CLICK
    # The same schema again is the same id, not a new version.
    assert register(rest, subject, AVRO_CLICK) == schema_id
    status, latest = rest.get(f"/subjects/{subject}/versions/latest")
    assert (latest["id"], latest["version"]) == (schema_id, 1)


def test_a_protobuf_schema_registers_and_reads_back_by_id(rest, subject):
    schema_id = register(rest, subject, PROTO_CLICK, "PROTOBUF")
    status, by_id = rest.get(f"/schemas/ids/{schema_id}")
    assert status == 200
    assert by_id["schemaType"] == "PROTOBUF"
    # Registered as .proto text, it comes back as text.
    assert "message Click" in by_id["schema"] and "repeated string tags = 3" in by_id["schema"]


def test_a_json_schema_registers_and_reads_back_by_id(rest, subject):
    schema_id = register(rest, subject, JSON_CLICK, "JSON")
    status, by_id = rest.get(f"/schemas/ids/{schema_id}")
    assert status == 200
    assert by_id["schemaType"] == "JSON"
    assert json.loads(by_id["schema"]) == JSON_CLICK


def test_backward_compatibility_refuses_a_field_without_a_default(rest, subject):
    register(rest, subject, AVRO_CLICK)
    breaking = with_field(AVRO_CLICK, {"name": "country", "type": "string"})
    evolving = with_field(AVRO_CLICK, {"name": "country", "type": "string", "default": ""})

    status, answer = rest.post(f"/compatibility/subjects/{subject}/versions/latest",
                               {"schema": json.dumps(breaking)})
    assert (status, answer["is_compatible"]) == (200, False)
    status, answer = rest.post(f"/subjects/{subject}/versions", {"schema": json.dumps(breaking)})
    assert status == 409, answer

    status, answer = rest.post(f"/compatibility/subjects/{subject}/versions/latest",
                               {"schema": json.dumps(evolving)})
    assert (status, answer["is_compatible"]) == (200, True)
    new_id = register(rest, subject, evolving)
    status, versions = rest.get(f"/subjects/{subject}/versions")
    assert versions == [1, 2]
    assert rest.get(f"/subjects/{subject}/versions/2")[1]["id"] == new_id


def test_a_narrowed_type_is_incompatible_too(rest, subject):
    register(rest, subject, AVRO_CLICK)
    narrowed = {**AVRO_CLICK, "fields": [
        {**f, "type": "int"} if f["name"] == "ts" else f for f in AVRO_CLICK["fields"]]}
    status, answer = rest.post(f"/compatibility/subjects/{subject}/versions/latest",
                               {"schema": json.dumps(narrowed)})
    assert (status, answer["is_compatible"]) == (200, False)


@pytest.fixture
def client(registry_url):
    return registry_client(registry_url)


def test_avro_serializer_round_trips_a_record(client, registry_url, rest, subject):
    topic = subject.removesuffix("-value")
    ctx = SerializationContext(topic, MessageField.VALUE)
    record = {"user": "ada", "ts": 1_700_000_000_123, "amount": 12.5, "tags": ["a", "b"]}
    payload = AvroSerializer(client, json.dumps(AVRO_CLICK), conf=TOPIC_SUBJECTS)(record, ctx)

    magic, schema_id = confluent_header(payload)
    status, latest = rest.get(f"/subjects/{subject}/versions/latest")
    assert status == 200, latest  # auto-registered under <topic>-value
    assert (magic, schema_id) == (0, latest["id"])

    # A fresh client: the deserializer has to fetch the writer schema by id.
    fresh = registry_client(registry_url)
    decoded = AvroDeserializer(fresh)(payload, ctx)
    assert decoded["user"] == "ada" and decoded["tags"] == ["a", "b"]
    assert decoded["amount"] == 12.5
    assert int(decoded["ts"].timestamp() * 1000) == record["ts"]


def click_class():
    """The Click message class, built at run time from a FileDescriptorProto (the way kelt
    will build descriptors from the registry; no protoc-generated code)."""
    proto = descriptor_pb2.FieldDescriptorProto
    file = descriptor_pb2.FileDescriptorProto(name="kelt/test/click.proto",
                                              package="kelt.test", syntax="proto3")
    message = file.message_type.add(name="Click")
    message.field.add(name="user", number=1, type=proto.TYPE_STRING, label=proto.LABEL_OPTIONAL)
    message.field.add(name="ts", number=2, type=proto.TYPE_INT64, label=proto.LABEL_OPTIONAL)
    message.field.add(name="tags", number=3, type=proto.TYPE_STRING, label=proto.LABEL_REPEATED)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("kelt.test.Click"))


def test_protobuf_serializer_round_trips_a_record(client, rest, subject):
    Click = click_class()
    ctx = SerializationContext(subject.removesuffix("-value"), MessageField.VALUE)
    payload = ProtobufSerializer(Click, client, conf=TOPIC_SUBJECTS)(Click(user="ada", ts=42, tags=["x"]), ctx)

    magic, schema_id = confluent_header(payload)
    assert magic == 0
    assert payload[5] == 0  # message indexes: [0], the first message, written as one 0 byte
    status, by_id = rest.get(f"/schemas/ids/{schema_id}")
    assert (status, by_id["schemaType"]) == (200, "PROTOBUF")
    # Registered by the Python client, the schema comes back as a base64-encoded
    # FileDescriptorProto, not as .proto text: kelt has to accept both forms.
    file = descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(by_id["schema"]))
    assert [m.name for m in file.message_type] == ["Click"]

    decoded = ProtobufDeserializer(Click, {}, client)(payload, ctx)
    assert (decoded.user, decoded.ts, list(decoded.tags)) == ("ada", 42, ["x"])


def test_json_serializer_round_trips_a_record(client, rest, subject):
    ctx = SerializationContext(subject.removesuffix("-value"), MessageField.VALUE)
    payload = JSONSerializer(json.dumps(JSON_CLICK), client, conf=TOPIC_SUBJECTS)({"user": "ada", "ts": 7}, ctx)
    magic, schema_id = confluent_header(payload)
    assert (magic, rest.get(f"/schemas/ids/{schema_id}")[1]["schemaType"]) == (0, "JSON")
    assert json.loads(payload[5:]) == {"user": "ada", "ts": 7}
    decoded = JSONDeserializer(json.dumps(JSON_CLICK), schema_registry_client=client)(payload, ctx)
    assert decoded == {"user": "ada", "ts": 7}
