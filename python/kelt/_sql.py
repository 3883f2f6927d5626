# Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
"""Transform: SQL (embedded DuckDB) over Arrow data and landed data; pipeline JSON."""

from __future__ import annotations

from typing import Any, Mapping, Sequence, Union

import pyarrow as pa

from . import _kelt
from ._convert import json_text


def sql(query: str, table: Any) -> pa.Table:
    """Run ``query`` over ``table`` (visible as ``df``) and return the result.

    ``table`` is any Arrow data with ``__arrow_c_stream__``: a :class:`LandedWindow`, a
    ``pyarrow.Table``, a polars DataFrame. It is scanned in place (no copy of its fixed-width
    buffers). A SQL error raises :class:`kelt.InvalidError` with DuckDB's message.

    >>> import pyarrow as pa, kelt
    >>> kelt.sql("SELECT max(x) AS m FROM df", pa.table({"x": [1, 2, 3]})).to_pylist()
    [{'m': 3}]
    """
    return pa.table(_kelt.sql(query, table))


class SqlSession:
    """An in-memory DuckDB session with named relations over Arrow data and landing
    sources (Parquet landing directories, DuckDB landing databases)."""

    def __init__(self) -> None:
        self._native = _kelt.SqlSession()

    def register(self, name: str, table: Any) -> None:
        """Make Arrow data queryable as view ``name`` (scanned in place at each query)."""
        self._native.register_arrow(name, table)

    def register_landing(self, name: str, location: str, *, format: str = "parquet",
                         topic: str = "", table: str = "landing",
                         dead_letters: bool = False, dead_letter_dir: str = "_dead_letter",
                         s3_endpoint: str = "", s3_region: str = "",
                         s3_access_key: str = "", s3_secret_key: str = "",
                         catalog_name: str = "kelt") -> None:
        """Make landed data queryable as view ``name``.

        ``format="parquet"``: ``location`` is a Parquet sink's root and ``topic`` the topic
        whose published files to read (``dead_letters=True`` reads its dead letters).
        ``format="duckdb"``: ``location`` is a DuckDB sink's database file, ``table`` its
        landing table. ``format="iceberg"``: ``location`` is the SQL catalog (SQLite file
        or ``postgresql://`` URI), ``table`` the ``namespace.table`` and ``catalog_name``
        the catalog's name; the table is read at its current snapshot."""
        self._native.register_landing(name, {
            "format": format, "location": location, "topic": topic, "table": table,
            "dead_letters": dead_letters, "dead_letter_dir": dead_letter_dir,
            "s3_endpoint": s3_endpoint, "s3_region": s3_region,
            "s3_access_key": s3_access_key, "s3_secret_key": s3_secret_key,
            "catalog_name": catalog_name})

    def query(self, sql: str) -> pa.Table:
        """Run one statement and return its result (empty for statements without rows)."""
        return pa.table(self._native.query(sql))

    def __enter__(self) -> "SqlSession":
        return self

    def __exit__(self, *exc: object) -> None:
        pass


def run_incremental(name: str, sql: str, location: str, output_path: str, *,
                    format: str = "parquet", topic: str = "", table: str = "landing",
                    output_table: str = "curated",
                    state_table: str = "_kelt_transform_state",
                    key: Sequence[str] = (), s3_endpoint: str = "", s3_region: str = "",
                    s3_access_key: str = "", s3_secret_key: str = "") -> dict[str, Any]:
    """Run an incremental SQL model once: read only what was landed since its last run
    (``df``: a Parquet sink's root + ``topic``, or a DuckDB sink's file + ``table``), apply
    ``sql`` and append the result to ``output_table`` in the DuckDB file ``output_path`` —
    or, with ``key`` columns, replace the rows with the same key — writing the model's
    offsets in the same transaction. Returns files_read, rows_read, rows_written and
    next_offsets ``{(topic, partition): offset}``."""
    return _kelt.run_incremental(
        {"name": name, "sql": sql, "output_path": output_path, "output_table": output_table,
         "state_table": state_table, "key": list(key)},
        {"format": format, "location": location, "topic": topic, "table": table,
         "s3_endpoint": s3_endpoint, "s3_region": s3_region,
         "s3_access_key": s3_access_key, "s3_secret_key": s3_secret_key})


def run_pipeline_json(pipeline: Union[str, bytes, Mapping[str, Any]]) -> str:
    """Run a pipeline JSON document (RDP_COMPATIBILITY.md §6) and return the result envelope, as
    ``rdp_run_pipeline_json`` does: ``{"ok":true,"interchange":{"kind":"run_pipeline_json",
    …}}`` or ``{"ok":false,"error":{"code":…,"message":…,"stage":…}}``. Never raises for
    a failing pipeline: the envelope says what failed."""
    return _kelt.run_pipeline_json(json_text(pipeline, "pipeline"))


def validate_pipeline_json(pipeline: Union[str, bytes, Mapping[str, Any]]) -> str:
    """Parse and validate a pipeline document without reading or writing anything; return
    the envelope ``run_pipeline_json`` would give for a parse-stage failure, or ok."""
    return _kelt.validate_pipeline_json(json_text(pipeline, "pipeline"))
