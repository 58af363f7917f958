# How a request reaches its handler: the one method table of the server layer.
#
# A single Server and a composed one (``Composition``) serve the same methods. Each
# names its handlers as ``HANDLERS`` says and builds its table with ``method_table``;
# which families it serves right now is ``serves_family`` (_registered.py) over what it
# lists. The
# ``tasks/*`` methods are the session's, whichever server's tool started a task, so
# each owner says how it answers them.
#
# ``Composable`` is what a composition needs of a Server (the parent, or a child it
# mounts): with it, _compose.py never imports _server.py, and imports point one way.

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeAlias

from .._exceptions import METHOD_NOT_FOUND, RequestError
from ..protocol import JSONObject, Revision, bounded_value, describe
from ._execution import TASK_METHODS

if TYPE_CHECKING:
    from ._context import Context
    from ._handlers import Handlers
    from ._registered import Registry
    from ._registry import Catalog

__all__ = [
    "HANDLERS",
    "Composable",
    "ExtensionsView",
    "Handler",
    "Mounted",
    "ServedMethods",
    "ServerListener",
    "method_not_found",
    "method_table",
]

#: a request handler: the request's params and Context in, its result out
Handler: TypeAlias = Callable[[JSONObject, "Context"], Awaitable[JSONObject]]

#: method -> the name of its handler on whoever serves it (tasks/* aside)
HANDLERS: Final[Mapping[str, str]] = {
    "tools/list": "_list_tools",
    "tools/call": "_call_tool",
    "resources/list": "_list_resources",
    "resources/templates/list": "_list_templates",
    "resources/read": "_read_resource",
    "resources/subscribe": "_subscribe",
    "resources/unsubscribe": "_unsubscribe",
    "prompts/list": "_list_prompts",
    "prompts/get": "_get_prompt",
    "completion/complete": "_complete",
}


def method_table(
    owner: object, tasks: Callable[[str, JSONObject, Context], Awaitable[JSONObject]]
) -> dict[str, Handler]:
    """``owner``'s handlers by method; ``tasks(method, params, ctx)`` answers ``tasks/*``."""
    table: dict[str, Handler] = {method: getattr(owner, name) for method, name in HANDLERS.items()}
    for method in TASK_METHODS:
        table[method] = functools.partial(tasks, method)
    return table


def method_not_found(method: str) -> RequestError:
    """The -32601 error for a method that is not served."""
    data = {"method": bounded_value(method)}
    return RequestError(METHOD_NOT_FOUND, f"method not found: {describe(method)}", data)


class ServedMethods(dict[str, Handler]):
    """The handlers of the methods served right now, by method, filled on first use.

    A method is looked up in the method table and asked about (``serves``) on its first
    request; the answer stays until what is registered changes (``clear``), so every
    other request is one lookup. A method not served is -32601, asked again next time.
    """

    __slots__ = ("_serves", "_table")

    def __init__(self, table: Mapping[str, Handler], serves: Callable[[str], bool]) -> None:
        super().__init__()
        self._table = table
        self._serves = serves

    def __missing__(self, method: str) -> Handler:
        handler = self._table.get(method)
        if handler is None or not self._serves(method):
            raise method_not_found(method)
        self[method] = handler
        return handler


class ServerListener(Protocol):
    """What a live session hears from its Server."""

    def list_changed(self, kind: str) -> None:
        """The list of ``tools``, ``resources`` or ``prompts`` changed."""

    def resource_updated(self, uri: str) -> None:
        """The resource at ``uri`` changed."""


class Composable(Protocol):
    """What a composition needs of a Server: the parent, or a server it mounts.

    Of a parent it also reads its own entries (``_registry``), its handlers (their
    method table and list pages) and where its changes are announced (``_changes``).
    """

    name: str
    roots_changed_hooks: list[Callable[[Context], Any]]

    @property
    def extensions(self) -> ExtensionsView:
        """The extensions it enabled."""

    @property
    def mounts(self) -> Sequence[Mounted]:
        """The servers it mounts."""

    _registry: Registry
    _handlers: Handlers

    @property
    def _changes(self) -> ServerListener: ...

    @property
    def _methods(self) -> Mapping[str, Callable[[JSONObject, Context], Any]]: ...

    def capabilities(self, revision: Revision) -> JSONObject:
        """The server capabilities."""

    async def handle_request(
        self, method: str, params: JSONObject | None, ctx: Context
    ) -> JSONObject:
        """Serve one request and return its result."""

    def running(self) -> AbstractAsyncContextManager[Any]:
        """Run the server's lifespans around serving."""

    #: the listeners told about list changes and resource updates
    listeners: set[ServerListener]

    def notify_resource_updated(self, uri: str) -> None:
        """Tell every subscribed session that the resource at ``uri`` changed."""

    def tool_output(self, name: str, structured: Any) -> Any:
        """The value tool ``name`` returned, rebuilt from its ``structuredContent``."""

    def _catalog(self) -> Catalog: ...

    def required_scopes(self, method: str, name: str) -> tuple[str, ...]:
        """The scopes a request of ``method`` for ``name`` needs (empty: none known)."""


class Mounted(Protocol):
    """What a composition reads of one of its mounts."""

    @property
    def server(self) -> Composable:
        """The mounted server."""


class ExtensionsView(Protocol):
    """What a composition asks of a server's extensions (``server.extensions``)."""

    @property
    def requests(self) -> Mapping[str, Handler]:
        """The custom request methods of its own extensions, by method."""

    def tree(self) -> Iterator[tuple[Composable, Any]]:
        """Every extension of the server and of the servers it mounts, with its owner."""

    def owner(self, method: str) -> Composable | None:
        """The server whose extension serves request ``method``, if any."""

    def clashes(self, more: Iterable[tuple[Composable, Any]] = ()) -> dict[str, Composable]:
        """Every identifier of the composed server; ExtensionError on a clash."""
