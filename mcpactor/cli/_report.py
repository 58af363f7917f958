"""What went wrong, said in a few lines that name the culprit, and the exit status."""

from __future__ import annotations

import sys
from typing import Final

from .._exceptions import ConfigError, MCPActorError, PluginError
from .._targets import TargetError

__all__ = ["StartFailed", "report"]

#: the top-level modules the ``http`` extra installs (its packages and what they need)
_HTTP_EXTRA: Final = frozenset(
    {"httptools", "wsproto", "hypercorn", "h11", "h2", "trio_websocket"}
)
# Groups are flattened to this many failures at most: they come from the start of
# several servers at once, and a few lines say enough.
_MAX_REPORTED: Final = 3


class StartFailed(MCPActorError):
    # Raised from ``exc``: the server did not reach the point of serving.

    def __init__(self, exc: BaseException) -> None:
        super().__init__(str(exc))
        self.__cause__ = exc


def report(exc: Exception, *, debug: bool, listen: str | None) -> int:
    """Print ``exc`` as a few lines naming the culprit; return the exit status."""
    import traceback

    from ..plugins import _describe_failure

    if debug:
        traceback.print_exception(exc, file=sys.stderr)
    starting = isinstance(exc, StartFailed)
    lines: list[str] = []
    status = 1
    leaves = _leaves(exc.__cause__ if starting and exc.__cause__ is not None else exc)
    for leaf in leaves[:_MAX_REPORTED]:
        if isinstance(leaf, ConfigError):
            status = 2
            lines.append(str(leaf))
        elif isinstance(leaf, (TargetError, PluginError)):
            lines.append(str(leaf))
        elif isinstance(leaf, ModuleNotFoundError) and (leaf.name or "").split(".")[0] in (
            _HTTP_EXTRA
        ):
            lines.append(
                f"serving over HTTP or proxying a URL needs the http extra, which is not "
                f"installed (no module named {leaf.name!r}): pip install 'mcpactor[http]'"
            )
        elif isinstance(leaf, OSError) and starting and _is_bind_error(leaf) and listen:
            lines.append(f"cannot listen on {listen}: {leaf.strerror or leaf}")
        else:
            what = "cannot start" if starting else "failed"
            lines.append(f"{what}: {_describe_failure(leaf)}")
    if len(leaves) > _MAX_REPORTED:
        lines.append(f"… and {len(leaves) - _MAX_REPORTED} more")
    for line in lines:
        print(f"mcpactor: {line}", file=sys.stderr)
    if status == 1 and not debug:
        print("mcpactor: (--debug shows the traceback)", file=sys.stderr)
    return status


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
