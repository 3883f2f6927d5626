# Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
"""What the deserializer baselines share (avro_deserializer_baseline.py,
protobuf_deserializer_baseline.py): the payloads file the benchmark writes, and the
timing of windows of 10,000 records into pyarrow tables."""
import struct
import time

import pyarrow as pa


def read_payloads(path):
    """The wire-format records of `path`, each preceded by its length (4 bytes, LE)."""
    data = open(path, "rb").read()
    payloads, at = [], 0
    while at < len(data):
        (n,) = struct.unpack_from("<I", data, at)
        payloads.append(data[at + 4:at + 4 + n])
        at += 4 + n
    return payloads


def best_seconds(payloads, row, repetitions):
    """The best of `repetitions` runs of pyarrow.Table.from_pylist over `row(payload)`
    for every payload, 10,000 at a time."""
    best = None
    for _ in range(repetitions):
        start = time.perf_counter()
        rows = 0
        for w in range(0, len(payloads), 10000):
            table = pa.Table.from_pylist([row(p) for p in payloads[w:w + 10000]])
            rows += table.num_rows
        elapsed = time.perf_counter() - start
        assert rows == len(payloads)
        best = elapsed if best is None else min(best, elapsed)
    return best
