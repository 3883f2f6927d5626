#!/usr/bin/env python3
"""Bring your own records → Load: the Python version of RDP's kafka_elt_byo_load example.

    python examples/python/byo_load.py
"""
import json

import pyarrow as pa

import kelt

# RDP's Python list form of a landing schema (aliases such as int64/string are accepted).
landing = [
    {"name": "user_id", "data_type": "int64"},
    {"name": "event", "data_type": "string"},
    {"name": "_kafka_offset", "data_type": "int64"},
]
records = {"records": [
    {"topic": "events", "partition": 0, "offset": 1,
     "value": json.dumps({"user_id": 1, "event": "click"})},
    {"topic": "events", "partition": 0, "offset": 2,
     "value": json.dumps({"user_id": 2, "event": "purchase"})},
]}

landed = kelt.elt_load_kafka_records_json(json.dumps(records), landing)
print(landed.row_count(), landed.column_names())
print(landed.to_rows())
print(pa.table(landed))  # Arrow without a copy; polars.DataFrame(landed) works too
# Next: land it (kelt.EltLoop with Parquet / DuckDB / PostgreSQL sinks), then Transform:
print(kelt.sql("SELECT event, count(*) AS n FROM df GROUP BY event ORDER BY event", landed))
