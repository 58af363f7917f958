"""``mcpactor plugins`` and ``mcpactor serve`` with several servers, against throwaway plugins."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Final

import pytest
import trio

from mcpactor import RequestError, Server
from mcpactor.cli import main
from mcpactor.client import connect_stdio
from mcpactor.transports import serve_http
from tests.client.conftest import ServerMessages, text_of

from .conftest import Site
from .test_discovery import install_mixed

SERVE: Final = [sys.executable, "-m", "mcpactor", "serve"]
# Real processes, real time: generous, so only a hang trips it.
GUARD: Final = 60.0


def child_env(site: Site, tmp_path: Path) -> dict[str, str]:
    """The environment of a server process that sees the throwaway plugins."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(site.root), *sys.path])
    # Keep the plugins installed next to mcpactor away from the user's files.
    env["MCPACTOR_MEMORY_DB"] = str(tmp_path / "memory.db")
    env["MCPACTOR_FS_ROOTS"] = str(tmp_path)
    return env


def test_plugins_lists_name_distribution_version_counts_and_errors(
    site: Site, capsys: pytest.CaptureFixture[str]
) -> None:
    install_mixed(site)
    assert main(["plugins"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["NAME", "DISTRIBUTION", "VERSION", "TOOLS", "RESOURCES", "PROMPTS"]
    rows = {line.split()[0]: line.split() for line in lines[1:] if not line.startswith(" ")}
    assert rows["alpha"] == ["alpha", "throwaway-alpha", "3.1.4", "1", "1", "1"]
    assert rows["broken"] == ["broken", "throwaway-broken", "0.9", "-", "-", "-"]
    assert rows["odd"] == ["odd", "throwaway-odd", "2.0", "-", "-", "-"]
    text = "\n".join(lines)
    assert "    plugin 'broken' failed to load" in text
    assert "    plugin 'odd' is not a Server" in text
    assert "      cause: importing it raised RuntimeError: the plugin's import is broken" in text


def test_plugins_as_json_and_strict(site: Site, capsys: pytest.CaptureFixture[str]) -> None:
    install_mixed(site)
    assert main(["plugins", "--json", "--strict"]) == 1
    rows = {row["name"]: row for row in json.loads(capsys.readouterr().out)}
    assert rows["beta"] == {
        "name": "beta",
        "value": "throwaway_beta:server",
        "distribution": "throwaway-beta",
        "version": "3.1.4",
        "tools": 1,
        "resources": 1,
        "prompts": 1,
        "error": None,
    }
    assert rows["broken"]["error"].startswith("plugin 'broken' failed to load\n")
    assert "tools" not in rows["broken"]


def test_serve_without_prefixes_refuses_a_name_served_twice(
    site: Site, capsys: pytest.CaptureFixture[str]
) -> None:
    site.install_plugin("alpha")
    site.install_plugin("beta")
    assert main(["serve", "--no-prefix", "alpha", "beta"]) == 2
    error = capsys.readouterr().err
    assert "tool 'echo' is served twice: by 'alpha' (its tool 'echo') and by 'beta'" in error
    assert "prompt 'greet' is served twice" in error


@pytest.mark.parametrize(
    ("argv", "status", "expected"),
    [
        # The command line is wrong: 2.
        (["--prefix", "gamma=g", "alpha", "beta"], 2, "--prefix: no server named 'gamma'"),
        (["--prefix", "alpha", "alpha", "beta"], 2, "--prefix expects NAME=VALUE, got 'alpha'"),
        (["--max-concurrent", "alpha=0", "alpha", "beta"], 2, "expected N ≥ 1, got '0'"),
        # What it names does not load: 1.
        (["nope_not_installed.py"], 1, "no such file"),
        (["--strict", "alpha", "broken"], 1, "plugin 'broken' failed to load"),
        (["broken"], 1, "plugin 'broken' failed to load"),
        (["ftp://example.com/mcp"], 1, "expected a ws://, wss://, http:// or https:// URL"),
        # Named on the command line, a broken plugin fails the command even among others.
        (["alpha", "broken"], 1, "plugin 'broken' failed to load"),
    ],
)
def test_serve_reports_what_it_cannot_serve(
    site: Site, capsys: pytest.CaptureFixture[str], argv: list[str], status: int, expected: str
) -> None:
    install_mixed(site)
    assert main(["serve", *argv]) == status
    assert expected in capsys.readouterr().err


async def test_serve_with_no_target_serves_every_plugin_and_reports_the_broken(
    site: Site, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    install_mixed(site)
    checker = ServerMessages("2025-11-25")
    with trio.fail_after(GUARD):
        async with connect_stdio(
            SERVE, env=child_env(site, tmp_path), initialize=True, on_server_message=checker
        ) as client:
            assert client.server.info is not None
            assert client.server.info["name"] == "mcpactor"
            tools = [tool["name"] for tool in await client.list_tools()]
            assert {"alpha_echo", "beta_echo"} <= set(tools)
            assert not any(name.startswith(("broken_", "odd_")) for name in tools)
            assert text_of(await client.call_tool("alpha_echo", {"text": "hi"})) == "alpha: hi"
            assert text_of(await client.call_tool("beta_echo", {"text": "yo"})) == "beta: yo"
            read = await client.read_resource("beta://items/7")
            assert read["contents"][0]["text"] == "beta item 7"
            prompt = await client.get_prompt("alpha_greet", {"who": "Ada"})
            assert prompt["messages"][0]["content"]["text"] == "hello Ada"
    error = capfd.readouterr().err
    assert "plugin 'broken' failed to load" in error
    assert "distribution: throwaway-broken 0.9" in error
    assert "plugin 'odd' is not a Server" in error


async def test_serve_several_with_a_prefix_override(site: Site, tmp_path: Path) -> None:
    site.install_plugin("alpha")
    site.install_plugin("beta")
    command = [*SERVE, "alpha", "beta", "--prefix", "alpha=a", "--max-concurrent", "beta=2"]
    with trio.fail_after(GUARD):
        async with connect_stdio(
            command, env=child_env(site, tmp_path), initialize=True
        ) as client:
            assert [tool["name"] for tool in await client.list_tools()] == ["a_echo", "beta_echo"]
            assert text_of(await client.call_tool("a_echo", {"text": "x"})) == "alpha: x"
            with pytest.raises(RequestError, match="unknown tool: 'alpha_echo'"):
                await client.call_tool("alpha_echo", {"text": "x"})


async def test_serve_one_plugin_serves_it_as_it_is(site: Site, tmp_path: Path) -> None:
    site.install_plugin("alpha")
    with trio.fail_after(GUARD):
        async with connect_stdio(
            [*SERVE, "alpha"], env=child_env(site, tmp_path), initialize=True
        ) as client:
            assert client.server.info == {"name": "alpha", "version": "3.1.4"}
            assert [tool["name"] for tool in await client.list_tools()] == ["echo"]


async def test_serve_strict_stops_at_a_broken_plugin(site: Site, tmp_path: Path) -> None:
    install_mixed(site)
    with trio.fail_after(GUARD):
        done = await trio.run_process(
            [*SERVE, "--strict"],
            env=child_env(site, tmp_path),
            stdin=subprocess.DEVNULL,
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
    assert done.returncode == 1
    assert done.stdout == b""
    assert b"plugin 'broken' failed to load" in done.stderr


async def test_serve_a_url_bridges_a_remote_server_to_stdio(tmp_path: Path) -> None:
    remote = Server("remote-over-ws", version="9.9")
    remote.add_tool(lambda a, b: a * b, name="times", input_schema=TIMES_SCHEMA)
    with trio.fail_after(GUARD):
        async with trio.open_nursery() as nursery:
            host, port = await nursery.start(functools.partial(serve_http, remote, port=0))
            command = [*SERVE, f"ws://{host}:{port}/ws"]
            async with connect_stdio(command, initialize=True, cwd=tmp_path) as client:
                assert [tool["name"] for tool in await client.list_tools()] == ["times"]
                result = await client.call_tool("times", {"a": 6, "b": 7})
                assert text_of(result) == "42"
            nursery.cancel_scope.cancel()


TIMES_SCHEMA: Final = {
    "type": "object",
    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
    "required": ["a", "b"],
}


@pytest.mark.parametrize(("flags", "tuned"), [([], True), (["--no-gc-tuning"], False)])
@pytest.mark.parametrize("transport", [[], ["--http", "0"]])
def test_serve_tunes_the_collector_unless_told_not_to(
    monkeypatch: pytest.MonkeyPatch, flags: list[str], tuned: bool, transport: list[str]
) -> None:
    seen: list[bool] = []

    async def fake_serve_stdio(
        server: Server, *, task_status: trio.TaskStatus[None], **kwargs: object
    ) -> None:
        seen.append(bool(kwargs["tune_gc"]))
        task_status.started()

    async def fake_serve_http(
        server: Server, *, task_status: trio.TaskStatus[tuple[str, int]], **kwargs: object
    ) -> None:
        seen.append(bool(kwargs["tune_gc"]))
        task_status.started(("127.0.0.1", 1))

    monkeypatch.setattr("mcpactor.transports.serve_stdio", fake_serve_stdio)
    monkeypatch.setattr("mcpactor.transports.serve_http", fake_serve_http)
    example = Path(__file__).parents[2] / "examples" / "quickstart.py"
    assert main(["serve", *flags, str(example), *transport]) == 0
    assert seen == [tuned]
