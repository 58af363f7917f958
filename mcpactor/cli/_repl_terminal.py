"""The terminal of ``mcpactor call --repl``: lines in, with history and completion, and
what the session prints, escaped and bounded, above the prompt when it waits.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Final, TextIO

__all__ = [
    "MAX_SHOWN",
    "PROMPT",
    "Console",
    "LineReader",
    "escaped",
    "history_path",
    "in_main_thread",
    "terminal_kept",
]

#: the longest result printed, in characters (the rest is counted, not shown)
MAX_SHOWN: Final = 200_000
#: lines kept in the history file
_HISTORY_LENGTH: Final = 1000
#: what the prompt says
PROMPT: Final = "mcp> "


def history_path() -> Path:
    """The history file, in the user's state directory."""
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    else:
        base = Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state")
    return base / "mcpactor" / "call_history"


@contextlib.contextmanager
def terminal_kept(terminal: bool) -> Iterator[None]:
    # Leaving while readline waits in its thread must not leave the terminal raw.
    if not terminal:
        yield
        return
    try:
        import termios
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    fd = sys.stdin.fileno()
    saved = termios.tcgetattr(fd)
    try:
        yield
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)


class LineReader:
    """Lines from stdin: readline and its history on a terminal, plain lines elsewhere."""

    def __init__(self, terminal: bool, commands: Sequence[str]) -> None:
        self.terminal = terminal
        #: what is completed as a line's first word
        self.commands = list(commands)
        self.readline: Any = None
        self.path = history_path()
        #: the names to complete after a command (tools, resource URIs, prompts)
        self.names: dict[str, list[str]] = {}
        #: the lines entered, where there is no readline to keep them
        self.entered: list[str] = []
        #: whether a thread is waiting for a line
        self.reading = False
        if not terminal:
            return
        try:
            import readline
        except ImportError:  # pragma: no cover - no readline on this Python
            return
        self.readline = readline
        readline.set_history_length(_HISTORY_LENGTH)
        with contextlib.suppress(OSError):
            readline.read_history_file(self.path)
        readline.set_completer(self._complete)
        readline.set_completer_delims(" \t")
        if "libedit" in (readline.__doc__ or ""):  # pragma: no cover - macOS's readline
            readline.parse_and_bind("bind ^I rl_complete")
        else:
            readline.parse_and_bind("tab: complete")

    def read(self) -> str | None:
        """One line (None at the end of input); blocks, so it runs in a worker thread."""
        self.reading = True
        try:
            if self.terminal:
                try:
                    return input(PROMPT)
                except EOFError:
                    return None
            line = sys.stdin.readline()
            return line.rstrip("\n") if line else None
        finally:
            self.reading = False

    def remember(self, line: str) -> None:
        """Keep ``line`` in the history file at once, so a crash loses none of it."""
        if self.readline is None:
            self.entered = [*self.entered[-_HISTORY_LENGTH + 1 :], line]
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # Arguments may hold secrets: the file is the user's alone.
            self.path.touch(mode=0o600, exist_ok=True)
            self.readline.append_history_file(1, self.path)
        except OSError:
            pass

    def save(self) -> None:
        """Write the history, cut to its length."""
        if self.readline is None:
            return
        with contextlib.suppress(OSError):
            self.readline.write_history_file(self.path)

    def history(self) -> list[str]:
        """The commands entered, oldest first."""
        if self.readline is None:
            return list(self.entered)
        length = self.readline.get_current_history_length()
        return [self.readline.get_history_item(i) for i in range(1, length + 1)]

    def current(self) -> str:
        """What the user has typed on the prompt's line so far."""
        return self.readline.get_line_buffer() if self.readline is not None else ""

    def _complete(self, text: str, state: int) -> str | None:
        line = self.current()
        words = line.split()
        if not words or (len(words) == 1 and not line.endswith(" ")):
            choices = self.commands
        else:
            choices = self.names.get(words[0], [])
        matches = [choice for choice in choices if choice.startswith(text)]
        return matches[state] + " " if state < len(matches) else None


class Console:
    """What the session prints: results on stdout; progress, notices and errors on stderr."""

    def __init__(self, lines: LineReader) -> None:
        self.lines = lines
        #: whether the prompt is on the screen, waiting for a line
        self.prompting = False

    def result(self, value: Any) -> None:
        """A result, as indented JSON."""
        import orjson

        text = escaped(orjson.dumps(value, option=orjson.OPT_INDENT_2).decode())
        self._write(sys.stdout, text)

    def say(self, text: str) -> None:
        """A line of ours (or one made of a server's words, already escaped)."""
        self._write(sys.stdout, text)

    def notice(self, text: str) -> None:
        """A notification or an error: above the prompt when it is waiting."""
        self._write(sys.stderr, text)

    def _write(self, stream: TextIO, text: str) -> None:
        if self.prompting and self.lines.terminal:
            # Over the prompt's line, then the prompt again with what was typed.
            sys.stdout.write("\r\x1b[K")
            sys.stdout.flush()
            stream.write(text + "\n")
            stream.flush()
            sys.stdout.write(PROMPT + self.lines.current())
            sys.stdout.flush()
            return
        stream.write(text + "\n")
        stream.flush()


def escaped(text: str, length: int = MAX_SHOWN) -> str:
    # A server's words reach a terminal: escape what could steer it, keep line ends, and
    # say how much was left out.
    shown = "".join(
        ch if ch.isprintable() or ch == "\n" else repr(ch)[1:-1] for ch in text[: length + 1]
    )
    if len(text) > length:
        return shown[:length] + f"\n… ({len(text) - length} more characters)"
    return shown


def in_main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()
