# Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
"""The way Python users produce a Protobuf topic: each row (a dict, as
pyarrow.Table.to_pylist gives it; the timestamp as (seconds, nanos)) into the message
class, then confluent-kafka's ProtobufSerializer (schema id cached by its client after the
first record; a MockSchemaRegistryClient, so no network) into the wire format.

Run by bench/protobuf_benchmark --python=PYTHON (the same records, measured in the same
run): protobuf_serializer_baseline.py PAYLOADS SCHEMA [REPETITIONS]. PAYLOADS holds the
wire-format records (each preceded by its length as 4 little-endian bytes); they are
decoded into the rows before timing starts. Prints the best repetition's seconds and
checks that the bodies equal the given ones.
"""
import sys
import time
import pathlib

from confluent_kafka.schema_registry._sync.mock_schema_registry_client import (
    MockSchemaRegistryClient)
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from protobuf_deserializer_baseline import message_class
from wire_baseline import read_payloads


def main():
    payloads_path, schema_path = sys.argv[1], pathlib.Path(sys.argv[2])
    repetitions = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    payloads = read_payloads(payloads_path)
    cls = message_class(schema_path)
    names = [f.name for f in cls.DESCRIPTOR.fields]
    rows = []
    for p in payloads:  # the header: magic byte, id, message indexes [0]
        m = cls.FromString(p[6:])
        row = {n: getattr(m, n) for n in names[:-1]}
        row["ts"] = (m.ts.seconds, m.ts.nanos)
        rows.append(row)
    serialize = ProtobufSerializer(cls, MockSchemaRegistryClient({"url": "mock://bench"}),
                                   {"use.deprecated.format": False,
                                    "auto.register.schemas": True})
    ctx = SerializationContext("bench", MessageField.VALUE)
    best, out = None, []
    for _ in range(repetitions):
        start = time.perf_counter()
        out = []
        for row in rows:
            seconds, nanos = row["ts"]
            m = cls(**{k: v for k, v in row.items() if k != "ts"})
            m.ts.seconds, m.ts.nanos = seconds, nanos
            out.append(serialize(m, ctx))
        elapsed = time.perf_counter() - start
        best = elapsed if best is None else min(best, elapsed)
    assert all(a[6:] == b[6:] for a, b in zip(out, payloads)), "bodies differ"
    print(f"{best:.6f}")


if __name__ == "__main__":
    main()
