"""A fake Peer and helpers for driving ``Server.handle_request`` directly.

The helpers validate every result against the official schema of the method's result
type at the revision the request is served under, and every error against the JSON-RPC
error envelope, so a test that forgets to look still fails on a message that breaks
the spec.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import attrs
import orjson
import pytest
import trio

from mcpactor import RequestError
from mcpactor.protocol import REVISIONS, JSONObject, Negotiated, RequestId
from mcpactor.server import Context, Server
from tests.spec_schema import RESULT_TYPES, check, check_server_message

T = TypeVar("T")

#: the session revisions, oldest first
ALL_REVISIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
LATEST = ALL_REVISIONS[-1]

#: an 8-byte PNG signature plus a little padding: enough for sniffing
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 8
#: the RIFF/WAVE header of a (very short) WAV file
WAV = b"RIFF\x24\x00\x00\x00WAVEfmt " + b"\x00" * 8


@attrs.define
class FakePeer:
    """An in-memory Peer that records what a handler asked of the client."""

    notifications: list[tuple[str, JSONObject, RequestId | None]] = attrs.field(factory=list)
    subscriptions: set[str] = attrs.field(factory=set)
    unsubscribed: list[str] = attrs.field(factory=list)
    log_level: str | None = None
    thread_calls: int = 0
    #: how often a handler said the subscriptions changed (for the replicas to hear)
    subscription_changes: int = 0

    async def notify(
        self, method: str, params: JSONObject, *, related_request_id: RequestId | None
    ) -> None:
        self.notifications.append((method, params, related_request_id))

    async def request(
        self,
        method: str,
        params: JSONObject,
        *,
        related_request_id: RequestId | None,
        timeout: float | None,
    ) -> JSONObject:
        raise RequestError(-32601, f"the fake peer answers no requests ({method!r})")

    def log_enabled(self, level: str) -> bool:
        return self.log_level is not None

    def subscribe(self, uri: str) -> None:
        self.subscriptions.add(uri)

    def unsubscribe(self, uri: str) -> None:
        self.unsubscribed.append(uri)
        self.subscriptions.discard(uri)

    async def subscriptions_changed(self) -> None:
        self.subscription_changes += 1

    async def run_sync(self, fn: Callable[[], T]) -> T:
        self.thread_calls += 1
        return await trio.to_thread.run_sync(fn)


@attrs.define(eq=False)  # the server keeps its listeners in a set
class RecordingListener:
    """A ServerListener that remembers what it heard."""

    changes: list[str] = attrs.field(factory=list)
    updated: list[str] = attrs.field(factory=list)

    def list_changed(self, kind: str) -> None:
        self.changes.append(kind)

    def resource_updated(self, uri: str) -> None:
        self.updated.append(uri)


def make_context(
    revision: str = LATEST,
    *,
    peer: FakePeer | None = None,
    capabilities: JSONObject | None = None,
    meta: Mapping[str, Any] | None = None,
    server: Server | None = None,
) -> Context:
    """A Context for one request served at ``revision``."""
    return Context(
        peer=peer if peer is not None else FakePeer(),
        request_id=1,
        negotiated=Negotiated(
            REVISIONS[revision], capabilities or {}, {"name": "test-client", "version": "1"}
        ),
        meta=meta,
        server=server,
    )


async def call(
    server: Server,
    method: str,
    params: JSONObject | None = None,
    *,
    revision: str = LATEST,
    peer: FakePeer | None = None,
    ctx: Context | None = None,
) -> JSONObject:
    """Serve one request and return its result, checked against the official schema."""
    if ctx is None:
        ctx = make_context(revision, peer=peer, server=server)
    result = await server.handle_request(method, params, ctx)
    # The result must survive the trip to the wire unchanged.
    assert orjson.loads(orjson.dumps(result)) == result
    check_server_message(
        {"jsonrpc": "2.0", "id": 1, "result": result}, revision, request_method=method
    )
    check(result, revision, RESULT_TYPES[method])
    return result


async def call_error(
    server: Server,
    method: str,
    params: JSONObject | None = None,
    *,
    revision: str = LATEST,
    peer: FakePeer | None = None,
) -> RequestError:
    """Serve one request that must fail; return the RequestError, its envelope checked."""
    ctx = make_context(revision, peer=peer, server=server)
    with pytest.raises(RequestError) as info:
        await server.handle_request(method, params, ctx)
    error = info.value
    check_server_message({"jsonrpc": "2.0", "id": 1, "error": error.to_error()}, revision)
    return error


@pytest.fixture(params=ALL_REVISIONS)
def any_revision(request: pytest.FixtureRequest) -> str:
    """Each session revision in turn."""
    version: str = request.param
    return version
