# Paging of the list results (``tools/list`` and the others).
#
# A list is cut into pages of ``page_size`` entries once per kind and revision, and kept
# until the registry changes (the Server drops the cached pages then). Where the list is
# cacheable (``Revision.cacheable``) tools are listed by name, so that every replica and
# restart answers the same pages (the changelog asks for a deterministic order); the
# session revisions keep registration order. A cursor is the
# opaque base64 of ``[kind, page]``: one minted for another list, or not minted here, is
# a -32602 error naming it, bounded.

from __future__ import annotations

import base64
from collections.abc import Iterable
from typing import Any

import orjson

from .._exceptions import INVALID_PARAMS, RequestError
from ..protocol import JSONObject, Revision, bounded_value, describe

__all__ = ["Pages", "paginate"]

#: (kind, revision) -> the pages of that list
Pages = dict[tuple[str, str], list[list[JSONObject]]]


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
    pages = cache.get(key)
    if pages is None:
        items = [entry.wire(revision) for entry in entries]
        if kind == "tools" and "tools/list" in revision.cacheable:
            items.sort(key=lambda item: str(item.get("name")))
        pages = [items[i : i + page_size] for i in range(0, len(items), page_size)] or [[]]
        cache[key] = pages
    index = decode_cursor(params.get("cursor"), kind)
    if index >= len(pages):
        raise RequestError(INVALID_PARAMS, "the cursor is past the end of the list")
    result: JSONObject = {kind: pages[index]}
    if index + 1 < len(pages):
        result["nextCursor"] = encode_cursor(kind, index + 1)
    return result


def encode_cursor(kind: str, page: int) -> str:
    """The cursor of page number ``page`` of list ``kind``."""
    return base64.urlsafe_b64encode(orjson.dumps([kind, page])).decode("ascii")


def decode_cursor(cursor: Any, kind: str) -> int:
    """The page number a cursor of list ``kind`` names (0 for none); -32602 if it is not one."""
    if cursor is None:
        return 0
    try:
        decoded = orjson.loads(base64.urlsafe_b64decode(cursor.encode("ascii")))
        if decoded[0] == kind and type(decoded[1]) is int and decoded[1] >= 0:
            return int(decoded[1])
    except (ValueError, TypeError, AttributeError, IndexError, KeyError, orjson.JSONDecodeError):
        pass
    raise RequestError(
        INVALID_PARAMS, f"invalid cursor {describe(cursor)}", {"cursor": bounded_value(cursor)}
    )
