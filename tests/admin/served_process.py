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

__all__ = ["ServedProcess", "serve_clock_with_admin"]


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
    said = b""
    try:
        with trio.fail_after(30):
            while b"mcpactor: serving" not in said:
                chunk = await process.stderr.receive_some(4096)
                assert chunk, said.decode()
                said += chunk
        admin = re.search(rb"admin page (http://127\.0\.0\.1:\d+/)", said)
        served = re.search(rb"serving (http://127\.0\.0\.1:\d+)/mcp", said)
        assert admin is not None, said.decode()
        assert served is not None, said.decode()
        yield ServedProcess(process, said, admin.group(1).decode(), served.group(1).decode())
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
        await process.stderr.aclose()
