"""The fixtures of the tasks extension (``io.modelcontextprotocol/tasks``) scenarios.

A tool says whether it may run as a task with ``task_support``: ``"forbidden"`` (the
default) always answers at once, ``"optional"`` becomes a task for a client that
declared the extension and runs as a plain call for one that did not, ``"required"``
refuses a client that cannot take a task (-32021 at 2026-07-28). The server alone
decides; the client then follows the task with ``tasks/get``, answers its questions
with ``tasks/update`` and may stop it with ``tasks/cancel``. The handlers are ordinary
tools: a task's ``ctx.elicit`` parks it in ``input_required`` until the answer comes,
a ``ToolError`` ends it ``completed`` with ``isError``, a protocol error ends it
``failed``, and cancelling it cancels the handler where it waits.

The same tools serve 2025-11-25 sessions, whose clients ask for a task themselves.
"""

from __future__ import annotations

import json
from typing import Annotated, Final

import trio

from mcpactor import Context, RequestError, Server, ToolError

from ._stateless import NAME_FORM

__all__ = ["DELETE_FORM", "MAX_SECONDS", "register"]

#: the longest ``slow_compute`` sleeps, whatever it is asked
MAX_SECONDS: Final = 300.0

#: the confirmation ``confirm_delete`` asks for
DELETE_FORM: Final = {
    "type": "object",
    "properties": {"confirm": {"type": "boolean", "description": "Delete the file?"}},
    "required": ["confirm"],
}

# How long the failing jobs work before they fail, as a real job would.
_FAIL_AFTER: Final = 0.5
_INTERNAL_ERROR: Final = -32603


def register(server: Server) -> None:
    """Add the tasks extension's fixtures to ``server``."""

    @server.tool()
    async def greet(name: str) -> str:
        """Greet someone at once (never a task).

        Args:
            name: who to greet
        """
        return f"Hello, {name}!"

    @server.tool(task_support="optional")
    async def slow_compute(
        seconds: Annotated[float, "how long the computation takes"] = 1.0,
        label: Annotated[str, "a name for this run"] = "",
    ) -> str:
        """Sleep ``seconds`` (0: at once), then report; a task for clients that take one."""
        await trio.sleep(max(0.0, min(seconds, MAX_SECONDS)))
        return f"Computed {label or 'result'} after {seconds:g} s"

    @server.tool(task_support="required")
    async def failing_job() -> str:
        """Work a moment, then fail as a tool does (``isError``); runs only as a task."""
        await trio.sleep(_FAIL_AFTER)
        raise ToolError("The job failed on purpose")

    @server.tool(task_support="optional")
    async def protocol_error_job() -> str:
        """Work a moment, then fail with a JSON-RPC error: the task ends ``failed``."""
        await trio.sleep(_FAIL_AFTER)
        raise RequestError(_INTERNAL_ERROR, "The job hit an internal error on purpose")

    @server.tool(task_support="optional")
    async def confirm_delete(
        ctx: Context, filename: Annotated[str, "the file to delete"] = "example.txt"
    ) -> str:
        """Ask the user to confirm deleting a file (nothing is deleted); then say so."""
        answer = await ctx.elicit(f"Delete {filename}?", DELETE_FORM)
        confirmed = answer.action == "accept" and (answer.content or {}).get("confirm") is True
        return f"Deleted {filename}" if confirmed else f"Kept {filename} ({answer.action})"

    @server.tool(task_support="required")
    async def multi_input(ctx: Context) -> str:
        """Ask two questions at once; finish when both are answered (runs as a task)."""
        answers: dict[str, object] = {}

        async def ask(key: str, message: str) -> None:
            answer = await ctx.elicit(message, NAME_FORM)
            answers[key] = answer.content

        async with trio.open_nursery() as nursery:
            nursery.start_soon(ask, "first", "First: what is your name?")
            nursery.start_soon(ask, "second", "Second: what is your name?")
        return f"first={json.dumps(answers['first'])}, second={json.dumps(answers['second'])}"

    # The question first, as a plain round; the retry that answers it becomes the task,
    # in which the handler runs again from the top and finds its answer.
    @server.tool(task_support="required", task_after_input=True)
    async def test_tool_with_task(ctx: Context) -> str:
        """Ask the user's name, then work on as a task; the result names them."""
        answer = await ctx.elicit("What is your name?", NAME_FORM)
        name = (answer.content or {}).get("name")
        await trio.sleep(_FAIL_AFTER)
        return f"Task finished for {name}"
