"""A third-party extension, installed from its own distribution and enabled as users do.

``examples/extension-package`` is pip-installed (``--target`` a temporary directory, its
build backend from the configured index) and the real ``mcpactor serve`` enables it by
its identifier, from ``mcpactor.toml`` and from ``--extension``. Its entry in
``capabilities.extensions`` is checked in a 2025-11-25 session and in a 2026-07-28
discovery, and its custom method called and its middleware seen over stdio, Streamable
HTTP and WebSocket with mcpactor's own client; a missing requirement and an unknown
identifier fail start-up with a message naming them.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path
from typing import Final

import pytest
import trio

from mcpactor import RequestError
from mcpactor.client import ClientSession, connect_http, connect_stdio, connect_websocket

from .serving import serve_http

ROOT: Final = Path(__file__).resolve().parents[1]
PACKAGE: Final = ROOT / "examples" / "extension-package"
IDENTIFIER: Final = "com.example/word-count"
SETTINGS: Final = {"maxWords": 10_000}
SESSION: Final = "2025-11-25"
STATELESS: Final = "2026-07-28"
#: seconds for a cold start of a subprocess and its answers
TIMEOUT: Final = 60

SERVER: Final = '''
from mcpactor import Server

server = Server("notes")


@server.tool
def shout(text: str) -> str:
    """Say it louder."""
    return text.upper()
'''

TOOLLESS: Final = '''
from mcpactor import Server

server = Server("quiet")


@server.prompt
def hello() -> str:
    """A prompt, and no tool."""
    return "hello"
'''


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example distribution, installed into a directory of its own."""
    target = tmp_path_factory.mktemp("site")
    built = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--target",
            str(target),
            str(PACKAGE),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if built.returncode != 0:
        pytest.skip(
            f"cannot build the example (its build backend is not installable): "
            f"{built.stderr[-500:]}"
        )
    assert (target / "mcpactor_wordcount").is_dir()
    return target


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "server.py").write_text(SERVER)
    (tmp_path / "quiet.py").write_text(TOOLLESS)
    return tmp_path


def environment(site: Path) -> dict[str, str]:
    paths = [str(site), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}


SERVE: Final = [sys.executable, "-m", "mcpactor", "serve"]


async def check_the_extension(session: ClientSession, version: str) -> None:
    assert session.server.protocol_version == version
    assert session.server.capabilities["extensions"] == {IDENTIFIER: SETTINGS}
    result = await session.request("com.example/count", {"text": "one two  three"})
    assert result["words"] == 3
    assert result["clientDeclared"] is False
    if version == STATELESS:
        assert result["resultType"] == "complete"
    # Its middleware: every tool result says how many words it holds.
    [tool] = await session.list_tools()  # "shout", under a prefix where it is mounted
    call = {"name": tool["name"], "arguments": {"text": "a b"}}
    shouted = await session.request("tools/call", call)
    assert shouted["content"][0]["text"] == "A B"
    assert shouted["_meta"]["com.example/words"] == 2
    with pytest.raises(RequestError) as info:
        await session.request("com.example/count", {"text": 3})
    assert info.value.code == -32602
    assert "/text" in info.value.message


@pytest.mark.parametrize("version", [SESSION, STATELESS])
async def test_enabled_from_mcpactor_toml_over_stdio(
    site: Path, project: Path, version: str
) -> None:
    (project / "mcpactor.toml").write_text(
        f'extensions = ["{IDENTIFIER}"]\n\n[servers.notes]\ntarget = "server.py:server"\n'
    )
    command = [*SERVE, "--config", str(project / "mcpactor.toml")]
    with trio.fail_after(TIMEOUT):
        async with connect_stdio(
            command, env=environment(site), cwd=project, initialize=True, protocol_version=version
        ) as session:
            await check_the_extension(session, version)
            tools = await session.list_tools()
            assert [t["name"] for t in tools] == ["notes_shout"]


@pytest.mark.parametrize("version", [SESSION, STATELESS])
async def test_enabled_from_the_command_line_over_stdio(
    site: Path, project: Path, version: str
) -> None:
    command = [*SERVE, "server.py", "--extension", IDENTIFIER]
    with trio.fail_after(TIMEOUT):
        async with connect_stdio(
            command, env=environment(site), cwd=project, initialize=True, protocol_version=version
        ) as session:
            await check_the_extension(session, version)


def served_over_http(
    site: Path, project: Path, *extra: str
) -> contextlib.AbstractAsyncContextManager[str]:
    return serve_http(*extra, cwd=project, env=environment(site), timeout=TIMEOUT)


async def test_enabled_from_the_command_line_over_http_and_websocket(
    site: Path, project: Path
) -> None:
    async with served_over_http(site, project, "server.py", "--extension", IDENTIFIER) as url:
        with trio.fail_after(TIMEOUT):
            for version in (SESSION, STATELESS):
                async with connect_http(url, initialize=True, protocol_version=version) as http:
                    await check_the_extension(http, version)
            ws = url.replace("http://", "ws://").replace("/mcp", "/ws")
            async with connect_websocket(ws, initialize=True, protocol_version=SESSION) as client:
                await check_the_extension(client, SESSION)


async def test_enabled_from_mcpactor_toml_over_http(site: Path, project: Path) -> None:
    (project / "mcpactor.toml").write_text(
        f'extensions = ["{IDENTIFIER}"]\n\n[servers.notes]\ntarget = "server.py:server"\n'
    )
    async with served_over_http(site, project, "--config", "mcpactor.toml") as url:
        with trio.fail_after(TIMEOUT):
            async with connect_http(url, initialize=True, protocol_version=STATELESS) as http:
                await check_the_extension(http, STATELESS)


def run_serve(site: Path, project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*SERVE, *args],
        cwd=project,
        env=environment(site),
        input="",
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )


@pytest.mark.parametrize("transport", [[], ["--http", "127.0.0.1:0"]])
def test_a_missing_requirement_fails_start_up_naming_it(
    site: Path, project: Path, transport: list[str]
) -> None:
    done = run_serve(site, project, "quiet.py", "--extension", IDENTIFIER, *transport)
    assert done.returncode != 0
    assert (
        f"extension {IDENTIFIER} requires the 'tools' capability, which <Server 'quiet'"
        in done.stderr
    )


def test_an_unknown_identifier_is_refused_listing_the_installed_ones(
    site: Path, project: Path
) -> None:
    done = run_serve(site, project, "server.py", "--extension", "com.example/nope")
    assert done.returncode != 0
    assert "extension 'com.example/nope' is not installed" in done.stderr
    listed = done.stderr.partition("installed extensions: ")[2].partition(")")[0]
    assert IDENTIFIER in listed.split(", ")
    (project / "mcpactor.toml").write_text(
        'extensions = ["nope"]\n\n[servers.notes]\ntarget = "server.py:server"\n'
    )
    done = run_serve(site, project, "--config", "mcpactor.toml")
    assert done.returncode != 0
    assert "extensions: extension identifiers of the form" in done.stderr
    assert "line 1" in done.stderr


def test_installed_extensions_are_not_enabled_until_named(site: Path, project: Path) -> None:
    probe = (
        "from mcpactor.plugins import installed_extensions, load_plugin\n"
        "from mcpactor.config import load_server\n"
        "found = installed_extensions()\n"
        f"assert {IDENTIFIER!r} in found, found\n"
        "server = load_server('server.py:server')\n"
        "assert len(server.extensions) == 0\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=project,
        env=environment(site),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
