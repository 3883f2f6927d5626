# Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
"""The ELT loop: Extract → Load → land in every sink → commit only what is durable."""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional, Sequence, Union

from . import _kelt
from ._convert import SchemaLike, check_policy, properties_dict, schema_json, topics_list


@dataclass
class ParquetSink:
    """Land windows as Parquet files under ``root`` (a directory or ``s3://bucket/prefix``):
    ``<root>/<topic>/[<partition dirs>/]<topic>+<partition>+<first>+<last>.parquet``. The
    offsets are in the file names, so a restart resumes exactly after the last file."""

    root: str
    partition_by: str = ""
    time_layout: str = ""
    rotate_records: int = 1_000_000
    rotate_bytes: int = 128 << 20
    rotate_age_ms: int = 60_000
    compression: str = "zstd"
    dictionary: str = "auto"
    integer_encoding: str = "delta"
    dead_letter_dir: str = "_dead_letter"
    s3_endpoint: str = ""
    s3_region: str = ""
    s3_access_key: str = field(default="", repr=False)
    s3_secret_key: str = field(default="", repr=False)
    kind = "parquet"


@dataclass
class DuckDbSink:
    """Land windows in a DuckDB database file, offsets in the same transaction."""

    path: str
    table: str = "landing"
    dead_letter_table: str = ""
    offsets_table: str = "_kelt_offsets"
    group_id: Optional[str] = None  # default: the loop's group
    unique_offsets_index: bool = True
    kind = "duckdb"


@dataclass
class PostgresSink:
    """Land windows in PostgreSQL (binary COPY), offsets in the same transaction."""

    conninfo: str = field(repr=False)  # may hold a password: never shown
    table: str = "landing"
    dead_letter_table: str = ""
    offsets_table: str = "kelt_offsets"
    group_id: Optional[str] = None
    create_table_if_missing: bool = True
    replace_nul_in_text: bool = False
    kind = "postgresql"


Sink = Union[ParquetSink, DuckDbSink, PostgresSink]
#: Called after each window with (stats, window): ``window`` has records, bytes,
#: end_reason and spans.
WindowCallback = Callable[[dict, dict], None]


def _override_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(value)


def _sink_dict(sink: Union[Sink, Mapping[str, Any]]) -> dict[str, Any]:
    if isinstance(sink, Mapping):
        return dict(sink)
    if dataclasses.is_dataclass(sink):
        d = {k: v for k, v in dataclasses.asdict(sink).items() if v is not None}
        d["kind"] = sink.kind
        return d
    raise _kelt.InvalidError(f"sinks: expected ParquetSink, DuckDbSink or PostgresSink, "
                             f"got {type(sink).__name__}")


class EltLoop:
    """Extract windows from Kafka, Load them, write them to every sink, and commit only
    the offsets every sink holds durably. On (re)start each partition resumes at the
    sinks' durable point, so a crash neither loses nor duplicates rows.

    ``_kafka_topic``, ``_kafka_partition`` and ``_kafka_offset`` are added to the landing
    schema when missing. Bad records go to the sinks' dead-letter destinations by default.
    :meth:`run` and :meth:`step` release the GIL; Ctrl-C ends a run cleanly (sinks flushed,
    offsets committed) and then raises ``KeyboardInterrupt``.
    """

    def __init__(self, brokers: str, group_id: str, topics: Union[str, Sequence[str]],
                 landing_schema: SchemaLike, sinks: Sequence[Union[Sink, Mapping[str, Any]]],
                 *, max_records: int = 10_000, max_bytes: int = 64 << 20,
                 max_wait_ms: int = 1000, on_bad_record: str = "dead_letter",
                 strict_payload: bool = False, until_caught_up: bool = False,
                 max_windows: int = 0, auto_offset_reset: str = "earliest",
                 session_timeout_ms: Optional[int] = None, group_protocol: str = "classic",
                 instance_id: Optional[str] = None,
                 assignment_timeout_ms: int = 60_000, min_records_per_loader: int = 16_384,
                 properties: Optional[Mapping[str, Any]] = None) -> None:
        config: dict[str, Any] = {
            "brokers": brokers, "group_id": group_id, "topics": topics_list(topics),
            "landing_schema": schema_json(landing_schema), "max_records": int(max_records),
            "max_bytes": int(max_bytes), "max_wait_ms": int(max_wait_ms),
            "on_bad_record": check_policy(on_bad_record),
            "strict_payload": bool(strict_payload), "until_caught_up": bool(until_caught_up),
            "max_windows": int(max_windows), "auto_offset_reset": auto_offset_reset,
            "group_protocol": group_protocol, "instance_id": instance_id or "",
            "assignment_timeout_ms": int(assignment_timeout_ms),
            "min_records_per_loader": int(min_records_per_loader),
            "properties": properties_dict(properties),
        }
        if session_timeout_ms is not None:
            config["session_timeout_ms"] = int(session_timeout_ms)
        self._native = _kelt.EltLoop(config, [_sink_dict(s) for s in sinks])

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
