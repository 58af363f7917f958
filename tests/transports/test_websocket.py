"""MCP over WebSocket: subprotocol ``mcp``, one session per connection."""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing
import trio_websocket

from mcpactor import TransportBroken
from mcpactor.client import connect_websocket
from mcpactor.transports import HttpOptions
from mcpactor.transports.http import HttpServerKind

from ..spec_schema import check_server_message
from ._http_server import Probe, make_server, served_app, socket_client


@pytest.fixture
def probe() -> Probe:
    return Probe()


# Both HTTP servers mcpactor can run serve WebSocket on the same port as HTTP.
@pytest.fixture(params=["builtin", "hypercorn"])
def http_server(request: pytest.FixtureRequest) -> HttpServerKind:
    kind: HttpServerKind = request.param
    return kind


async def test_a_session_round_trip_with_progress_and_sampling(
    probe: Probe, http_server: HttpServerKind
) -> None:
    seen: list[Any] = []

    async def sample(params: dict[str, Any]) -> dict[str, Any]:
        seen.append(params)
        return {"role": "assistant", "content": {"type": "text", "text": "ws"}, "model": "m"}

    def record(message: Any, method: str | None) -> None:
        check_server_message(message, "2025-11-25", request_method=method)

    server = make_server(probe)
    async with socket_client(server, http_server=http_server) as http:
        url = f"ws://{http.host}:{http.port}/ws"
        async with connect_websocket(
            url, initialize=True, sampling_handler=sample, on_server_message=record
        ) as client:
            assert client.server.protocol_version == "2025-11-25"
            result = await client.call_tool("add", {"a": 20, "b": 22})
            assert result["structuredContent"] == {"result": 42}
            steps: list[float] = []

            async def progress(value: float, total: float | None, message: str | None) -> None:
                steps.append(value)

            counted = await client.call_tool("count", {"steps": 3}, progress_handler=progress)
            assert counted["content"][0]["text"] == "counted 3"
            assert steps == [1, 2, 3]
            asked = await client.call_tool("ask", {"prompt": "hello"})
            assert asked["content"][0]["text"] == "model said: ws"
            assert seen[0]["messages"][0]["content"]["text"] == "hello"


async def test_closing_the_socket_ends_the_session(
    probe: Probe, http_server: HttpServerKind
) -> None:
    async with served_app(make_server(probe), http_server=http_server) as (app, http):
        url = f"ws://{http.host}:{http.port}/ws"
        async with connect_websocket(url, initialize=True) as client:
            await client.ping()
            assert app.manager.statistics().sessions == 1
        # The session's actor and router are gone once the socket is.
        with trio.fail_after(5):
            await app.manager.wait_sessions(0)


async def test_bad_frames_get_parse_errors_and_the_session_lives(
    probe: Probe, http_server: HttpServerKind
) -> None:
    async with socket_client(make_server(probe), http_server=http_server) as http:
        url = f"ws://{http.host}:{http.port}/ws"
        async with trio_websocket.open_websocket_url(url, subprotocols=["mcp"]) as socket:
            assert socket.subprotocol == "mcp"
            await socket.send_message("{not json")
            error = await socket.get_message()
            assert '"code":-32700' in error
            await socket.send_message(b"\x00binary")
            assert '"code":-32700' in await socket.get_message()
            await socket.send_message('{"jsonrpc":"2.0","id":1,"method":"ping"}')
            assert await socket.get_message() == '{"jsonrpc":"2.0","id":1,"result":{}}'


async def test_a_message_over_the_limit_in_utf8_bytes_is_closed_with_1009(
    probe: Probe, http_server: HttpServerKind
) -> None:
    # Issue 43, item 17: a text of fewer characters than the limit but more bytes (here
    # 40 000 two-byte characters against 64 KiB) passed; hypercorn still counts
    # characters, so the endpoint measures the bytes it decodes.
    from wsproto import ConnectionType, WSConnection
    from wsproto.events import AcceptConnection, CloseConnection, Message, Request, TextMessage

    limit = 64 * 1024
    options = HttpOptions(max_body_bytes=limit)
    ping = '{"jsonrpc":"2.0","id":%d,"method":"ping","params":{"pad":"%s"}}'
    async with (
        served_app(make_server(probe), options=options, http_server=http_server) as (app, http),
        await trio.open_tcp_stream(http.host, http.port) as stream,
    ):
        # A plain wsproto client: this one closes its socket whoever closes first.
        ws = WSConnection(ConnectionType.CLIENT)
        await stream.send_all(ws.send(Request(host=http.host, target="/ws", subprotocols=["mcp"])))

        async def events() -> list[Any]:
            found: list[Any] = []
            with trio.fail_after(5):
                while not found:
                    ws.receive_data(await stream.receive_some(1 << 20))
                    found = list(ws.events())
            return found

        assert isinstance((await events())[0], AcceptConnection)
        fits = ping % (1, "x" * (limit - len(ping % (1, ""))))
        assert len(fits.encode()) == limit
        await stream.send_all(ws.send(Message(data=fits)))
        [pong] = await events()
        assert isinstance(pong, TextMessage)
        assert pong.data == '{"jsonrpc":"2.0","id":1,"result":{}}'
        wide = ping % (2, "é" * 40_000)
        assert len(wide) < limit < len(wide.encode())
        await stream.send_all(ws.send(Message(data=wide)))
        [close] = await events()
        assert isinstance(close, CloseConnection)
        assert (close.code, close.reason) == (1009, f"message larger than {limit} bytes")
        with trio.fail_after(5):
            await app.manager.wait_sessions(0)


async def test_the_client_refuses_a_message_over_its_limit_in_bytes(
    probe: Probe, http_server: HttpServerKind
) -> None:
    from mcpactor import Server

    server = Server("wide")

    @server.tool()
    async def wide(count: int) -> str:
        """Answer with ``count`` two-byte characters."""
        return "é" * count

    limit = 64 * 1024

    async def call_wide(url: str) -> None:
        async with connect_websocket(url, initialize=True, max_message_bytes=limit) as client:
            assert (await client.call_tool("wide", {"count": 10}))["content"]
            # The text comes twice (content and structuredContent): 40 000 characters
            # pass trio-websocket's count, 80 000 bytes do not.
            with trio.fail_after(5):
                await client.call_tool("wide", {"count": 20_000})

    async with socket_client(server, http_server=http_server) as http:
        with pytest.raises(TransportBroken):
            await call_wide(f"ws://{http.host}:{http.port}/ws")


def _handshake(**extra: str) -> dict[str, str]:
    headers = {
        "upgrade": "websocket",
        "connection": "Upgrade",
        "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==",
        "sec-websocket-version": "13",
    }
    headers.update({k.replace("_", "-"): v for k, v in extra.items()})
    return headers


@pytest.mark.parametrize(
    "headers",
    [
        _handshake(),
        _handshake(sec_websocket_protocol="mcp", origin="http://evil.example.com"),
        _handshake(sec_websocket_protocol="mcp", host="evil.example.com"),
    ],
    ids=["no-subprotocol", "foreign-origin", "foreign-host"],
)
async def test_refused_handshakes(
    probe: Probe, http_server: HttpServerKind, headers: dict[str, str]
) -> None:
    async with socket_client(make_server(probe), http_server=http_server) as http:
        refused = await http.request("GET", "/ws", headers)
        assert refused.status == 403
        accepted = await http.request("GET", "/ws", _handshake(sec_websocket_protocol="mcp"))
        assert accepted.status == 101
        assert accepted.headers["sec-websocket-protocol"] == "mcp"
        await accepted.disconnect()


async def test_websocket_can_be_switched_off(probe: Probe, http_server: HttpServerKind) -> None:
    options = HttpOptions(websocket_path=None)
    async with socket_client(make_server(probe), options=options, http_server=http_server) as http:
        refused = await http.request("GET", "/ws", _handshake(sec_websocket_protocol="mcp"))
        assert refused.status == 403
