#!/usr/bin/env python3
# Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
"""Consume one JSON topic into a pyarrow Table: kelt's Python API vs. the way Python users
do it today (confluent-kafka, json.loads per message, pyarrow.Table.from_pylist).

    python bench/python/consume_benchmark.py [--records 1000000] [--bootstrap HOST:PORT]

The broker comes from --bootstrap, KELT_KAFKA_BOOTSTRAP or the KELT_KAFKA_ENV file
(`bash scripts/kafka.sh start --dir DIR` writes DIR/env). The topic is produced once (with
kelt's producer) and both contenders read all of it, each with a fresh consumer group, in
the same process; each landed table is checked (row count, sum of ids) so the two did the
same work. Prints records/s and CPU time a record (the process's, all threads) of both and
the ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import uuid
from pathlib import Path

import pyarrow as pa

import kelt

SCHEMA = pa.schema([("id", pa.int64()), ("user", pa.string()), ("event", pa.string()),
                    ("amount", pa.float64()), ("ts", pa.int64()),
                    ("_kafka_partition", pa.int64()), ("_kafka_offset", pa.int64())])
LANDING = [{"name": f.name, "data_type": "int64" if f.type == pa.int64() else
            "float64" if f.type == pa.float64() else "utf8"} for f in SCHEMA]
EVENTS = ["view", "click", "purchase", "signup", "logout"]
# Larger fetches than librdkafka's 1 MiB per partition (one outstanding fetch per broker,
# so small fetches cap a single-partition topic's rate). Both contenders get the same.
FETCH = {"max.partition.fetch.bytes": str(16 << 20), "fetch.max.bytes": str(64 << 20)}


def bootstrap_from_env() -> str | None:
    if os.environ.get("KELT_KAFKA_BOOTSTRAP"):
        return os.environ["KELT_KAFKA_BOOTSTRAP"]
    env_file = os.environ.get("KELT_KAFKA_ENV")
    if env_file and Path(env_file).is_file():
        for line in Path(env_file).read_text().splitlines():
            if line.startswith("KELT_KAFKA_BOOTSTRAP="):
                return line.split("=", 1)[1].strip()
    return None


def produce(bootstrap: str, topic: str, n: int, chunk: int = 200_000) -> None:
    for start in range(0, n, chunk):
        ids = range(start, min(n, start + chunk))
        batch = pa.table({"id": list(ids), "user": [f"user-{i % 9973}" for i in ids],
                          "event": [EVENTS[i % 5] for i in ids],
                          "amount": [(i % 1000) / 10 for i in ids],
                          "ts": [1_700_000_000_000 + i for i in ids]})
        sent = kelt.export_dataset_to_kafka(bootstrap, topic, batch, key_column="id",
                                            message_timeout_ms=120_000,
                                            properties={"linger.ms": 20,
                                                        "batch.size": 1_000_000})
        assert sent == len(ids)


def consume_kelt(bootstrap: str, topic: str, n: int) -> pa.Table:
    tables = []
    got = 0
    with kelt.Consumer(bootstrap, f"bench-kelt-{uuid.uuid4().hex}", topic,
                       properties=FETCH) as consumer:
        while got < n:
            w = consumer.poll(LANDING, max_records=min(200_000, n - got), max_wait_ms=30_000)
            if w.row_count() == 0:
                raise RuntimeError(f"kelt: no more records after {got} of {n}")
            tables.append(pa.table(w))
            got += w.row_count()
    return pa.concat_tables(tables)


def consume_confluent(bootstrap: str, topic: str, n: int) -> pa.Table:
    from confluent_kafka import Consumer

    consumer = Consumer({"bootstrap.servers": bootstrap,
                         "group.id": f"bench-confluent-{uuid.uuid4().hex}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         **FETCH})
    consumer.subscribe([topic])
    rows = []
    deadline = time.monotonic() + 300
    try:
        while len(rows) < n:
            if time.monotonic() > deadline:
                raise RuntimeError(f"confluent-kafka: only {len(rows)} of {n} records")
            for msg in consumer.consume(num_messages=10_000, timeout=1.0):
                if msg.error():
                    raise RuntimeError(str(msg.error()))
                row = json.loads(msg.value())
                row["_kafka_partition"] = msg.partition()
                row["_kafka_offset"] = msg.offset()
                rows.append(row)
    finally:
        consumer.close()
    return pa.Table.from_pylist(rows, schema=SCHEMA)


def timed(fn, *args):
    """Run fn; return its table, wall seconds and the process's CPU seconds (all threads:
    librdkafka's too), the steadier figure on a shared machine."""
    start, cpu_start = time.perf_counter(), time.process_time()
    table = fn(*args)
    return table, time.perf_counter() - start, time.process_time() - cpu_start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--bootstrap", default=bootstrap_from_env())
    parser.add_argument("--topic", help="an existing topic of --records records (skip producing)")
    parser.add_argument("--repetitions", type=int, default=3,
                        help="paired runs of both contenders (order flips each time)")
    args = parser.parse_args()
    if not args.bootstrap:
        parser.error("no broker: --bootstrap, KELT_KAFKA_BOOTSTRAP or KELT_KAFKA_ENV")
    n = args.records
    topic = args.topic or f"bench-py-{uuid.uuid4().hex[:10]}"
    if not args.topic:
        start = time.perf_counter()
        produce(args.bootstrap, topic, n)
        print(f"produced {n:,} JSON records to {topic} in {time.perf_counter() - start:.1f}s")

    want_sum = n * (n - 1) // 2
    contenders = [("kelt", consume_kelt),
                  ("confluent-kafka + json + from_pylist", consume_confluent)]
    rates: dict[str, list[float]] = {name: [] for name, _ in contenders}
    cpus: dict[str, list[float]] = {name: [] for name, _ in contenders}
    ratios = []
    cpu_ratios = []
    for rep in range(args.repetitions):
        # The order flips every repetition, so neither always runs on a warmer machine.
        order = contenders if rep % 2 == 0 else contenders[::-1]
        rep_rates = {}
        rep_cpu = {}
        for name, fn in order:
            table, seconds, cpu = timed(fn, args.bootstrap, topic, n)
            if table.num_rows != n or pa.compute.sum(table.column("id")).as_py() != want_sum:
                print(f"{name}: landed {table.num_rows} rows, not the {n} produced",
                      file=sys.stderr)
                return 1
            if table.schema != SCHEMA:
                print(f"{name}: schema {table.schema} differs", file=sys.stderr)
                return 1
            del table
            rep_rates[name] = n / seconds
            rep_cpu[name] = cpu
            rates[name].append(n / seconds)
            cpus[name].append(cpu * 1e6 / n)
            print(f"  rep {rep + 1}: {name:38s} {n:>10,} records in {seconds:7.2f}s  "
                  f"{n / seconds:>12,.0f} records/s  CPU {cpu * 1e6 / n:5.2f} us/record")
        ratios.append(rep_rates["kelt"] / rep_rates["confluent-kafka + json + from_pylist"])
        cpu_ratios.append(rep_cpu["confluent-kafka + json + from_pylist"] / rep_cpu["kelt"])
    for name, _ in contenders:
        print(f"{name:40s} best {max(rates[name]):>12,.0f} records/s  "
              f"median {statistics.median(rates[name]):>12,.0f} records/s  "
              f"CPU median {statistics.median(cpus[name]):5.2f} us/record")
    print(f"kelt / confluent-kafka: {statistics.median(ratios):.1f}x "
          f"(median of {len(ratios)} paired repetitions; each: "
          f"{', '.join(f'{r:.1f}x' for r in ratios)}); CPU a record "
          f"{statistics.median(cpu_ratios):.1f}x less")
    return 0


if __name__ == "__main__":
    import pyarrow.compute  # noqa: F401  (pa.compute)
    sys.exit(main())
