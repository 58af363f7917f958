# Bounded views of values that came off the wire.
#
# Anything a peer sent can be as deep as the parser allows and as long as a frame: a
# ``repr`` of it recurses once per level (RecursionError past ~1000, which ends whatever
# task formats it) and copies all of it into an error message or a log line. Every
# message, log record and error ``data`` that names a peer's value goes through
# ``describe``, which stops at a fixed depth and length and cannot raise; and every
# decoded message is held to ``MAX_DEPTH`` levels (``exceeds_depth``) before anything
# walks it, so what we accept is also what orjson can write back (it refuses values
# nested 255 levels or more). ``clip``/``clip_all`` cut texts and lists of details,
# ``bounded_value`` is what error ``data`` may echo of a peer's value, and
# ``error_text``/``describe_error`` format an exception whose str() may not finish.

from __future__ import annotations

from typing import Any, Final

from .._exceptions import INVALID_PARAMS, RemoteProtocolError

__all__ = [
    "DESCRIBE_DEPTH",
    "DESCRIBE_LENGTH",
    "MAX_DEPTH",
    "MAX_DETAILS",
    "bounded_value",
    "clip",
    "clip_all",
    "describe",
    "describe_error",
    "error_text",
    "exceeds_depth",
    "over_limit",
    "sendable",
    "utf8_size",
]

#: the deepest nesting accepted in one message; the message object itself is level 1
MAX_DEPTH: Final = 128
#: how many levels of a value ``describe`` shows before writing ``[…]`` / ``{…}``
DESCRIBE_DEPTH: Final = 3
#: the longest text ``describe`` returns (characters, its ellipsis included)
DESCRIBE_LENGTH: Final = 120

#: the most error details (schema violations, …) one error response lists
MAX_DETAILS: Final = 20
#: the longest text ``clip`` keeps by default
CLIP_LENGTH: Final = 500

_ELLIPSIS: Final = "…"
# Ints longer than this many bits are named by size: str() of a huge int is quadratic
# and refused past 4300 digits.
_INT_BITS: Final = 128


def describe(value: Any, *, length: int = DESCRIBE_LENGTH, depth: int = DESCRIBE_DEPTH) -> str:
    """Return a repr-like description of ``value``, capped in depth and length; never raises."""
    length = max(length, 8)
    parts: list[str] = []
    try:
        _describe(value, depth, parts, length + 1)
    except Exception:  # a hostile __repr__ or __len__ of a non-JSON value
        parts.append(f"<{_type_name(value)}>")
    text = "".join(parts)
    if len(text) > length:
        text = text[: length - 1] + _ELLIPSIS
    return text


def clip(text: str, length: int = CLIP_LENGTH) -> str:
    """Return ``text`` cut to ``length`` characters (ellipsis included) when longer."""
    if len(text) <= length:
        return text
    return text[: max(length - 1, 0)] + _ELLIPSIS


def bounded_value(value: Any, length: int = CLIP_LENGTH) -> Any:
    """Return ``value`` to echo in error ``data``: a scalar as it is (a string clipped),
    anything else as its ``describe`` text."""
    if value is None or type(value) in (bool, int, float):
        return value
    if type(value) is str:
        return clip(value, length)
    return describe(value)


def clip_all(texts: list[str], count: int = MAX_DETAILS, length: int = CLIP_LENGTH) -> list[str]:
    """Return at most ``count`` of ``texts``, each clipped, and a line saying what was left."""
    kept = [clip(text, length) for text in texts[:count]]
    if len(texts) > count:
        kept.append(f"… and {len(texts) - count} more")
    return kept


def error_text(exc: BaseException, length: int | None = CLIP_LENGTH) -> str:
    """Return the message of an exception, clipped to ``length``; never raises.

    An exception's text may quote a peer's value (``KeyError(value)`` is its repr), so
    it is built here rather than with ``str(exc)``, which can recurse without bound.
    """
    limit = CLIP_LENGTH if length is None else length
    try:
        if isinstance(exc, KeyError) and len(exc.args) == 1:
            return describe(exc.args[0], length=limit)
        text = sendable(str(exc))
    except Exception:  # RecursionError from a deep value in the exception's args
        return describe(getattr(exc, "args", ()), length=limit)
    return text if length is None else clip(text, length)


def sendable(text: str) -> str:
    """Return ``text`` with any lone surrogate escaped (``\\udcff``), which JSON text
    cannot carry: a file name's undecodable bytes, as ``os`` keeps them."""
    if text.isascii():  # a flag of the string: no pass over it
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def describe_error(exc: BaseException, length: int = CLIP_LENGTH) -> str:
    """Return ``"TypeName: message"`` for an exception, bounded; never raises."""
    text = error_text(exc, length)
    name = _type_name(exc)
    return f"{name}: {text}" if text else name


def utf8_size(text: str) -> int:
    """Return the length of ``text`` encoded as UTF-8, in bytes (what limits count)."""
    if text.isascii():  # a flag of the string: no pass over it
        return len(text)
    # surrogatepass: never raises (a decoded JSON string has no lone surrogate anyway)
    return len(text.encode("utf-8", "surrogatepass"))


def over_limit(
    message: str, limit: int, *, code: int = INVALID_PARAMS, request_id: Any = None
) -> RemoteProtocolError:
    """Return the error for a peer's input over one of our limits.

    Every such refusal has this shape: the code (-32602 unless said otherwise), a
    message naming the limit, and ``data: {"limit": limit}``.
    """
    return RemoteProtocolError(message, code=code, data={"limit": limit}, request_id=request_id)


def _describe(value: Any, depth: int, parts: list[str], budget: int) -> int:
    # Appends to ``parts`` and returns the budget left; stops as soon as it is spent.
    if budget <= 0:
        return 0
    if value is None or value is True or value is False:
        text = repr(value)
    elif isinstance(value, str):
        text = repr(value[:budget])
        if len(value) > budget:
            text = text[:-1] + _ELLIPSIS + text[-1]
    elif isinstance(value, int):
        text = (
            repr(int(value))
            if value.bit_length() <= _INT_BITS
            else f"<int of {value.bit_length()} bits>"
        )
    elif isinstance(value, float):
        text = repr(float(value))
    elif isinstance(value, (list, tuple, dict)):
        return _describe_container(value, depth, parts, budget)
    elif isinstance(value, (bytes, bytearray)):
        text = repr(bytes(value[:budget]))
    else:
        text = f"<{_type_name(value)}>"
    parts.append(text)
    return budget - len(text)


def _describe_container(
    value: list[Any] | tuple[Any, ...] | dict[Any, Any], depth: int, parts: list[str], budget: int
) -> int:
    is_dict = isinstance(value, dict)
    opening, closing = (
        ("{", "}") if is_dict else (("(", ")") if isinstance(value, tuple) else ("[", "]"))
    )
    if not value:
        parts.append(opening + closing)
        return budget - 2
    if depth <= 0:
        parts.append(opening + _ELLIPSIS + closing)
        return budget - 3
    parts.append(opening)
    budget -= 1
    items = iter(value.items()) if is_dict else iter(value)  # type: ignore[union-attr]
    first = True
    for item in items:
        if budget <= 0:
            break
        if not first:
            parts.append(", ")
            budget -= 2
        first = False
        if is_dict:
            key, item = item
            budget = _describe(key, 0, parts, budget)
            parts.append(": ")
            budget -= 2
        budget = _describe(item, depth - 1, parts, budget)
    else:
        parts.append(closing)
        return budget - 1
    parts.append(_ELLIPSIS)
    return 0


def _type_name(value: Any) -> str:
    try:
        return type(value).__name__
    except Exception:  # pragma: no cover - type() of anything has a name
        return "object"


def exceeds_depth(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Return whether ``value`` nests lists and objects more than ``limit`` levels deep.

    A scalar is level 0 and the outermost list or object level 1. Iterative, so any depth
    is safe to ask about; meant for decoded JSON, which has no cycles.
    """
    if type(value) is dict:
        stack: list[tuple[Any, int]] = [(value.values(), 1)]
    elif type(value) is list:
        stack = [(value, 1)]
    else:
        return False
    if limit < 1:
        return True
    while stack:
        children, level = stack.pop()
        for child in children:
            kind = type(child)
            if kind is dict:
                if level >= limit:
                    return True
                stack.append((child.values(), level + 1))
            elif kind is list:
                if level >= limit:
                    return True
                stack.append((child, level + 1))
    return False
