# Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
"""The way Python users decode an Avro topic into Arrow: confluent-kafka's
AvroDeserializer on each payload (writer schemas by id from a client's cache), then
pyarrow.Table.from_pylist — in windows of 10,000 records, as kelt cuts them.

Run by bench/avro_benchmark --python=PYTHON (the same payloads, measured in the same
run): avro_deserializer_baseline.py PAYLOADS SCHEMA [REPETITIONS]. PAYLOADS holds the
wire-format records, each preceded by its length as 4 little-endian bytes, all of schema
id 1; SCHEMA is that Avro schema. Prints the best repetition's seconds.
"""
import struct
import sys
import time

import pyarrow as pa
from confluent_kafka.schema_registry import Schema
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.schema_registry._sync.mock_schema_registry_client import \
    MockSchemaRegistryClient
from confluent_kafka.serialization import MessageField, SerializationContext


def main():
    payloads_path, schema_path = sys.argv[1], sys.argv[2]
    repetitions = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    data = open(payloads_path, "rb").read()
    payloads, at = [], 0
    while at < len(data):
        (n,) = struct.unpack_from("<I", data, at)
        payloads.append(data[at + 4:at + 4 + n])
        at += 4 + n
    client = MockSchemaRegistryClient({"url": "mock://bench"})
    schema_id = client.register_schema("bench-value", Schema(open(schema_path).read(), "AVRO"))
    assert schema_id == 1, f"the payloads name schema id 1, the mock gave {schema_id}"
    deserialize = AvroDeserializer(client)
    ctx = SerializationContext("bench", MessageField.VALUE)
    best = None
    for _ in range(repetitions):
        start = time.perf_counter()
        rows = 0
        for w in range(0, len(payloads), 10000):
            table = pa.Table.from_pylist([deserialize(p, ctx) for p in payloads[w:w + 10000]])
            rows += table.num_rows
        elapsed = time.perf_counter() - start
        assert rows == len(payloads)
        best = elapsed if best is None else min(best, elapsed)
    print(f"{best:.6f}")


if __name__ == "__main__":
    main()
