"""The bench server's admin targets: ``--admin`` serves the listener beside the MCP
endpoint, ``--admin-watch`` adds a watcher outside the server's process tree that holds
the page's stream open and ends with the server."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import trio

from tests.store.conftest import free_port

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _descendants(pid: int) -> set[int]:
    # As the bench harness counts a server's processes: /proc's children, recursively.
    found: set[int] = set()
    todo = [pid]
    while todo:
        parent = todo.pop()
        try:
            threads = os.listdir(f"/proc/{parent}/task")
        except FileNotFoundError:
            continue
        for tid in threads:
            try:
                text = Path(f"/proc/{parent}/task/{tid}/children").read_text()
            except FileNotFoundError:
                continue
            for child in map(int, text.split()):
                if child not in found:
                    found.add(child)
                    todo.append(child)
    return found


class _Lines:
    """The lines another process writes into a FIFO, as they come, without polling."""

    def __init__(self, path: Path) -> None:
        os.mkfifo(path)
        self._stream = trio.lowlevel.FdStream(os.open(path, os.O_RDONLY | os.O_NONBLOCK))
        # A writer of our own until the other one has opened it: a FIFO with no writer
        # reads as ended.
        self._ours: int | None = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
        self._buffer = b""

    async def line(self) -> str:
        """The next line; "" once the writer has closed it."""
        while b"\n" not in self._buffer:
            chunk = await self._stream.receive_some(65536)
            if not chunk:
                return ""
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        if self._ours is not None:
            os.close(self._ours)
            self._ours = None
        return line.decode()

    async def aclose(self) -> None:
        if self._ours is not None:
            os.close(self._ours)
        await self._stream.aclose()


async def _exited(pid: int) -> None:
    # A process that is not our child: its pidfd turns readable when it has exited.
    try:
        pidfd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    try:
        await trio.lowlevel.wait_readable(pidfd)
    finally:
        os.close(pidfd)


async def test_the_watched_target_has_a_detached_watcher_on_its_stream(tmp_path: Path) -> None:
    log = tmp_path / "watch.fifo"
    lines = _Lines(log)
    port = free_port()
    command = [sys.executable, str(BENCH / "mcpactor_server.py"), "http", "127.0.0.1", str(port)]
    command += ["--json", "--admin-watch"]
    env = {**os.environ, "MCPBENCH_ADMIN_LOG": str(log)}
    async with contextlib.aclosing(lines):
        await _watch(command, env, port, lines)


async def _watch(command: list[str], env: dict[str, str], port: int, lines: _Lines) -> None:
    process = await trio.lowlevel.open_process(command, env=env, stderr=subprocess.PIPE)
    assert process.stderr is not None
    said = b""
    try:
        with trio.fail_after(30):
            while b"admin page" not in said:
                chunk = await process.stderr.receive_some(4096)
                assert chunk, said.decode()
                said += chunk
        match = re.search(rb"admin page (http://127\.0\.0\.1:\d+/)", said)
        assert match is not None, said.decode()
        # Nobody gets in without the token, which the server kept to itself.
        async with httpx.AsyncClient(base_url=match.group(1).decode(), timeout=10) as admin:
            assert (await admin.get("api/tree")).status_code == 401
        # The watcher connects, and the stream's snapshots reach it.
        with trio.fail_after(20):
            first = await lines.line()
            assert first.startswith("watching "), first
            watcher = int(first.split()[1])
            assert watcher not in _descendants(process.pid)
            for _ in range(3):
                moment, size = (await lines.line()).split()
                assert float(moment) > 0
                assert int(size) > 100
        # The MCP endpoint serves meanwhile.
        async with httpx.AsyncClient(timeout=10) as client:
            answer = await client.post(
                f"http://127.0.0.1:{port}/mcp",
                json={
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "initialize",
                    "params": {
                        "protocolVersion": "2025-11-25",
                        "capabilities": {},
                        "clientInfo": {"name": "t", "version": "1"},
                    },
                },
                headers={"Accept": "application/json, text/event-stream"},
            )
            assert answer.status_code == 200
    finally:
        process.send_signal(signal.SIGTERM)
        with trio.fail_after(30):
            await process.wait()
        await process.stderr.aclose()
    # The watcher ends with the server's stream, by itself.
    with trio.fail_after(20):
        rest = []
        while line := await lines.line():
            rest.append(line)
        await _exited(watcher)
    assert rest[-1].startswith("done ")
    assert int(rest[-1].split()[1]) >= 3
