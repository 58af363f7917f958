# Logs on stderr: text lines by default, JSON lines with ``--log-format json``.
#
# ``JsonFormatter`` writes ts, level, logger, message and, where a request actor set
# them (``LOG_CONTEXT``, a context variable, so every task the request starts inherits
# them), session_id, request_id and method; a record's exception goes in "exc".
# ``TextFormatter`` writes the same records as text lines.
#
# A message is often made of what came off the wire or out of a handler (a tool's name,
# a client's id, the text of an exception that quotes an argument), so both formatters
# bound each argument before the message is formatted and clip the message after. The
# text formatter also escapes what a terminal or a log reader would act on: a CR or LF
# in a message would start a forged record, an ANSI escape would rewrite the screen. So
# one record is one line; its traceback follows on lines that each start with
# whitespace, which no record's first line does, and whose control characters (but the
# line breaks between them) are escaped too. The escaping is done once, here, so that no
# call site has to remember it.

from __future__ import annotations

import logging
import re
import sys
import time
import traceback
from collections.abc import Mapping
from typing import Any, Final, TextIO

import orjson

from ..protocol import describe, error_text
from ..runtime import LOG_CONTEXT, METRICS

__all__ = [
    "MAX_ARGUMENT",
    "MAX_FIELD",
    "MAX_MESSAGE",
    "TEXT_FORMAT",
    "JsonFormatter",
    "TextFormatter",
    "escape_text",
    "json_handler",
    "use_json_logs",
    "use_text_logs",
]

#: the longest message written (characters); longer ones end with "…"
MAX_MESSAGE: Final = 4096
#: the longest id, method or logger name written
MAX_FIELD: Final = 256
#: the longest text one argument of a record contributes to its message
MAX_ARGUMENT: Final = MAX_MESSAGE
#: the longest traceback written
_MAX_EXC: Final = 16384
#: how deep a list or dict argument is shown
_ARGUMENT_DEPTH: Final = 4
#: the format of ``mcpactor serve``'s text lines
TEXT_FORMAT: Final = "%(levelname)s %(name)s: %(message)s"

# What a text line may not hold raw: C0 and C1 controls and DEL (CR, LF, ESC …), the
# Unicode line and paragraph separators, and the bidirectional controls that reorder
# what a reader sees.
_UNSAFE: Final = re.compile(
    "[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]"
)
# The same, but for line feeds: the breaks between a traceback's lines.
_UNSAFE_IN_BLOCK: Final = re.compile(
    "[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]"
)
_NAMED: Final = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
#: what starts each line of a traceback (or of a message's continuation)
_CONTINUATION: Final = "  "


def _escaped(match: re.Match[str]) -> str:
    char = match.group()
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape_text(text: str, *, lines: bool = False) -> str:
    """Return ``text`` with its control characters escaped (``\\n``, ``\\x1b``, ``\\u2028``).

    With ``lines``, line feeds stay and every line but the first starts with whitespace
    (two spaces are added where it does not): a block that cannot pass for records.
    """
    if not lines:
        return _UNSAFE.sub(_escaped, text)
    first, *rest = _UNSAFE_IN_BLOCK.sub(_escaped, text).split("\n")
    return "\n".join([first, *map(_continued, rest)])


def _continued(line: str) -> str:
    return line if line.startswith(" ") else _CONTINUATION + line


def _block(text: str) -> str:
    # Lines that follow a record's own: each escaped, each starting with whitespace.
    return "\n".join(map(_continued, _UNSAFE_IN_BLOCK.sub(_escaped, text).split("\n")))


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


class _Shown:
    # An argument replaced by its bounded description, for %s and %r alike.
    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __str__(self) -> str:
        return self.text

    __repr__ = __str__


class _ShownError:
    # An exception argument: its bounded message for %s, a bounded repr for %r.
    __slots__ = ("exc",)

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc

    def __str__(self) -> str:
        return error_text(self.exc, MAX_ARGUMENT)

    def __repr__(self) -> str:
        return type(self.exc).__name__ + describe(
            tuple(getattr(self.exc, "args", ())), length=MAX_ARGUMENT, depth=_ARGUMENT_DEPTH
        )


def _bounded(value: object) -> object:
    # What formatting an argument may cost and produce is bounded before it is formatted.
    kind = type(value)
    if kind is str:
        return _clip(value, MAX_ARGUMENT)  # type: ignore[arg-type]
    if kind in (bytes, bytearray, memoryview):
        data = bytes(value[: MAX_ARGUMENT + 1])  # type: ignore[index]
        return value if len(data) <= MAX_ARGUMENT else _Shown(repr(data[:MAX_ARGUMENT]) + "…")
    if kind in (list, tuple, dict):
        return _Shown(describe(value, length=MAX_ARGUMENT, depth=_ARGUMENT_DEPTH))
    if isinstance(value, BaseException):
        return _ShownError(value)
    return value


def _message(record: logging.LogRecord) -> str:
    # The record's message, its arguments bounded first; never raises.
    args: Any = record.args
    try:
        if args:
            if isinstance(args, Mapping):
                args = {key: _bounded(value) for key, value in args.items()}
            else:
                args = tuple(_bounded(value) for value in args)
            message = str(record.msg) % args
        else:
            message = str(record.msg)
    except Exception as exc:  # a record whose arguments do not fit its format
        message = f"{describe(record.msg)} (unformattable: {describe_exception(exc)})"
    return _clip(message, MAX_MESSAGE)


def describe_exception(exc: BaseException) -> str:
    """``Type: message`` of ``exc``, bounded."""
    text = error_text(exc, MAX_FIELD)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


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
        entry: dict[str, Any] = {
            "ts": _timestamp(record.created),
            "level": record.levelname,
            "logger": _clip(record.name, MAX_FIELD),
            "message": _message(record),
        }
        context = LOG_CONTEXT.get()
        if context is not None:
            session_id, request_id, method = context
            if session_id is not None:
                entry["session_id"] = _field(session_id)
            entry["request_id"] = _field(request_id)
            entry["method"] = _field(method)
        exc = _exception_text(self, record)
        if exc:
            entry["exc"] = exc
        try:
            return orjson.dumps(entry).decode()
        except TypeError:
            # A lone surrogate (a file name's undecodable bytes) that JSON text cannot
            # carry as it is: written as its escape instead, and the record kept.
            import json

            return json.dumps(entry, ensure_ascii=True, default=str, separators=(",", ":"))


class TextFormatter(logging.Formatter):
    """Formats each record as one text line (``TEXT_FORMAT`` unless given another).

    Arguments are bounded before the message is formatted, the message is clipped and
    its control characters escaped; a traceback follows on lines that start with
    whitespace, its control characters escaped too (see the module comment).
    """

    def __init__(self, fmt: str | None = TEXT_FORMAT, datefmt: str | None = None) -> None:
        super().__init__(fmt, datefmt)

    def format(self, record: logging.LogRecord) -> str:
        """Return ``record`` as a line, and its traceback (if any) as the lines after it."""
        record.message = escape_text(_message(record))
        if self.usesTime():
            record.asctime = self.formatTime(record, self.datefmt)
        text = self.formatMessage(record)
        exc = _exception_text(self, record, cache=False)
        if exc:
            text += "\n" + _block(exc)
        return text

    def formatException(self, ei: Any) -> str:
        """The traceback of ``ei``, each exception's message and notes escaped.

        A message's line breaks are its own, not the traceback's: they are escaped like
        the rest, so the message stays on its line.
        """
        value = ei[1]
        if value is None:
            return super().formatException(ei)
        try:
            te = traceback.TracebackException(type(value), value, ei[2], compact=True)
            _escape_messages(te)
            return "".join(te.format()).rstrip("\n")
        except Exception:  # a traceback that cannot be walked: the plain one, escaped later
            return super().formatException(ei)


def _escape_messages(top: traceback.TracebackException) -> None:
    # Each exception's text and notes in the chain and the groups, escaped in place.
    seen: set[int] = set()
    stack = [top]
    while stack:
        te = stack.pop()
        if id(te) in seen:
            continue
        seen.add(id(te))
        text = getattr(te, "_str", None)
        if isinstance(text, str):
            te._str = escape_text(text)  # type: ignore[attr-defined]
        notes = getattr(te, "__notes__", None)
        if isinstance(notes, list):
            te.__notes__ = [escape_text(note) if isinstance(note, str) else note for note in notes]
        for name in ("msg", "text"):  # a SyntaxError's message and source line
            value = getattr(te, name, None)
            if isinstance(value, str):
                setattr(te, name, escape_text(value.rstrip("\n")))
        stack.extend(
            child
            for child in (te.__cause__, te.__context__, *(te.exceptions or ()))
            if child is not None
        )


def _exception_text(
    formatter: logging.Formatter, record: logging.LogRecord, *, cache: bool = True
) -> str:
    # The traceback and stack of ``record``, clipped; "" if it has neither. Cached on the
    # record, as logging.Formatter does, unless ``cache`` is false (a text of our own).
    text = ""
    if record.exc_info and (not cache or not record.exc_text):
        try:
            text = formatter.formatException(record.exc_info)
        except Exception as exc:  # a traceback whose text does not finish
            text = f"(the traceback could not be formatted: {exc!r:.200})"
        if cache:
            record.exc_text = text
    elif record.exc_text:
        text = record.exc_text
    if record.stack_info:
        text = (text + "\n" if text else "") + formatter.formatStack(record.stack_info)
    return _clip(text, _MAX_EXC)


def _timestamp(created: float) -> str:
    # UTC, with milliseconds: 2026-01-02T03:04:05.678Z
    seconds = int(created)
    millis = int((created - seconds) * 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{millis:03d}Z"


def _replace_root_handler(handler: logging.Handler, level: int | str | None) -> None:
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    if level is not None:
        root.setLevel(level)


def use_json_logs(stream: TextIO | None = None, *, level: int | str | None = None) -> None:
    """Log to ``stream`` (stderr) as JSON lines, with the request's ids where known.

    Replaces the root logger's handlers; from now on request actors record their ids,
    and Python's warnings are logged too (``py.warnings``), so that every line is JSON.
    """
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(JsonFormatter())
    _replace_root_handler(handler, level)
    logging.captureWarnings(True)
    METRICS.log_context = True


def use_text_logs(stream: TextIO | None = None, *, level: int | str | None = None) -> None:
    """Log to ``stream`` (stderr) as text lines (``TextFormatter``).

    Replaces the root logger's handlers.
    """
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(TextFormatter())
    _replace_root_handler(handler, level)


def json_handler() -> logging.Handler | None:
    """The root logger's handler that writes JSON lines, if logs are JSON; else None."""
    for handler in logging.getLogger().handlers:
        if isinstance(handler.formatter, JsonFormatter):
            return handler
    return None
