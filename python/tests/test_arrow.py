# Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
"""Landed windows as Arrow through the PyCapsule interface: pyarrow, polars, DuckDB, no copy."""

from __future__ import annotations

import json

import duckdb
import polars as pl
import pyarrow as pa

import kelt

SCHEMA = [{"name": "id", "data_type": "int64"}, {"name": "name", "data_type": "utf8"},
          {"name": "x", "data_type": "float64"}, {"name": "_kafka_offset",
                                                 "data_type": "int64"}]


def window(n=1000):
    recs = [{"topic": "t", "partition": 0, "offset": i,
             "value": json.dumps({"id": i, "name": f"n{i}", "x": i / 2})} for i in range(n)]
    return kelt.elt_load_kafka_records_json(recs, SCHEMA)


def test_pyarrow_reads_the_window_with_kelts_types():
    w = window(3)
    t = pa.table(w)
    assert t.schema.names == ["id", "name", "x", "_kafka_offset"]
    assert t.schema.field("id").type == pa.int64() and t.schema.field("x").type == pa.float64()
    assert t.column("name").to_pylist() == ["n0", "n1", "n2"]
    assert pa.schema(w) == t.schema == w.schema
    assert w.to_arrow().equals(t)


def test_pyarrow_import_copies_nothing():
    base = pa.total_allocated_bytes()
    w = window()
    # kelt allocates from the same Arrow memory pool as pyarrow: a copy would show here.
    window_bytes = pa.total_allocated_bytes() - base
    assert window_bytes > 30_000
    t1, t2 = pa.table(w), pa.table(w)
    copied = pa.total_allocated_bytes() - base - window_bytes
    assert copied < window_bytes // 8  # two copies would be 2 * window_bytes
    for i in range(t1.num_columns):
        b1 = [b.address for b in t1.column(i).chunk(0).buffers() if b is not None]
        b2 = [b.address for b in t2.column(i).chunk(0).buffers() if b is not None]
        assert b1 == b2 and b1, t1.schema.names[i]


def test_the_window_outlives_python_references_to_it():
    t = pa.table(window(5))  # the window object is gone; the buffers stay alive
    assert t.column("id").to_pylist() == [0, 1, 2, 3, 4]


def test_polars_reads_the_window():
    w = window(4)
    df = pl.DataFrame(w)
    assert df.columns == ["id", "name", "x", "_kafka_offset"]
    assert df["id"].to_list() == [0, 1, 2, 3] and df["name"].to_list()[-1] == "n3"
    assert df["id"].dtype == pl.Int64 and df["x"].dtype == pl.Float64
    # from_arrow of a (non-pyarrow) stream exporter is a struct Series; unnest = the frame
    assert pl.from_arrow(w).struct.unnest().equals(df)


def test_polars_shares_the_fixed_width_buffers():
    w = window()
    kelt_address = pa.table(w).column("id").chunk(0).buffers()[1].address
    polars_address = pl.DataFrame(w)["id"].to_arrow().buffers()[1].address
    assert polars_address == kelt_address


def test_duckdb_scans_the_window():
    w = window(10)
    assert duckdb.sql("SELECT count(*), sum(id), max(name) FROM w").fetchall() == [
        (10, 45, "n9")]


def test_dead_letters_are_arrow_too():
    recs = [{"topic": "t", "partition": 0, "offset": 5, "value": '{"id":"bad"}'}]
    w = kelt.elt_load_kafka_records_json(recs, SCHEMA, on_bad_record="dead_letter")
    assert w.row_count() == 0 and pa.table(w).num_rows == 0
    assert w.dead_letters.column("_kafka_offset").to_pylist() == [5]


def test_module_loads_simdjson_and_openssl_before_parquet():
    """pyarrow's libparquet exports its own simdjson and OpenSSL symbols: the module must
    list the system ones first in DT_NEEDED (scripts/check_link_order.sh)."""
    import subprocess
    from pathlib import Path

    import kelt._kelt

    script = Path(__file__).resolve().parents[2] / "scripts" / "check_link_order.sh"
    done = subprocess.run(["bash", str(script), kelt._kelt.__file__], capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr
