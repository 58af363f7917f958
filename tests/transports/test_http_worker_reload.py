"""``SIGHUP`` to ``mcpactor serve --workers N``: the workers replaced one at a time, under load.

Counted while clients call tools without a pause: connections refused and requests that
failed, over fresh connections (one per request, so that any moment when the port would
not accept shows) and over the project's client, which keeps its connections alive.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import attrs
import orjson
import pytest
import trio

from mcpactor.client import connect_http

from ..serving import put_away, stop_gracefully

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"),
    reason="the workers' processes are found through /proc, and share the port on Linux",
)

_TOOLS = '''
import os

from mcpactor import Server

server = Server("reloadable", "1.0.0")


@server.tool()
async def pid() -> int:
    """The serving process's id."""
    return os.getpid()


@server.tool()
async def version() -> str:
    """Which version of this file the process imported."""
    return {version!r}
'''

_CONFIG = """
transport = "http"
prefix = false

[http]
port = 0
stateless = true
json_response = true
workers = {workers}
health_path = {health!r}
# Long enough to fail the test if a reload waited it: a replaced worker does not.
drain_delay = 600

[servers.reloadable]
target = {target!r}
"""

_FRESH_CLIENTS = 4
_KEPT_ALIVE_CLIENTS = 2
# Between two calls of one client: a steady load that leaves the two cores room to start
# the new workers.
_PACE = 0.02


def _write(tmp_path: Path, *, version: str, health: str, workers: int = 4) -> Path:
    tools = tmp_path / "reloadable.py"
    tools.write_text(_TOOLS.format(version=version))
    config = tmp_path / "mcpactor.toml"
    config.write_text(
        textwrap.dedent(_CONFIG.format(workers=workers, health=health, target=str(tools)))
    )
    return config


def _children(pid: int) -> set[int]:
    # The supervisor's live children: its workers.
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError):
            continue
        if fields[0] != "Z" and int(fields[1]) == pid:
            found.add(int(entry.name))
    return found


@attrs.define
class _Lines:
    """What the supervisor writes to stderr, line by line, with a wait for a given line."""

    lines: list[str] = attrs.Factory(list)
    _more: trio.Event = attrs.Factory(trio.Event)

    async def read(self, stream: trio.abc.ReceiveStream) -> None:
        pending = b""
        async for chunk in stream:
            pending += chunk
            *whole, pending = pending.split(b"\n")
            self.lines += [line.decode(errors="replace") for line in whole]
            self._more.set()
            self._more = trio.Event()

    async def wait_for(self, text: str, *, count: int = 1, within: float = 120) -> list[str]:
        with trio.fail_after(within):
            while True:
                found = [line for line in self.lines if text in line]
                if len(found) >= count:
                    return found
                await self._more.wait()


@attrs.define
class _Load:
    """Clients calling ``pid`` until stopped, counting what went wrong."""

    port: int
    stop: trio.Event = attrs.Factory(trio.Event)
    refused: int = 0
    failed: list[str] = attrs.Factory(list)
    answered: int = 0
    #: the worker pid of each answer, in order
    pids: list[int] = attrs.Factory(list)
    _more: trio.Event = attrs.Factory(trio.Event)

    def _note(self, pid: int) -> None:
        self.answered += 1
        self.pids.append(pid)
        self._more.set()
        self._more = trio.Event()

    async def wait_answers(self, more: int) -> None:
        """Wait until ``more`` calls more have been answered."""
        wanted = self.answered + more
        with trio.fail_after(60):
            while self.answered < wanted:
                await self._more.wait()

    async def fresh(self, started: trio.Event) -> None:
        # One connection per request, closed after the answer.
        body = orjson.dumps(
            {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "pid"}}
        )
        head = (
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
            "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
            f"MCP-Protocol-Version: 2025-11-25\r\nContent-Length: {len(body)}\r\n\r\n"
        ).encode()
        while not self.stop.is_set():
            try:
                stream = await trio.open_tcp_stream("127.0.0.1", self.port)
            except ConnectionRefusedError:
                self.refused += 1
                continue
            try:
                async with stream:
                    await stream.send_all(head + body)
                    answer = b""
                    with trio.fail_after(30):
                        async for chunk in stream:
                            answer += chunk
                self._answer(answer)
            except (OSError, trio.BrokenResourceError, trio.TooSlowError) as exc:
                self.failed.append(f"fresh connection: {exc!r}")
            started.set()
            await trio.sleep(_PACE)

    def _answer(self, answer: bytes) -> None:
        head, _, body = answer.partition(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1.1 200 "):
            self.failed.append(f"fresh connection: {answer[:200]!r}")
            return
        result = orjson.loads(body)["result"]
        if result.get("isError"):
            self.failed.append(f"fresh connection: {result!r}")
            return
        self._note(int(result["structuredContent"]["result"]))

    async def kept_alive(self, started: trio.Event) -> None:
        # The project's client, its connections kept alive between calls.
        url = f"http://127.0.0.1:{self.port}/mcp"
        async with connect_http(url, initialize=True, protocol_version="2026-07-28") as client:
            while not self.stop.is_set():
                try:
                    result = await client.call_tool("pid", {})
                except Exception as exc:
                    self.failed.append(f"kept alive: {exc!r}")
                else:
                    if result.is_error:
                        self.failed.append(f"kept alive: {result!r}")
                    else:
                        self._note(int(result["structuredContent"]["result"]))
                started.set()
                await trio.sleep(_PACE)


async def _call(port: int, tool: str) -> object:
    async with connect_http(
        f"http://127.0.0.1:{port}/mcp", initialize=True, protocol_version="2026-07-28"
    ) as client:
        result = await client.call_tool(tool, {})
        assert not result.is_error, result
        return result["structuredContent"]["result"]


async def _status(port: int, path: str) -> int:
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    async with stream:
        await stream.send_all(
            f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode()
        )
        answer = b""
        async for chunk in stream:
            answer += chunk
    # The status code of the status line.
    return int(answer.split(b"\r\n", 1)[0].split()[1])


async def test_sighup_replaces_every_worker_under_load_and_loses_nothing(tmp_path: Path) -> None:
    config = _write(tmp_path, version="v1", health="/healthz")
    command = [sys.executable, "-m", "mcpactor", "serve", "--config", str(config)]
    process = await trio.lowlevel.open_process(command, stderr=subprocess.PIPE)
    assert process.stderr is not None
    said = _Lines()
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(said.read, process.stderr)
            (serving,) = await said.wait_for("with 4 workers")
            port = int(serving.split("serving ", 1)[1].split()[0].rsplit(":", 1)[1].split("/")[0])
            first = _children(process.pid)
            assert len(first) == 4
            assert await _call(port, "version") == "v1"
            assert await _status(port, "/alive") == 404

            load = _Load(port)
            async with trio.open_nursery() as clients:
                for run, count in ((load.fresh, _FRESH_CLIENTS), (load.kept_alive, 2)):
                    for _ in range(count):
                        started = trio.Event()
                        clients.start_soon(run, started)
                        with trio.fail_after(60):
                            await started.wait()

                # Probed by a load balancer: a SIGTERM would make each of them wait the drain
                # delay. Forty fresh connections reach each of the four (but once in 25 000).
                for _ in range(40):
                    assert await _status(port, "/readyz") == 200
                # New code and a new config, then two SIGHUPs: the second while the first
                # reload runs, so it is queued and follows it.
                _write(tmp_path, version="v2", health="/alive")
                process.send_signal(signal.SIGHUP)
                await said.wait_for("SIGHUP: replacing the 4 workers")
                process.send_signal(signal.SIGHUP)
                await said.wait_for("another follows once it is done")
                await said.wait_for("reloaded: 4 workers replaced", count=2, within=240)
                second = _children(process.pid)
                assert len(second) == 4
                assert not first & second, "every worker was replaced"
                await load.wait_answers(20)
                # What is answered now is answered by the new workers.
                assert set(load.pids[-10:]) <= second

                # A config file that does not load: the reload stops, nothing else does.
                config.write_text("[http\n")
                process.send_signal(signal.SIGHUP)
                (stopped,) = await said.wait_for("reload stopped")
                assert "the old workers go on serving" in stopped
                assert "mcpactor.toml" in "\n".join(said.lines[said.lines.index(stopped) :])
                assert _children(process.pid) == second
                await load.wait_answers(20)
                load.stop.set()

            assert load.refused == 0
            assert load.failed == []
            assert load.answered > 100
            # Any worker answers with the new code and the new config.
            for _ in range(8):
                assert await _call(port, "version") == "v2"
                assert await _status(port, "/alive") == 200
            await stop_gracefully(process)
            nursery.cancel_scope.cancel()
    finally:
        await put_away(process)


async def test_sighup_without_workers_is_said_and_serving_goes_on(tmp_path: Path) -> None:
    config = _write(tmp_path, version="v1", health="/healthz", workers=1)
    command = [sys.executable, "-m", "mcpactor", "serve", "--config", str(config)]
    process = await trio.lowlevel.open_process(command, stderr=subprocess.PIPE)
    assert process.stderr is not None
    said = _Lines()
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(said.read, process.stderr)
            (serving,) = await said.wait_for("serving http://")
            port = int(serving.split("serving ", 1)[1].split()[0].rsplit(":", 1)[1].split("/")[0])
            process.send_signal(signal.SIGHUP)
            await said.wait_for("reloading replaces worker processes one at a time")
            assert await _call(port, "pid") == process.pid
            assert process.returncode is None
            await stop_gracefully(process)
            nursery.cancel_scope.cancel()
    finally:
        await put_away(process)


_STUCK_WORKER = """
import os, signal, sys
from pathlib import Path

pids = Path({pids!r})
with pids.open("a") as file:
    file.write(f"{{os.getpid()}}\\n")
status = int(sys.argv[sys.argv.index("--worker-status") + 1])
if len(pids.read_text().split()) == 1:
    # The first worker serves; the ones a reload starts never say so.
    os.write(status, b'{{"ready": true}}\\n')
signal.pthread_sigmask(signal.SIG_BLOCK, {{signal.SIGTERM}})
signal.sigwait({{signal.SIGTERM}})
"""


async def test_a_new_worker_that_never_serves_stops_the_reload(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from mcpactor.cli import _worker_reload
    from mcpactor.cli._workers import bind_sockets, supervise

    from .test_http_workers import _gone, _running

    monkeypatch.setattr(_worker_reload, "READY_WITHIN", 0.5)
    pids = tmp_path / "pids"
    script = tmp_path / "worker.py"
    script.write_text(_STUCK_WORKER.format(pids=str(pids)))
    sockets = bind_sockets("127.0.0.1", 0, 1, backlog=16)
    stop = trio.Event()
    serving = trio.Event()
    codes: list[int] = []
    try:
        async with trio.open_nursery() as nursery:

            async def run() -> None:
                command = [sys.executable, str(script)]
                codes.append(await supervise(command, sockets, 1, stop=stop, on_ready=serving.set))

            nursery.start_soon(run)
            with trio.fail_after(30):
                await serving.wait()
            (first,) = map(int, pids.read_text().split())
            # The supervisor's signal receiver takes it: this process is not hung up.
            signal.raise_signal(signal.SIGHUP)
            with trio.fail_after(30):
                while len(pids.read_text().split()) < 2:  # noqa: ASYNC110 (another process)
                    await trio.sleep(0.05)
            stuck = int(pids.read_text().split()[1])
            # Not ready in time: it is stopped, the reload with it; the first serves on.
            await _gone(stuck)
            assert _running(first)
            stop.set()
    finally:
        for sock in sockets:
            sock.close()
    assert codes == [0]
    said = capsys.readouterr().err
    assert "reload stopped: the new worker 0 could not start, so the old workers go on" in said
    assert "it did not say it serves within 0.5 s; it was stopped" in said
