# The typed MCP methods of a client session: one per request the spec defines (tools,
# resources, prompts, completion, tasks), each building its params and sending them with
# ``request``. ``ClientSession`` inherits them; what they share with it is that method,
# ``notify``, the handlers, the ``initialize`` result and what the session knows of the
# tools' outputs (``ToolOutputs``, _results.py). ``set_logging_level`` differs by era
# and is in _stateless.py.

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .._exceptions import INVALID_REQUEST, CapabilityError, RemoteProtocolError
from ..protocol import JSONObject, describe
from ._handlers import ClientHandlers, ProgressHandler, RootsSource
from ._results import ToolOutputs, ToolResult

__all__ = ["ClientMethods"]


class ClientMethods:
    """The MCP requests a client sends, as methods; the base of ``ClientSession``."""

    handlers: ClientHandlers
    # How ``ToolResult.data`` is rebuilt (the connection may give the server's decoder).
    _tools: ToolOutputs

    if TYPE_CHECKING:
        # Provided by ClientSession, which owns the connection.

        @property
        def initialize_result(self) -> JSONObject | None: ...

        async def request(
            self,
            method: str,
            params: JSONObject | None = None,
            *,
            timeout: float | None = None,
            progress_handler: ProgressHandler | None = None,
        ) -> JSONObject: ...

        async def notify(self, method: str, params: JSONObject | None = None) -> None: ...

    async def ping(self) -> JSONObject:
        """Ping the server."""
        return await self.request("ping")

    async def list_page(self, method: str, cursor: str | None = None) -> JSONObject:
        """Request one page of a list (``tools/list`` …), starting at ``cursor``."""
        return await self.request(method, {"cursor": cursor} if cursor is not None else None)

    async def list_all(self, method: str, key: str) -> list[JSONObject]:
        """Request every page of a list and return the items under ``key``, in order.

        Raises:
            RemoteProtocolError: a page has no list under ``key`` or repeats a cursor.
        """
        items: list[JSONObject] = []
        seen: set[str] = set()
        cursor: str | None = None
        while True:
            page = await self.list_page(method, cursor)
            found = page.get(key)
            if not isinstance(found, list):
                raise RemoteProtocolError(
                    f"{method} result has no {describe(key)} list: {describe(page)}",
                    code=INVALID_REQUEST,
                )
            items.extend(found)
            cursor = page.get("nextCursor")
            if cursor is None:
                return items
            if not isinstance(cursor, str) or cursor in seen:
                raise RemoteProtocolError(
                    f"{method} returned the cursor {describe(cursor)} twice (or not as a string)",
                    code=INVALID_REQUEST,
                )
            seen.add(cursor)

    async def list_tools(self) -> list[JSONObject]:
        """Return every tool, following ``nextCursor``."""
        tools = await self.list_all("tools/list", "tools")
        self._tools.listed(tools)
        return tools

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        progress_handler: ProgressHandler | None = None,
        meta: JSONObject | None = None,
        timeout: float | None = None,
    ) -> ToolResult:
        """Call a tool and return its ``CallToolResult`` (``isError`` results included).

        The result is the result object as a dict, with the tool's value decoded as
        ``data``, its text as ``text`` and ``is_error`` (see ``ToolResult``).
        """
        params: JSONObject = {"name": name, "arguments": dict(arguments or {})}
        if meta is not None:
            params["_meta"] = meta
        result = await self.request(
            "tools/call", params, timeout=timeout, progress_handler=progress_handler
        )
        return self._tools.result(result, name)

    # Tasks (2025-11-25): a task-augmented call is answered at once; the work goes on in
    # the server and these methods poll, wait for, list and cancel it.

    async def call_tool_as_task(
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
        if self.initialize_result is not None and not _declares_task_calls(
            self.initialize_result.get("capabilities") or {}
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
        result = await self.request("tools/call", params)
        task = result.get("task")
        if not isinstance(task, dict) or not isinstance(task.get("taskId"), str):
            raise RemoteProtocolError(
                f"a task-augmented tools/call was answered without a task: {describe(result)}",
                code=INVALID_REQUEST,
            )
        self._tools.started(task["taskId"], name)
        return task

    async def get_task(self, task_id: str) -> JSONObject:
        """Return a task's current state (``tasks/get``)."""
        return await self.request("tasks/get", {"taskId": task_id})

    async def get_task_result(self, task_id: str, *, timeout: float | None = None) -> ToolResult:
        """Wait until a task is finished and return its result (``tasks/result``).

        The result is what the plain call would have returned, a ``ToolResult`` as
        ``call_tool``'s is; a task that failed with a JSON-RPC error, or was cancelled,
        raises ``RequestError``.
        """
        result = await self.request("tasks/result", {"taskId": task_id}, timeout=timeout)
        return self._tools.task_result(result, task_id)

    async def list_tasks(self) -> list[JSONObject]:
        """Return every task of this session, following ``nextCursor``."""
        return await self.list_all("tasks/list", "tasks")

    async def cancel_task(self, task_id: str) -> JSONObject:
        """Cancel a task (``tasks/cancel``); return it, now ``cancelled``."""
        return await self.request("tasks/cancel", {"taskId": task_id})

    async def list_resources(self) -> list[JSONObject]:
        """Return every resource, following ``nextCursor``."""
        return await self.list_all("resources/list", "resources")

    async def list_resource_templates(self) -> list[JSONObject]:
        """Return every resource template, following ``nextCursor``."""
        return await self.list_all("resources/templates/list", "resourceTemplates")

    async def read_resource(self, uri: str) -> JSONObject:
        """Read a resource; returns the ``ReadResourceResult``."""
        return await self.request("resources/read", {"uri": uri})

    async def subscribe_resource(self, uri: str) -> JSONObject:
        """Subscribe to ``notifications/resources/updated`` for ``uri``."""
        return await self.request("resources/subscribe", {"uri": uri})

    async def unsubscribe_resource(self, uri: str) -> JSONObject:
        """Cancel a subscription to ``uri``."""
        return await self.request("resources/unsubscribe", {"uri": uri})

    async def list_prompts(self) -> list[JSONObject]:
        """Return every prompt, following ``nextCursor``."""
        return await self.list_all("prompts/list", "prompts")

    async def get_prompt(
        self, name: str, arguments: Mapping[str, str] | None = None
    ) -> JSONObject:
        """Get a prompt; returns the ``GetPromptResult``."""
        params: JSONObject = {"name": name}
        if arguments is not None:
            params["arguments"] = dict(arguments)
        return await self.request("prompts/get", params)

    async def complete(
        self,
        ref: JSONObject,
        argument: JSONObject,
        context: Mapping[str, str] | None = None,
    ) -> JSONObject:
        """Ask for completions of ``argument`` (``{"name", "value"}``) of ``ref``.

        ``ref`` is ``{"type": "ref/prompt", "name": ...}`` or ``{"type": "ref/resource",
        "uri": ...}``; ``context`` holds the arguments already chosen. Returns the
        ``CompleteResult``.
        """
        params: JSONObject = {"ref": ref, "argument": argument}
        if context is not None:
            params["context"] = {"arguments": dict(context)}
        return await self.request("completion/complete", params)

    async def set_roots(self, roots: RootsSource | None) -> None:
        """Replace the roots and, once initialized, tell the server they changed."""
        self.handlers.roots = roots
        if self.initialize_result is not None:
            await self.notify("notifications/roots/list_changed")


def _declares_task_calls(capabilities: JSONObject) -> bool:
    node: Any = capabilities
    for key in ("tasks", "requests", "tools", "call"):
        if not isinstance(node, dict) or node.get(key) is None:
            return False
        node = node[key]
    return True
