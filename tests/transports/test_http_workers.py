"""``mcpactor serve --workers N``: one port, N processes, a supervisor that keeps them."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Final

import pytest
import trio

from mcpactor.cli import _workers as workers_module
from mcpactor.cli import main
from mcpactor.cli._workers import WorkerFailure, bind_sockets, supervise
from mcpactor.config import STATE_KEYS_ENV

from ._cli import Served, first_line, server_file, serving
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


def _fake_worker(directory: Path, fails: int, *, ready: bool = True) -> list[str]:
    # Says it serves (with ``ready``), then exits with 1 on its first ``fails`` runs; then
    # says so on the socket ``ready`` and serves until SIGTERM.
    script = directory / "worker.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import os, signal, socket, sys
            from pathlib import Path

            runs = Path({str(directory / "runs")!r})
            run = int(runs.read_text()) + 1 if runs.exists() else 1
            runs.write_text(str(run))
            status = int(sys.argv[sys.argv.index("--worker-status") + 1])
            if {ready!r}:
                os.write(status, b'{{"ready": true}}\\n')
            os.close(status)
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
        command: list[str],
        sockets: list[socket.socket],
        count: int,
        *,
        on_ready: Callable[[], None],
        **_: object,
    ) -> int:
        asked.append((command, count))
        on_ready()
        return 0

    monkeypatch.setattr("mcpactor.cli._workers.supervise", fake_supervise)
    # The supervisor puts the workers' shared key in this process's environment: unset
    # again after the test (setenv records it unset), or later tests' servers start with it.
    monkeypatch.setenv(STATE_KEYS_ENV, "")
    monkeypatch.delenv(STATE_KEYS_ENV)
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


# --- workers that cannot start --------------------------------------------------------------

ONLY_IN_THE_SUPERVISOR: Final = """
import sys

from mcpactor import Server

if "--worker-socket" in sys.argv:
    raise RuntimeError("this module loads in the supervisor only")

server = Server("fussy", "1.0.0")
"""


@posix_only
async def test_a_worker_that_cannot_load_its_target_stops_the_supervisor(
    tmp_path: Path,
) -> None:
    # The supervisor loads it; the workers cannot. They are not started again and again
    # while the port accepts connections nobody answers: the supervisor says the worker's
    # error once, with the worker's status, and lets the port go.
    target = server_file(tmp_path, "fussy.py", ONLY_IN_THE_SUPERVISOR)
    command = [sys.executable, "-m", "mcpactor", "serve", str(target), "--stateless"]
    command += ["--http", "127.0.0.1:0", "--workers", "2"]
    with trio.fail_after(60):
        done = await trio.run_process(command, capture_stderr=True, check=False)
    assert done.returncode == 1
    text = done.stderr.decode()
    assert text.count("running it raised RuntimeError: this module loads in the supervisor") == 1
    assert "serving" not in text
    assert "starting it again" not in text


def _restarting_worker(directory: Path, runs: list[str]) -> list[str]:
    # Run n does what ``runs[n - 1]`` says: "ready" says it serves and exits with 1,
    # "fail" exits with 1 without serving; past the list it serves until SIGTERM.
    script = directory / "restarting.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import os, signal, sys
            from pathlib import Path

            counter = Path({str(directory / "runs")!r})
            run = int(counter.read_text()) + 1 if counter.exists() else 1
            counter.write_text(str(run))
            status = int(sys.argv[sys.argv.index("--worker-status") + 1])
            plan = {runs!r}
            step = plan[run - 1] if run <= len(plan) else "serve"
            if step != "fail":
                os.write(status, b'{{"ready": true}}\\n')
            os.close(status)
            if step != "serve":
                print("worker run", run, "fails", file=sys.stderr)
                sys.exit(1)
            signal.pthread_sigmask(signal.SIG_BLOCK, {{signal.SIGTERM}})
            signal.sigwait({{signal.SIGTERM}})
            """
        )
    )
    return [sys.executable, str(script)]


@posix_only
async def test_a_worker_that_keeps_exiting_is_given_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # Crashes after it served are restarts, with backoff; a restart that cannot start
    # counts as one of them; too many in a row, and the supervisor stops.
    monkeypatch.setattr(workers_module, "_FIRST_DELAY", 0.01)
    monkeypatch.setattr(workers_module, "MAX_QUICK_EXITS", 4)
    command = _restarting_worker(tmp_path, ["ready", "ready", "fail", "ready", "ready"])
    sockets = bind_sockets("127.0.0.1", 0, 1, backlog=16)
    failures: list[WorkerFailure] = []
    ready: list[bool] = []
    try:
        with caplog.at_level(logging.WARNING, logger="mcpactor.workers"), trio.fail_after(60):
            code = await supervise(
                command,
                sockets,
                1,
                on_ready=lambda: ready.append(True),
                on_failure=failures.append,
            )
    finally:
        for sock in sockets:
            sock.close()
    assert code == 1
    assert ready == [True]
    assert (tmp_path / "runs").read_text() == "4"
    (failure,) = failures
    assert failure.status == 1
    assert failure.lines[0].startswith("worker 0 exited 4 times in a row")
    messages = [record.getMessage() for record in caplog.records]
    assert "worker 0 could not start again: " in " ".join(messages)
    assert sum("starting it again" in message for message in messages) == 3


@posix_only
async def test_a_worker_that_never_serves_stops_the_others_with_its_report(
    tmp_path: Path,
) -> None:
    report = json.dumps({"status": 2, "lines": ["x.toml: bad key"], "traceback": None})
    said = report.encode() + b"\n"
    script = tmp_path / "reporting.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import os, signal, sys

            status = int(sys.argv[sys.argv.index("--worker-status") + 1])
            number = sys.argv[sys.argv.index("--worker-number") + 1]
            if number == "1":
                os.write(status, {said!r})
                sys.exit(2)
            os.write(status, b'{{"ready": true}}\\n')
            signal.pthread_sigmask(signal.SIG_BLOCK, {{signal.SIGTERM}})
            signal.sigwait({{signal.SIGTERM}})
            """
        )
    )
    sockets = bind_sockets("127.0.0.1", 0, 2, backlog=16)
    failures: list[WorkerFailure] = []
    ready: list[bool] = []
    try:
        with trio.fail_after(60):
            code = await supervise(
                [sys.executable, str(script)],
                sockets,
                2,
                on_ready=lambda: ready.append(True),
                on_failure=failures.append,
            )
    finally:
        for sock in sockets:
            sock.close()
    assert code == 2
    # Not every worker served: where it serves was never said.
    assert ready == []
    assert failures == [WorkerFailure(worker=1, status=2, lines=("x.toml: bad key",))]


LAUNCHER: Final = """
import sys

# A launcher of its own puts a folder on the path, then runs mcpactor's command line.
sys.path.insert(0, {vendor!r})
from mcpactor.cli import main

sys.exit(main())
"""

NEEDS_ITS_NEIGHBOURS: Final = '''
import os

from helper import NAME  # beside this file
from vendored import SUFFIX  # on the launcher's path only

from mcpactor import Server

server = Server(NAME + SUFFIX, "1.0.0")


@server.tool()
async def pid() -> int:
    """The serving process's id."""
    return os.getpid()
'''


@posix_only
async def test_workers_import_the_target_as_the_supervisor_did(tmp_path: Path) -> None:
    app = tmp_path / "app"
    vendor = tmp_path / "vendor"
    app.mkdir()
    vendor.mkdir()
    (app / "helper.py").write_text("NAME = 'neighbours'\n")
    (vendor / "vendored.py").write_text("SUFFIX = '-vendored'\n")
    server_file(app, "server.py", NEEDS_ITS_NEIGHBOURS)
    launcher = tmp_path / "launch.py"
    launcher.write_text(LAUNCHER.format(vendor=str(vendor)))
    command = [sys.executable, str(launcher), "serve", "app/server.py", "--stateless"]
    command += ["--json-response", "--http", "127.0.0.1:0", "--workers", "2"]
    process = await trio.lowlevel.open_process(command, cwd=tmp_path, stderr=subprocess.PIPE)
    assert process.stderr is not None
    try:
        line = await first_line(process.stderr)
        assert "with 2 workers" in line, line
        served = Served(process, line)
        workers = await _pids_until(served.port, 2) if LINUX else {await _pid(served.port)}
        assert process.pid not in workers
    finally:
        process.send_signal(signal.SIGTERM)
        with trio.fail_after(30):
            await process.wait()
        await process.stderr.aclose()
    assert process.returncode == 0
