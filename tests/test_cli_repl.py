"""``mcpactor call --repl``: in a real terminal (tmux), and with its input piped.

The terminal tests start a tmux server of their own (a socket in the test's directory),
run the REPL against the bundled clock plugin in a pane, type into it with send-keys and
read the screen with capture-pane. A pane's screen can only be looked at, not waited on,
so ``screen_shows`` polls it, within a deadline. CI installs tmux (.ci/run).
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import pytest
import trio

from .serving import serve_http

ROOT: Final = Path(__file__).resolve().parents[1]
TMUX: Final = shutil.which("tmux") or "/usr/bin/tmux"
REPL: Final = [sys.executable, "-m", "mcpactor", "call", "--repl"]
CLOCK: Final = ["--", sys.executable, "-m", "mcpactor", "serve", "clock"]
#: seconds the screen gets to show what is expected
DEADLINE: Final = 30


class Pane:
    """One tmux pane running a command, on a tmux server of its own."""

    def __init__(self, socket_path: Path, env: dict[str, str]) -> None:
        self.socket = socket_path
        self.env = env

    def tmux(self, *arguments: str) -> str:
        done = subprocess.run(
            [TMUX, "-S", str(self.socket), *arguments],
            env=self.env,
            capture_output=True,
            text=True,
            check=True,
            timeout=DEADLINE,
        )
        return done.stdout

    def start(self, command: list[str]) -> None:
        # The shell around the command says how it ended, and lives on a Ctrl-C (its trap
        # is a handler, so the command starts with SIGINT's default, as from a prompt);
        # remain-on-exit keeps the last screen readable.
        config = self.socket.with_name("tmux.conf")
        config.write_text("set -g remain-on-exit on\nset -g history-limit 10000\n")
        script = f'trap true INT; {shlex.join(command)}; echo "[exited $?]"'
        self.tmux(
            *("-f", str(config), "new-session", "-d", "-s", "repl", "-x", "150", "-y", "50"),
            *("sh", "-c", script),
        )

    def exited(self) -> int:
        """Wait for the command to end; its exit status."""
        found = re.search(r"\[exited (\d+)\]", self.shows("[exited "))
        assert found is not None
        return int(found.group(1))

    def type(self, text: str) -> None:
        self.tmux("send-keys", "-t", "repl", "-l", text)

    def press(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", "repl", *keys)

    def enter(self, line: str) -> None:
        self.type(line)
        self.press("Enter")

    def screen(self) -> str:
        # -J joins wrapped lines; -S - from the start of the history.
        return self.tmux("capture-pane", "-p", "-J", "-S", "-", "-t", "repl")

    def shows(self, *texts: str, after: int = 0) -> str:
        """Wait until the screen (from character ``after``) shows every one of ``texts``."""
        deadline = time.monotonic() + DEADLINE
        while True:
            screen = self.screen()
            if all(text in screen[after:] for text in texts):
                return screen
            if time.monotonic() > deadline:
                raise AssertionError(f"not on the screen: {texts!r}\n--- screen:\n{screen}")
            time.sleep(0.05)

    def prompt_line(self) -> str:
        lines = [line for line in self.screen().splitlines() if line.startswith("mcp> ")]
        return lines[-1] if lines else ""


@pytest.fixture
def state(tmp_path: Path) -> Path:
    return tmp_path / "state"


@pytest.fixture
def pane(tmp_path: Path, state: Path) -> Iterator[Pane]:
    if not os.path.exists(TMUX):
        pytest.fail("tmux is not installed: apt-get install tmux (.ci/run installs it)")
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "XDG_STATE_HOME": str(state),
        "TERM": "xterm-256color",
        "LANG": "C.UTF-8",
        "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
    }
    pane = Pane(tmp_path / "tmux.sock", env)
    try:
        yield pane
    finally:
        with contextlib.suppress(subprocess.SubprocessError):
            pane.tmux("kill-server")


def test_a_session_in_a_terminal(pane: Pane, state: Path) -> None:
    pane.start([*REPL, *CLOCK])
    pane.shows("connected to clock", "mcp> ")
    pane.enter("help")
    pane.shows("call TOOL [JSON]", "Ctrl-C cancels a running call")
    pane.enter("tools")
    pane.shows("4 tools", "countdown(seconds: integer)", "now(timezone?: string)")
    pane.enter("resources")
    pane.shows("clock://timezones", "clock://now/{+timezone}")
    pane.enter("prompts")
    pane.shows("plan_meeting(time, from_zone, to_zone)")
    pane.enter('call now {"timezone": "Asia/Tokyo"}')
    pane.shows('"timezone": "Asia/Tokyo"', '"structuredContent"')
    pane.enter("read clock://now/Europe/Oslo")
    pane.shows('"uri": "clock://now/Europe/Oslo"')
    pane.enter(
        'prompt plan_meeting {"time": "10:00", "from_zone": "UTC", "to_zone": "Asia/Tokyo"}'
    )
    pane.shows("A meeting is set for 10:00 in UTC")
    # Errors are said, and the session goes on.
    pane.enter("call now {oops")
    pane.shows("call: arguments: not valid JSON")
    pane.enter("call nothing")
    pane.shows("error -32602")
    pane.enter("frobnicate")
    pane.shows("unknown command 'frobnicate'; 'help' lists them")
    # Tab completes commands, then the server's names.
    pane.type("ca")
    pane.press("Tab")
    pane.type("cou")
    pane.press("Tab")
    pane.shows("mcp> call countdown ")
    pane.enter('{"seconds": 2}')
    # A bar on a terminal, then the result.
    pane.shows("[###############", "countdown of 2 s finished")


def test_ctrl_c_cancels_the_call_and_notifications_are_shown(pane: Pane) -> None:
    pane.start([*REPL, *CLOCK])
    pane.shows("connected to clock")
    pane.enter("log info")
    pane.shows("log level info")
    pane.enter('call countdown {"seconds": 60}')
    pane.shows("1/60")
    pane.press("C-c")
    screen = pane.shows("cancelled (the server was told)", "[log info clock] countdown stopped")
    assert "countdown of 60 s finished" not in screen
    # The session lives on.
    pane.enter("ping")
    pane.shows("pong")
    # Ctrl-C at the prompt says how to leave; twice leaves.
    pane.type("half a line")
    pane.press("C-c")
    pane.shows("(Ctrl-C again, Ctrl-D or quit leaves)")
    pane.press("C-c")
    assert pane.exited() == 0


def test_history_is_kept_across_sessions(pane: Pane, state: Path) -> None:
    pane.start([*REPL, *CLOCK])
    pane.shows("connected to clock")
    pane.enter("ping")
    pane.shows("pong")
    pane.enter('call now {"timezone": "UTC"}')
    pane.shows('"timezone": "UTC"')
    # Up walks back.
    pane.press("Up")
    pane.shows('mcp> call now {"timezone": "UTC"}')
    pane.press("C-u")
    pane.enter("history")
    pane.shows('    1  ping\n    2  call now {"timezone": "UTC"}\n    3  history')
    pane.press("C-d")
    assert pane.exited() == 0
    history = state / "mcpactor" / "call_history"
    assert history.read_text().splitlines()[-3:] == [
        "ping",
        'call now {"timezone": "UTC"}',
        "history",
    ]
    assert history.stat().st_mode & 0o777 == 0o600
    # A new session starts with the old one's history.
    pane.tmux("kill-server")
    pane.start([*REPL, *CLOCK])
    pane.shows("connected to clock")
    pane.press("Up")
    pane.shows("mcp> history")
    pane.press("Up")
    pane.shows('mcp> call now {"timezone": "UTC"}')


# --- piped, and over HTTP ------------------------------------------------------------------

SCRIPT: Final = "\n".join(
    [
        "tools",
        'call convert {"time": "2025-06-01T14:00", "from_zone": "UTC", "to_zone": "Asia/Tokyo"}',
        "call convert",
        "read clock://timezones",
        "info",
        "history 2",
        "quit",
        "ping",
    ]
)


async def run_repl(*target: str) -> subprocess.CompletedProcess[bytes]:
    with trio.fail_after(DEADLINE):
        return await trio.run_process(
            [*REPL, *target],
            stdin=(SCRIPT + "\n").encode(),
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )


def check_script(done: subprocess.CompletedProcess[bytes]) -> None:
    out, err = done.stdout.decode(), done.stderr.decode()
    assert done.returncode == 0, err
    assert "connected to clock" in out
    assert "countdown(seconds: integer)" in out
    assert '"iso": "2025-06-01T23:00:00+09:00"' in out
    # A missing argument is the tool's error; the session goes on.
    assert '"isError": true' in out
    assert '"uri": "clock://timezones"' in out
    assert '"protocolVersion": "2025-11-25"' in out
    assert "    6  history 2" in out
    # quit ends it: the ping after it is never sent.
    assert "pong" not in out


async def test_piped_over_stdio() -> None:
    check_script(await run_repl(*CLOCK))


def served_over_http() -> contextlib.AbstractAsyncContextManager[str]:
    return serve_http("clock", timeout=DEADLINE)


async def test_piped_over_http() -> None:
    async with served_over_http() as url:
        check_script(await run_repl("--url", url))


def test_repl_takes_no_args() -> None:
    done = subprocess.run(
        [*REPL, "--args", "{}", *CLOCK], capture_output=True, text=True, timeout=DEADLINE
    )
    assert done.returncode == 2
    assert "--args goes with --tool or --prompt" in done.stderr


def test_the_dev_loop_page_shows_a_session_as_it_is() -> None:
    page = (ROOT / "docs" / "dev-loop.md").read_text()
    command = "mcpactor call --repl -- mcpactor serve examples/quickstart.py"
    shown = page.split(f"$ {command}\n", 1)[1].split("```", 1)[0].splitlines()
    typed = [line.removeprefix("mcp> ") for line in shown if line.startswith("mcp> ")]
    printed = [line for line in shown if not line.startswith("mcp> ")]
    # Piped, the same lines without the prompts.
    done = subprocess.run(
        [*REPL, "--", sys.executable, "-m", "mcpactor", "serve", "examples/quickstart.py"],
        input="\n".join(typed) + "\n",
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=DEADLINE,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == printed
