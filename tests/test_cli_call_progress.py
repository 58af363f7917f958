"""``mcpactor call`` shows progress: a bar on a terminal (a real pty here), lines elsewhere."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Final

import pytest
import trio

from mcpactor.cli._call import ProgressDisplay, bar_text

GUARD: Final = 60.0
WORKER: Final = """\
from mcpactor import Context, Server

server = Server("work")


@server.tool()
async def work(steps: int, ctx: Context) -> str:
    for step in range(1, steps + 1):
        await ctx.report_progress(step, steps, f"step {step}")
    return "done"
"""


def test_a_frame_of_the_bar() -> None:
    assert bar_text(5, 10, "half") == f"[{'#' * 15}{'.' * 15}]  50% 5/10 half"
    assert bar_text(12, 10, None) == f"[{'#' * 30}] 100% 12/10"
    assert bar_text(3, None, "no total") == f"[{'?' * 30}] 3 no total"


async def test_forced_modes() -> None:
    stream = io.StringIO()
    bar = ProgressDisplay(stream, "bar")
    await bar.update(1, 4, "one")
    await bar.update(4, 4, "four\x1b[2J")
    bar.close()
    frames = stream.getvalue()
    assert frames.startswith(f"\r[{'#' * 8}{'.' * 22}]  25% 1/4 one\x1b[K\r")
    # The server's words cannot steer the terminal; the bar's own line ends once.
    assert frames.endswith(f"\r[{'#' * 30}] 100% 4/4 four\\x1b[2J\x1b[K\n")
    stream = io.StringIO()
    # Not a terminal: plain lines.
    lines = ProgressDisplay(stream)
    await lines.update(1, 4, "one")
    await lines.update(2, None, None)
    lines.close()
    assert stream.getvalue() == (
        "mcpactor call: progress 1/4 (25%) one\nmcpactor call: progress 2\n"
    )
    stream = io.StringIO()
    silent = ProgressDisplay(stream, "none")
    await silent.update(1, 4, "one")
    silent.close()
    assert stream.getvalue() == ""


async def call_work(tmp_path: Path, stderr: int | None, *options: str) -> bytes:
    (tmp_path / "work.py").write_text(WORKER)
    command = [sys.executable, "-m", "mcpactor", "call", "--tool", "work"]
    command += ["--args", '{"steps": 3}', *options, "--"]
    command += [sys.executable, "-m", "mcpactor", "serve", str(tmp_path / "work.py")]
    where = {"capture_stderr": True} if stderr is None else {"stderr": stderr}
    with trio.fail_after(GUARD):
        done = await trio.run_process(
            command, stdin=subprocess.DEVNULL, capture_stdout=True, **where
        )
    assert json.loads(done.stdout)["content"] == [{"type": "text", "text": "done"}]
    return done.stderr or b""


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
async def test_a_terminal_gets_a_bar(tmp_path: Path) -> None:
    leader, follower = os.openpty()
    try:
        await call_work(tmp_path, follower)
        os.close(follower)
        follower = -1
        shown = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the terminal's other side is closed and drained
                break
            if not chunk:
                break
            shown += chunk
    finally:
        os.close(leader)
        if follower != -1:
            os.close(follower)
    text = shown.decode()
    assert f"\r[{'#' * 10}{'.' * 20}]  33% 1/3 step 1\x1b[K" in text
    assert f"\r[{'#' * 30}] 100% 3/3 step 3\x1b[K" in text
    assert "mcpactor call: progress" not in text


async def test_a_pipe_gets_lines(tmp_path: Path) -> None:
    shown = (await call_work(tmp_path, None)).decode()
    assert shown.splitlines() == [
        "mcpactor call: progress 1/3 (33%) step 1",
        "mcpactor call: progress 2/3 (67%) step 2",
        "mcpactor call: progress 3/3 (100%) step 3",
    ]
    assert (await call_work(tmp_path, None, "--progress", "none")) == b""
