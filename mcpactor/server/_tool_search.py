# Search mode for large catalogs: the client lists two tools (and the pinned ones), finds
# the others with ``search_tools`` and calls them with ``call_tool``.
#
# It is an extension whose middleware does the work on the one request path: ``tools/list``
# is answered with the small surface, and a ``tools/call`` of ``call_tool`` has its params
# rewritten into a ``tools/call`` of the tool it names before the call goes on, so the
# tool's own schema validation, scopes, errors, progress and cancellation are those of a
# direct call (there is no second dispatch). The keyword index is built from the served
# server's catalog (mounted servers included) when it is first asked after a change.

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from typing import TYPE_CHECKING, Any, Final

import attrs

from .._exceptions import INVALID_PARAMS, ExtensionError, RequestError
from ..protocol import JSONObject, Revision, describe
from ._context import Context
from ._extensions import Extension
from ._middleware import Call, Message, Next, Result
from ._scopes import scopes_of
from ._search_index import MAX_QUERY_CHARS, SearchIndex

if TYPE_CHECKING:
    from ._server import Server

__all__ = ["TOOL_SEARCH", "ToolSearch", "tool_search"]

#: the identifier of the search mode, under ``capabilities.extensions``
TOOL_SEARCH: Final = "io.mcpactor/tool-search"
#: the most results one search may ask for
MAX_RESULTS: Final = 50

_SEARCH_DESCRIPTION: Final = (
    "Search this server's tools by what they do. Returns the best matching tools' full "
    "definitions (name, description, inputSchema), best first. Then call one with "
    "{call} using its name and arguments that follow its inputSchema."
)
_CALL_DESCRIPTION: Final = (
    "Call any tool of this server by name, including the ones {search} finds: "
    "'arguments' must follow that tool's inputSchema. Returns that tool's result."
)


@attrs.define(eq=False)
class ToolSearch:
    """The state of one server's search mode: its settings, index and listing."""

    #: tools listed beside the two search-mode tools, in this order
    pinned: tuple[str, ...] = ()
    #: how many results a search returns unless it asks for another number
    limit: int = 5
    search_tool: str = "search_tools"
    call_tool: str = "call_tool"
    _server: Server[Any] | None = attrs.field(default=None, init=False)
    _index: SearchIndex | None = attrs.field(default=None, init=False)
    _listings: dict[str, JSONObject] = attrs.field(factory=dict, init=False)
    #: how many times the index was built (one per change of the tools, once asked)
    builds: int = attrs.field(default=0, init=False)

    # --- what the server hears ----------------------------------------------------------

    def list_changed(self, kind: str) -> None:
        """The server's tools changed: the index and listing are built again when asked."""
        if kind == "tools":
            self._index = None
            self._listings.clear()

    def resource_updated(self, uri: str) -> None:
        """Resources do not concern the search mode."""

    # --- the served catalog ---------------------------------------------------------------

    def _entries(self) -> dict[str, Any]:
        if self._server is None:
            raise RuntimeError("the tool search extension is not enabled on a server")
        return dict(self._server._catalog().tools)

    def index(self, revision: Revision) -> SearchIndex:
        """The keyword index of every tool but the two of the search mode."""
        index = self._index
        if index is None:
            own = (self.search_tool, self.call_tool)
            definitions = [
                entry.wire(revision) for name, entry in self._entries().items() if name not in own
            ]
            index = self._index = SearchIndex(definitions)
            self.builds += 1
        return index

    def listing(self, ctx: Context) -> JSONObject:
        """The ``tools/list`` result of search mode: the two tools and the pinned ones
        (with ``hide_unauthorized``, those the caller's scopes reach)."""
        revision = ctx.negotiated.revision
        principal = self._principal(ctx)
        listing = self._listings.get(revision.version) if principal is None else None
        if listing is None:
            entries = self._entries()
            names = [self.search_tool, self.call_tool, *self.pinned]
            tools = [
                entries[name].wire(revision)
                for name in names
                if name in entries
                and (principal is None or principal.scopes.issuperset(scopes_of(entries[name])))
            ]
            listing = {"tools": tools}
            if principal is None:
                self._listings[revision.version] = listing
        return listing

    def _principal(self, ctx: Context) -> Any:
        # Who the lists are cut for: the caller where the server hides what it may not call.
        server = self._server
        return ctx.principal if server is not None and server.hide_unauthorized else None

    def search(self, query: str, limit: int | None, ctx: Context) -> list[JSONObject]:
        """The definitions of the tools best matching ``query`` that ``ctx`` may see."""
        revision = ctx.negotiated.revision
        wanted = self.limit if limit is None else limit
        if not 1 <= wanted <= MAX_RESULTS:
            raise RequestError(INVALID_PARAMS, f"limit must be 1 to {MAX_RESULTS}")
        entries = self._entries()
        principal = self._principal(ctx)
        found: list[JSONObject] = []
        for name in self.index(revision).search(query[:MAX_QUERY_CHARS], MAX_RESULTS):
            entry = entries.get(name)
            if entry is None:
                continue
            if principal is not None and not principal.scopes.issuperset(scopes_of(entry)):
                continue
            found.append(entry.wire(revision))
            if len(found) == wanted:
                break
        return found

    def forwarded(self, params: JSONObject) -> JSONObject:
        """The params of a ``tools/call`` of the tool a ``call_tool`` call names."""
        arguments = params.get("arguments")
        if not isinstance(arguments, dict):
            arguments = {}
        name = arguments.get("name")
        if not isinstance(name, str) or not name:
            raise RequestError(
                INVALID_PARAMS,
                f"{self.call_tool}: 'name' must name a tool, got {describe(name)}",
            )
        if name == self.call_tool:
            raise RequestError(INVALID_PARAMS, f"{self.call_tool} cannot call itself")
        inner = arguments.get("arguments", {})
        if not isinstance(inner, dict):
            raise RequestError(
                INVALID_PARAMS,
                f"{self.call_tool}: 'arguments' must be an object, got {describe(inner)}",
            )
        # _meta (a progress token) and a task request go with the call as they came.
        return {**params, "name": name, "arguments": inner}

    # --- the extension --------------------------------------------------------------------

    async def layer(self, call: Call, call_next: Next) -> AsyncIterator[Message]:
        """The middleware: the small ``tools/list``, and ``call_tool`` made a direct call."""
        if call.kind == "request":
            if call.method == "tools/list":
                yield Result(dict(self.listing(call.context)))
                return
            params = call.params
            if call.method == "tools/call" and params and params.get("name") == self.call_tool:
                call.params = self.forwarded(params)
        async for message in call_next(call):
            yield message

    def setup(self, server: Server[Any]) -> None:
        """Register the two tools on ``server`` and hear about its changes."""
        if self._server is not None and self._server is not server:
            raise ExtensionError("a tool search extension serves one server; make another")
        self._server = server
        search = self

        async def search_tools(query: str, ctx: Context, limit: int | None = None) -> JSONObject:
            return {"tools": search.search(query, limit, ctx)}

        async def call_tool(name: str, arguments: JSONObject | None = None) -> JSONObject:
            # Reached only where the search mode's middleware does not run.
            raise RequestError(INVALID_PARAMS, f"{search.call_tool} is served by search mode")

        server.add_tool(
            search_tools,
            name=self.search_tool,
            description=_SEARCH_DESCRIPTION.format(call=self.call_tool),
            input_schema=_search_schema(self.limit),
        )
        server.add_tool(
            call_tool,
            name=self.call_tool,
            description=_CALL_DESCRIPTION.format(search=self.search_tool),
            input_schema=_CALL_SCHEMA,
        )
        server.listeners.add(self)

    def extension(self) -> Extension:
        """This search mode as an ``Extension`` to enable on the served server."""
        # Typed loosely: the field's tuple converter leaves mypy a type it cannot solve.
        layers: tuple[Any, ...] = (self.layer,)
        return Extension(
            identifier=TOOL_SEARCH,
            settings={
                "searchTool": self.search_tool,
                "callTool": self.call_tool,
                "pinned": list(self.pinned),
            },
            requires=("tools",),
            setup=self.setup,
            middleware=layers,
            description="search mode: search_tools and call_tool in place of a long tool list",
        )


def _search_schema(limit: int) -> JSONObject:
    return {
        "type": "object",
        "properties": {
            "query": {
                "type": "string",
                "maxLength": MAX_QUERY_CHARS,
                "description": "what the tool should do, in a few words",
            },
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_RESULTS,
                "description": f"how many tools to return (default {limit})",
            },
        },
        "required": ["query"],
        "additionalProperties": False,
    }


_CALL_SCHEMA: Final[JSONObject] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "the tool's name, as search_tools gave it"},
        "arguments": {"type": "object", "description": "the tool's arguments"},
    },
    "required": ["name"],
    "additionalProperties": False,
}


def tool_search(
    *,
    pinned: Iterable[str] = (),
    limit: int = 5,
    search_tool: str = "search_tools",
    call_tool: str = "call_tool",
) -> Extension:
    """Search mode as an ``Extension``: clients list ``search_tools``, ``call_tool`` and
    the ``pinned`` tools, and reach every other tool through them."""
    if not 1 <= limit <= MAX_RESULTS:
        raise ValueError(f"limit must be 1 to {MAX_RESULTS}, got {describe(limit)}")
    pinned = tuple(pinned)
    for name in pinned:
        if not isinstance(name, str):
            raise TypeError(f"pinned tool names must be strings, got {describe(name)}")
    state = ToolSearch(pinned, limit, search_tool, call_tool)
    return state.extension()
