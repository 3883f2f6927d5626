# Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
"""The way Python users decode a Protobuf topic into Arrow: confluent-kafka's
ProtobufDeserializer on each payload (into the message class), each message's fields
into a dict (a Timestamp as a datetime), then pyarrow.Table.from_pylist — in windows of
10,000 records, as kelt cuts them.

Run by bench/protobuf_benchmark --python=PYTHON (the same payloads, measured in the same
run): protobuf_deserializer_baseline.py PAYLOADS SCHEMA [REPETITIONS]. PAYLOADS holds the
wire-format records, each preceded by its length as 4 little-endian bytes; SCHEMA is the
.proto file, whose first message they all are. The message class is built at run time
from protoc's descriptor set (no generated code). Prints the best repetition's seconds.
"""
import datetime
import pathlib
import subprocess
import sys
import tempfile

from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from wire_baseline import best_seconds, read_payloads


def message_class(proto):
    with tempfile.TemporaryDirectory() as tmp:
        out = pathlib.Path(tmp) / "set.pb"
        subprocess.run(["protoc", f"--descriptor_set_out={out}", "--include_imports",
                        f"-I{proto.parent}", proto.name], check=True)
        files = descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes()).file
    pool = descriptor_pool.DescriptorPool()
    for f in files:
        pool.Add(f)
    main = files[-1]
    name = (main.package + "." if main.package else "") + main.message_type[0].name
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(name))


def main():
    payloads_path, schema_path = sys.argv[1], pathlib.Path(sys.argv[2])
    repetitions = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    payloads = read_payloads(payloads_path)
    cls = message_class(schema_path)
    fields = [(f.name, f.message_type is not None and
               f.message_type.full_name == "google.protobuf.Timestamp")
              for f in cls.DESCRIPTOR.fields]
    utc = datetime.timezone.utc

    def row(m):
        return {n: getattr(m, n).ToDatetime(tzinfo=utc) if ts else getattr(m, n)
                for n, ts in fields}

    deserialize = ProtobufDeserializer(cls, {"use.deprecated.format": False})
    ctx = SerializationContext("bench", MessageField.VALUE)
    best = best_seconds(payloads, lambda p: row(deserialize(p, ctx)), repetitions)
    print(f"{best:.6f}")


if __name__ == "__main__":
    main()
