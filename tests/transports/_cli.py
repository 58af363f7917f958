"""``mcpactor serve --http`` as a child process: start it, read where it serves, end it."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path

import attrs
import trio


def server_file(directory: Path, name: str, source: str) -> Path:
    """Write a server module ``name`` with ``source`` (dedented) into ``directory``."""
    path = directory / name
    path.write_text(textwrap.dedent(source))
    return path


async def first_line(stream: trio.abc.ReceiveStream) -> str:
    """Read ``stream`` up to the end of its first line (and maybe a little past it)."""
    data = b""
    with trio.fail_after(30):
        while b"\n" not in data:
            chunk = await stream.receive_some(4096)
            assert chunk, "the process exited before saying where it serves"
            data += chunk
    return data.decode()


@attrs.frozen
class Served:
    """A running ``mcpactor serve --http``: the process and the line it printed."""

    process: trio.Process
    line: str

    @property
    def url(self) -> str:
        """The endpoint URL the server printed."""
        return self.line.split("serving ", 1)[1].split()[0]

    @property
    def port(self) -> int:
        """The port of ``url``."""
        return int(self.url.rsplit(":", 1)[1].split("/")[0])


@contextlib.asynccontextmanager
async def serving(arguments: list[str]) -> AsyncIterator[Served]:
    """Run ``mcpactor serve *arguments`` until it prints where it serves; kill it on exit."""
    command = [sys.executable, "-m", "mcpactor", "serve", *arguments]
    process = await trio.lowlevel.open_process(command, stderr=subprocess.PIPE)
    assert process.stderr is not None
    try:
        yield Served(process, await first_line(process.stderr))
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
        await process.stderr.aclose()
