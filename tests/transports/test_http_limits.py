"""Limits of the HTTP transport: per-client sessions, unconfirmed sessions, connections,
timeouts, the health endpoint, the access log, and what keeps hypercorn standing."""

from __future__ import annotations

import contextlib
import logging
from typing import Any

import pytest
import trio
import trio.testing
import trio_websocket

from mcpactor.transports import HttpOptions, _hypercorn_worker
from mcpactor.transports.http import HttpServerKind

from ._http_client import McpClient
from ._http_server import Probe, asgi_client, initialized, make_server, served_app, socket_client
from .test_http_security import INITIALIZE

FOREIGN = ("203.0.113.5", 40000)


@pytest.fixture
def probe() -> Probe:
    return Probe()


@pytest.fixture(params=["builtin", "hypercorn"])
def http_server(request: pytest.FixtureRequest) -> HttpServerKind:
    kind: HttpServerKind = request.param
    return kind


# --- sessions ----------------------------------------------------------------------------


async def test_one_client_address_holds_at_most_its_share_of_sessions(probe: Probe) -> None:
    options = HttpOptions(max_sessions_per_client=3)
    async with asgi_client(make_server(probe), options=options) as (app, http):
        http.client = FOREIGN
        clients = [await initialized(http) for _ in range(3)]
        refused = await McpClient(http).post(INITIALIZE)
        assert refused.status == 503
        assert "the most one client may" in (await refused.json())["error"]["message"]
        # Another address is not affected.
        http.client = ("203.0.113.6", 40000)
        assert (await McpClient(http).post(INITIALIZE)).status == 200
        # Ending a session frees its place.
        http.client = FOREIGN
        ended = await clients[0].http.request(
            "DELETE", "/mcp", {"mcp-session-id": clients[0].session_id or ""}
        )
        assert ended.status == 204
        assert (await McpClient(http).post(INITIALIZE)).status == 200
        assert app.manager.statistics().clients == 2


async def test_loopback_clients_are_not_counted_per_address(probe: Probe) -> None:
    # Every local client (and every client behind a local proxy) is 127.0.0.1.
    options = HttpOptions(max_sessions_per_client=2)
    async with asgi_client(make_server(probe), options=options) as (app, http):
        for _ in range(5):
            await initialized(http)
        assert app.manager.statistics().named_sessions == 5


async def test_a_session_that_never_comes_back_after_initialize_expires_early(
    probe: Probe, autojump_clock: trio.testing.MockClock
) -> None:
    options = HttpOptions(unconfirmed_session_timeout=60, session_idle_timeout=1800)
    async with asgi_client(make_server(probe), options=options) as (app, http):
        http.client = FOREIGN
        abandoned = McpClient(http)
        response = await abandoned.post(INITIALIZE)
        assert response.status == 200
        await response.json()
        used = await initialized(http)  # its notifications/initialized confirms it
        assert app.manager.statistics().unconfirmed_sessions == 1
        await trio.sleep(59)
        assert app.manager.statistics().named_sessions == 2
        await trio.sleep(2)
        assert app.manager.statistics().named_sessions == 1
        assert app.manager.statistics().unconfirmed_sessions == 0
        assert (await used.call("ping"))["result"] == {}
        assert app.manager.statistics().clients == 1


async def test_a_flood_of_initializes_never_locks_a_new_client_out(probe: Probe) -> None:
    # The table is full of sessions that saw only their initialize: the oldest idle one
    # makes room, and its client (if it ever comes back) is told to start again.
    options = HttpOptions(max_sessions=5, unconfirmed_session_timeout=60)
    async with asgi_client(make_server(probe), options=options) as (app, http):
        flood = []
        for number in range(5):
            http.client = (f"203.0.113.{number}", 1)
            flood.append(McpClient(http))
            response = await flood[-1].post(INITIALIZE)
            assert response.status == 200
            await response.json()
            flood[-1].session_id = response.headers["mcp-session-id"]
            flood[-1].protocol_version = "2025-11-25"
        http.client = FOREIGN
        newcomer = await initialized(http)
        assert app.manager.given_way == 1
        assert app.manager.statistics().named_sessions == 5
        assert (await newcomer.call("ping"))["result"] == {}
        gone = await flood[0].post(flood[0].request("ping"))
        assert gone.status == 404
        # The flood's later sessions are untouched.
        assert (await flood[4].post(flood[4].request("ping"))).status == 200


async def test_a_table_full_of_sessions_in_use_refuses_with_503(probe: Probe) -> None:
    options = HttpOptions(max_sessions=3)
    async with asgi_client(make_server(probe), options=options) as (app, http):
        for number in range(3):
            http.client = (f"203.0.113.{number}", 1)
            await initialized(http)  # its notifications/initialized confirms it
        http.client = FOREIGN
        refused = await McpClient(http).post(INITIALIZE)
        assert refused.status == 503
        assert app.manager.given_way == 0


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("max_connections", 0),
        ("max_sessions_per_client", -1),
        ("max_header_count", 0),
        ("max_head_bytes", 100),
        ("max_head_bytes", 2.5),
        ("keep_alive_timeout", 0),
        ("request_timeout", -1.0),
        ("write_timeout", float("nan")),
        ("websocket_idle_timeout", "10"),
        ("unconfirmed_session_timeout", True),
        ("health_path", "healthz"),
    ],
)
def test_options_out_of_range_are_refused(field: str, value: Any) -> None:
    with pytest.raises(ValueError, match=field):
        HttpOptions(**{field: value})


def test_timeouts_may_be_infinite() -> None:
    assert HttpOptions(websocket_idle_timeout=float("inf")).websocket_idle_timeout > 0


# --- health and access log -----------------------------------------------------------------


async def test_the_health_endpoint_needs_no_session_guard_or_authentication(
    probe: Probe, http_server: HttpServerKind
) -> None:
    options = HttpOptions(authenticate=lambda headers: None)
    async with served_app(make_server(probe), options=options, http_server=http_server) as (
        app,
        http,
    ):
        for host in (f"{http.host}:{http.port}", "10.1.2.3:8000"):
            health = await http.request("GET", "/healthz", {"host": host})
            assert health.status == 200
            assert await health.json() == {"status": "ok"}
            assert health.headers["cache-control"] == "no-store"
        head = await http.request("HEAD", "/healthz", {})
        assert head.status == 200
        post = await http.request("POST", "/healthz", {}, b"{}")
        assert (post.status, post.headers["allow"]) == (405, "GET, HEAD")
        assert (await http.request("GET", "/mcp", {"accept": "text/event-stream"})).status == 401
        assert app.manager.statistics().sessions == 0


async def test_the_health_endpoint_says_stopping_during_shutdown(probe: Probe) -> None:
    async with asgi_client(make_server(probe)) as (app, http):
        app.manager.stop()
        health = await http.request("GET", "/healthz", {})
        assert (health.status, await health.json()) == (503, {"status": "stopping"})


async def test_the_health_endpoint_can_move_or_be_switched_off(probe: Probe) -> None:
    async with asgi_client(make_server(probe), options=HttpOptions(health_path="/up")) as (_, h):
        assert (await h.request("GET", "/up", {})).status == 200
        assert (await h.request("GET", "/healthz", {})).status == 404
    async with asgi_client(make_server(probe), options=HttpOptions(health_path=None)) as (_, h):
        assert (await h.request("GET", "/healthz", {})).status == 404


async def test_the_access_log_has_one_bounded_line_per_request(
    probe: Probe, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="mcpactor.access")
    async with asgi_client(make_server(probe), options=HttpOptions(access_log=True)) as (_, http):
        http.client = FOREIGN
        await initialized(http)
        await http.request("GET", "/healthz", {})
        await http.request("GET", '/x"\x1b[31m' + "y" * 500, {})
    lines = [r.getMessage() for r in caplog.records if r.name == "mcpactor.access"]
    assert len(lines) == 4  # initialize, notifications/initialized, health, the odd path
    assert lines[0].startswith('203.0.113.5:40000 "POST /mcp" 200 ')
    assert lines[0].endswith("ms")
    assert lines[1].startswith('203.0.113.5:40000 "POST /mcp" 202 0 ')
    assert lines[2].startswith('203.0.113.5:40000 "GET /healthz" 200 15 ')
    odd = lines[3]
    assert "\x1b" not in odd
    assert "/x\\x22\\x1b[31m" in odd
    assert len(odd) < 300
    assert '..." 404 ' in odd


async def test_no_access_log_unless_asked(probe: Probe, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="mcpactor.access")
    async with asgi_client(make_server(probe)) as (_, http):
        await http.request("GET", "/healthz", {})
    assert not [r for r in caplog.records if r.name == "mcpactor.access"]


# --- connections -----------------------------------------------------------------------


async def test_both_servers_turn_connections_over_the_limit_away(
    probe: Probe, http_server: HttpServerKind
) -> None:
    options = HttpOptions(max_connections=2)
    async with socket_client(make_server(probe), options=options, http_server=http_server) as h:
        held = [await trio.open_tcp_stream(h.host, h.port) for _ in range(2)]
        try:
            # Both are being served (a request each), so both count.
            for stream in held:
                await stream.send_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                assert b" 200 " in await stream.receive_some(65536)
            async with await trio.open_tcp_stream(h.host, h.port) as extra:
                await extra.send_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                answer = b""
                with trio.fail_after(10), contextlib.suppress(trio.BrokenResourceError):
                    while chunk := await extra.receive_some(65536):
                        answer += chunk
                assert answer.startswith(b"HTTP/1.1 503 ")
                assert b"connection: close" in answer
                assert b"too many open connections" in answer
        finally:
            for stream in held:
                await stream.aclose()


async def test_refused_connections_give_their_place_back_at_once(
    probe: Probe, http_server: HttpServerKind
) -> None:
    # hypercorn's keep-alive timer outlived a connection it had refused (400) or that the
    # client closed, holding its place for the whole keep-alive timeout.
    options = HttpOptions(max_connections=2)
    async with socket_client(make_server(probe), options=options, http_server=http_server) as h:
        for data in (b"NOT HTTP\r\n\r\n", b"GET /hea", b"\x16\x03\x01") * 3:
            async with await trio.open_tcp_stream(h.host, h.port) as stream:
                await stream.send_all(data)
                if not data.endswith(b"\n"):
                    await stream.send_eof()
                with trio.fail_after(10), contextlib.suppress(trio.BrokenResourceError):
                    while await stream.receive_some(65536):
                        pass
            await trio.testing.wait_all_tasks_blocked()
        assert (await h.request("GET", "/healthz", {})).status == 200


async def test_websockets_count_as_connections_and_idle_ones_are_closed(
    probe: Probe, http_server: HttpServerKind, autojump_clock: trio.testing.MockClock
) -> None:
    options = HttpOptions(max_connections=1, websocket_idle_timeout=300)
    # Our own stream under the client, closed for certain on the way out.
    async with (
        socket_client(make_server(probe), options=options, http_server=http_server) as h,
        await trio.open_tcp_stream(h.host, h.port) as tcp,
        trio.open_nursery() as nursery,
    ):
        ws = await trio_websocket.wrap_client_stream(
            nursery, tcp, f"{h.host}:{h.port}", "/ws", subprotocols=["mcp"]
        )
        start = trio.current_time()
        # The one place is taken: a plain request is turned away meanwhile.
        async with await trio.open_tcp_stream(h.host, h.port) as extra:
            await extra.send_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            with contextlib.suppress(trio.BrokenResourceError):
                assert (await extra.receive_some(65536)).startswith(b"HTTP/1.1 503 ")
        with pytest.raises(trio_websocket.ConnectionClosed) as closed:
            await ws.get_message()
        assert closed.value.reason.code == 1001
        assert 300 <= trio.current_time() - start < 302
        await ws.aclose()


# --- hypercorn: what the wrapper adds ------------------------------------------------------


async def test_a_connection_that_fails_inside_hypercorn_does_not_stop_the_server(
    probe: Probe, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # A failure where hypercorn does not catch it: in its read loop, out of TCPServer.run.
    real = _hypercorn_worker._GuardStream.receive_some

    async def failing(self: Any, max_bytes: int | None = None) -> bytes | bytearray:
        data = await real(self, max_bytes)
        if b"explode" in data:
            raise trio.BusyResourceError("another task is currently sending data")
        return data

    monkeypatch.setattr(_hypercorn_worker._GuardStream, "receive_some", failing)
    async with socket_client(make_server(probe), http_server="hypercorn") as http:
        for _ in range(3):
            async with await trio.open_tcp_stream(http.host, http.port) as stream:
                await stream.send_all(b"GET /explode HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                with trio.fail_after(10), contextlib.suppress(trio.BrokenResourceError):
                    while await stream.receive_some(65536):
                        pass
        assert (await http.request("GET", "/healthz", {})).status == 200
    failures = [r for r in caplog.records if "failed inside hypercorn" in r.getMessage()]
    assert len(failures) == 3
    assert all(r.exc_info is None for r in failures)
    assert "BusyResourceError" in failures[0].getMessage()


async def test_a_write_to_a_client_that_does_not_read_times_out(
    autojump_clock: trio.testing.MockClock,
) -> None:
    ours, theirs = trio.testing.lockstep_stream_pair()
    stream = _hypercorn_worker._GuardStream(
        ours, _hypercorn_worker._Watch(), request_timeout=30, write_timeout=5
    )
    start = trio.current_time()
    with pytest.raises(trio.BrokenResourceError):
        await stream.send_all(b"x")  # nobody receives on the other side
    assert trio.current_time() - start == 5
    await theirs.aclose()


async def test_a_request_must_arrive_within_the_request_timeout_under_hypercorn(
    autojump_clock: trio.testing.MockClock,
) -> None:
    ours, theirs = trio.testing.memory_stream_pair()
    watch = _hypercorn_worker._Watch()
    stream = _hypercorn_worker._GuardStream(ours, watch, request_timeout=30, write_timeout=5)
    start = trio.current_time()
    # Idle: no deadline before the first byte.
    async with trio.open_nursery() as nursery:
        nursery.start_soon(stream.receive_some, 100)
        await trio.sleep(1000)
        await theirs.send_all(b"GET / HTTP/1.1\r\n")
    start = trio.current_time()
    await theirs.send_all(b"Host: x\r\n")
    assert await stream.receive_some(100) == b"Host: x\r\n"
    # Then nothing more: the read ends as EOF at the deadline.
    assert await stream.receive_some(100) == b""
    assert trio.current_time() - start == 30
    # Once the app has the request, its answer may take as long as it takes.
    stream.idle()
    await theirs.send_all(b"POST")
    assert await stream.receive_some(100) == b"POST"
    watch.disarm()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(stream.receive_some, 100)
        await trio.sleep(1000)
        await theirs.send_all(b"more")
