# Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
"""Argument conversions shared by the facade (schemas, JSON documents)."""

from __future__ import annotations

import json
from typing import Any, Mapping, Sequence, Union

from . import _kelt

#: A landing schema: RDP's Python list form ``[{"name": "id", "data_type": "int64"}]``
#: (aliases int64|i64, float64|f64|double, bool|boolean, utf8|string|str|text, …), the
#: ``{"fields": [...]}`` form as a dict, or either as a JSON string.
SchemaLike = Union[str, Sequence[Mapping[str, Any]], Mapping[str, Any]]


def schema_json(landing_schema: SchemaLike, what: str = "landing_schema") -> str:
    """Return ``landing_schema`` as JSON text for the native module."""
    if isinstance(landing_schema, str):
        return landing_schema
    if isinstance(landing_schema, bytes):
        return landing_schema.decode("utf-8")
    if isinstance(landing_schema, (Mapping, list, tuple)):
        try:
            return json.dumps(landing_schema if not isinstance(landing_schema, tuple)
                              else list(landing_schema))
        except (TypeError, ValueError) as e:
            raise _kelt.InvalidError(f"{what}: not JSON-serializable: {e}") from None
    raise _kelt.InvalidError(
        f"{what}: expected a list of fields, a {{'fields': [...]}} dict or a JSON string, "
        f"got {type(landing_schema).__name__}")


def json_text(doc: Union[str, bytes, Mapping[str, Any], Sequence[Any]], what: str) -> str:
    """Return a JSON document given as text or as Python data."""
    if isinstance(doc, str):
        return doc
    if isinstance(doc, bytes):
        return doc.decode("utf-8")
    try:
        return json.dumps(doc)
    except (TypeError, ValueError) as e:
        raise _kelt.InvalidError(f"{what}: not JSON-serializable: {e}") from None


def normalize_schema(landing_schema: SchemaLike) -> dict:
    """Validate a landing schema and return it in the ``{"fields": [...]}`` form.

    >>> normalize_schema([{"name": "id", "data_type": "i64"}])
    {'fields': [{'name': 'id', 'data_type': 'Int64'}]}
    """
    return json.loads(_kelt.normalize_schema(schema_json(landing_schema)))


def check_policy(on_bad_record: str) -> str:
    if on_bad_record not in ("fail", "skip", "dead_letter"):
        raise _kelt.InvalidError(
            f"on_bad_record: expected 'fail', 'skip' or 'dead_letter', got {on_bad_record!r}")
    return on_bad_record


def topics_list(topics: Union[str, Sequence[str]]) -> list[str]:
    if isinstance(topics, str):
        return [topics]
    return [str(t) for t in topics]


def properties_dict(properties: Mapping[str, Any] | None) -> dict[str, str]:
    if not properties:
        return {}
    out = {}
    for k, v in properties.items():
        out[str(k)] = ("true" if v else "false") if isinstance(v, bool) else str(v)
    return out
