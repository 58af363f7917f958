# The tasks extension (2025-11-25), as a client uses it: ``ClientSession.tasks``.
#
# A task-augmented ``tools/call`` is answered at once with a task; the work goes on in
# the server, and these methods poll it (``tasks/get``), wait for its result
# (``tasks/result``), list the session's tasks and cancel one. What the session knows of
# each task's tool (``ToolOutputs``) decodes the result as the plain call's would be.

from __future__ import annotations

import builtins
from collections.abc import Mapping
from typing import Any, Protocol, final

from .._exceptions import INVALID_REQUEST, CapabilityError, RemoteProtocolError
from ..protocol import JSONObject, describe
from ._results import ToolOutputs, ToolResult
from ._server_view import ServerView

__all__ = ["ClientTasks"]


class _Session(Protocol):
    """What the tasks use of their ``ClientSession``."""

    @property
    def server(self) -> ServerView: ...

    async def request(
        self, method: str, params: JSONObject | None = None, *, timeout: float | None = None
    ) -> JSONObject: ...

    async def list_all(self, method: str, key: str) -> list[JSONObject]: ...


@final
class ClientTasks:
    """The tasks of one client session: start a tool call as a task, follow it, cancel it."""

    __slots__ = ("_session", "_tools")

    def __init__(self, session: _Session, tools: ToolOutputs) -> None:
        self._session = session
        self._tools = tools

    def __repr__(self) -> str:
        return f"<ClientTasks of {self._session!r}>"

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        ttl: int | None = None,
        meta: JSONObject | None = None,
    ) -> JSONObject:
        """Call a tool as a task; return the ``Task`` of the server's ``CreateTaskResult``.

        ``ttl`` is the lifetime asked for, in milliseconds as on the wire (the server may
        grant less); None leaves it to the server. ``meta`` becomes ``params._meta`` (a
        ``progressToken`` there stays valid for the task's life).

        Raises:
            CapabilityError: the server did not declare ``tasks.requests.tools.call``.
            RemoteProtocolError: the server answered without a task.
        """
        initialized = self._session.server.initialize_result
        if initialized is not None and not _declares_task_calls(
            initialized.get("capabilities") or {}
        ):
            raise CapabilityError(
                f"cannot call {describe(name)} as a task: the server did not declare the "
                "'tasks.requests.tools.call' capability"
            )
        params: JSONObject = {
            "name": name,
            "arguments": dict(arguments or {}),
            "task": {} if ttl is None else {"ttl": ttl},
        }
        if meta is not None:
            params["_meta"] = meta
        result = await self._session.request("tools/call", params)
        task = result.get("task")
        if not isinstance(task, dict) or not isinstance(task.get("taskId"), str):
            raise RemoteProtocolError(
                f"a task-augmented tools/call was answered without a task: {describe(result)}",
                code=INVALID_REQUEST,
            )
        self._tools.started(task["taskId"], name)
        return task

    async def get(self, task_id: str) -> JSONObject:
        """Return a task's current state (``tasks/get``)."""
        return await self._session.request("tasks/get", {"taskId": task_id})

    async def result(self, task_id: str, *, timeout: float | None = None) -> ToolResult:
        """Wait until a task is finished and return its result (``tasks/result``).

        The result is what the plain call would have returned, a ``ToolResult`` as
        ``ClientSession.call_tool``'s is; a task that failed with a JSON-RPC error, or was
        cancelled, raises ``RequestError``.
        """
        result = await self._session.request("tasks/result", {"taskId": task_id}, timeout=timeout)
        return self._tools.task_result(result, task_id)

    async def list(self) -> builtins.list[JSONObject]:
        """Return every task of this session, following ``nextCursor``."""
        return await self._session.list_all("tasks/list", "tasks")

    async def cancel(self, task_id: str) -> JSONObject:
        """Cancel a task (``tasks/cancel``); return it, now ``cancelled``."""
        return await self._session.request("tasks/cancel", {"taskId": task_id})


def _declares_task_calls(capabilities: JSONObject) -> bool:
    node: Any = capabilities
    for key in ("tasks", "requests", "tools", "call"):
        if not isinstance(node, dict) or node.get(key) is None:
            return False
        node = node[key]
    return True
