"""What went wrong, said in a few lines that name the culprit, and the exit status.

Also ``say``: every line the command itself writes to stderr (where it serves, the admin
page, what failed) goes through it, so that it is a JSON line when logs are JSON, and an
escaped ``mcpactor: …`` line otherwise.
"""

from __future__ import annotations

import logging
import sys
from typing import Final

from .._exceptions import ConfigError, MCPActorError, PluginError
from ..config import TargetError
from ._extras import PURPOSES, ExtraMissing, extra_of

__all__ = ["StartFailed", "failure_lines", "report", "say", "say_failure"]

# Groups are flattened to this many failures at most: they come from the start of
# several servers at once, and a few lines say enough.
_MAX_REPORTED: Final = 3


class StartFailed(MCPActorError):
    # Raised from ``exc``: the server did not reach the point of serving.

    def __init__(self, exc: BaseException) -> None:
        super().__init__(str(exc))
        self.__cause__ = exc


def say(message: str, *, level: int = logging.INFO, exc_text: str | None = None) -> None:
    """Write ``message`` to stderr whatever the log level: a JSON line when logs are JSON,
    else ``mcpactor: message`` with its control characters escaped.

    Lines after a message's first start with whitespace; ``exc_text`` (a traceback)
    follows as such lines, or in the JSON line's ``exc``.
    """
    from ..observability import escape_text, json_handler

    handler = json_handler()
    if handler is not None:
        record = logging.LogRecord("mcpactor", level, __file__, 0, message, None, None)
        record.exc_text = exc_text
        # Past the loggers' levels, as a print would be.
        handler.handle(record)
        return
    text = "mcpactor: " + escape_text(message, lines=True)
    if exc_text:
        text += "\n" + escape_text("\n" + exc_text.rstrip("\n"), lines=True)[1:]
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


def report(exc: Exception, *, debug: bool, listen: str | None) -> int:
    """Say ``exc`` as a few lines naming the culprit; return the exit status."""
    status, lines, traceback_text = failure_lines(exc, debug=debug, listen=listen)
    say_failure(lines, traceback_text)
    return status


def say_failure(lines: list[str], traceback_text: str | None = None) -> None:
    """Say what ``failure_lines`` made: the traceback, if any, then the short report."""
    from ..observability import escape_text, json_handler

    if traceback_text is not None and json_handler() is None:
        # As Python prints it, escaped; the short report closes it.
        sys.stderr.write(escape_text(traceback_text.rstrip("\n"), lines=True) + "\n")
        traceback_text = None
    for index, line in enumerate(lines):
        say(line, level=logging.ERROR, exc_text=traceback_text if index == 0 else None)


def failure_lines(
    exc: Exception, *, debug: bool, listen: str | None
) -> tuple[int, list[str], str | None]:
    """What ``report`` says of ``exc``: the exit status, the lines, and the traceback
    (with ``debug``)."""
    import traceback

    from ..plugins import _describe_failure

    traceback_text = "".join(traceback.format_exception(exc)) if debug else None
    starting = isinstance(exc, StartFailed)
    lines: list[str] = []
    status = 1
    leaves = _leaves(exc.__cause__ if starting and exc.__cause__ is not None else exc)
    for leaf in leaves[:_MAX_REPORTED]:
        if isinstance(leaf, ConfigError):
            status = 2
            lines.append(str(leaf))
        elif isinstance(leaf, (TargetError, PluginError, ExtraMissing)):
            lines.append(str(leaf))
        elif (missing := _missing_extra(leaf)) is not None:
            # What the checks before the start did not foresee still names the extra.
            lines.append(str(missing))
        elif isinstance(leaf, OSError) and starting and _is_bind_error(leaf) and listen:
            lines.append(f"cannot listen on {listen}: {leaf.strerror or leaf}")
        else:
            what = "cannot start" if starting else "failed"
            lines.append(f"{what}: {_describe_failure(leaf)}")
    if len(leaves) > _MAX_REPORTED:
        lines.append(f"… and {len(leaves) - _MAX_REPORTED} more")
    # A missing extra is said in full: its traceback is only the import that failed.
    if status == 1 and not debug and not all(isinstance(e, ExtraMissing) for e in leaves):
        lines.append("(--debug shows the traceback)")
    return status, lines, traceback_text


def _missing_extra(exc: BaseException) -> ExtraMissing | None:
    # An extra's module that mcpactor itself imported: a user's module importing httpx
    # without it installed is that module's error, not a missing extra.
    if not isinstance(exc, ModuleNotFoundError) or exc.name is None:
        return None
    extra = extra_of(exc.name)
    if extra is None:
        return None
    import importlib
    import os
    import traceback

    # The import statement that failed: the last frame outside the import system (which
    # drops its own frames from an ImportError's traceback, but not importlib's helpers).
    machinery = os.path.dirname(importlib.__file__) + os.sep
    files = [
        frame.f_code.co_filename
        for frame, _ in traceback.walk_tb(exc.__traceback__)
        if not frame.f_code.co_filename.startswith(("<frozen importlib", machinery))
    ]
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
    if not files or not os.path.abspath(files[-1]).startswith(package):
        return None
    return ExtraMissing(PURPOSES[extra], extra, exc.name)


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    return [exc]


def _is_bind_error(exc: OSError) -> bool:
    import errno
    import traceback

    if exc.errno in (errno.EADDRINUSE, errno.EADDRNOTAVAIL):
        return True
    frames = list(traceback.walk_tb(exc.__traceback__))
    return bool(frames) and frames[-1][0].f_code.co_name == "bind"
