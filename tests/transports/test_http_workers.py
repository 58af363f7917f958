"""``mcpactor serve --workers N``: one port, N processes, a supervisor that keeps them."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import sys
import textwrap
from pathlib import Path

import pytest
import trio

from mcpactor._workers import bind_sockets, supervise
from mcpactor.cli import main

from ._cli import Served, server_file, serving
from ._http_client import McpClient, SocketClient

# Workers are started with inherited descriptors, which only POSIX systems hand down.
posix_only = pytest.mark.skipif(sys.platform == "win32", reason="workers need POSIX processes")

LINUX = sys.platform.startswith("linux")


def _server_file(directory: Path) -> Path:
    return server_file(
        directory,
        "pids.py",
        '''
        import os

        from mcpactor import Server

        server = Server("pids", "1.0.0")


        @server.tool()
        async def pid() -> int:
            """The serving process's id."""
            return os.getpid()
        ''',
    )


def test_the_sockets_share_one_port(tmp_path: Path) -> None:
    sockets = bind_sockets("127.0.0.1", 0, 3, backlog=16)
    try:
        assert len(sockets) == (3 if LINUX else 1)
        ports = {sock.getsockname()[1] for sock in sockets}
        assert len(ports) == 1
        (port,) = ports
        assert port != 0
        # Each one listens: a client connects to the port.
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass
    finally:
        for sock in sockets:
            sock.close()


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--http", "127.0.0.1:0", "--workers", "2"], "--workers needs --stateless"),
        (["--workers", "2", "--stateless"], "--workers needs --http"),
        (["--http", "127.0.0.1:0", "--stateless", "--workers", "0"], "at least 1"),
    ],
)
def test_what_workers_cannot_do_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    assert main(["serve", str(_server_file(tmp_path)), *extra]) == 2
    assert message in capsys.readouterr().err


async def _pid(port: int) -> int:
    # A fresh connection each time: the kernel picks a worker per connection.
    async with trio.open_nursery() as nursery:
        http = SocketClient("127.0.0.1", port, nursery)
        client = McpClient(http)
        client.protocol_version = "2025-11-25"
        reply = await client.call("tools/call", {"name": "pid", "arguments": {}})
        await http.aclose()
    return int(reply["result"]["structuredContent"]["result"])


async def _pids_until(port: int, enough: int) -> set[int]:
    seen: set[int] = set()
    with trio.fail_after(60):
        while len(seen) < enough:
            seen.add(await _pid(port))
    return seen


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # An orphan that exited stays a zombie until whoever adopted it reaps it.
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return True  # no /proc here: the signal said it is there
    except ProcessLookupError:
        return False  # it was reaped between the signal and the read
    return state != "Z"


async def _gone(pid: int) -> None:
    # Another process's end: nothing in this trio run can be woken by it.
    with trio.fail_after(30):
        while True:
            if not _running(pid):
                return
            await trio.sleep(0.05)


def _workers(
    tmp_path: Path, count: int, *extra: str
) -> contextlib.AbstractAsyncContextManager[Served]:
    return serving(
        [
            str(_server_file(tmp_path)),
            "--http",
            "127.0.0.1:0",
            "--stateless",
            "--json-response",
            "--workers",
            str(count),
            *extra,
        ]
    )


@posix_only
async def test_workers_share_the_port_are_restarted_and_stop_on_sigterm(
    tmp_path: Path,
) -> None:
    async with _workers(tmp_path, 2) as served:
        assert "with 2 workers" in served.line
        port, process = served.port, served.process
        workers = await _pids_until(port, 2) if LINUX else {await _pid(port)}
        assert process.pid not in workers
        # A worker that dies is started again; the other one serves meanwhile.
        dead = min(workers)
        os.kill(dead, signal.SIGKILL)
        await _gone(dead)
        with trio.fail_after(60):
            while True:
                fresh = await _pid(port)
                if fresh not in workers:
                    break
        process.send_signal(signal.SIGTERM)
        with trio.fail_after(30):
            await process.wait()
        assert process.returncode == 0
        for pid in (workers - {dead}) | {fresh}:
            await _gone(pid)


@posix_only
async def test_workers_can_run_hypercorn(tmp_path: Path) -> None:
    async with _workers(tmp_path, 2, "--http-server", "hypercorn") as served:
        workers = await _pids_until(served.port, 2) if LINUX else {await _pid(served.port)}
        served.process.send_signal(signal.SIGTERM)
        with trio.fail_after(30):
            await served.process.wait()
        assert served.process.returncode == 0
        for pid in workers:
            await _gone(pid)


@posix_only
async def test_workers_stop_when_the_supervisor_is_killed(tmp_path: Path) -> None:
    async with _workers(tmp_path, 2) as served:
        workers = await _pids_until(served.port, 2) if LINUX else {await _pid(served.port)}
        served.process.kill()
        await served.process.wait()
        # The lifeline pipe closed with the supervisor: each worker stops by itself.
        for pid in workers:
            await _gone(pid)


def _fake_worker(directory: Path, fails: int) -> list[str]:
    # Exits with 1 on its first ``fails`` runs; then says so on the socket ``ready`` and
    # serves until SIGTERM.
    script = directory / "worker.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import signal, socket, sys
            from pathlib import Path

            runs = Path({str(directory / "runs")!r})
            run = int(runs.read_text()) + 1 if runs.exists() else 1
            runs.write_text(str(run))
            if run <= {fails}:
                sys.exit(1)
            signal.pthread_sigmask(signal.SIG_BLOCK, {{signal.SIGTERM}})
            ready = socket.socket(socket.AF_UNIX)
            ready.connect({str(directory / "ready")!r})
            signal.sigwait({{signal.SIGTERM}})
            """
        )
    )
    return [sys.executable, str(script)]


@posix_only
async def test_a_failing_worker_is_started_again_with_a_growing_delay(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    command = _fake_worker(tmp_path, fails=3)
    ready = trio.socket.socket(socket.AF_UNIX)
    await ready.bind(str(tmp_path / "ready"))
    ready.listen()
    sockets = bind_sockets("127.0.0.1", 0, 1, backlog=16)
    stop = trio.Event()
    codes: list[int] = []
    try:
        with caplog.at_level(logging.WARNING, logger="mcpactor.workers"):
            async with trio.open_nursery() as nursery:

                async def run() -> None:
                    codes.append(await supervise(command, sockets, 1, stop=stop))

                nursery.start_soon(run)
                with trio.fail_after(60):
                    connection, _ = await ready.accept()
                connection.close()
                stop.set()
    finally:
        ready.close()
        for sock in sockets:
            sock.close()
    assert codes == [0]
    assert (tmp_path / "runs").read_text() == "4"
    delays = [record.getMessage().rsplit(" in ", 1)[1] for record in caplog.records]
    assert delays == ["0.5 s", "1.0 s", "2.0 s"]


@posix_only
async def test_a_worker_that_cannot_start_stops_the_supervisor(tmp_path: Path) -> None:
    command = [sys.executable, "-c", "import sys; sys.exit(2)"]
    sockets = bind_sockets("127.0.0.1", 0, 2, backlog=16)
    try:
        with trio.fail_after(60):
            assert await supervise(command, sockets, 2) == 2
    finally:
        for sock in sockets:
            sock.close()


@posix_only
def test_the_config_file_can_ask_for_workers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    asked: list[tuple[list[str], int]] = []

    async def fake_supervise(
        command: list[str], sockets: list[socket.socket], count: int, **_: object
    ) -> int:
        asked.append((command, count))
        return 0

    monkeypatch.setattr("mcpactor._workers.supervise", fake_supervise)
    config = tmp_path / "mcpactor.toml"
    server = _server_file(tmp_path)
    config.write_text(
        textwrap.dedent(
            f"""
            transport = "http"

            [http]
            port = 0
            stateless = true
            workers = 3

            [servers.pids]
            target = "{server}"
            """
        )
    )
    assert main(["serve", "--config", str(config)]) == 0
    ((command, count),) = asked
    assert count == 3
    # Each worker runs the same command line, and reads the same file.
    assert command[-3:] == ["serve", "--config", str(config)]
    assert "with 3 workers" in capsys.readouterr().err
