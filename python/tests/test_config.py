# Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
"""The Python API goes through the config parser of `kelt run --config`: the same key
names, defaults and checks (no broker needed: these fail or stop before reading)."""

import dataclasses
import inspect

import pytest

import kelt
from kelt import _kelt

SCHEMA = [{"name": "id", "data_type": "int64"}]
NO_BROKER = "127.0.0.1:1"


def loop(sinks, **kwargs):
    return kelt.EltLoop(NO_BROKER, "g", "t", SCHEMA, sinks, **kwargs)


def test_every_keyword_argument_is_a_config_key():
    keys = _kelt.config_keys()
    loop_names = {k["python"] for k in keys if k["python"] and not k["scope"]}
    params = set(inspect.signature(kelt.EltLoop.__init__).parameters) - {"self", "sinks"}
    assert params == loop_names
    for cls in (kelt.ParquetSink, kelt.DuckDbSink, kelt.PostgresSink, kelt.IcebergSink):
        fields = {f.name for f in dataclasses.fields(cls)}
        assert fields == {k["python"] for k in keys if k["scope"] == cls.kind}, cls


def test_defaults_are_the_parsers():
    # Nothing restated in Python: what is not given is left to the parser.
    for cls in (kelt.ParquetSink, kelt.DuckDbSink, kelt.PostgresSink, kelt.IcebergSink):
        required = {"root", "path", "conninfo", "catalog", "warehouse"}
        assert all(f.default is None for f in dataclasses.fields(cls)
                   if f.name not in required), cls
    keys = {k["key"]: k for k in _kelt.config_keys()}
    assert keys["window.max_records"]["default"] == "10000"
    assert keys["parquet.compression"]["default"] == "zstd"
    assert keys["parquet.compression"]["type"] == "zstd|snappy|gzip|lz4|none"


def test_a_loop_from_keyword_arguments(tmp_path):
    with loop([kelt.ParquetSink(root=str(tmp_path), compression="snappy",
                                dictionary="none", integer_encoding="plain")],
              max_records=5, on_bad_record="skip", min_records_per_loader=2) as lp:
        assert [f["name"] for f in lp.landing_schema["fields"]][0] == "id"


def test_an_unknown_sink_key_is_an_error_with_a_did_you_mean(tmp_path):
    with pytest.raises(kelt.InvalidError,
                       match=r"^sinks\[0\]\.parquet\.rotate_record: unknown key "
                             r"\(did you mean 'rotate_records'\?\)$"):
        loop([{"kind": "parquet", "root": str(tmp_path), "rotate_record": 5}])
    # The document's own shape works too.
    with pytest.raises(kelt.InvalidError, match=r"sinks\[0\]\.duckdb\.tabel: unknown key"):
        loop([{"duckdb": {"path": str(tmp_path / "x.duckdb"), "tabel": "t"}}])


def test_enum_values_are_checked_when_parsed(tmp_path):
    with pytest.raises(kelt.InvalidError) as info:
        loop([kelt.ParquetSink(root=str(tmp_path), compression="brotli",
                               integer_encoding="zigzag")])
    assert str(info.value).splitlines() == [
        'sinks[0].parquet.compression: expected one of zstd, snappy, gzip, lz4, none, '
        'got "brotli"',
        'sinks[0].parquet.integer_encoding: expected one of delta, plain, got "zigzag"',
    ]
    with pytest.raises(kelt.InvalidError,
                       match="on_bad_record: expected one of fail, skip, dead_letter"):
        loop([kelt.ParquetSink(root=str(tmp_path))], on_bad_record="ignore")
    with pytest.raises(kelt.InvalidError, match=r"window\.max_records: expected an integer"):
        loop([kelt.ParquetSink(root=str(tmp_path))], max_records="many")


@pytest.mark.parametrize("kind", ["postgres", "postgresql"])
def test_postgresql_is_another_name_of_postgres(kind):
    assert kelt.PostgresSink.kind == "postgres"
    with pytest.raises(kelt.InvalidError,
                       match=r"^sinks\[0\]\.postgres\.tabel: unknown key "
                             r"\(did you mean 'table'\?\)$"):
        loop([{"kind": kind, "conninfo": "postgresql://u:secret@127.0.0.1:1/db",
               "tabel": "t"}])
    with pytest.raises(kelt.InvalidError) as info:
        loop([{"kind": kind, "conninfo": "postgresql://u:secret@127.0.0.1:1/db",
               "offsets_table": 5, "create_table_if_missing": "maybe"}])
    assert "sinks[0].postgres.create_table_if_missing" in str(info.value)
    assert "secret" not in str(info.value)


def test_sink_errors_name_the_sink():
    with pytest.raises(kelt.InvalidError, match=r"sinks\[0\]\.nope: unknown sink kind"):
        loop([{"kind": "nope"}])
    with pytest.raises(kelt.InvalidError, match=r"sinks\[1\]: expected ParquetSink"):
        loop([kelt.ParquetSink(root="/tmp/x"), 42])


def test_values_are_not_expanded_like_a_files(tmp_path, monkeypatch):
    # In a config file "${NAME}" is the environment variable (unset: an error); a
    # Python value is taken as it is.
    monkeypatch.delenv("KELT_TEST_UNSET", raising=False)
    root = tmp_path / "${KELT_TEST_UNSET}"
    with loop([kelt.ParquetSink(root=str(root))]) as lp:
        assert lp.landing_schema["fields"]
