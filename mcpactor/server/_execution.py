# How a tool runs: where its function executes, how long it may take, and whether it
# may (or must) run as a task.
#
# Everything here is decided once, at registration, and checked there (a SchemaError
# names the tool); at call time the Server only reads the resulting ``ToolExecution``.
# The runtime does the running: ``"async"`` handlers are awaited on the event loop,
# ``"thread"`` ones go to a worker thread, ``"process"`` ones to a worker process that is
# killed when the call is cancelled or times out (runtime/_offload.py).

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from typing import Any, Final, Literal, TypeAlias, get_args

import attrs

from .._exceptions import MCPActorError, SchemaError
from ..protocol import describe

__all__ = [
    "TASK_METHODS",
    "HandlerTimeout",
    "Offload",
    "TaskMetadata",
    "TaskSupport",
    "ToolExecution",
    "function_path",
    "tool_execution",
]

#: where a tool's function runs
Offload: TypeAlias = Literal["async", "thread", "process"]
#: the tool's ``execution.taskSupport`` (2025-11-25)
TaskSupport: TypeAlias = Literal["forbidden", "optional", "required"]

#: the session era's tasks requests, answered by _tasks.py (loaded with the first one)
TASK_METHODS: Final = ("tasks/get", "tasks/result", "tasks/list", "tasks/cancel")

_OFFLOADS: Final = frozenset(get_args(Offload))
_TASK_SUPPORT: Final = frozenset(get_args(TaskSupport))


class HandlerTimeout(MCPActorError, TimeoutError):
    """A handler ran past its deadline and was cancelled."""

    def __init__(self, timeout: float) -> None:
        super().__init__(f"the handler did not finish within {timeout:g} s")
        #: the deadline, in seconds
        self.timeout = timeout


@attrs.frozen
class TaskMetadata:
    """What a requestor asked for in ``params.task``."""

    #: the requested ttl in milliseconds, or None for the server's default
    ttl_ms: int | None = None


class ToolExecution:
    """How one tool runs; the result of checking its registration options."""

    # A plain class, not attrs: private, never compared, and an attrs class costs every
    # start-up its build.
    __slots__ = ("offload", "task_after_input", "task_support", "timeout")

    def __init__(
        self,
        offload: Offload | None = None,
        timeout: float | None = None,
        task_support: TaskSupport = "forbidden",
        task_after_input: bool = False,
    ) -> None:
        #: where the function runs; None: on the event loop if async, else in a thread
        self.offload = offload
        #: seconds the function may run (None: the server's default applies)
        self.timeout = timeout
        self.task_support = task_support
        #: at 2026-07-28: ask with input_required rounds first, and become a task on the
        #: retry that brings the answers (the extension's MRTR-then-task composition)
        self.task_after_input = task_after_input

    def offload_for(self, is_async: bool) -> Offload:
        """Where the function runs, given whether it is a coroutine function."""
        if self.offload is not None:
            return self.offload
        return "async" if is_async else "thread"

    def wire(self) -> dict[str, Any] | None:
        """The tool's ``execution`` field, or None when every value is the default."""
        if self.task_support == "forbidden":
            return None
        return {"taskSupport": self.task_support}


def tool_execution(
    fn: Callable[..., Any],
    *,
    name: str,
    is_async: bool,
    context_param: str | None,
    offload: str | None,
    timeout: float | None,
    task_support: str,
    task_after_input: bool = False,
) -> ToolExecution:
    """Check a tool's execution options; SchemaError names the tool and what is wrong."""
    what = f"tool {describe(name)}"
    if task_support not in _TASK_SUPPORT:
        raise SchemaError(
            f"{what}: task_support must be one of {sorted(_TASK_SUPPORT)}, got "
            f"{describe(task_support)}"
        )
    if type(task_after_input) is not bool:
        raise SchemaError(f"{what}: task_after_input must be True or False")
    if task_after_input and task_support == "forbidden":
        raise SchemaError(
            f"{what}: task_after_input needs a task_support of 'optional' or 'required'"
        )
    if timeout is not None and (
        isinstance(timeout, bool)
        or not isinstance(timeout, int | float)
        or math.isnan(timeout)
        or timeout <= 0
    ):
        raise SchemaError(
            f"{what}: timeout must be a positive number of seconds, got {describe(timeout)}"
        )
    if offload is None:
        offload = "async" if is_async else "thread"
    if offload not in _OFFLOADS:
        raise SchemaError(f"{what}: offload must be 'thread' or 'process', got {offload!r}")
    if is_async and offload != "async":
        raise SchemaError(
            f"{what}: an async function runs on the event loop and cannot be offloaded "
            f"to a {offload}; make it a plain def"
        )
    if not is_async and offload == "async":
        raise SchemaError(
            f"{what}: a plain def would block the event loop; use offload='thread' "
            "or 'process', or make it async"
        )
    if offload == "process":
        if context_param is not None:
            raise SchemaError(
                f"{what}: offload='process' cannot pass a Context ({describe(context_param)}) "
                "to another process; drop the parameter or use offload='thread'"
            )
        function_path(fn, what=what)
    return ToolExecution(
        offload="process" if offload == "process" else None,
        timeout=float(timeout) if timeout is not None else None,
        task_support=task_support,  # type: ignore[arg-type]  # checked above
        task_after_input=task_after_input,
    )


def function_path(fn: Callable[..., Any], *, what: str) -> tuple[str, str]:
    """Return ``(module, qualname)`` by which a worker process can import ``fn``.

    Raises:
        SchemaError: ``fn`` is a lambda, a nested function, a method of a live object, or
            lives in ``__main__`` or a module that was not imported from a file.
    """
    module_name = getattr(fn, "__module__", None)
    qualname = getattr(fn, "__qualname__", None)
    if not isinstance(module_name, str) or not isinstance(qualname, str):
        raise SchemaError(
            f"{what}: offload='process' needs a plain function, got {type(fn).__name__}"
        )
    parts = qualname.split(".")
    if not all(part.isidentifier() for part in parts):
        raise SchemaError(
            f"{what}: offload='process' needs a function importable by module path; "
            f"{module_name}.{qualname} is a lambda or nested function, define it at the "
            "top level of a module"
        )
    if getattr(fn, "__self__", None) is not None:
        raise SchemaError(
            f"{what}: offload='process' cannot call a bound method ({qualname}); "
            "use a module-level function"
        )
    module = sys.modules.get(module_name)
    if module_name == "__main__" or module is None or not getattr(module, "__file__", None):
        raise SchemaError(
            f"{what}: offload='process' needs a function importable by module path; "
            f"{qualname} lives in {describe(module_name)}, which a worker process cannot import: "
            "move it into a module (or a file served with 'mcpactor serve FILE')"
        )
    return module_name, qualname
