# Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
"""RDP's stateless Kafka calls (RDP_COMPATIBILITY.md §7): same names, arguments and defaults.

kelt's additions are keyword-only: ``properties`` (any librdkafka property), ``max_wait_ms``,
``commit``, ``on_bad_record``, ``strict_payload``, ``headers``.
"""

from __future__ import annotations

import json
from typing import Any, Mapping, Optional, Sequence, Union

from . import _kelt
from ._convert import (SchemaLike, check_policy, json_text, properties_dict, schema_json,
                       topics_list)
from ._window import LandedWindow


def elt_load_kafka_records_json(records_json: Union[str, bytes, Mapping[str, Any],
                                                    Sequence[Any]],
                                landing_schema: SchemaLike, *,
                                on_bad_record: str = "fail",
                                strict_payload: bool = False) -> LandedWindow:
    """Load Kafka stream records (``{"records": [...]}`` or a bare list, as JSON text or
    Python data) into the landing schema and return the landed window.

    The default ``on_bad_record="fail"`` is RDP's: the first record that does not convert
    raises :class:`kelt.SchemaMismatchError`. ``"skip"`` counts and drops such records;
    ``"dead_letter"`` keeps them, raw, in ``window.dead_letters``.

    >>> import kelt
    >>> w = kelt.elt_load_kafka_records_json(
    ...     '{"records":[{"topic":"t","partition":0,"offset":7,"value":"{\\\\"id\\\\":1}"}]}',
    ...     [{"name": "id", "data_type": "int64"}, {"name": "_kafka_offset", "data_type": "int64"}])
    >>> w.to_rows()
    [[1, 7]]
    """
    return LandedWindow(_kelt.load_records_json(json_text(records_json, "records_json"),
                                                schema_json(landing_schema),
                                                check_policy(on_bad_record),
                                                bool(strict_payload)))


def _consumer_config(brokers: str, group_id: str, topic: Union[str, Sequence[str]],
                     max_records: int, auto_offset_reset: str,
                     session_timeout_ms: Optional[int],
                     properties: Optional[Mapping[str, Any]], max_wait_ms: Optional[int],
                     commit: bool) -> str:
    config: dict[str, Any] = {
        "brokers": brokers,
        "group_id": group_id,
        "max_records": max_records,
        "auto_offset_reset": auto_offset_reset,
        "commit": commit,
    }
    if isinstance(topic, str):
        config["topic"] = topic
    else:
        config["topics"] = topics_list(topic)
    if session_timeout_ms is not None:
        config["session_timeout_ms"] = session_timeout_ms
    if max_wait_ms is not None:
        config["max_wait_ms"] = max_wait_ms
    if properties:
        config["properties"] = properties_dict(properties)
    return json.dumps(config)


def poll_kafka_window(brokers: str, group_id: str, topic: Union[str, Sequence[str]],
                      max_records: int = 500, auto_offset_reset: str = "earliest",
                      session_timeout_ms: Optional[int] = None, *,
                      properties: Optional[Mapping[str, Any]] = None,
                      max_wait_ms: Optional[int] = None, commit: bool = True) -> str:
    """Poll one window of records and return them as JSON ``{"records": [...]}``.

    The window ends with ``max_records`` records, when every assigned partition reached its
    end (RDP waited 15 s here), or after ``max_wait_ms`` (15 000). Unlike RDP, the window
    is committed (``commit=False`` re-reads it next time). The GIL is released meanwhile.
    """
    return _kelt.poll_window(_consumer_config(brokers, group_id, topic, max_records,
                                              auto_offset_reset, session_timeout_ms,
                                              properties, max_wait_ms, commit))


def poll_kafka_window_loaded(brokers: str, group_id: str, topic: Union[str, Sequence[str]],
                             landing_schema: SchemaLike, max_records: int = 500,
                             auto_offset_reset: str = "earliest",
                             session_timeout_ms: Optional[int] = None, *,
                             properties: Optional[Mapping[str, Any]] = None,
                             max_wait_ms: Optional[int] = None, commit: bool = True,
                             on_bad_record: str = "fail",
                             strict_payload: bool = False) -> LandedWindow:
    """Poll one window and load it into ``landing_schema`` (Extract + Load in one call).

    Returns a :class:`LandedWindow` (Arrow, zero-copy). See :func:`poll_kafka_window` for
    how the window ends and :func:`elt_load_kafka_records_json` for ``on_bad_record``.
    """
    return LandedWindow(_kelt.poll_window_loaded(
        _consumer_config(brokers, group_id, topic, max_records, auto_offset_reset,
                         session_timeout_ms, properties, max_wait_ms, commit),
        schema_json(landing_schema), check_policy(on_bad_record), bool(strict_payload)))


def export_dataset_to_kafka(brokers: str, topic: str, dataset: Any,
                            key_column: Optional[str] = None,
                            value_column: Optional[str] = None,
                            message_timeout_ms: int = 5000, *,
                            headers: Optional[Sequence[tuple[str, str]]] = None,
                            properties: Optional[Mapping[str, Any]] = None,
                            value_format: str = "json",
                            subject: Optional[str] = None,
                            registry_url: Optional[str] = None,
                            registry: Optional[Mapping[str, Any]] = None,
                            auto_register: bool = False,
                            message: Optional[str] = None) -> int:
    """Produce one message per row of ``dataset`` and return the rows delivered.

    ``dataset`` is a DataSet JSON document (``{"schema": {...}, "rows": [[...]]}``, text
    or dict) or Arrow data (a :class:`LandedWindow`, ``pyarrow.Table``, polars DataFrame:
    anything with ``__arrow_c_stream__``). The payload is a JSON object of the row, or
    ``value_column``'s text; the key is ``key_column``'s text, else the row index. Waits for
    every delivery (the GIL is released meanwhile).

    ``value_format="avro"``, ``"protobuf"`` or ``"json-schema"`` writes each row as a
    record of ``subject``'s latest schema (or, with ``auto_register``, of a schema derived
    from the data and registered) in the Confluent wire format; ``message`` names the
    Protobuf message written (default: the schema's first); ``registry_url`` and
    ``registry`` (``username``, ``password``, ``bearer_token``, ``ca_location``, …) say
    how to reach the registry.
    """
    config: dict[str, Any] = {"brokers": brokers, "topic": topic,
                              "message_timeout_ms": message_timeout_ms,
                              "key_column": key_column, "value_column": value_column}
    if value_format != "json":
        reg = dict(registry or {})
        if registry_url:
            reg["url"] = registry_url
        config.update(value_format=value_format, subject=subject, registry=reg,
                      auto_register=auto_register)
        if message:
            config["message"] = message
    if headers:
        config["headers"] = [[str(n), str(v)] for n, v in headers]
    if properties:
        config["properties"] = properties_dict(properties)
    producer_json = json.dumps(config)
    if hasattr(dataset, "__arrow_c_stream__"):
        return _kelt.export_arrow(producer_json, dataset)
    return _kelt.export_dataset_json(producer_json, json_text(dataset, "dataset"))
