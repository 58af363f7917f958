"""``mcpactor serve --http`` in a subprocess, for the tests that talk to the real command."""

from __future__ import annotations

import contextlib
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Mapping
from pathlib import Path

import trio

__all__ = ["put_away", "serve_http", "stop_gracefully"]


@contextlib.asynccontextmanager
async def serve_http(
    *arguments: str,
    cwd: Path | str | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = 60,
) -> AsyncIterator[str]:
    """Run ``mcpactor serve ARGUMENTS --http`` on a free loopback port until the block
    ends; yield its MCP URL once it listens (within ``timeout`` seconds)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [sys.executable, "-m", "mcpactor", "serve", *arguments]
    process = await trio.lowlevel.open_process(
        [*command, "--http", f"127.0.0.1:{port}"],
        cwd=cwd,
        env=env,
        stderr=subprocess.DEVNULL,
    )
    try:
        with trio.fail_after(timeout):
            while True:  # a subprocess starting: there is nothing to wait on but the port
                try:
                    await (await trio.open_tcp_stream("127.0.0.1", port)).aclose()
                    break
                except OSError:
                    assert process.poll() is None, "the server exited before it listened"
                    await trio.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        with trio.CancelScope(shield=True):
            await process.wait()


async def stop_gracefully(process: trio.Process) -> None:
    """SIGTERM ``process``: it must end, and end well, within a minute."""
    process.send_signal(signal.SIGTERM)
    with trio.fail_after(60):
        await process.wait()
    assert process.returncode == 0


async def put_away(process: trio.Process) -> None:
    """Kill ``process`` if it still runs, and close the stderr pipe the test read."""
    if process.returncode is None:
        process.kill()
        await process.wait()
    if process.stderr is not None:
        await process.stderr.aclose()
