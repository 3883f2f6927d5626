# Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
"""Transform: SQL over windows and Arrow data, sessions, pipeline JSON."""

from __future__ import annotations

import json

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import kelt


def window():
    recs = [{"topic": "t", "partition": 0, "offset": i,
             "value": json.dumps({"user": f"u{i % 3}", "amount": i})} for i in range(9)]
    return kelt.elt_load_kafka_records_json(recs, [{"name": "user", "data_type": "utf8"},
                                                   {"name": "amount", "data_type": "int64"}])


def test_sql_over_a_window_as_df():
    out = kelt.sql("SELECT user, sum(amount) AS total FROM df GROUP BY user ORDER BY user",
                   window())
    assert isinstance(out, pa.Table)
    assert out.to_pylist() == [{"user": "u0", "total": 9}, {"user": "u1", "total": 12},
                               {"user": "u2", "total": 15}]


def test_sql_over_pyarrow_and_polars():
    t = pa.table({"a": [1, 2, 3]})
    assert kelt.sql("SELECT sum(a) AS s FROM df", t).to_pylist() == [{"s": 6}]
    assert kelt.sql("SELECT max(a) AS m FROM df", pl.DataFrame({"a": [4, 9]})).to_pylist() == [
        {"m": 9}]


def test_sql_error_is_a_value_error_with_duckdbs_message():
    with pytest.raises(kelt.InvalidError) as info:
        kelt.sql("SELECT nope FROM df", window())
    assert "nope" in str(info.value) and isinstance(info.value, ValueError)
    with pytest.raises(kelt.InvalidError, match="expected Arrow data"):
        kelt.sql("SELECT 1", [1, 2, 3])


def test_session_joins_registered_tables():
    s = kelt.SqlSession()
    s.register("orders", window())
    s.register("users", pa.table({"user": ["u0", "u1"], "name": ["Ada", "Bob"]}))
    out = s.query("SELECT name, count(*) AS n FROM orders JOIN users USING (user) "
                  "GROUP BY name ORDER BY name")
    assert out.to_pylist() == [{"name": "Ada", "n": 3}, {"name": "Bob", "n": 3}]


def test_run_pipeline_json_writes_parquet(tmp_path):
    src = tmp_path / "in.csv"
    src.write_text("user_id,event\n1,purchase\n2,view\n3,purchase\n")
    out = tmp_path / "out.parquet"
    doc = {"pipeline_spec_version": 1,
           "sources": {"paths": [str(src)], "options": {"format": "csv"}},
           "transform": {"sql": "SELECT user_id FROM df WHERE event = 'purchase'"},
           "sinks": [{"kind": "parquet_file", "path": str(out)}]}
    env = json.loads(kelt.run_pipeline_json(doc))
    assert env["ok"] is True
    assert env["interchange"]["ingested_row_count"] == 3
    assert env["interchange"]["sink_results"][0]["row_count"] == 2
    assert pq.read_table(out).column("user_id").to_pylist() == [1, 3]


def test_pipeline_errors_are_in_the_envelope():
    env = json.loads(kelt.run_pipeline_json('{"pipeline_spec_version": 9}'))
    assert env["ok"] is False and env["error"]["stage"] == "parse"
    env = json.loads(kelt.validate_pipeline_json("not json"))
    assert env["error"]["code"] == "ORCHESTRATION_JSON_INVALID"
