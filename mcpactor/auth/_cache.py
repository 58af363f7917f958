# What a token was found to be, remembered until it stops being true.
#
# A client sends the same access token with every request for as long as it lives, so the
# answer for it — a Principal, or a refusal — is kept, keyed by the token's SHA-256 digest
# (never the token: the cache holds nothing a heap dump could replay), until the token
# expires or the entry's own limit passes. A repeated token then costs one hash and one
# dict lookup. The cache is a bounded LRU: a flood of distinct tokens evicts the oldest
# entries, never grows memory.

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Callable

from ._errors import InvalidToken
from ._principal import Principal

#: how many tokens a verifier remembers
DEFAULT_CACHE_SIZE = 10_000


def token_key(token: str) -> bytes:
    """The cache key of ``token``: its SHA-256 digest."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()


class TokenCache:
    """A bounded LRU of token digests to a Principal (or a refusal), each with a deadline."""

    __slots__ = ("_clock", "_entries", "maxsize")

    def __init__(self, maxsize: int, clock: Callable[[], float]) -> None:
        if maxsize < 0:
            raise ValueError("the cache size must be at least 0")
        self.maxsize = maxsize
        self._clock = clock
        self._entries: OrderedDict[bytes, tuple[float, Principal | str]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def lookup(self, key: bytes) -> Principal | None:
        """The Principal cached for ``key``; raises the cached ``InvalidToken``; None: unknown."""
        entry = self._entries.get(key)
        if entry is None:
            return None
        until, answer = entry
        if self._clock() > until:
            del self._entries[key]
            return None
        self._entries.move_to_end(key)
        if isinstance(answer, str):
            raise InvalidToken(answer)
        return answer

    def find(self, token: str) -> Principal | None:
        """``lookup(token_key(token))``, for the token itself: a request's one lookup."""
        return self.lookup(token_key(token))

    def remember(self, key: bytes, answer: Principal | str, until: float) -> None:
        """Keep ``answer`` (a Principal, or the reason a token was refused) until ``until``."""
        if self.maxsize == 0 or until <= self._clock():
            return
        entries = self._entries
        entries[key] = (until, answer)
        entries.move_to_end(key)
        while len(entries) > self.maxsize:
            entries.popitem(last=False)

    def clear(self) -> None:
        """Forget every token."""
        self._entries.clear()
