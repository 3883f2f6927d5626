# Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
"""Load without a broker: RDP's call, schema forms and aliases, bad-record policies, errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import kelt
from conftest import FIXTURES

SCHEMA = [
    {"name": "id", "data_type": "i64"},
    {"name": "name", "data_type": "string"},
    {"name": "score", "data_type": "double"},
    {"name": "ok", "data_type": "boolean"},
    {"name": "_kafka_topic", "data_type": "utf8"},
    {"name": "_kafka_partition", "data_type": "int64"},
    {"name": "_kafka_offset", "data_type": "Int64"},
    {"name": "_kafka_key", "data_type": "text"},
]


def records(*values, topic="events"):
    return {"records": [{"topic": topic, "partition": 3, "offset": 10 + i, "key": f"k{i}",
                         "value": v if isinstance(v, str) else json.dumps(v)}
                        for i, v in enumerate(values)]}


def test_rdp_load_with_the_python_list_schema_and_aliases():
    w = kelt.elt_load_kafka_records_json(
        json.dumps(records({"id": 1, "name": "Ada", "score": 1.5, "ok": True, "extra": 0},
                           {"id": "2", "name": None, "score": "NaN", "ok": "false"})),
        SCHEMA)
    assert w.row_count() == 2 and len(w) == 2
    assert w.column_names() == ["id", "name", "score", "ok", "_kafka_topic",
                                "_kafka_partition", "_kafka_offset", "_kafka_key"]
    rows = w.to_rows()
    assert rows[0] == [1, "Ada", 1.5, True, "events", 3, 10, "k0"]
    assert rows[1][:2] == [2, None] and rows[1][2] != rows[1][2]  # NaN
    assert rows[1][3:] == [False, "events", 3, 11, "k1"]
    assert w.stats["records"] == 2 and w.stats["bad_records"] == 0
    assert w.spans == [] and w.end_reason is None


def test_schema_forms_are_equivalent():
    recs = records({"id": 7})
    strict = {"fields": [{"name": "id", "data_type": "Int64"}]}
    forms = [[{"name": "id", "data_type": "INT64"}], strict, json.dumps(strict),
             json.dumps([{"name": "id", "data_type": "i64"}])]
    for form in forms:
        assert kelt.elt_load_kafka_records_json(recs, form).to_rows() == [[7]]
    assert kelt.normalize_schema([{"name": "id", "data_type": "i64"}]) == strict


def test_records_as_bare_list_and_python_data():
    recs = records({"id": 1}, {"id": 2})["records"]
    w1 = kelt.elt_load_kafka_records_json(recs, [{"name": "id", "data_type": "int64"}])
    w2 = kelt.elt_load_kafka_records_json(json.dumps(recs).encode(),
                                          [{"name": "id", "data_type": "int64"}])
    assert w1.to_rows() == w2.to_rows() == [[1], [2]]


def test_raw_payload_lands_in_the_only_payload_field():
    w = kelt.elt_load_kafka_records_json(records("42", "not json"),
                                         [{"name": "v", "data_type": "utf8"},
                                          {"name": "_kafka_offset", "data_type": "int64"}])
    assert w.to_rows() == [["42", 10], ["not json", 11]]


def test_fail_policy_raises_schema_mismatch_naming_the_record():
    with pytest.raises(kelt.SchemaMismatchError) as info:
        kelt.elt_load_kafka_records_json(records({"id": 1}, {"id": 1.5}),
                                         [{"name": "id", "data_type": "int64"}])
    e = info.value
    assert isinstance(e, ValueError) and isinstance(e, kelt.KeltError)
    assert "expected i64 in kafka value JSON" in str(e) and "@11" in str(e)
    assert e.code == "TYPE_ERROR" and e.retriable is False


def test_skip_and_dead_letter_policies_count_bad_records():
    recs = records({"id": 1}, {"id": "x"}, {"id": 3})
    schema = [{"name": "id", "data_type": "int64"}]
    skipped = kelt.elt_load_kafka_records_json(recs, schema, on_bad_record="skip")
    assert skipped.to_rows() == [[1], [3]]
    assert skipped.stats["skipped"] == 1 and skipped.dead_letters.num_rows == 0
    dl = kelt.elt_load_kafka_records_json(recs, schema, on_bad_record="dead_letter")
    assert dl.stats["dead_lettered"] == 1
    dead = dl.dead_letters.to_pylist()
    assert len(dead) == 1
    assert dead[0]["_kafka_offset"] == 11 and dead[0]["_kafka_value"] == b'{"id": "x"}'
    assert dead[0]["_error_code"] == "TYPE_MISMATCH" and dead[0]["_error_field"] == "id"


def test_the_fixture_records_land_like_the_cli_does():
    recs = (FIXTURES / "kafka" / "stream_records.json").read_text()
    schema = (FIXTURES / "kafka" / "landing_schema.json").read_text()
    w = kelt.elt_load_kafka_records_json(recs, schema)
    assert w.row_count() > 0
    assert w.to_rows()[0][:2] == [100, "alpha"]


@pytest.mark.parametrize("schema, error, text", [
    ([{"name": "id", "data_type": "Int32"}], kelt.InvalidError, "unknown type 'Int32'"),
    ("{not json", kelt.ParseError, ""),
    ([{"name": "_kafka_nope", "data_type": "int64"}], kelt.InvalidError,
     "unknown kafka metadata column '_kafka_nope'"),
    (42, kelt.InvalidError, "landing_schema: expected a list of fields"),
])
def test_bad_schemas_raise_value_errors_naming_the_place(schema, error, text):
    with pytest.raises(error) as info:
        kelt.elt_load_kafka_records_json(records({"id": 1}), schema)
    assert isinstance(info.value, ValueError)
    assert text in str(info.value)


def test_bad_records_json_is_a_value_error():
    with pytest.raises(ValueError) as info:
        kelt.elt_load_kafka_records_json('{"records":[{"topic":"t"}]}',
                                         [{"name": "id", "data_type": "int64"}])
    assert "invalid kafka stream record JSON" in str(info.value)
    assert "records[0]" in str(info.value)


def test_unknown_policy_is_rejected():
    with pytest.raises(kelt.InvalidError, match="on_bad_record"):
        kelt.elt_load_kafka_records_json(records({"id": 1}),
                                         [{"name": "id", "data_type": "int64"}],
                                         on_bad_record="ignore")


def test_consumer_config_errors_are_rdps_messages():
    with pytest.raises(kelt.InvalidError, match="kafka brokers must not be empty"):
        kelt.poll_kafka_window("", "g", "t")
    with pytest.raises(kelt.InvalidError, match="kafka group_id must not be empty"):
        kelt.Consumer("localhost:1", " ", "t")
    with pytest.raises(kelt.InvalidError, match="kafka topic must not be empty"):
        kelt.poll_kafka_window_loaded("localhost:1", "g", "", [{"name": "a",
                                                               "data_type": "utf8"}])


def test_consumer_arguments_are_checked_by_the_config_parser():
    # The same names, values and messages as `kelt run`'s keys, before any connection.
    with pytest.raises(kelt.InvalidError, match=r"auto_offset_reset: .*earliest"):
        kelt.Consumer("localhost:1", "g", "t", auto_offset_reset="oldest")
    with pytest.raises(kelt.InvalidError, match=r"group_protocol: .*classic"):
        kelt.Consumer("localhost:1", "g", "t", group_protocol="eager")
    with pytest.raises(kelt.InvalidError, match=r"session_timeout_ms"):
        kelt.Consumer("localhost:1", "g", "t", session_timeout_ms=0)
    with pytest.raises(kelt.InvalidError, match=r"topics: required"):
        kelt.Consumer("localhost:1", "g", [])


def test_import_in_a_fresh_interpreter_without_library_path():
    # pyarrow.parquet first: its libparquet exports simdjson and OpenSSL symbols of its
    # own; the module must still reach Debian's simdjson (a Load works) and libcrypto
    # must not bind to libparquet's copies (hashlib after kelt works).
    code = ("import pyarrow.parquet, kelt, hashlib, json; "
            "w = kelt.elt_load_kafka_records_json([{'topic':'t','partition':0,'offset':1,"
            "'value':json.dumps({'a': 5})}], [{'name':'a','data_type':'int64'}]); "
            "print(w.to_rows(), hashlib.sha256(b'x').hexdigest()[:8])")
    env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "PYTHONPATH")}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, cwd="/", timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[[5]] 2d711642"
    out = subprocess.run([sys.executable, "-c", "import kelt, polars, duckdb, hashlib"],
                         env=env, capture_output=True, text=True, cwd="/", timeout=120)
    assert out.returncode == 0, out.stderr


def test_the_native_stub_covers_the_module():
    import ast
    from pathlib import Path

    stub = ast.parse((Path(kelt.__file__).parent / "_kelt.pyi").read_text())
    declared = {n.name for n in stub.body if isinstance(n, (ast.ClassDef, ast.FunctionDef))}
    public = {name for name in dir(kelt._kelt) if not name.startswith("_")}
    assert public <= declared, public - declared


def test_docstring_examples():
    import doctest

    import kelt._consumer
    import kelt._convert
    import kelt._rdp
    import kelt._sql

    for module in (kelt._rdp, kelt._convert, kelt._sql, kelt._consumer):
        result = doctest.testmod(module, extraglobs={"kelt": kelt})
        assert result.failed == 0, module.__name__
    assert doctest.testmod(kelt._rdp).attempted >= 2
