"""connect_stdio against ``python -m mcpactor serve`` and other child processes."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, Final

import pytest
import trio

from mcpactor import TransportBroken
from mcpactor.client import connect_stdio

from .conftest import ServerMessages, text_of

SERVER: Final = [
    sys.executable,
    "-m",
    "mcpactor",
    "serve",
    str(Path(__file__).with_name("stdio_server.py")),
]
# Real processes, real time: generous, so only a hang trips it.
GUARD: Final = 60.0


def script(source: str) -> list[str]:
    return [sys.executable, "-c", source]


async def test_a_stdio_server_serves_every_kind_of_request() -> None:
    checker = ServerMessages("2025-11-25")
    with trio.fail_after(GUARD):
        async with connect_stdio(SERVER, initialize=True, on_server_message=checker) as client:
            assert client.server.info == {"name": "stdio-test", "version": "1.0.0"}
            names = [tool["name"] for tool in await client.list_tools()]
            assert names == ["add", "pid", "wait_forever", "was_cancelled", "ask"]
            result = await client.call_tool("add", {"a": 20, "b": 22})
            assert result["structuredContent"] == {"result": 42}
            read = await client.read_resource("test://greeting")
            assert read["contents"][0]["text"] == "hello"
            prompt = await client.get_prompt("greet", {"name": "Ada"})
            assert prompt["messages"][0]["content"]["text"] == "Hello Ada"
    assert checker.answered() == [
        "initialize",
        "tools/list",
        "tools/call",
        "resources/read",
        "prompts/get",
    ]


async def test_progress_and_cancellation_over_stdio() -> None:
    with trio.fail_after(GUARD):
        async with connect_stdio(SERVER, initialize=True) as client:
            scope = trio.CancelScope()
            updates: list[tuple[float, float | None, str | None]] = []

            async def on_progress(
                progress: float, total: float | None, message: str | None
            ) -> None:
                updates.append((progress, total, message))
                scope.cancel()

            with scope:
                await client.call_tool("wait_forever", progress_handler=on_progress)
            assert scope.cancelled_caught
            assert updates == [(1, None, "waiting")]
            # The server heard notifications/cancelled and cancelled the handler.
            result = await client.call_tool("was_cancelled")
            assert result["structuredContent"] == {"result": True}


async def test_sampling_over_stdio() -> None:
    async def sample(params: dict[str, Any]) -> dict[str, Any]:
        question = params["messages"][0]["content"]["text"]
        return {
            "role": "assistant",
            "content": {"type": "text", "text": question.upper()},
            "model": "echo",
        }

    with trio.fail_after(GUARD):
        async with connect_stdio(SERVER, initialize=True, sampling_handler=sample) as client:
            assert text_of(await client.call_tool("ask", {"question": "hi?"})) == "HI?"


async def test_leaving_closes_stdin_and_the_server_exits_by_itself() -> None:
    # With an hour before SIGTERM, only a server that exits on end of input is quick.
    with trio.fail_after(GUARD):
        async with connect_stdio(SERVER, initialize=True, shutdown_timeout=3600) as client:
            result = await client.call_tool("pid")
            pid = result["structuredContent"]["result"]
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


STUBBORN: Final = """
import json, os, signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
note = {"jsonrpc": "2.0", "method": "notifications/message",
        "params": {"level": "info", "data": os.getpid()}}
print("this line is not JSON", flush=True)
print(json.dumps(note), flush=True)
sys.stdin.read()
time.sleep(3600)
"""


async def test_a_server_that_will_not_exit_is_killed(caplog: pytest.LogCaptureFixture) -> None:
    with trio.fail_after(GUARD):
        async with connect_stdio(script(STUBBORN), shutdown_timeout=0.1) as client:
            note = await client.notifications.wait_for("notifications/message")
    assert note.params is not None
    with pytest.raises(ProcessLookupError):
        os.kill(note.params["data"], 0)
    messages = " ".join(record.getMessage() for record in caplog.records)
    assert "unreadable message from the server: invalid JSON" in messages
    assert "terminating" in messages
    assert "killing" in messages


async def test_a_server_that_exits_at_once_breaks_the_connection() -> None:
    with trio.fail_after(GUARD):
        async with connect_stdio(script("pass")) as client:
            with pytest.raises(TransportBroken):
                await client.initialize()


async def test_a_missing_command_raises_os_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        async with connect_stdio([str(tmp_path / "no-such-server")]):
            pass  # pragma: no cover
