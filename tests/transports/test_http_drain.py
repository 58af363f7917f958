"""Draining: readiness false at once, the listener open for the drain delay, then a graceful stop.

In process, on real sockets, with trio's clock stopped (``mock_clock``): time moves only
when a test jumps it, so "the listener is still open during the delay" and "it closes
when the delay is over" are exact. One real process checks SIGTERM end to end.
"""

from __future__ import annotations

import functools
import signal
from pathlib import Path

import pytest
import trio
import trio.testing

from mcpactor.transports import HttpOptions, Readiness, serve_http

from ._cli import server_file, serving
from ._http_client import McpClient, SocketClient, start_post
from ._http_server import Probe, initialized, make_server
from .test_http_2026 import Client

ADD = {"name": "add", "arguments": {"a": 1, "b": 2}}


@pytest.fixture
def probe() -> Probe:
    return Probe()


async def _refused(host: str, port: int) -> bool:
    try:
        stream = await trio.open_tcp_stream(host, port)
    except OSError:
        return True
    await stream.aclose()
    return False


async def test_a_drained_server_is_not_ready_at_once_and_serves_until_the_delay_is_over(
    probe: Probe, mock_clock: trio.testing.MockClock
) -> None:
    readiness = Readiness(started=True)
    options = HttpOptions(readiness=readiness, drain_delay=10.0)
    stopped = trio.Event()

    async def serve(*, task_status: trio.TaskStatus[tuple[str, int]]) -> None:
        await serve_http(make_server(probe), port=0, options=options, task_status=task_status)
        stopped.set()

    async with trio.open_nursery() as nursery:
        host, port = await nursery.start(serve)
        http = SocketClient(host, port, nursery)
        assert (await http.request("GET", "/readyz", {})).status == 200
        assert readiness.drain()
        assert not readiness.drain()  # once is enough
        draining = await http.request("GET", "/readyz", {})
        assert (draining.status, await draining.json()) == (503, {"status": "draining"})
        # Alive, and still serving whatever reaches it: new connections and sessions.
        assert (await http.request("GET", "/healthz", {})).status == 200
        late = SocketClient(host, port, nursery)
        client = await initialized(late)
        reply = await client.call("tools/call", ADD)
        assert reply["result"]["structuredContent"] == {"result": 3}
        pending = start_post(client, client.request("tools/call", {"name": "hold_quietly"}))
        await probe.started.wait()
        mock_clock.jump(9.9)
        await trio.testing.wait_all_tasks_blocked()
        assert not await _refused(host, port)
        mock_clock.jump(0.1)
        await trio.testing.wait_all_tasks_blocked()
        # The delay is over: the listener is closed, the call in flight has its grace.
        assert await _refused(host, port)
        assert not stopped.is_set()
        probe.release.set()
        answer = await (await pending.wait()).json()
        assert answer["result"]["content"][0]["text"] == "released"
        await late.aclose()
        await http.aclose()
        with trio.fail_after(1):
            await stopped.wait()
    assert not probe.cancelled.is_set()


async def test_a_server_no_probe_watches_closes_its_listener_at_once(
    probe: Probe, mock_clock: trio.testing.MockClock
) -> None:
    # Nothing asked /readyz: no load balancer is watching it, so there is nothing to wait for.
    readiness = Readiness(started=True)
    options = HttpOptions(readiness=readiness, drain_delay=3600.0)
    async with trio.open_nursery() as nursery:
        host, port = await nursery.start(
            functools.partial(serve_http, make_server(probe), port=0, options=options)
        )
        readiness.drain()
        await trio.testing.wait_all_tasks_blocked()
        assert await _refused(host, port)
    assert trio.current_time() == 0  # serve_http returned without the clock moving


async def test_a_stop_during_the_delay_stops_at_once(
    probe: Probe, mock_clock: trio.testing.MockClock
) -> None:
    readiness = Readiness(started=True)
    stop = trio.Event()
    options = HttpOptions(readiness=readiness, drain_delay=60.0)
    async with trio.open_nursery() as nursery:
        host, port = await nursery.start(
            functools.partial(serve_http, make_server(probe), port=0, options=options, stop=stop)
        )
        http = SocketClient(host, port, nursery)
        assert (await http.request("GET", "/readyz", {})).status == 200
        readiness.drain()
        await trio.testing.wait_all_tasks_blocked()
        assert not await _refused(host, port)
        stop.set()
        await trio.testing.wait_all_tasks_blocked()
        assert await _refused(host, port)
        await http.aclose()


async def test_the_stateless_tasks_get_the_grace_period(
    mock_clock: trio.testing.MockClock,
) -> None:
    # A task of the tasks extension (2026-07-28) runs on once the server stops, for the
    # grace period, and is cancelled when it is over; the server then returns.
    from mcpactor import Server
    from mcpactor.runtime import SessionOptions

    server = Server("tasks", "1.0.0")
    began = trio.Event()
    ended: list[str] = []

    @server.tool(task_support="optional")
    async def chore() -> str:
        """Work until cancelled."""
        began.set()
        try:
            await trio.sleep_forever()
        finally:
            ended.append("cancelled")
        return "never"  # pragma: no cover

    stop = trio.Event()
    session_options = SessionOptions(shutdown_grace=5.0)
    async with trio.open_nursery() as nursery:
        host, port = await nursery.start(
            functools.partial(
                serve_http, server, port=0, stop=stop, session_options=session_options
            )
        )
        http = SocketClient(host, port, nursery)
        client = Client(http)  # type: ignore[arg-type]
        tasks = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
        message = client.message(
            "tools/call",
            {"name": "chore", "arguments": {}},
            **{"io.modelcontextprotocol/clientCapabilities": tasks},
        )
        created = await (await client.post(message)).json()
        assert created["result"]["resultType"] == "task", created
        await began.wait()
        await http.aclose()
        stop.set()
        await trio.testing.wait_all_tasks_blocked()
        mock_clock.jump(4.9)
        await trio.testing.wait_all_tasks_blocked()
        assert ended == []
        mock_clock.jump(0.1)
    assert ended == ["cancelled"]


def _slow_server(directory: Path) -> Path:
    return server_file(
        directory,
        "slow.py",
        '''
        import trio

        from mcpactor import Server

        server = Server("slow", "1.0.0")


        @server.tool()
        async def slow(seconds: float) -> str:
            """Take ``seconds`` to answer."""
            await trio.sleep(seconds)
            return f"slept {seconds}"
        ''',
    )


async def test_sigterm_drains_lets_the_call_in_flight_finish_and_exits_0(tmp_path: Path) -> None:
    arguments = [
        str(_slow_server(tmp_path)),
        *("--http", "127.0.0.1:0", "--json-response"),
        *("--drain-delay", "1", "--grace", "20"),
    ]
    async with serving(arguments) as served, trio.open_nursery() as nursery:
        http = SocketClient("127.0.0.1", served.port, nursery)
        assert (await http.request("GET", "/readyz", {})).status == 200
        client = McpClient(http)
        await client.initialize("2025-11-25")
        call = client.request("tools/call", {"name": "slow", "arguments": {"seconds": 2.5}})
        # In flight before the signal, or arriving during the drain delay: served either way.
        pending = start_post(client, call)
        served.process.send_signal(signal.SIGTERM)
        # Not ready at once (as soon as the signal is handled: a few probes at most).
        with trio.fail_after(5):
            while True:
                ready = await http.request("GET", "/readyz", {})
                if ready.status == 503:
                    break
        assert await ready.json() == {"status": "draining"}
        # The call in flight, begun before the signal, finishes within the grace.
        with trio.fail_after(20):
            answer = await (await pending.wait()).json()
        assert answer["result"]["content"][0]["text"] == "slept 2.5"
        await http.aclose()
        with trio.fail_after(30):
            await served.process.wait()
        assert served.process.returncode == 0
