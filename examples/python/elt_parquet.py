#!/usr/bin/env python3
"""The stream loop of RDP's kafka_elt_stream example, with durable landing, in Python:
Extract → Load → Parquet until caught up (committing only what the Parquet files hold),
then Transform the landed files with SQL. Run it twice: the second run resumes from the
files and lands nothing new.

    python examples/python/elt_parquet.py BOOTSTRAP TOPIC GROUP DIRECTORY

Payloads look like {"id": 1, "name": "row 1"}.
"""
import sys

import kelt


def main() -> int:
    if len(sys.argv) != 5:
        print(__doc__, file=sys.stderr)
        return 2
    bootstrap, topic, group, directory = sys.argv[1:]
    landing = [{"name": "id", "data_type": "int64"},
               {"name": "name", "data_type": "utf8"},
               {"name": "_kafka_timestamp", "data_type": "timestamp"}]
    sink = kelt.ParquetSink(root=directory)  # or "s3://bucket/prefix" with s3_* set
    with kelt.EltLoop(bootstrap, group, topic, landing, [sink],
                      until_caught_up=True) as loop:  # the bounded backfill
        stats = loop.run()  # flushes the sink and commits before returning
    print(f"landed {stats['rows']} rows from {stats['records']} records in "
          f"{stats['windows']} windows, {stats['bad_records']} bad")
    for (t, partition), next_offset in sorted(stats["committed"].items()):
        print(f"  {t}[{partition}] durable up to offset {next_offset}")

    session = kelt.SqlSession()
    session.register_landing("landing", directory, topic=topic)
    result = session.query("SELECT count(*) AS rows, count(DISTINCT id) AS ids FROM landing")
    print(result.to_pylist())
    return 0


if __name__ == "__main__":
    sys.exit(main())
