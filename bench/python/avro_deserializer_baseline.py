# Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
"""The way Python users decode an Avro topic into Arrow: confluent-kafka's
AvroDeserializer on each payload (writer schemas by id from a client's cache), then
pyarrow.Table.from_pylist — in windows of 10,000 records, as kelt cuts them.

Run by bench/avro_benchmark --python=PYTHON (the same payloads, measured in the same
run): avro_deserializer_baseline.py PAYLOADS SCHEMA [REPETITIONS]. PAYLOADS holds the
wire-format records, each preceded by its length as 4 little-endian bytes, all of schema
id 1; SCHEMA is that Avro schema. Prints the best repetition's seconds.
"""
import sys

from confluent_kafka.schema_registry import Schema
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.schema_registry._sync.mock_schema_registry_client import \
    MockSchemaRegistryClient
from confluent_kafka.serialization import MessageField, SerializationContext

from wire_baseline import best_seconds, read_payloads


def main():
    payloads_path, schema_path = sys.argv[1], sys.argv[2]
    repetitions = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    payloads = read_payloads(payloads_path)
    client = MockSchemaRegistryClient({"url": "mock://bench"})
    schema_id = client.register_schema("bench-value", Schema(open(schema_path).read(), "AVRO"))
    assert schema_id == 1, f"the payloads name schema id 1, the mock gave {schema_id}"
    deserialize = AvroDeserializer(client)
    ctx = SerializationContext("bench", MessageField.VALUE)
    best = best_seconds(payloads, lambda p: deserialize(p, ctx), repetitions)
    print(f"{best:.6f}")


if __name__ == "__main__":
    main()
