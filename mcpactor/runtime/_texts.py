# Text from the wire as the live tree, the rates and the history show it: bounded.
#
# The request metrics every session records name clients; the snapshot of the live tree
# (_snapshot_items.py) is built only where something reads it, so these few live here.

from __future__ import annotations

from typing import Final

from ..protocol import JSONValue

__all__ = ["MAX_TEXT", "client_name", "principal_text", "text"]

#: the longest text from the wire a snapshot shows
MAX_TEXT: Final = 200


def text(value: object) -> str | None:
    """``value`` as text of at most ``MAX_TEXT`` characters (None stays None)."""
    if value is None:
        return None
    string = value if isinstance(value, str) else str(value)
    return string if len(string) <= MAX_TEXT else string[: MAX_TEXT - 1] + "…"


def principal_text(principal: object) -> str | None:
    """The caller a principal names, as text (its identity, never its token)."""
    if principal is None:
        return None
    from ._peer_base import principal_of

    known = principal_of(principal)
    if known is None:
        return None
    return text(str(known).strip("\x1f").replace("\x1f", " · "))


def client_name(info: JSONValue) -> str | None:
    """``name version`` of the clientInfo a session's client sent, as text."""
    if type(info) is not dict:
        return None
    name, version = info.get("name"), info.get("version")
    if not isinstance(name, str):
        return None
    return text(f"{name} {version}" if isinstance(version, str) else name)
