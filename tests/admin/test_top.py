"""``mcpactor top``: one frame of a running server's tree, and what it refuses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio

from mcpactor import RequestError
from mcpactor.cli import main
from mcpactor.cli._top import render
from mcpactor.client import ClientSession, connect_http

from .harness import TOKEN, open_served


async def _call_slow(client: ClientSession, outcome: dict[str, Any]) -> None:
    async def progress(value: float, total: float | None, message: str | None) -> None:
        await trio.lowlevel.checkpoint()

    try:
        await client.call_tool("slow", {"every": 0.05}, progress_handler=progress)
    except RequestError as exc:
        outcome["error"] = exc


async def test_top_once_prints_the_tree(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    async with (
        open_served() as served,
        connect_http(
            served.mcp_url,
            initialize=True,
            client_info={"name": "top client", "version": "3"},
        ) as client,
        trio.open_nursery() as nursery,
    ):
        nursery.start_soon(_call_slow, client, {})
        with trio.fail_after(10):
            await served.started.wait()
        argv = ["top", served.admin_url, "--token-file", str(token_file), "--once"]
        status = await trio.to_thread.run_sync(main, argv)
        nursery.cancel_scope.cancel()
    out = capsys.readouterr().out
    assert status == 0
    assert "mcpactor top — test-replica" in out
    assert "SERVERS" in out
    assert "watched" in out
    assert "SESSIONS (1 of 1)" in out
    assert "top client 3" in out
    assert "tools/call slow" in out
    assert "progress" in out
    # --once on a pipe: no colours, no cursor movement.
    assert "\x1b" not in out


async def test_top_lists_what_ended_with_history(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    async with (
        open_served() as served,
        connect_http(
            served.mcp_url,
            initialize=True,
            client_info={"name": "top history client", "version": "4"},
        ) as client,
    ):
        await client.call_tool("echo", {"text": "top"})
        await client.call_tool("fail", {"why": "no"})
        argv = ["top", served.admin_url, "--token-file", str(token_file), "--once"]
        argv += ["--history", "5", "--client", "top history"]
        status = await trio.to_thread.run_sync(main, argv)
    out = capsys.readouterr().out
    assert status == 0
    ended = out[out.index("ENDED LATELY") :].splitlines()
    assert "of up to 1000 kept" in ended[0]
    assert "tools/call fail" in ended[1]
    assert "error" in ended[1]
    assert "top history client 4" in ended[1]
    assert "tools/call echo" in ended[2]
    assert " ok " in ended[2]


async def test_top_shows_the_rates_per_tool_and_client(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    async with (
        open_served() as served,
        connect_http(
            served.mcp_url,
            initialize=True,
            client_info={"name": "top rates client", "version": "5"},
        ) as client,
    ):
        for _ in range(4):
            await client.call_tool("echo", {"text": "top"})
        await client.call_tool("fail", {"why": "no"})
        argv = ["top", served.admin_url, "--token-file", str(token_file), "--once"]
        argv += ["--rates", "60", "--client", "top rates"]
        status = await trio.to_thread.run_sync(main, argv)
    out = capsys.readouterr().out
    assert status == 0
    rates = out[out.index("RATES") :].splitlines()
    assert "the last 1m00s" in rates[0]
    assert rates[1].split()[:4] == ["TOOL", "OR", "METHOD", "req/s"]
    (echo,) = [line for line in rates if "tools/call echo" in line]
    (fail,) = [line for line in rates if "tools/call fail" in line]
    assert float(echo.split()[2]) > 0
    assert float(echo.split()[3]) == 0
    assert float(fail.split()[3]) > 0
    assert any(mark in echo for mark in "▁▂▃▄▅▆▇█")
    (client_line,) = [line for line in rates if "top rates client 5" in line]
    assert float(client_line.split()[4]) > 0


async def test_top_with_a_wrong_token_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("not-the-admin-token\n")
    async with open_served() as served:
        argv = ["top", served.admin_url, "--token-file", str(token_file), "--once"]
        status = await trio.to_thread.run_sync(main, argv)
    # A ConfigError: the command line's usage status.
    assert status == 2
    assert "the admin token was refused" in capsys.readouterr().err


def test_top_needs_a_token_file(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["top", "http://127.0.0.1:1/"])
    assert "--token-file" in capsys.readouterr().err


def test_render_removes_control_characters_from_what_the_server_sent() -> None:
    tree = {
        "replica": {"id": "r\x1b[31m", "pid": 1, "uptime": 3.0},
        "counts": {},
        "plugins": [{"name": "p\x07", "state": "running"}],
        "sessions": {
            "total": 1,
            "shown": 1,
            "items": [
                {
                    "id": "s",
                    "transport": "streamable HTTP",
                    "state": "awake",
                    "client": "evil\x1b[2J client",
                    "age": 1.0,
                    "idle": 0.5,
                    "requests": [{"id": 1, "method": "tools/call", "name": "x\r", "age": 0.2}],
                    "tasks": [],
                    "streams": [],
                    "more": {},
                }
            ],
        },
    }
    frame = render(tree)
    assert "\x1b" not in frame
    assert "\x07" not in frame
    assert "\r" not in frame
    assert "evil [2J client" in frame
