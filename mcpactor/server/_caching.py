# Cache hints: how long a client may keep a list or a read, and who may share it.
#
# At a revision whose row lists cacheable methods (``Revision.cacheable``), complete
# results of those methods carry ``ttlMs`` and ``cacheScope`` (the caching page). A
# server sets a default hint, and a tool, resource or template may set its own (else it
# has the server's); a list is as fresh as its stalest entry and private if any entry
# is, over the whole list, so every page of one list says the same scope (the page
# requires that).

from __future__ import annotations

from collections.abc import Iterable
from typing import Final, Literal

import attrs

from ..protocol import describe

__all__ = ["CacheHint", "CacheScope", "combine"]

CacheScope = Literal["public", "private"]
_SCOPES: Final = ("public", "private")


def _check_ttl(_: object, __: object, value: int) -> None:
    if type(value) is not int or value < 0:
        raise ValueError(f"ttl_ms must be a non-negative int, got {describe(value)}")


def _check_scope(_: object, __: object, value: str) -> None:
    if value not in _SCOPES:
        raise ValueError(f"scope must be 'public' or 'private', got {describe(value)}")


@attrs.frozen
class CacheHint:
    """A freshness hint: ``ttl_ms`` milliseconds, cacheable by ``scope``.

    ``"private"`` (the default) lets a client reuse the result only within the same
    authorization context; ``"public"`` lets shared intermediaries serve it to anyone.
    The default ``ttl_ms`` 0 makes every result immediately stale.
    """

    ttl_ms: int = attrs.field(default=0, validator=_check_ttl)
    scope: CacheScope = attrs.field(default="private", validator=_check_scope)

    def wire(self) -> dict[str, int | str]:
        """The result fields: ``ttlMs`` and ``cacheScope``."""
        return {"ttlMs": self.ttl_ms, "cacheScope": self.scope}


def combine(default: CacheHint, hints: Iterable[CacheHint | None]) -> CacheHint:
    """The hint of a result built from entries with ``hints`` (None: ``default``).

    The stalest entry's ``ttl_ms``, private if any entry is; ``default`` for no entries.
    """
    effective = [default if hint is None else hint for hint in hints]
    if not effective:
        return default
    ttl = min(hint.ttl_ms for hint in effective)
    private = any(hint.scope == "private" for hint in effective)
    return CacheHint(ttl, "private" if private else "public")
