# Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
"""The stateful consumer: bounded windows, commit only what the caller says is durable."""

from __future__ import annotations

import json
from typing import Any, Iterable, Mapping, NamedTuple, Optional, Sequence, Union

from . import _kelt
from ._convert import SchemaLike, check_policy, properties_dict, schema_json, topics_list
from ._window import LandedWindow, PartitionSpan

#: Consumer's keyword arguments → config keys, from the key table.
_CONSUMER_KEYS = {k["python"]: k["key"] for k in _kelt.config_keys() if k["consumer"]}


class PartitionLag(NamedTuple):
    """Lag of one assigned partition: high watermark minus the next offset to read."""

    topic: str
    partition: int
    position: int
    high_watermark: int
    lag: int


class PolledRecords(NamedTuple):
    """A window of raw records: RDP's JSON ``{"records": [...]}`` and the spans to commit."""

    records_json: str
    spans: list[PartitionSpan]


class Consumer:
    """A consumer-group member that polls bounded windows and commits on request.

    >>> with kelt.Consumer("localhost:9092", "my-group", "events") as c:  # doctest: +SKIP
    ...     w = c.poll(schema, max_records=10_000)
    ...     write_somewhere_durable(pyarrow.table(w))
    ...     c.commit(w)

    Offsets are committed only by :meth:`commit` (never automatically), so a crash before
    it re-reads the window. ``group_protocol`` is ``"classic"`` or ``"consumer"``
    (KIP-848, Kafka >= 4.0); ``instance_id`` makes the member static (a restarted worker
    takes its partitions back at once). ``properties`` passes any librdkafka property through
    (``security.protocol``, ``sasl.*``, ``ssl.*``, ``fetch.*``, …). Topics starting with
    ``^`` are regular expressions. Every call releases the GIL while it waits; one
    consumer may be shared between threads (calls are serialized).
    """

    def __init__(self, brokers: str, group_id: str, topics: Union[str, Sequence[str]], *,
                 auto_offset_reset: Optional[str] = None,
                 session_timeout_ms: Optional[int] = None,
                 group_protocol: Optional[str] = None, instance_id: Optional[str] = None,
                 properties: Optional[Mapping[str, Any]] = None) -> None:
        # Every argument is a consumer key of the config (None: its default), so names,
        # defaults and checks are the config parser's (docs/USER_GUIDE.md).
        given = {k: v for k, v in locals().items() if k != "self"}
        given["topics"] = topics_list(topics)
        given["properties"] = properties_dict(properties) or None
        doc = {_CONSUMER_KEYS[name]: value for name, value in given.items()
               if value is not None}
        try:
            text = json.dumps(doc, ensure_ascii=False)
        except (TypeError, ValueError) as e:
            raise _kelt.InvalidError(
                f"Consumer: an argument is not JSON-serializable: {e}") from None
        self._native = _kelt.Consumer(text)

    def poll(self, landing_schema: SchemaLike, *, max_records: int = 500,
             max_bytes: int = 64 << 20, max_wait_ms: int = 10_000, stop_at_end: bool = True,
             on_bad_record: str = "fail", strict_payload: bool = False) -> LandedWindow:
        """Poll the next window and load it into ``landing_schema``.

        The window ends at ``max_records`` records, ``max_bytes`` of payload, when every
        assigned partition is at its end (``stop_at_end``), or after ``max_wait_ms``. It is
        not committed: call :meth:`commit` once what you did with it is durable. Under
        ``on_bad_record="fail"`` a bad record raises (naming its topic, partition and
        offset) and the window is given back: the next poll reads it again, so nothing is
        passed over by a later commit (poll with ``"dead_letter"`` to land the rest).
        """
        return LandedWindow(self._native.poll(schema_json(landing_schema), int(max_records),
                                              int(max_bytes), int(max_wait_ms),
                                              bool(stop_at_end), check_policy(on_bad_record),
                                              bool(strict_payload)))

    def poll_records(self, *, max_records: int = 500, max_bytes: int = 64 << 20,
                     max_wait_ms: int = 10_000, stop_at_end: bool = True) -> PolledRecords:
        """Poll the next window as RDP's records JSON (for your own loading)."""
        records_json, spans = self._native.poll_records(int(max_records), int(max_bytes),
                                                        int(max_wait_ms), bool(stop_at_end))
        return PolledRecords(records_json, [PartitionSpan(*s) for s in spans])

    def commit(self, window: Union[LandedWindow, PolledRecords,
                                   Iterable[PartitionSpan]]) -> None:
        """Commit, synchronously, the offset after the last record of each partition of
        ``window`` that this consumer still owns. Call it only when the window is durable."""
        spans = window.spans if isinstance(window, (LandedWindow, PolledRecords)) else window
        self._native.commit_offsets([(s[0], int(s[1]), int(s[3]) + 1) for s in spans])

    def commit_offsets(self, next_offsets: Mapping[tuple[str, int], int]) -> None:
        """Commit these next offsets ``{(topic, partition): offset}`` (owned partitions)."""
        self._native.commit_offsets([(t, int(p), int(o)) for (t, p), o in next_offsets.items()])

    def lag(self, timeout_ms: int = 5000) -> list[PartitionLag]:
        """Return the lag of every assigned partition (asks the broker)."""
        return [PartitionLag(**d) for d in self._native.lag(int(timeout_ms))]

    def committed(self, timeout_ms: int = 5000) -> dict[tuple[str, int], int]:
        """Return the committed offsets of the assigned partitions (-1: none)."""
        return self._native.committed(int(timeout_ms))

    def assignment(self) -> list[tuple[str, int]]:
        """Return the partitions currently assigned to this member."""
        return self._native.assignment()

    def lost_partitions(self) -> list[tuple[str, int]]:
        """Return (and forget) the partitions revoked or lost since the last call."""
        return self._native.take_lost_partitions()

    def start_catch_up(self) -> None:
        """Stop at the high watermarks of now: windows then end at those marks and
        :attr:`caught_up` becomes true once every partition reached its mark."""
        self._native.start_catch_up()

    @property
    def caught_up(self) -> bool:
        """True when, in catch-up mode, every partition reached its mark."""
        return self._native.caught_up

    @property
    def closed(self) -> bool:
        return self._native.closed

    def close(self) -> None:
        """Leave the group. Uncommitted records are left for the next owner."""
        self._native.close()

    def __enter__(self) -> "Consumer":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
