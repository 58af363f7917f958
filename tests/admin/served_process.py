"""``mcpactor serve clock`` over HTTP with its admin listener, as a process of its own."""

from __future__ import annotations

import contextlib
import re
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import attrs
import trio

__all__ = ["ServedProcess", "serve_clock_with_admin", "start_with_admin"]


@attrs.define
class ServedProcess:
    """The process, what it said until it served, and its two addresses."""

    process: trio.Process
    said: bytes
    #: the admin page's URL (``http://127.0.0.1:PORT/``)
    admin_url: str
    #: the MCP listener's origin (``http://127.0.0.1:PORT``)
    http_url: str


@contextlib.asynccontextmanager
async def serve_clock_with_admin(
    token: str, folder: Path, *options: str
) -> AsyncIterator[ServedProcess]:
    """Serve the clock plugin with ``--admin`` (``token`` read from a file in ``folder``)
    and ``options``; yield once it serves. Killed at the end if it still runs."""
    token_file = folder / "token"
    token_file.write_text(token + "\n")
    command = [sys.executable, "-m", "mcpactor", "serve", "--http", "127.0.0.1:0", *options]
    command += ["--admin", "127.0.0.1:0", "--admin-token-file", str(token_file), "clock"]
    process = await trio.lowlevel.open_process(command, stderr=subprocess.PIPE)
    assert process.stderr is not None
    try:
        said, endpoint, page = await _served(process, 30)
        yield ServedProcess(process, said, page, endpoint.removesuffix("/mcp"))
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
        await process.stderr.aclose()


async def start_with_admin(
    command: list[str], timeout: float = 30
) -> tuple[trio.Process, str, str]:
    """Start ``command`` (an ``mcpactor serve`` with ``--admin``) and wait until it serves:
    (the process, its MCP endpoint, its admin page). The caller stops the process."""
    process = await trio.lowlevel.open_process(command, stderr=subprocess.PIPE)
    _, endpoint, page = await _served(process, timeout)
    return process, endpoint, page


async def _served(process: trio.Process, timeout: float) -> tuple[bytes, str, str]:
    # What it said until it served, its MCP endpoint and its admin page.
    assert process.stderr is not None
    said = b""
    with trio.fail_after(timeout):
        while (serving := re.search(rb"serving (http://\S+/mcp)\s", said)) is None:
            chunk = await process.stderr.receive_some(4096)
            assert chunk, said.decode(errors="replace")
            said += chunk
    page = re.search(rb"admin page (http://127\.0\.0\.1:\d+/)", said)
    assert page is not None, said.decode(errors="replace")
    return said, serving.group(1).decode(), page.group(1).decode()
