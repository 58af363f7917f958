"""``mcpactor call``: one request to a stdio server from the command line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Final

import pytest
import trio

SERVER: Final = [
    sys.executable,
    "-m",
    "mcpactor",
    "serve",
    str(Path(__file__).with_name("stdio_server.py")),
]
GUARD: Final = 60.0


async def mcpactor_call(*args: str) -> subprocess.CompletedProcess[bytes]:
    """Run ``mcpactor call ARGS -- SERVER`` and return what it did."""
    with trio.fail_after(GUARD):
        return await trio.run_process(
            [sys.executable, "-m", "mcpactor", "call", *args, "--", *SERVER],
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )


async def test_call_a_tool_prints_its_result() -> None:
    done = await mcpactor_call("--tool", "add", "--args", '{"a": 1, "b": 2}')
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["structuredContent"] == {"result": 3}
    # Indented by two spaces.
    assert done.stdout.startswith(b'{\n  "')


async def test_list_shows_tools_resources_and_prompts() -> None:
    done = await mcpactor_call("--list")
    assert done.returncode == 0, done.stderr
    listing = json.loads(done.stdout)
    assert [tool["name"] for tool in listing["tools"]][:2] == ["add", "pid"]
    assert [r["uri"] for r in listing["resources"]] == ["test://greeting"]
    assert listing["resourceTemplates"] == []
    assert [p["name"] for p in listing["prompts"]] == ["greet"]


async def test_read_a_resource_and_get_a_prompt() -> None:
    done = await mcpactor_call("--resource", "test://greeting")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["contents"][0]["text"] == "hello"
    done = await mcpactor_call("--prompt", "greet", "--args", '{"name": "Ada"}')
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["messages"][0]["content"]["text"] == "Hello Ada"


async def test_a_json_rpc_error_goes_to_stderr_with_status_1() -> None:
    done = await mcpactor_call("--resource", "test://nowhere")
    assert done.returncode == 1
    assert done.stdout == b""
    assert b"error -32002: resource not found: 'test://nowhere'" in done.stderr


async def test_bad_args_are_a_usage_error() -> None:
    for args, complaint in [
        ('{"a": ', b"argument --args: not valid JSON"),
        ("[1, 2]", b"argument --args: expected a JSON object"),
    ]:
        done = await mcpactor_call("--tool", "add", "--args", args)
        assert done.returncode == 2
        assert complaint in done.stderr
        assert done.stdout == b""
    done = await mcpactor_call("--resource", "test://greeting", "--args", "{}")
    assert done.returncode == 2
    assert b"--args goes with --tool or --prompt" in done.stderr


async def test_exactly_one_action_is_required() -> None:
    done = await mcpactor_call()
    assert done.returncode == 2
    assert b"one of the arguments --list --tool --resource --prompt --repl is required" in (
        done.stderr
    )
    done = await mcpactor_call("--list", "--tool", "add")
    assert done.returncode == 2
    assert b"not allowed with argument" in done.stderr


async def test_a_server_that_cannot_start_is_status_1(tmp_path: Path) -> None:
    with trio.fail_after(GUARD):
        done = await trio.run_process(
            [sys.executable, "-m", "mcpactor", "call", "--list", "--", str(tmp_path / "nothing")],
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
    assert done.returncode == 1
    assert b"No such file or directory" in done.stderr


def test_a_servers_words_reach_the_terminal_escaped_and_bounded() -> None:
    from mcpactor.cli import _printable, _printable_json

    assert _printable("red \x1b[31m text\n") == "red \\x1b[31m text\\n"
    assert len(_printable("x" * 100_000)) < 2100
    assert "\x1b" not in _printable_json({"why": "\x1b]0;title\x07"})


def test_arguments_nested_too_deeply_are_a_usage_error() -> None:
    import argparse

    from mcpactor.cli._arguments import json_object as _json_object

    with pytest.raises(argparse.ArgumentTypeError, match="nested too deeply"):
        _json_object('{"a": ' + "[" * 100_000 + "]" * 100_000 + "}")
