"""Middleware: the chain around every request a server serves, and built-in layers.

A middleware is an async generator function that wraps the next step::

    async def timed(call: Call, call_next: Next) -> AsyncIterator[Message]:
        started = trio.current_time()
        async for message in call_next(call):
            yield message
        print(call.method, trio.current_time() - started)

    server.middleware.use(timed)

The first added is the outermost: it sees a request first and its answer last. The
built-in layers below are written on that same API (docs/middleware.md).
"""

from __future__ import annotations

import collections
import logging
from collections.abc import AsyncIterator, Callable, Collection, Hashable
from typing import Any, Final

import orjson
import trio

from ._exceptions import INVALID_PARAMS, RequestError
from .protocol import JSONObject, bounded_value, describe
from .runtime import ChainAnswered
from .server import (
    Call,
    InputRequiredResult,
    LogMessage,
    Message,
    Middleware,
    MiddlewareChain,
    Next,
    Notice,
    Progress,
    Result,
)

__all__ = [
    "RATE_LIMITED",
    "Call",
    "ChainAnswered",
    "InputRequiredResult",
    "LogMessage",
    "Message",
    "Middleware",
    "MiddlewareChain",
    "Next",
    "Notice",
    "Progress",
    "RateLimit",
    "ResponseCache",
    "Result",
    "ToolFilter",
    "caller_of",
    "timing",
]

#: the JSON-RPC error code of a request refused by ``RateLimit`` (its data: retryAfter)
RATE_LIMITED: Final = -32029

_log = logging.getLogger("mcpactor.middleware")

# Characters of a client's name or version a rate limit keys its caller by.
_KEY_TEXT: Final = 200


def caller_of(call: Call) -> Hashable:
    """Who makes ``call``: its principal's subject, else the client's name and version."""
    principal = call.principal
    if principal is not None:
        return ("principal", principal.subject)
    info = call.context.client_info or {}
    # What came off the wire, bounded: a key is kept per caller.
    return ("client", str(info.get("name"))[:_KEY_TEXT], str(info.get("version"))[:_KEY_TEXT])


def _tool_name(call: Call) -> str | None:
    params = call.params
    name = params.get("name") if params is not None else None
    return name if type(name) is str else None


def timing(logger: logging.Logger | None = None, level: int = logging.INFO) -> Middleware:
    """A layer that logs each request's method, outcome and duration (trio's clock)."""
    log = logger if logger is not None else _log

    async def timed(call: Call, call_next: Next) -> AsyncIterator[Message]:
        started = trio.current_time()
        outcome = "cancelled"
        try:
            async for message in call_next(call):
                if isinstance(message, InputRequiredResult):
                    outcome = "input_required"
                elif isinstance(message, Result):
                    outcome = "tool error" if message.payload.get("isError") is True else "ok"
                yield message
            if outcome == "cancelled":
                outcome = "ok"
        except RequestError as exc:
            outcome = f"error {exc.code}"
            raise
        except Exception as exc:
            outcome = f"failed: {type(exc).__name__}"
            raise
        finally:
            if log.isEnabledFor(level):
                name = _tool_name(call) if call.method == "tools/call" else None
                shown = describe(call.method) + (f" {describe(name)}" if name else "")
                took = (trio.current_time() - started) * 1000
                log.log(level, "%s %s: %s in %.3f ms", call.kind, shown, outcome, took)

    return timed


class RateLimit:
    """A token bucket per caller: ``rate`` requests a second, bursts of ``burst``.

    A request over the limit is refused with ``RATE_LIMITED`` and its ``retryAfter``
    (seconds) in the error's data. ``key`` says who a caller is (default ``caller_of``:
    the principal, else the client's name). ``methods`` limits only those (default:
    every request); notifications pass. At most ``max_callers`` buckets are kept, the
    least recently used dropped first (a dropped caller starts full again).
    """

    def __init__(
        self,
        rate: float,
        burst: int = 1,
        *,
        key: Callable[[Call], Hashable] = caller_of,
        methods: Collection[str] | None = None,
        max_callers: int = 10_000,
    ) -> None:
        if not rate > 0 or burst < 1 or max_callers < 1:
            raise ValueError("rate must be positive, burst and max_callers at least 1")
        self.rate = float(rate)
        self.burst = burst
        self.key = key
        self.methods = frozenset(methods) if methods is not None else None
        self.max_callers = max_callers
        # caller -> (tokens, when they were counted), least recently used first
        self._buckets: collections.OrderedDict[Hashable, tuple[float, float]] = (
            collections.OrderedDict()
        )

    def take(self, caller: Hashable) -> float:
        """Take a token for ``caller``: 0.0 if there was one, else seconds until one."""
        now = trio.current_time()
        buckets = self._buckets
        tokens, then = buckets.pop(caller, (float(self.burst), now))
        tokens = min(float(self.burst), tokens + (now - then) * self.rate)
        wait = 0.0
        if tokens >= 1.0:
            tokens -= 1.0
        else:
            wait = (1.0 - tokens) / self.rate
        buckets[caller] = (tokens, now)
        if len(buckets) > self.max_callers:
            buckets.popitem(last=False)
        return wait

    async def __call__(self, call: Call, call_next: Next) -> AsyncIterator[Message]:
        """Refuse a request over its caller's limit; pass the rest."""
        if call.kind == "request" and (self.methods is None or call.method in self.methods):
            wait = self.take(self.key(call))
            if wait > 0.0:
                retry = round(wait, 3)
                raise RequestError(
                    RATE_LIMITED,
                    f"rate limit exceeded: retry after {retry} s",
                    {"retryAfter": retry},
                )
        async for message in call_next(call):
            yield message


class ToolFilter:
    """Serve only some tools: ``allow`` (None: all) minus ``deny``.

    A filtered tool is left out of ``tools/list`` and a call of it is refused exactly as
    a call of an unknown tool is.
    """

    def __init__(self, *, allow: Collection[str] | None = None, deny: Collection[str] = ()):
        self.allow = frozenset(allow) if allow is not None else None
        self.deny = frozenset(deny)

    def allows(self, name: str) -> bool:
        """Whether the tool ``name`` is served."""
        return name not in self.deny and (self.allow is None or name in self.allow)

    async def __call__(self, call: Call, call_next: Next) -> AsyncIterator[Message]:
        """Refuse calls of filtered tools; leave them out of tool lists."""
        method = call.method
        if method == "tools/call":
            name = _tool_name(call)
            if name is not None and not self.allows(name):
                raise RequestError(
                    INVALID_PARAMS,
                    f"unknown tool: {describe(name)}",
                    {"name": bounded_value(name)},
                )
        async for message in call_next(call):
            if method == "tools/list" and type(message) is Result:
                tools = message.payload.get("tools")
                if type(tools) is list:
                    kept = [tool for tool in tools if self._listed(tool)]
                    message.payload = {**message.payload, "tools": kept}
            yield message

    def _listed(self, tool: Any) -> bool:
        name = tool.get("name") if type(tool) is dict else None
        return type(name) is str and self.allows(name)


class ResponseCache:
    """Answers from a cache what the server's cache hints allow (2026-07-28).

    A complete result with a positive ``ttlMs`` is kept that many milliseconds (trio's
    clock), keyed by method, params (without ``_meta``) and revision, and by principal
    unless its ``cacheScope`` is ``"public"``. Revisions without cache hints, and
    results without them (tool calls, errors, ``input_required``), are never cached. At
    most ``max_entries`` are kept, the oldest dropped first.
    """

    def __init__(self, max_entries: int = 1024, *, max_key_bytes: int = 65_536) -> None:
        if max_entries < 1 or max_key_bytes < 1:
            raise ValueError("max_entries and max_key_bytes must be at least 1")
        self.max_entries = max_entries
        #: requests whose params (as JSON) are longer are served and never cached
        self.max_key_bytes = max_key_bytes
        # key -> (expiry on trio's clock, the result), oldest first
        self._entries: collections.OrderedDict[Hashable, tuple[float, JSONObject]] = (
            collections.OrderedDict()
        )
        #: requests answered from the cache, and those served and looked at
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._entries)

    async def __call__(self, call: Call, call_next: Next) -> AsyncIterator[Message]:
        """Answer a fresh cached result; keep a cacheable one on its way out."""
        if call.kind != "request" or call.method not in call.context.negotiated.revision.cacheable:
            async for message in call_next(call):
                yield message
            return
        keys = _cache_keys(call, self.max_key_bytes)
        if keys is None:
            async for message in call_next(call):
                yield message
            return
        shared, private = keys
        now = trio.current_time()
        for key in (private, shared):
            cached = self._entries.get(key)
            if cached is not None:
                expiry, payload = cached
                if expiry > now:
                    self.hits += 1
                    left = max(0, int((expiry - now) * 1000))
                    yield Result({**orjson.loads(orjson.dumps(payload)), "ttlMs": left})
                    return
                del self._entries[key]
        self.misses += 1
        async for message in call_next(call):
            if type(message) is Result:
                self._keep(shared, private, message.payload)
            yield message

    def _keep(self, shared: Hashable, private: Hashable, payload: JSONObject) -> None:
        ttl = payload.get("ttlMs")
        if type(ttl) is not int or ttl <= 0 or payload.get("resultType", "complete") != "complete":
            return
        key = shared if payload.get("cacheScope") == "public" else private
        entries = self._entries
        entries.pop(key, None)
        # A copy: what leaves may be changed by the layers outside this one.
        entries[key] = (trio.current_time() + ttl / 1000, orjson.loads(orjson.dumps(payload)))
        while len(entries) > self.max_entries:
            entries.popitem(last=False)


def _cache_keys(call: Call, limit: int) -> tuple[Hashable, Hashable] | None:
    # (shared, private): what a result is cached under by its cacheScope; None for
    # params too long to keep as a key.
    params = {k: v for k, v in (call.params or {}).items() if k != "_meta"}
    text = orjson.dumps(params, option=orjson.OPT_SORT_KEYS)
    if len(text) > limit:
        return None
    shared = (call.method, call.revision, text)
    principal = call.principal
    who = principal.subject if principal is not None else None
    return shared, (*shared, who)
