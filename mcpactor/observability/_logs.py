# Structured logs: one JSON object per line, with the ids of the request being served.
#
# ``JsonFormatter`` writes ts, level, logger, message and, where a request actor set
# them (``LOG_CONTEXT``, a context variable, so every task the request starts inherits
# them), session_id, request_id and method; a record's exception goes in "exc". A
# message is often made of what came off the wire (a tool's name, a client's id), so
# every field is clipped before it is written: one record is one bounded line.

from __future__ import annotations

import logging
import sys
import time
from typing import Any, Final, TextIO

import orjson

from ..protocol._bounded import describe
from ..runtime._metrics import LOG_CONTEXT, METRICS

__all__ = ["MAX_FIELD", "MAX_MESSAGE", "JsonFormatter", "use_json_logs"]

#: the longest message written (characters); longer ones end with "…"
MAX_MESSAGE: Final = 4096
#: the longest id, method or logger name written
MAX_FIELD: Final = 256
#: the longest traceback written
_MAX_EXC: Final = 16384


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _field(value: object) -> str | int | None:
    if value is None or (type(value) is int and -(2**53) < value < 2**53):
        return value
    if type(value) is str:
        return _clip(value, MAX_FIELD)
    return describe(value, length=MAX_FIELD)


class JsonFormatter(logging.Formatter):
    """Formats each record as one JSON object (a JSON line without its newline)."""

    def format(self, record: logging.LogRecord) -> str:
        """Return ``record`` as JSON: ts, level, logger, message and the request's ids."""
        try:
            message = record.getMessage()
        except Exception as exc:  # a record whose arguments do not fit its format
            message = f"{record.msg!r} (unformattable: {exc!r})"
        entry: dict[str, Any] = {
            "ts": _timestamp(record.created),
            "level": record.levelname,
            "logger": _clip(record.name, MAX_FIELD),
            "message": _clip(message, MAX_MESSAGE),
        }
        context = LOG_CONTEXT.get()
        if context is not None:
            session_id, request_id, method = context
            if session_id is not None:
                entry["session_id"] = _field(session_id)
            entry["request_id"] = _field(request_id)
            entry["method"] = _field(method)
        if record.exc_info:
            entry["exc"] = _clip(self.formatException(record.exc_info), _MAX_EXC)
        elif record.exc_text:
            entry["exc"] = _clip(record.exc_text, _MAX_EXC)
        return orjson.dumps(entry).decode()


def _timestamp(created: float) -> str:
    # UTC, with milliseconds: 2026-01-02T03:04:05.678Z
    seconds = int(created)
    millis = int((created - seconds) * 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{millis:03d}Z"


def use_json_logs(stream: TextIO | None = None, *, level: int | str | None = None) -> None:
    """Log to ``stream`` (stderr) as JSON lines, with the request's ids where known.

    Replaces the root logger's handlers; from now on request actors record their ids.
    """
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    if level is not None:
        root.setLevel(level)
    METRICS.log_context = True
