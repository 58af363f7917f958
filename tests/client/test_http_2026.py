"""The Streamable HTTP client at the stateless revision, against a scripted h11 server.

The server records every HTTP request (headers and body) and answers each JSON-RPC
request by its method, in JSON or as an SSE stream; a listen stream stays open until
the client closes it, which the server sees as the connection's end.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from typing import Any, Final

import attrs
import h11
import orjson
import trio

from mcpactor.client import ClientSession, connect_http

from .client_schema import STATELESS, ClientMessages

GUARD: Final = 30.0
TOOLS: Final = [
    {
        "name": "regional",
        "inputSchema": {
            "type": "object",
            "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "n": {"type": "integer", "x-mcp-header": "N"},
            },
        },
    }
]


@attrs.define
class Seen:
    """One HTTP request the server got."""

    method: str
    headers: dict[str, str]
    body: Any


@attrs.define
class Scripted:
    """What the server saw, and the events its listen streams noticed."""

    seen: list[Seen] = attrs.field(factory=list)
    listen_closed: trio.Event = attrs.field(factory=trio.Event)


def _answer(message: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    """How to answer a request: "json" or "sse", and the messages."""
    method = message["method"]
    rid = message["id"]
    meta = {"io.modelcontextprotocol/serverInfo": {"name": "scripted", "version": "1"}}
    value: dict[str, Any]
    if method == "server/discover":
        value = {
            "resultType": "complete",
            "supportedVersions": [STATELESS],
            "capabilities": {"tools": {}},
            "_meta": meta,
        }
        return "json", [{"jsonrpc": "2.0", "id": rid, "result": value}]
    if method == "tools/list":
        value = {"resultType": "complete", "tools": TOOLS, "_meta": meta}
        return "sse", [{"jsonrpc": "2.0", "id": rid, "result": value}]
    if method == "subscriptions/listen":
        ack: dict[str, Any] = {
            "jsonrpc": "2.0",
            "method": "notifications/subscriptions/acknowledged",
            "params": {
                "_meta": {"io.modelcontextprotocol/subscriptionId": rid},
                "notifications": {"toolsListChanged": True},
            },
        }
        return "open", [ack]
    value = {"resultType": "complete", "content": [{"type": "text", "text": "ok"}]}
    return "json", [{"jsonrpc": "2.0", "id": rid, "result": value}]


async def _connection(stream: trio.SocketStream, scripted: Scripted) -> None:
    conn = h11.Connection(h11.SERVER)

    async def send(event: Any) -> None:
        data = conn.send(event)
        if data:
            await stream.send_all(data)

    async def next_event() -> Any:
        while True:
            event = conn.next_event()
            if event is not h11.NEED_DATA:
                return event
            conn.receive_data(await stream.receive_some(65536))

    with trio.CancelScope() as scope:
        while True:
            request = await next_event()
            if not isinstance(request, h11.Request):
                return
            body = b""
            while not isinstance(event := await next_event(), h11.EndOfMessage):
                body += event.data
            headers = {k.decode().lower(): v.decode() for k, v in request.headers}
            message = orjson.loads(body)
            scripted.seen.append(Seen(request.method.decode(), headers, message))
            if "id" not in message:
                await send(h11.Response(status_code=202, headers=[("content-length", "0")]))
                await send(h11.EndOfMessage())
            else:
                kind, replies = _answer(message)
                if kind == "json":
                    data = orjson.dumps(replies[0])
                    await send(
                        h11.Response(
                            status_code=200,
                            headers=[
                                ("content-type", "application/json"),
                                ("content-length", str(len(data))),
                            ],
                        )
                    )
                    await send(h11.Data(data=data))
                    await send(h11.EndOfMessage())
                else:
                    await send(
                        h11.Response(
                            status_code=200,
                            headers=[
                                ("content-type", "text/event-stream"),
                                ("transfer-encoding", "chunked"),
                            ],
                        )
                    )
                    for reply in replies:
                        await send(h11.Data(data=b"data: " + orjson.dumps(reply) + b"\n\n"))
                    if kind == "open":
                        # Held open until the client hangs up: its cancellation.
                        while await stream.receive_some(65536):
                            pass
                        scripted.listen_closed.set()
                        scope.cancel()
                    await send(h11.EndOfMessage())
            conn.start_next_cycle()


@asynccontextmanager
async def serving() -> AsyncIterator[tuple[str, Scripted]]:
    scripted = Scripted()

    async def handle(stream: trio.SocketStream) -> None:
        async with stream:
            with suppress(trio.BrokenResourceError, trio.ClosedResourceError, h11.ProtocolError):
                await _connection(stream, scripted)

    async with trio.open_nursery() as nursery:
        serve = functools.partial(trio.serve_tcp, handle, 0, host="127.0.0.1")
        [listener] = await nursery.start(serve)
        port = listener.socket.getsockname()[1]
        yield f"http://127.0.0.1:{port}/mcp", scripted
        nursery.cancel_scope.cancel()


@asynccontextmanager
async def client_of(url: str, sent: ClientMessages) -> AsyncIterator[ClientSession]:
    async with connect_http(
        url,
        initialize=True,
        protocol_version=STATELESS,
        headers={"Authorization": "Bearer t", "Mcp-Method": "forged"},
        on_client_message=sent,
    ) as client:
        yield client


async def test_each_request_is_a_post_naming_itself_in_headers() -> None:
    sent = ClientMessages()
    with trio.fail_after(GUARD):
        async with serving() as (url, scripted), client_of(url, sent) as client:
            assert client.server.protocol_version == STATELESS
            assert [tool["name"] for tool in await client.list_tools()] == ["regional"]
            result = await client.call_tool("regional", {"region": "ünï", "n": 7})
            assert result["content"][0]["text"] == "ok"

    discover, listing, call = scripted.seen
    for seen in scripted.seen:
        assert seen.method == "POST"
        assert seen.headers["mcp-protocol-version"] == STATELESS
        assert seen.headers["authorization"] == "Bearer t"
        assert "mcp-session-id" not in seen.headers
        assert seen.headers["mcp-method"] == seen.body["method"]
    assert "mcp-name" not in discover.headers
    assert "mcp-name" not in listing.headers
    assert call.headers["mcp-name"] == "regional"
    assert call.headers["mcp-param-region"] == "=?base64?w7xuw68=?="
    assert call.headers["mcp-param-n"] == "7"
    # Leaving sends no DELETE: there is no session to end.
    assert [s.body["method"] for s in scripted.seen] == sent.methods()


async def test_leaving_a_listen_stream_closes_its_response_and_sends_nothing() -> None:
    sent = ClientMessages()
    with trio.fail_after(GUARD):
        async with serving() as (url, scripted), client_of(url, sent) as client:
            async with client.listen(tools_list_changed=True) as stream:
                assert stream.notifications == {"toolsListChanged": True}
            await scripted.listen_closed.wait()
            # The connection goes on; a later request is answered.
            assert (await client.call_tool("other"))["content"][0]["text"] == "ok"

    # The session wrote its cancel notice; the transport sent none of it.
    assert "notifications/cancelled" in sent.methods()
    assert [s.body["method"] for s in scripted.seen] == [
        "server/discover",
        "subscriptions/listen",
        "tools/call",
    ]
