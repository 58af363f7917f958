"""``mcpactor dev``: a real supervisor process serving a file that the test edits.

Each step waits for what the supervisor prints (it says when it restarts the server,
when the server failed and when it serves again), then asks the server as a client
would; every wait is bounded. The clients are real: mcpactor's own and the official
SDK's, each keeping one session open across the edits.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Final

import orjson
import pytest
import trio

from mcpactor import RequestError
from mcpactor.cli._dev import inspector_command, inspector_hint, serve_argv, watched_paths
from mcpactor.client import connect_http, connect_stdio
from mcpactor.client._http11 import HttpPool, Url

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

#: a syntax error on line 10 of SERVER + BROKEN
BROKEN: Final = "\ndef oops(:\n    pass\n"


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
async def developing(
    cwd: Path, *arguments: str, env: dict[str, str] | None = None
) -> AsyncIterator[tuple[trio.Process, Lines]]:
    """Run ``mcpactor dev ARGUMENTS`` in ``cwd``; kill it on exit if it still runs."""
    process = await trio.lowlevel.open_process(
        [sys.executable, "-m", "mcpactor", "dev", *arguments],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
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


def served_url(lines: list[str]) -> str:
    """The URL in the supervisor's ``serving URL`` line (the last of ``lines``)."""
    return lines[-1].split("serving ", 1)[1].split()[0]


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

        save(source, SERVER + BROKEN)
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
        # A client is answered meanwhile, in the words of the report.
        with trio.fail_after(RELOAD), pytest.raises(RequestError) as raised:
            await tool_names(url)
        assert "edited.py:10: SyntaxError: " in raised.value.message

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


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # the SDK's own
async def test_sessions_outlive_a_broken_edit_and_its_fix(tmp_path: Path) -> None:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.exceptions import MCPError

    source = tmp_path / "edited.py"
    save(source, SERVER)
    async with developing(tmp_path, "edited.py", "--http", "127.0.0.1:0") as (_, lines):
        with trio.fail_after(START):
            url = served_url(await lines.until("serving "))
        # mcpactor's client and the official SDK's, one session each for the whole test.
        async with (
            connect_http(url, initialize=True) as ours,
            streamable_http_client(url) as (read, write, *_),
            ClientSession(read, write) as theirs,
        ):
            with trio.fail_after(START):
                await theirs.initialize()
                assert (await ours.call_tool("add", {"a": 1, "b": 2})).data == {"result": 3}
                added = await theirs.call_tool("add", {"a": 1, "b": 2})
                assert added.structured_content == {"result": 3}

            save(source, SERVER + BROKEN)
            with trio.fail_after(RELOAD):
                await lines.until("waiting for a change to start it again")
                with pytest.raises(RequestError) as ours_failed:
                    await ours.call_tool("add", {"a": 1, "b": 2})
                with pytest.raises(MCPError) as theirs_failed:
                    await theirs.call_tool("add", {"a": 1, "b": 2})
            for message in (ours_failed.value.message, str(theirs_failed.value)):
                assert "edited.py:10: SyntaxError: " in message

            for edit in (SERVER + SECOND_TOOL, SERVER + SECOND_TOOL + "\n# again\n"):
                save(source, edit)
                with trio.fail_after(RELOAD):
                    await lines.until("serving again")
                    # The same sessions, served by a process that never saw them open.
                    multiplied = await ours.call_tool("mul", {"a": 2, "b": 3})
                    assert multiplied.data == {"result": 6}
                    multiplied = await theirs.call_tool("mul", {"a": 2, "b": 3})
                    assert multiplied.structured_content == {"result": 6}


#: ``python -c`` that points its stderr at the FIFO ``argv[1]``, then runs ``argv[2:]``
_STDERR_TO: Final = (
    "import os, sys; os.dup2(os.open(sys.argv[1], os.O_WRONLY), 2); "
    "os.execv(sys.executable, [sys.executable, *sys.argv[2:]])"
)


async def test_a_stdio_session_outlives_a_broken_edit_and_its_fix(tmp_path: Path) -> None:
    source = tmp_path / "edited.py"
    save(source, SERVER)
    # The client starts dev itself; what dev says comes through a FIFO, held open here
    # for writing too, so that a read waits for the next line rather than ending.
    fifo = tmp_path / "stderr"
    os.mkfifo(fifo)
    stderr = trio.lowlevel.FdStream(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))
    held = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    command = [sys.executable, "-c", _STDERR_TO, str(fifo), "-m", "mcpactor", "dev", "--stdio"]
    try:
        async with stderr, connect_stdio([*command, "edited.py"], cwd=tmp_path) as client:
            lines = Lines(stderr)
            with trio.fail_after(START):
                await client.initialize()
                assert (await client.call_tool("add", {"a": 1, "b": 2})).data == {"result": 3}
            save(source, SERVER + BROKEN)
            with trio.fail_after(RELOAD):
                await lines.until("waiting for a change to start it again")
                with pytest.raises(RequestError) as raised:
                    await client.call_tool("add", {"a": 1, "b": 2})
            assert "edited.py:10: SyntaxError: " in raised.value.message
            save(source, SERVER + SECOND_TOOL)
            with trio.fail_after(RELOAD):
                await lines.until("edited.py changed; restarting")
                # Told what opened the session, the new server answers as the old one did.
                assert (await client.call_tool("mul", {"a": 2, "b": 3})).data == {"result": 6}
    finally:
        os.close(held)


async def test_over_stdio_dev_needs_no_http_stack(tmp_path: Path) -> None:
    # What `pip install watchfiles` alone gives: none of the http extra's packages.
    site = tmp_path / "site"
    site.mkdir()
    hidden = ["h11", "httptools", "hypercorn", "trio_websocket", "wsproto"]
    (site / "sitecustomize.py").write_text(
        f"import sys\nfor name in {hidden!r}:\n    sys.modules[name] = None\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), *sys.path])}
    save(tmp_path / "edited.py", SERVER)
    command = [sys.executable, "-m", "mcpactor", "dev", "--stdio", "edited.py"]
    with trio.fail_after(START):
        async with connect_stdio(command, cwd=tmp_path, env=env, initialize=True) as client:
            assert (await client.call_tool("add", {"a": 1, "b": 2})).data == {"result": 3}


def _no_npx(tmp_path: Path) -> dict[str, str]:
    # An environment whose PATH has no npx (the served child is started by full path).
    empty = tmp_path / "bin"
    empty.mkdir()
    return {**os.environ, "PATH": str(empty)}


async def test_inspector_without_npx_says_how_to_start_it(tmp_path: Path) -> None:
    save(tmp_path / "edited.py", SERVER)
    env = _no_npx(tmp_path)
    arguments = ("edited.py", "--http", "127.0.0.1:0", "--inspector")
    async with developing(tmp_path, *arguments, env=env) as (_, lines):
        with trio.fail_after(START):
            url = served_url(await lines.until("serving "))
            said = "\n".join(await lines.until("--method tools/list"))
            assert await tool_names(url) == {"add"}
    assert "npx was not found (it comes with Node.js): the MCP Inspector was not started" in said
    assert (
        f"npx @modelcontextprotocol/inspector@latest --transport http --server-url {url}\n" in said
    )


async def test_inspector_over_stdio_without_npx_prints_the_command_line(tmp_path: Path) -> None:
    save(tmp_path / "edited.py", SERVER)
    with trio.fail_after(START):
        done = await trio.run_process(
            [sys.executable, "-m", "mcpactor", "dev", "--stdio", "--inspector", "edited.py"],
            cwd=tmp_path,
            capture_stderr=True,
            stdin=subprocess.DEVNULL,
            env=_no_npx(tmp_path),
        )
    text = done.stderr.decode()
    assert done.returncode == 0
    expected = (
        "npx --yes @modelcontextprotocol/inspector@latest -- "
        f"{sys.executable} -m mcpactor dev --stdio edited.py\n"
    )
    assert expected in text


#: how long the Inspector may take to start: npx may fetch it first
INSPECTOR_START: Final = 300.0


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _inspector_env(tmp_path: Path) -> tuple[dict[str, str], int]:
    # Ports of its own (tests run side by side), no browser, nothing kept.
    port = _free_port()
    env = {
        **os.environ,
        "CLIENT_PORT": str(port),
        "MCP_SANDBOX_PORT": str(_free_port()),
        "MCP_AUTO_OPEN_ENABLED": "false",
        "MCP_INSPECTOR_SECRET_STORE": "memory",
        "MCP_STORAGE_DIR": str(tmp_path / "inspector"),
    }
    return env, port


async def _inspector_config(lines: Lines, port: int) -> dict[str, object]:
    # The Inspector says where its page is, with the token its API wants; the API says
    # what it was started on.
    with trio.fail_after(INSPECTOR_START):
        page = (await lines.until("MCP_INSPECTOR_API_TOKEN="))[-1]
    token = page.split("MCP_INSPECTOR_API_TOKEN=", 1)[1].split()[0]
    url = Url.parse(f"http://127.0.0.1:{port}/api/config")
    with trio.fail_after(START):
        async with (
            HttpPool() as pool,
            pool.request("GET", url, [("x-mcp-remote-auth", f"Bearer {token}")]) as response,
        ):
            assert response.status == 200
            config = orjson.loads(await response.read(1 << 20))
    assert isinstance(config, dict)
    return config


@pytest.mark.skipif(shutil.which("npx") is None, reason="the MCP Inspector runs on Node.js")
async def test_the_inspector_is_started_on_the_server_and_stopped_with_it(
    tmp_path: Path,
) -> None:
    save(tmp_path / "edited.py", SERVER)
    env, port = _inspector_env(tmp_path)
    arguments = ("edited.py", "--http", "127.0.0.1:0", "--inspector")
    async with developing(tmp_path, *arguments, env=env) as (process, lines):
        with trio.fail_after(START):
            url = served_url(await lines.until("serving "))
            started = (await lines.until("starting the MCP Inspector"))[-1]
        npx = shutil.which("npx")
        assert npx is not None
        assert started.endswith(": " + " ".join(inspector_command(npx, url)))
        config = await _inspector_config(lines, port)
        assert config["defaultTransport"] == "streamable-http"
        assert config["defaultServerUrl"] == url
        process.send_signal(signal.SIGTERM)
        with trio.fail_after(RELOAD):
            assert await process.wait() == 0
    # The Inspector went with it.
    with pytest.raises(OSError, match="failed"):
        await trio.open_tcp_stream("127.0.0.1", port)


@pytest.mark.skipif(shutil.which("npx") is None, reason="the MCP Inspector runs on Node.js")
async def test_over_stdio_the_inspector_is_started_on_dev(tmp_path: Path) -> None:
    save(tmp_path / "edited.py", SERVER)
    env, port = _inspector_env(tmp_path)
    # dev becomes the Inspector, which starts ``dev --stdio`` when it connects.
    process = await trio.lowlevel.open_process(
        [sys.executable, "-m", "mcpactor", "dev", "--stdio", "--inspector", "edited.py"],
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=env,
        start_new_session=True,
    )
    assert process.stdout is not None
    try:
        config = await _inspector_config(Lines(process.stdout), port)
        assert config["defaultTransport"] == "stdio"
        assert config["defaultCommand"] == sys.executable
        assert config["defaultArgs"] == ["-m", "mcpactor", "dev", "--stdio", "edited.py"]
    finally:
        # Its process group: npx and the node processes it started.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        with trio.move_on_after(RELOAD):
            await process.wait()
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            await process.wait()
        await process.stdout.aclose()


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
    assert (
        "npx @modelcontextprotocol/inspector@latest --transport http "
        "--server-url http://127.0.0.1:8000/mcp\n"
    ) in hint
    assert (
        "http://localhost:6274/?transport=streamable-http&serverUrl=http%3A%2F%2F127.0.0.1"
        "%3A8000%2Fmcp"
    ) in hint
    assert "inspector@latest --cli http://127.0.0.1:8000/mcp --transport http" in hint


def test_the_inspector_command_line_names_the_url() -> None:
    assert inspector_command("/usr/bin/npx", "http://127.0.0.1:8000/mcp") == [
        "/usr/bin/npx",
        "--yes",
        "@modelcontextprotocol/inspector@latest",
        "--transport",
        "http",
        "--server-url",
        "http://127.0.0.1:8000/mcp",
    ]


@pytest.mark.parametrize(
    ("argv", "served"),
    [
        (["dev", "a.py"], ["serve", "a.py"]),
        (
            ["--log-level", "debug", "dev", "--inspector", "a.py", "--watch", "x", "--grace=1"],
            ["--log-level", "debug", "serve", "a.py", "--grace=1"],
        ),
        (["--debug", "dev", "--watch=x", "--stdio", "a.py"], ["--debug", "serve", "a.py"]),
        # Where dev listens: the child is told it once, with the socket it serves.
        (
            ["dev", "a.py", "--http", "127.0.0.1:0", "--path", "/x"],
            ["serve", "a.py", "--path", "/x"],
        ),
        (["dev", "--http=8000", "a.py"], ["serve", "a.py"]),
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
    from mcpactor.config import load_config

    monkeypatch.chdir(tmp_path)
    (tmp_path / "served.py").write_text(SERVER)
    config_file = tmp_path / "mcpactor.toml"
    config_file.write_text('[servers.served]\ntarget = "served.py"\n')
    trees, directories, files = watched_paths([], load_config(config_file), [])
    assert trees == []
    assert directories == [tmp_path]
    assert files == [config_file, tmp_path / "served.py"]
