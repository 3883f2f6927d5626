# Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
"""kelt's log hook (the library is silent until you install one)."""

from __future__ import annotations

import atexit
import logging
from typing import Callable, Optional

from . import _kelt

#: handler(level, component, message); level is "debug", "info", "warning" or "error".
LogHandler = Callable[[str, str, str], None]

_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING,
           "error": logging.ERROR}


def set_log_handler(handler: Optional[LogHandler], level: str = "info") -> None:
    """Receive kelt's log messages (consumer group changes, sink rotations, retries, …)
    at ``level`` and above; ``None`` removes the handler. The handler may be called from
    kelt's and librdkafka's threads (with the GIL held); an exception it raises is reported
    as unraisable and otherwise ignored. Messages never contain secrets."""
    _kelt.set_log_handler(handler, level)


def log_to_logging(level: str = "info", logger: str = "kelt") -> None:
    """Send kelt's log messages to the standard :mod:`logging` logger ``logger``
    (``kelt.<component>`` children), at ``level`` and above."""
    base = logging.getLogger(logger)

    def handler(lvl: str, component: str, message: str) -> None:
        base.getChild(component).log(_LEVELS.get(lvl, logging.INFO), "%s", message)

    set_log_handler(handler, level)


@atexit.register
def _remove_handler_at_exit() -> None:
    # Background threads must not call into a finalizing interpreter.
    try:
        _kelt.set_log_handler(None, "info")
    except Exception:  # pragma: no cover - best effort at shutdown
        pass
