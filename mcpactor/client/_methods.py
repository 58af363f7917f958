# The typed MCP methods of a client session: one per request the spec defines (tools,
# resources, prompts, completion), each building its params and sending them with
# ``request``. ``ClientSession`` inherits them; what they share with it is that method,
# ``notify``, the handlers, what the session knows of the server (``ServerView``) and of
# the tools' outputs (``ToolOutputs``, _results.py). ``set_logging_level`` differs by
# era and is in _stateless.py; the tasks extension is ``ClientTasks`` (_tasks.py).

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .._exceptions import INVALID_REQUEST, RemoteProtocolError
from ..protocol import JSONObject, describe
from ._handlers import ClientHandlers, ProgressHandler, RootsSource
from ._results import ToolOutputs, ToolResult

if TYPE_CHECKING:
    from ._server_view import ServerView

__all__ = ["ClientMethods"]


class ClientMethods:
    """The MCP requests a client sends, as methods; the base of ``ClientSession``."""

    handlers: ClientHandlers
    server: ServerView
    # How ``ToolResult.data`` is rebuilt (the connection may give the server's decoder).
    _tools: ToolOutputs

    if TYPE_CHECKING:
        # Provided by ClientSession, which owns the connection.

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
        if self.server.initialize_result is not None:
            await self.notify("notifications/roots/list_changed")
