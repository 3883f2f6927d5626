# Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
"""The landed window: Arrow data through the PyCapsule interface, plus RDP's accessors."""

from __future__ import annotations

from typing import Any, NamedTuple, Optional

import pyarrow as pa

from . import _kelt


class PartitionSpan(NamedTuple):
    """The offsets a window covers in one partition: ``[first_offset, last_offset]``."""

    topic: str
    partition: int
    first_offset: int
    last_offset: int
    count: int


class LandedWindow:
    """Rows landed from one window of Kafka records, in the landing schema.

    The rows stay in kelt's Arrow buffers: ``pyarrow.table(w)``, ``polars.from_arrow(w)``,
    ``polars.DataFrame(w)`` and DuckDB (``duckdb.sql("SELECT … FROM w")``) read them
    through ``__arrow_c_stream__`` without copying. RDP's ``row_count()``,
    ``column_names()`` and ``to_rows()`` are kept.
    """

    __slots__ = ("_native", "_rows")

    def __init__(self, native: Any) -> None:
        self._native = native
        self._rows = native.rows

    # --- RDP's accessors ------------------------------------------------------------------
    def row_count(self) -> int:
        """Return the number of landed rows."""
        return self._rows.num_rows

    def column_names(self) -> list[str]:
        """Return the landing columns' names, in schema order."""
        return self._rows.column_names()

    def to_rows(self) -> list[list[Any]]:
        """Return the rows as lists of Python values in column order (None for null)."""
        table = self.to_arrow()
        columns = [c.to_pylist() for c in table.columns]
        return [list(row) for row in zip(*columns)] if columns else []

    # --- Arrow ----------------------------------------------------------------------------
    def __arrow_c_stream__(self, requested_schema: Optional[object] = None) -> object:
        """Export the rows as an Arrow C stream (PyCapsule ``arrow_array_stream``)."""
        return self._rows.__arrow_c_stream__(requested_schema)

    def __arrow_c_schema__(self) -> object:
        """Export the landing schema as an Arrow C schema (PyCapsule ``arrow_schema``)."""
        return self._rows.__arrow_c_schema__()

    def to_arrow(self) -> pa.Table:
        """Return the rows as a ``pyarrow.Table`` (zero-copy)."""
        return pa.table(self)

    @property
    def schema(self) -> pa.Schema:
        """The Arrow schema of the rows."""
        return pa.schema(self)

    # --- how the window went --------------------------------------------------------------
    @property
    def stats(self) -> dict[str, int]:
        """Counters: records, rows, bad_records, skipped, dead_lettered, tombstones,
        payload_bytes."""
        return self._native.stats

    @property
    def dead_letters(self) -> pa.Table:
        """Bad records under ``on_bad_record="dead_letter"`` (zero rows otherwise): topic,
        partition, offset, timestamp, key and raw value, with the error code, field and
        message."""
        return pa.table(self._native.dead_letters)

    @property
    def spans(self) -> list[PartitionSpan]:
        """Per partition, the offsets the window covers (empty for records you brought)."""
        return [PartitionSpan(*s) for s in self._native.spans]

    @property
    def end_reason(self) -> Optional[str]:
        """Why the consumer's window ended: 'max_records', 'max_bytes',
        'end_of_partitions' or 'deadline' (None for records you brought)."""
        return self._native.end_reason or None

    @property
    def caught_up(self) -> bool:
        """True when, in catch-up mode, every partition had reached its mark."""
        return self._native.caught_up

    def __len__(self) -> int:
        return self.row_count()

    def __repr__(self) -> str:
        s = self.stats
        return (f"<kelt.LandedWindow rows={s['rows']} bad_records={s['bad_records']} "
                f"columns={self.column_names()}>")
