# Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
"""The ELT loop: Extract → Load → land in every sink → commit only what is durable."""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional, Sequence, Union

from . import _kelt
from ._convert import SchemaLike, properties_dict, schema_json, topics_list


# Every field and keyword argument left None is "not given": the config parser's
# default applies (docs/USER_GUIDE.md, the key table). Sink fields are the sink's config
# keys; the loop's keyword arguments map to config keys by the table's "python" column.


@dataclass
class ParquetSink:
    """Land windows as Parquet files under ``root`` (a directory or ``s3://bucket/prefix``):
    ``<root>/<topic>/[<partition dirs>/]<topic>+<partition>+<first>+<last>.parquet``. The
    offsets are in the file names, so a restart resumes exactly after the last file.
    ``compression`` is zstd (default), snappy, gzip, lz4 or none; ``dictionary`` auto
    (default), all or none; ``integer_encoding`` delta (default) or plain."""

    root: str
    partition_by: Optional[str] = None
    time_layout: Optional[str] = None
    rotate_records: Optional[int] = None
    rotate_bytes: Optional[int] = None
    rotate_age_ms: Optional[int] = None
    compression: Optional[str] = None
    dictionary: Optional[str] = None
    integer_encoding: Optional[str] = None
    dead_letter_dir: Optional[str] = None
    s3_endpoint: Optional[str] = None
    s3_region: Optional[str] = None
    s3_access_key: Optional[str] = field(default=None, repr=False)
    s3_secret_key: Optional[str] = field(default=None, repr=False)
    kind = "parquet"


@dataclass
class DuckDbSink:
    """Land windows in a DuckDB database file, offsets in the same transaction."""

    path: str
    table: Optional[str] = None
    dead_letter_table: Optional[str] = None
    offsets_table: Optional[str] = None
    group_id: Optional[str] = None  # default: the loop's group
    unique_offsets_index: Optional[bool] = None
    kind = "duckdb"


@dataclass
class PostgresSink:
    """Land windows in PostgreSQL (binary COPY), offsets in the same transaction."""

    conninfo: str = field(repr=False)  # may hold a password: never shown
    table: Optional[str] = None
    dead_letter_table: Optional[str] = None
    offsets_table: Optional[str] = None
    group_id: Optional[str] = None  # default: the loop's group
    create_table_if_missing: Optional[bool] = None
    replace_nul_in_text: Optional[bool] = None
    #: The config's name; a sink dict may also say "postgresql" (the older name).
    kind = "postgres"


@dataclass
class IcebergSink:
    """Land windows in an Apache Iceberg table (SQL catalog: a SQLite file or a
    ``postgresql://`` URI; local warehouse): one append snapshot per window with the
    group's offsets."""

    catalog: str = field(repr=False)  # a PostgreSQL URI may hold a password
    warehouse: str  # a directory or s3://bucket/prefix
    catalog_name: Optional[str] = None
    s3_endpoint: Optional[str] = None
    s3_region: Optional[str] = None
    s3_access_key: Optional[str] = field(default=None, repr=False)
    s3_secret_key: Optional[str] = field(default=None, repr=False)
    namespace: Optional[str] = None
    table: Optional[str] = None
    partition: Optional[str] = None  # e.g. "day(at), base"
    group_id: Optional[str] = None  # default: the loop's group
    kind = "iceberg"


Sink = Union[ParquetSink, DuckDbSink, PostgresSink, IcebergSink]
#: Called after each window with (stats, window): ``window`` has records, bytes,
#: end_reason and spans.
WindowCallback = Callable[[dict, dict], None]

#: EltLoop's keyword arguments → config keys, from the key table.
_LOOP_KEYS = {k["python"]: k["key"] for k in _kelt.config_keys()
              if k["python"] and not k["scope"]}


def _override_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(value)


def _sink_entry(sink: Union[Sink, Mapping[str, Any]], i: int) -> dict[str, Any]:
    """One item of the document's ``sinks`` list: ``{kind: {key: value}}``. A mapping
    with a ``kind`` (``{"kind": "parquet", "root": ...}``) or in the document's own shape
    (``{"parquet": {"root": ...}}``) is taken as it is: the parser checks its keys."""
    if dataclasses.is_dataclass(sink) and not isinstance(sink, type):
        fields = {f.name: getattr(sink, f.name) for f in dataclasses.fields(sink)}
        kind: Any = sink.kind
    elif isinstance(sink, Mapping):
        if "kind" not in sink:
            return dict(sink)
        fields = {k: v for k, v in sink.items() if k != "kind"}
        kind = sink["kind"]
    else:
        raise _kelt.InvalidError(f"sinks[{i}]: expected ParquetSink, DuckDbSink, "
                                 f"PostgresSink or IcebergSink, got {type(sink).__name__}")
    return {str(kind): {k: v for k, v in fields.items() if v is not None}}


def _config_document(given: Mapping[str, Any],
                     sinks: Sequence[Union[Sink, Mapping[str, Any]]]) -> str:
    """The ``kelt run --config`` document of EltLoop's arguments, as JSON."""
    doc: dict[str, Any] = {}
    for name, value in given.items():
        if value is None:
            continue
        key = _LOOP_KEYS[name]
        *parents, leaf = key.split(".")
        node = doc
        for p in parents:
            node = node.setdefault(p, {})
        node[leaf] = value
    doc["sinks"] = [_sink_entry(s, i) for i, s in enumerate(sinks)]
    try:
        return json.dumps(doc, ensure_ascii=False)
    except (TypeError, ValueError) as e:
        raise _kelt.InvalidError(f"EltLoop: an argument is not JSON-serializable: {e}") \
            from None


class EltLoop:
    """Extract windows from Kafka, Load them, write them to every sink, and commit only
    the offsets every sink holds durably. On (re)start each partition resumes at the
    sinks' durable point, so a crash neither loses nor duplicates rows.

    ``_kafka_topic``, ``_kafka_partition`` and ``_kafka_offset`` are added to the landing
    schema when missing. ``landing_schema="registry:<subject>"`` with ``registry_url``
    lands Avro, Protobuf or JSON (JSON Schema subjects) payloads in the schema
    registry's wire format with the subject's latest
    schema (credentials: ``EltLoop.from_config`` with the ``registry.*`` keys);
    ``key_format="registry"`` decodes the keys too, by ``key_subject`` (default
    ``<topic>-key``), into a ``_kafka_key`` column. Bad records go to the sinks'
    dead-letter destinations by default.
    :meth:`run` and :meth:`step` release the GIL; Ctrl-C ends a run cleanly (sinks flushed,
    offsets committed) and then raises ``KeyboardInterrupt``.
    """

    def __init__(self, brokers: str, group_id: str, topics: Union[str, Sequence[str]],
                 landing_schema: SchemaLike, sinks: Sequence[Union[Sink, Mapping[str, Any]]],
                 *, max_records: Optional[int] = None, max_bytes: Optional[int] = None,
                 max_wait_ms: Optional[int] = None, on_bad_record: Optional[str] = None,
                 strict_payload: Optional[bool] = None,
                 until_caught_up: Optional[bool] = None, max_windows: Optional[int] = None,
                 auto_offset_reset: Optional[str] = None,
                 session_timeout_ms: Optional[int] = None,
                 group_protocol: Optional[str] = None, instance_id: Optional[str] = None,
                 assignment_timeout_ms: Optional[int] = None,
                 min_records_per_loader: Optional[int] = None,
                 stalled_write_warning_ms: Optional[int] = None,
                 registry_url: Optional[str] = None, key_format: Optional[str] = None,
                 key_subject: Optional[str] = None,
                 properties: Optional[Mapping[str, Any]] = None) -> None:
        # Every argument but sinks is a config key (None: the config's default), so
        # names, defaults and checks are the config parser's (docs/USER_GUIDE.md).
        given = {k: v for k, v in locals().items() if k not in ("self", "sinks")}
        given["topics"] = topics_list(topics)
        given["landing_schema"] = schema_json(landing_schema)
        given["properties"] = properties_dict(properties) or None
        # Values are the program's: "${NAME}" in them is not an environment variable, and
        # the document's lines mean nothing to the caller.
        self._native = _kelt.EltLoop("", _config_document(given, sinks), "", [], True)

    @classmethod
    def from_config(cls, path: Union[str, "os.PathLike[str]", None] = None, *,
                    text: Union[str, Mapping[str, Any], None] = None,
                    base_dir: Union[str, "os.PathLike[str]"] = ".",
                    overrides: Optional[Mapping[str, Any]] = None) -> "EltLoop":
        """Configure the loop from a ``kelt run --config`` document: the same YAML (or
        JSON) keys, checks, defaults and sinks as the command (docs/USER_GUIDE.md, section
        8). Give the file's ``path``, or the document as ``text`` (YAML/JSON text or a dict;
        relative paths in it resolve against ``base_dir``). ``overrides`` sets keys by their
        dotted path, like ``kelt run --set``: ``{"window.max_records": 5000,
        "brokers": "host:9092"}``. Environment variables are not read (pass them here)."""
        if (path is None) == (text is None):
            raise _kelt.InvalidError("EltLoop.from_config: give exactly one of path or text")
        if text is not None and not isinstance(text, str):
            text = json.dumps(text)
        pairs = [(str(k), _override_text(v)) for k, v in (overrides or {}).items()]
        self = cls.__new__(cls)
        self._native = _kelt.EltLoop(os.fspath(path) if path is not None else "",
                                     text or "", os.fspath(base_dir), pairs)
        return self

    def run(self, on_window: Optional[WindowCallback] = None) -> dict[str, Any]:
        """Run windows until the run ends (caught up, ``max_windows``, Ctrl-C), then flush
        the sinks, commit and leave the group. Return the run's counters."""
        return self._native.run(on_window)

    def step(self, on_window: Optional[WindowCallback] = None) -> bool:
        """Run one window; return False when the run is over."""
        return self._native.step(on_window)

    @property
    def stats(self) -> dict[str, Any]:
        """Counters so far: windows, records, bytes, rows, bad_records, dead_lettered,
        sink_errors, caught_up, committed ``{(topic, partition): next}``, durable per sink."""
        return self._native.stats()

    @property
    def landing_schema(self) -> dict[str, Any]:
        """The landing schema in use (with the identity columns the loop added)."""
        return json.loads(self._native.landing_schema())

    def close(self) -> None:
        """Flush the sinks, commit, close the consumer and the sinks."""
        self._native.close()

    def __enter__(self) -> "EltLoop":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
