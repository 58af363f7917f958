# Paging of the list results (``tools/list`` and the others).
#
# A list is built once per kind and revision, and kept until the registry changes (the
# Server drops the cached lists then). Where the list is cacheable (``Revision.cacheable``)
# tools are listed by name, so that every replica and restart answers the same pages (the
# changelog asks for a deterministic order); the session revisions keep registration
# order. A cursor is the opaque base64 of ``[kind, offset, last]``: where the next page
# starts and the key (name, URI or URI template) of the last entry already given. While
# the list is unchanged the offset is used as it is; once it changed, the next page starts
# after ``last`` where it now is (in a list by name, after where it would sort), so
# entries added or removed between pages make no entry that was listed throughout come
# twice or go missing. A cursor minted for another list, or not minted here, is a -32602
# error naming it, bounded.

from __future__ import annotations

import base64
import bisect
from collections.abc import Iterable
from typing import Any, Final

import orjson

from .._exceptions import INVALID_PARAMS, RequestError
from ..protocol import JSONObject, Revision, bounded_value, describe

__all__ = ["Pages", "paginate"]

# The field that names an entry of each list.
_KEYS: Final = {"resources": "uri", "resourceTemplates": "uriTemplate"}
#: a cursor longer than this is refused before it is decoded
MAX_CURSOR_CHARS: Final = 4096


class _Listing:
    # One list as built: its entries in order, and where each is, worked out when asked.
    # A plain class, not attrs: never compared, and an attrs class costs every start-up
    # its build.
    __slots__ = ("_keys", "_positions", "by_name", "items", "key")

    def __init__(self, items: list[JSONObject], key: str, by_name: bool) -> None:
        self.items = items
        self.key = key
        self.by_name = by_name
        self._keys: list[str] | None = None
        self._positions: dict[str, int] | None = None

    def key_at(self, index: int) -> str:
        return str(self.items[index].get(self.key))

    def after(self, last: str) -> int | None:
        # Where the entries after ``last`` start now (None: it is gone, order unknown).
        if self.by_name:
            if self._keys is None:
                self._keys = [self.key_at(i) for i in range(len(self.items))]
            return bisect.bisect_right(self._keys, last)
        if self._positions is None:
            self._positions = {self.key_at(i): i for i in range(len(self.items))}
        position = self._positions.get(last)
        return None if position is None else position + 1


#: (kind, revision) -> that list as built
Pages = dict[tuple[str, str], _Listing]


def paginate(
    cache: Pages,
    kind: str,
    revision: Revision,
    params: JSONObject,
    entries: Iterable[Any],
    page_size: int,
) -> JSONObject:
    """The page of list ``kind`` that ``params["cursor"]`` asks for, with ``nextCursor``."""
    key = (kind, revision.version)
    listing = cache.get(key)
    if listing is None:
        items = [entry.wire(revision) for entry in entries]
        by_name = kind == "tools" and "tools/list" in revision.cacheable
        if by_name:
            items.sort(key=lambda item: str(item.get("name")))
        listing = cache[key] = _Listing(items, _KEYS.get(kind, "name"), by_name)
    start = _start(listing, decode_cursor(params.get("cursor"), kind))
    end = start + page_size
    result: JSONObject = {kind: listing.items[start:end]}
    if end < len(listing.items):
        result["nextCursor"] = encode_cursor(kind, end, listing.key_at(end - 1))
    return result


def _start(listing: _Listing, cursor: tuple[int, str] | None) -> int:
    if cursor is None:
        return 0
    offset, last = cursor
    items = listing.items
    if offset <= len(items) and listing.key_at(offset - 1) == last:
        return offset  # the list as the cursor was minted for (or the same up to here)
    after = listing.after(last)
    if after is not None:
        return after
    # Its last entry was removed from a list in registration order: resume at the same
    # place, one back, so a removal before it repeats an entry rather than skipping one.
    return min(offset - 1, len(items))


def encode_cursor(kind: str, offset: int, last: str) -> str:
    """The cursor of list ``kind`` from ``offset`` on, after the entry keyed ``last``."""
    return base64.urlsafe_b64encode(orjson.dumps([kind, offset, last])).decode("ascii")


def decode_cursor(cursor: Any, kind: str) -> tuple[int, str] | None:
    """The offset and last key a cursor of list ``kind`` holds (None for no cursor).

    Raises:
        RequestError: -32602, the cursor is not one of this list's.
    """
    if cursor is None:
        return None
    try:
        if len(cursor) <= MAX_CURSOR_CHARS:
            decoded = orjson.loads(base64.urlsafe_b64decode(cursor.encode("ascii")))
            name, offset, last = decoded
            if name == kind and type(offset) is int and offset >= 1 and type(last) is str:
                return offset, last
    except (ValueError, TypeError, AttributeError, IndexError, KeyError, orjson.JSONDecodeError):
        pass
    raise RequestError(
        INVALID_PARAMS, f"invalid cursor {describe(cursor)}", {"cursor": bounded_value(cursor)}
    )
