# Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
"""kelt: Kafka streaming ELT over a C++ core.

Extract bounded windows from Kafka, Load their JSON payloads into Arrow columns, land them
durably (Parquet, DuckDB, PostgreSQL) with their offsets, and Transform with SQL.

RDP-compatible calls (same names and arguments as ``rust_data_processing``):
:func:`elt_load_kafka_records_json`, :func:`poll_kafka_window`,
:func:`poll_kafka_window_loaded`, :func:`export_dataset_to_kafka`.

kelt's own API: :class:`Consumer` (stateful, commits what you say is durable),
:class:`EltLoop` with :class:`ParquetSink` / :class:`DuckDbSink` / :class:`PostgresSink`
/ :class:`IcebergSink`,
:func:`sql` and :class:`SqlSession`, :func:`run_pipeline_json`.

Landed windows are Arrow data: ``pyarrow.table(w)``, ``polars.from_arrow(w)`` and DuckDB
read them through the Arrow PyCapsule interface without copying. Every blocking call
releases the GIL. Errors are :class:`KeltError` subclasses that are also ``ValueError``
(bad input) or ``OSError`` (Kafka, storage).
"""

# pyarrow first: it loads libarrow/libparquet, which the native module links against.
import pyarrow as _pyarrow  # noqa: F401

from ._kelt import (  # noqa: F401  (the exception classes live in the native module)
    InvalidError,
    KafkaError,
    KeltError,
    ParseError,
    SchemaMismatchError,
    StorageError,
    UnavailableError,
    librdkafka_version,
)
# kelt's version (the repository's VERSION file), compiled into the native module.
from ._kelt import __version__  # noqa: F401
from ._window import LandedWindow, PartitionSpan
from ._rdp import (
    elt_load_kafka_records_json,
    export_dataset_to_kafka,
    poll_kafka_window,
    poll_kafka_window_loaded,
)
from ._consumer import Consumer, PartitionLag, PolledRecords
from ._elt import DuckDbSink, EltLoop, IcebergSink, ParquetSink, PostgresSink
from ._sql import (SqlSession, run_incremental, run_pipeline_json, sql,
                   validate_pipeline_json)
from ._convert import normalize_schema
from ._log import log_to_logging, set_log_handler

__all__ = [
    "Consumer",
    "DuckDbSink",
    "EltLoop",
    "InvalidError",
    "KafkaError",
    "KeltError",
    "LandedWindow",
    "ParquetSink",
    "ParseError",
    "PartitionLag",
    "PartitionSpan",
    "PolledRecords",
    "PostgresSink",
    "IcebergSink",
    "SchemaMismatchError",
    "SqlSession",
    "StorageError",
    "UnavailableError",
    "elt_load_kafka_records_json",
    "log_to_logging",
    "set_log_handler",
    "export_dataset_to_kafka",
    "librdkafka_version",
    "normalize_schema",
    "poll_kafka_window",
    "poll_kafka_window_loaded",
    "run_incremental",
    "run_pipeline_json",
    "sql",
    "validate_pipeline_json",
]
