"""``serve_http`` and ``mcpactor serve --http`` on real sockets: serving and stopping."""

from __future__ import annotations

import functools
import signal
import socket
from pathlib import Path

import pytest
import trio

from mcpactor.runtime import SessionOptions
from mcpactor.transports import serve_http
from mcpactor.transports.http import HttpServerKind

from ..spec_schema import check_server_message
from ._cli import server_file, serving
from ._http_client import McpClient, SocketClient, start_post
from ._http_server import Probe, initialized, make_server, socket_client

HOLD = {"name": "hold", "arguments": {}, "_meta": {"progressToken": "h"}}


@pytest.fixture
def probe() -> Probe:
    return Probe()


async def test_serve_http_reports_its_port_and_serves(probe: Probe) -> None:
    async with socket_client(make_server(probe)) as http:
        assert http.host == "127.0.0.1"
        assert http.port > 0
        client = await initialized(http)
        reply = await client.call("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})
        assert reply["result"]["structuredContent"] == {"result": 3}
        stream = await client.post(
            client.request(
                "tools/call",
                {"name": "count", "arguments": {"steps": 2}, "_meta": {"progressToken": 0}},
            )
        )
        messages = await stream.messages()
        assert [m.get("method") for m in messages] == [
            "notifications/progress",
            "notifications/progress",
            None,
        ]
        for message in messages:
            check_server_message(message, "2025-11-25", request_method="tools/call")


@pytest.mark.parametrize("http_server", ["builtin", "hypercorn"])
async def test_serve_http_serves_on_sockets_it_is_given(
    probe: Probe, http_server: HttpServerKind
) -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    port = listener.getsockname()[1]
    stop = trio.Event()
    async with trio.open_nursery() as nursery:
        bound = await nursery.start(
            functools.partial(
                serve_http,
                make_server(probe),
                port=0,
                stop=stop,
                sockets=[listener],
                http_server=http_server,
            )
        )
        assert bound == ("127.0.0.1", port)
        http = SocketClient("127.0.0.1", port, nursery)
        client = await initialized(http)
        reply = await client.call("tools/call", {"name": "add", "arguments": {"a": 2, "b": 5}})
        assert reply["result"]["structuredContent"] == {"result": 7}
        await http.aclose()
        stop.set()
    # It accepted on the socket until it stopped, and closed it then.
    assert listener.fileno() == -1


async def test_a_dropped_connection_does_not_cancel_and_the_result_is_replayed(
    probe: Probe,
) -> None:
    async with socket_client(make_server(probe)) as http:
        client = await initialized(http)
        request = client.request("tools/call", HOLD)
        stream = await client.post(request)
        priming = await stream.next_event()
        progress = await stream.next_event()
        assert priming is not None
        assert progress is not None
        await probe.started.wait()
        await stream.disconnect()  # the TCP connection is closed
        probe.release.set()
        await probe.finished.wait()
        assert not probe.cancelled.is_set()
        resumed = await client.get(last_event_id=progress.id)
        messages = await resumed.messages()
        assert [m["id"] for m in messages] == [request["id"]]
        assert messages[0]["result"]["content"][0]["text"] == "released"


async def test_a_graceful_stop_lets_running_requests_finish(probe: Probe) -> None:
    stop = trio.Event()
    async with trio.open_nursery() as nursery:
        host, port = await nursery.start(
            functools.partial(serve_http, make_server(probe), port=0, stop=stop)
        )
        http = SocketClient(host, port, nursery)
        client = await initialized(http)
        pending = start_post(client, client.request("tools/call", {"name": "hold_quietly"}))
        await probe.started.wait()
        stop.set()
        probe.release.set()
        reply = await (await pending.wait()).json()
        assert reply["result"]["content"][0]["text"] == "released"
        await http.aclose()
    # serve_http returned by itself: the nursery had nothing left to wait for.
    with pytest.raises(OSError, match="connect"):
        await trio.open_tcp_stream(host, port)


async def test_a_graceful_stop_cancels_what_outlives_the_grace_period(probe: Probe) -> None:
    stop = trio.Event()
    session_options = SessionOptions(shutdown_grace=0.2)
    async with trio.open_nursery() as nursery:
        host, port = await nursery.start(
            functools.partial(
                serve_http,
                make_server(probe),
                port=0,
                stop=stop,
                session_options=session_options,
            )
        )
        http = SocketClient(host, port, nursery)
        client = await initialized(http)
        listening = await client.get()
        request = client.request("tools/call", {"name": "hold_quietly"})
        pending = start_post(client, request)
        await probe.started.wait()
        stop.set()
        reply = await (await pending.wait()).json()
        assert reply["id"] == request["id"]
        assert reply["error"]["code"] == -32603
        assert probe.cancelled.is_set()
        await listening.events()  # the GET stream ends with the session
        await http.aclose()


def _server_file(directory: Path) -> Path:
    return server_file(
        directory,
        "served.py",
        '''
        from mcpactor import Server

        server = Server("served", "1.0.0")


        @server.tool()
        async def add(a: int, b: int) -> int:
            """Add two numbers."""
            return a + b
        ''',
    )


async def test_the_cli_serves_http_and_exits_0_on_sigterm(tmp_path: Path) -> None:
    arguments = [str(_server_file(tmp_path)), "--http", "127.0.0.1:0", "--json-response"]
    async with serving(arguments) as served:
        assert served.url.startswith("http://127.0.0.1:")
        assert served.url.endswith("/mcp")
        async with trio.open_nursery() as nursery:
            http = SocketClient("127.0.0.1", served.port, nursery)
            client = McpClient(http)
            await client.initialize("2025-06-18")
            reply = await client.call("tools/call", {"name": "add", "arguments": {"a": 2, "b": 2}})
            assert reply["result"]["structuredContent"] == {"result": 4}
            await http.aclose()
        served.process.send_signal(signal.SIGTERM)
        with trio.fail_after(30):
            await served.process.wait()
        assert served.process.returncode == 0


def test_bind_addresses_parse() -> None:
    from mcpactor.cli import _parse_bind

    assert _parse_bind("8000") == ("127.0.0.1", 8000)
    assert _parse_bind("0.0.0.0:80") == ("0.0.0.0", 80)
    assert _parse_bind("[::1]:9000") == ("::1", 9000)
    with pytest.raises(ValueError, match="HOST"):
        _parse_bind("localhost:http")
    assert _parse_bind(":1") == ("127.0.0.1", 1)


@pytest.mark.parametrize("http_server", ["builtin", "hypercorn"])
async def test_a_get_resuming_right_after_its_dropped_predecessor_is_answered(
    probe: Probe, http_server: HttpServerKind
) -> None:
    # Nothing was sent on the GET stream after its priming event, so the resumed stream
    # has nothing to replay: its status and headers must still leave at once.
    async with socket_client(make_server(probe), http_server=http_server) as http:
        client = await initialized(http)
        listening = await client.get()
        assert listening.status == 200
        priming = await listening.next_event()
        assert priming is not None
        assert priming.id
        await listening.disconnect()
        with trio.fail_after(5):
            resumed = await client.get(last_event_id=priming.id)
        assert resumed.status == 200
        assert resumed.content_type == "text/event-stream"
        await client.call("tools/call", {"name": "change_tools", "arguments": {}})
        with trio.fail_after(5):
            event = await resumed.next_event()
        assert event is not None
        assert event.message()["method"] == "notifications/tools/list_changed"
        await resumed.disconnect()
