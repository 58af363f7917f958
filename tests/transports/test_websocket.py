"""MCP over WebSocket: subprotocol ``mcp``, one session per connection."""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing
import trio_websocket

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
            assert client.protocol_version == "2025-11-25"
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
