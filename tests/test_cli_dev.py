"""``mcpactor dev``: a real supervisor process serving a file that the test edits.

Each step waits for what the supervisor prints (it says when it restarts the server and
when the server failed), then asks the server as a client would; every wait is bounded.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Final

import pytest
import trio

from mcpactor.cli._dev import inspector_hint, serve_argv, watched_paths
from mcpactor.client import connect_http

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="the child gets its socket by fd")

# From an edit saved to the new tool being listed: watchfiles' step (50 ms), stopping the
# old server, starting a Python process. Generous for a loaded machine; measured below.
RELOAD: Final = 10.0
START: Final = 30.0

SERVER: Final = """\
from mcpactor import Server

server = Server("edited")


@server.tool()
def add(a: int, b: int) -> int:
    return a + b
"""

SECOND_TOOL: Final = """

@server.tool()
def mul(a: int, b: int) -> int:
    return a * b
"""


def save(path: Path, text: str) -> None:
    """Write ``path`` as an editor saves: a new file renamed over the old one."""
    temporary = path.with_name(f".{path.name}.swp")
    temporary.write_text(text)
    os.replace(temporary, path)


class Lines:
    """The lines a process writes to a pipe, read as they come."""

    def __init__(self, stream: trio.abc.ReceiveStream) -> None:
        self.stream = stream
        self.buffer = b""
        self.seen: list[str] = []

    async def until(self, marker: str) -> list[str]:
        """Read lines up to the first one containing ``marker``; return them all."""
        lines: list[str] = []
        while True:
            while b"\n" in self.buffer:
                line, self.buffer = self.buffer.split(b"\n", 1)
                text = line.decode()
                lines.append(text)
                self.seen.append(text)
                if marker in text:
                    return lines
            chunk = await self.stream.receive_some(4096)
            assert chunk, f"the process ended before {marker!r}:\n" + "\n".join(self.seen)
            self.buffer += chunk


@contextlib.asynccontextmanager
async def developing(cwd: Path, *arguments: str) -> AsyncIterator[tuple[trio.Process, Lines]]:
    """Run ``mcpactor dev ARGUMENTS`` in ``cwd``; stop it (SIGTERM) on exit."""
    process = await trio.lowlevel.open_process(
        [sys.executable, "-m", "mcpactor", "dev", *arguments],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    assert process.stderr is not None
    try:
        yield process, Lines(process.stderr)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
        await process.stderr.aclose()


async def tool_names(url: str) -> set[str]:
    """The names of the tools the server at ``url`` lists."""
    async with connect_http(url, initialize=True) as client:
        return {tool["name"] for tool in await client.list_tools()}


async def test_an_edit_restarts_the_server_and_a_broken_one_is_survived(tmp_path: Path) -> None:
    source = tmp_path / "edited.py"
    save(source, SERVER)
    async with developing(tmp_path, "edited.py", "--http", "127.0.0.1:0") as (process, lines):
        with trio.fail_after(START):
            (line,) = (await lines.until("serving "))[-1:]
            url = line.split("serving ", 1)[1].split()[0]
            assert await tool_names(url) == {"add"}

        started = trio.current_time()
        save(source, SERVER + SECOND_TOOL)
        with trio.fail_after(RELOAD):
            await lines.until("edited.py changed; restarting")
            assert await tool_names(url) == {"add", "mul"}
        print(f"reloaded in {trio.current_time() - started:.2f} s")

        save(source, SERVER + "\ndef oops(:\n    pass\n")
        with trio.fail_after(RELOAD):
            await lines.until("edited.py changed; restarting")
            shown = await lines.until("waiting for a change to start it again")
        report = "\n".join(shown)
        assert "edited.py:10: SyntaxError: " in report
        assert "    def oops(:" in report
        assert "Traceback" not in report
        # One screen: the report and the supervisor's line.
        assert len(shown) <= 5, report
        assert process.returncode is None

        save(source, SERVER + SECOND_TOOL)
        with trio.fail_after(RELOAD):
            await lines.until("edited.py changed; restarting")
            assert await tool_names(url) == {"add", "mul"}

        process.send_signal(signal.SIGTERM)
        with trio.fail_after(RELOAD):
            assert await process.wait() == 0
        # The server went with it.
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        with pytest.raises(OSError, match="failed"):
            await trio.open_tcp_stream("127.0.0.1", port)


async def test_an_exception_at_import_is_reported_and_the_fix_serves(tmp_path: Path) -> None:
    source = tmp_path / "raising.py"
    save(source, SERVER + "\nraise RuntimeError('no API key set')\n")
    async with developing(tmp_path, "raising.py", "--http", "127.0.0.1:0") as (process, lines):
        with trio.fail_after(START):
            line = (await lines.until("serving "))[-1]
            url = line.split("serving ", 1)[1].split()[0]
            shown = await lines.until("waiting for a change")
        assert "RuntimeError: no API key set (raising.py:10, in <module>)" in "\n".join(shown)
        save(source, SERVER)
        with trio.fail_after(RELOAD):
            await lines.until("raising.py changed; restarting")
            assert await tool_names(url) == {"add"}
        assert process.returncode is None


async def test_inspector_over_stdio_prints_the_command_line(tmp_path: Path) -> None:
    save(tmp_path / "edited.py", SERVER)
    with trio.fail_after(START):
        done = await trio.run_process(
            [sys.executable, "-m", "mcpactor", "dev", "--stdio", "--inspector", "edited.py"],
            cwd=tmp_path,
            capture_stderr=True,
            stdin=subprocess.DEVNULL,
        )
    text = done.stderr.decode()
    assert done.returncode == 0
    expected = f"npx @modelcontextprotocol/inspector {sys.executable} -m mcpactor dev --stdio "
    assert expected + "edited.py\n" in text


async def test_stdio_ends_with_its_input(tmp_path: Path) -> None:
    save(tmp_path / "edited.py", SERVER)
    with trio.fail_after(START):
        done = await trio.run_process(
            [sys.executable, "-m", "mcpactor", "dev", "--stdio", "edited.py"],
            cwd=tmp_path,
            capture_stderr=True,
            stdin=subprocess.DEVNULL,
        )
    assert done.returncode == 0, done.stderr


def test_inspector_hint_names_the_transport_and_url() -> None:
    hint = inspector_hint("http://127.0.0.1:8000/mcp")
    assert "npx @modelcontextprotocol/inspector\n" in hint
    assert (
        "http://localhost:6274/?transport=streamable-http&serverUrl=http%3A%2F%2F127.0.0.1"
        "%3A8000%2Fmcp"
    ) in hint
    assert "inspector --cli http://127.0.0.1:8000/mcp --transport http" in hint


@pytest.mark.parametrize(
    ("argv", "served"),
    [
        (["dev", "a.py"], ["serve", "a.py"]),
        (
            ["--log-level", "debug", "dev", "--inspector", "a.py", "--watch", "x", "--grace=1"],
            ["--log-level", "debug", "serve", "a.py", "--grace=1"],
        ),
        (["--debug", "dev", "--watch=x", "--stdio", "a.py"], ["--debug", "serve", "a.py"]),
    ],
)
def test_the_served_command_line_is_dev_s_without_its_own_options(
    argv: list[str], served: list[str]
) -> None:
    assert serve_argv(argv) == served


def test_what_is_watched(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "tools.py").write_text(SERVER)
    (tmp_path / "single.py").write_text(SERVER)
    (tmp_path / "notes").mkdir()
    trees, directories, files = watched_paths(
        ["pkg.tools:server", "single.py", "http://example.com/mcp"], None, ["notes"]
    )
    assert trees == [tmp_path / "pkg", tmp_path / "notes"]
    assert directories == [tmp_path]
    assert files == [tmp_path / "single.py"]


def test_a_config_and_what_it_names_are_watched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mcpactor._config import load_config

    monkeypatch.chdir(tmp_path)
    (tmp_path / "served.py").write_text(SERVER)
    config_file = tmp_path / "mcpactor.toml"
    config_file.write_text('[servers.served]\ntarget = "served.py"\n')
    trees, directories, files = watched_paths([], load_config(config_file), [])
    assert trees == []
    assert directories == [tmp_path]
    assert files == [config_file, tmp_path / "served.py"]
