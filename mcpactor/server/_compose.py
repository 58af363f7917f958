# Composition: several Servers served as one (``Server.mount``).
#
# A parent Server mounts children; each child is a ``Mount`` with a name (for logs and
# errors), an optional prefix, a state and an optional limit on concurrent calls. The
# parent answers the list requests from one merged catalogue and sends every other
# request to the owner of the name or URI it carries:
#
# - tools and prompts are exposed as ``<prefix>_<name>`` (or as they are, without a
#   prefix); the owner receives the request with its own name;
# - resource URIs and templates are never rewritten: a read, a subscription or a
#   completion goes to the owner of the exact URI, else of the first template matching
#   it (the parent's own first, then the children in mount order);
# - capabilities are the union of everyone's; a child's list_changed and
#   resources/updated reach the parent's sessions through a listener on the child (the
#   parent's ``Changes``).
#
# The request handlers that forward are in _routed.py. The routing table (_routing.py)
# is built from the catalogues (``Server._catalog``) and thrown away whenever one of
# them changes. A name or URI served by two owners is an error naming both, raised by
# ``mount`` and again at start-up (when proxied servers know their lists); one that
# appears while serving (a child registered a tool late) is logged and the first owner
# keeps it — nothing is shadowed silently.
#
# Supervision. ``Composition.running`` starts each child's supervisor (_mount.py, where
# a ``Mount`` and its state live) in mount order and stops them in reverse. A child whose
# lifespan raises is marked failed: its requests get an error naming it, the others keep
# serving.

from __future__ import annotations

import copy
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any, Final

import trio

from .._exceptions import PluginError
from ..auth import InsufficientScope
from ..protocol import LATEST, JSONObject, Revision, describe
from ._context import Context
from ._dispatch import Composable, method_not_found, method_table
from ._mount import Mount, MountState, MountStatistics, RootsHook, single_errors_bare, supervise
from ._registered import serves_family
from ._registry import Catalog
from ._routed import RoutedHandlers
from ._routing import Table, build_table, merge_into, problem_report
from ._scopes import scope_error
from ._transform import ToolTransform

__all__ = ["Composition", "Mount", "MountState", "MountStatistics"]

_log = logging.getLogger("mcpactor")

# No template matches the URI (a mount of None is the parent's own).
_NOWHERE: Final[Any] = object()

_PREFIX_CHARS: Final = frozenset(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-"
)


class Composition:
    """The mounted children of one Server, and how requests reach them."""

    def __init__(self, parent: Composable) -> None:
        self.parent = parent
        self.mounts: list[Mount] = []
        self._table: Table | None = None
        self._running = False
        handlers = RoutedHandlers(parent, self._current)
        # Tasks belong to the session, whichever server's tool started them.
        self._routes: Mapping[str, Callable[[JSONObject, Context], Awaitable[JSONObject]]] = (
            method_table(handlers, handlers.own)
        )

    # --- mounting -------------------------------------------------------------------

    def add(
        self,
        server: Composable,
        *,
        prefix: str | None,
        name: str | None,
        max_concurrent: int | None,
        tools: Mapping[str, ToolTransform] | None = None,
    ) -> Mount:
        """Mount ``server``; PluginError if it cannot be (bad prefix, name clash)."""
        label = name or prefix or server.name
        if server is self.parent:
            raise PluginError(f"cannot mount {server!r} in itself")
        for mount in self.mounts:
            if mount.server is server:
                raise PluginError(f"{server!r} is already mounted as {describe(mount.name)}")
            if mount.name == label:
                raise PluginError(
                    f"two servers mounted as {describe(label)}: {mount.server!r} and {server!r}; "
                    "give one another name or prefix"
                )
        if prefix is not None and (not prefix or not set(prefix) <= _PREFIX_CHARS):
            raise PluginError(
                f"invalid prefix {describe(prefix)} for {describe(label)}: "
                "use characters from A-Z, a-z, 0-9, '_', '-', '.'"
            )
        if max_concurrent is not None and max_concurrent < 1:
            raise PluginError(
                f"max_concurrent of {describe(label)} must be at least 1, got "
                f"{describe(max_concurrent)}"
            )
        if self._running:
            raise PluginError(
                f"cannot mount {describe(label)}: {self.parent!r} is already serving"
            )
        for tool, transform in (tools or {}).items():
            if not isinstance(transform, ToolTransform):
                raise PluginError(
                    f"tools[{describe(tool)}] of {describe(label)}: expected a ToolTransform, "
                    f"got {type(transform).__name__}"
                )
        mount = Mount(
            server, name=label, prefix=prefix, max_concurrent=max_concurrent, tools=tools
        )
        self.mounts.append(mount)
        self._table = None
        table = build_table(self.parent, self.mounts)
        if table.problems:
            self.mounts.remove(mount)
            self._table = None
            raise PluginError(problem_report(label, table.problems))
        try:
            self.parent.extensions.clashes(server.extensions.tree())
        except PluginError:
            self.mounts.remove(mount)
            self._table = None
            raise
        # The parent hears the child's changes as its own.
        server.listeners.add(self.parent._changes)
        self.parent.roots_changed_hooks.append(RootsHook(mount))
        for kind in ("tools", "resources", "prompts"):
            self.parent._changes.list_changed(kind)
        return mount

    def invalidate(self) -> None:
        """Forget the routing table; the next request builds it again."""
        self._table = None

    # --- the merged view --------------------------------------------------------------

    def catalog(self) -> Catalog:
        """The parent's catalogue: its own entries and its children's, renamed."""
        return self._current().catalog()

    def capabilities(self, revision: Revision, own: JSONObject) -> JSONObject:
        """The union of the parent's capabilities (``own``) and every child's."""
        merged: JSONObject = copy.deepcopy(own)
        for mount in self.mounts:
            merge_into(merged, mount.server.capabilities(revision))
        for kind in ("tools", "resources", "prompts"):
            # Children's changes are relayed, whatever the children said.
            if kind in merged:
                merged[kind]["listChanged"] = True
        return merged

    def _current(self) -> Table:
        table = self._table
        if table is None:
            table = build_table(self.parent, self.mounts)
            for problem in table.problems:
                _log.error("%s; the first keeps it", problem)
            self._table = table
        return table

    # --- supervision ------------------------------------------------------------------

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Start every child (in mount order) under supervision; stop them in reverse.

        Raises:
            PluginError: once the children have started, two of them serve the same name
                or URI (a proxied server's lists are known only now).
        """
        if self._running:
            raise RuntimeError(f"{self.parent!r} is already serving")
        self._running = True
        problem: PluginError | None = None
        try:
            with single_errors_bare():
                async with trio.open_nursery() as nursery:
                    started: list[tuple[Mount, trio.Event]] = []
                    try:
                        for mount in self.mounts:
                            stop = trio.Event()
                            await nursery.start(supervise, mount, stop)
                            started.append((mount, stop))
                        for kind in ("tools", "resources", "prompts"):
                            self.parent._changes.list_changed(kind)  # drops pages built before
                        table = build_table(self.parent, self.mounts, started=True)
                        if table.problems:
                            problem = PluginError(problem_report(None, table.problems))
                        else:
                            self._table = table
                            yield
                    finally:
                        for mount, stop in reversed(started):
                            stop.set()
                            await mount.wait_down()
        finally:
            self._running = False
        if problem is not None:
            raise problem

    # --- dispatch ---------------------------------------------------------------------

    async def handle_request(self, method: str, params: JSONObject, ctx: Context) -> JSONObject:
        """Serve one request of the composed server."""
        route = self._routes.get(method)
        if route is None:
            return await self._custom(method, params, ctx)
        if not self._serves(method):
            raise method_not_found(method)
        try:
            return await route(params, ctx)
        except InsufficientScope as exc:
            # The parent's own completer asked for more (its other handlers say so).
            raise scope_error(exc.scopes) from None

    async def _custom(self, method: str, params: JSONObject, ctx: Context) -> JSONObject:
        # An extension's method: the parent's own, else the mount whose tree serves it.
        parent = self.parent
        if method in parent.extensions.requests:
            result: JSONObject = await parent._methods[method](params, ctx)
            return result
        for mount in self.mounts:
            if mount.server.extensions.owner(method) is not None:
                return await mount._call(method, params, ctx)
        raise method_not_found(method)

    def _serves(self, method: str) -> bool:
        family = method.partition("/")[0]
        table = self._current()
        if serves_family(family, table.tools, table.prompts, table.resources, table.templates):
            return True
        # A proxied server may declare a capability before it lists anything.
        key = "completions" if family == "completion" else family
        return key in self.parent.capabilities(LATEST)

    def required_scopes(self, method: str, name: str) -> tuple[str, ...]:
        """The scopes a request needs, asked of the owner of its name or URI."""
        if type(name) is not str:
            return ()
        table = self._current()
        if method == "tools/call" or method == "prompts/get":
            routes = table.tools if method == "tools/call" else table.prompts
            route = routes.get(name)
            if route is None:
                return ()
            if route.mount is None:
                return self.parent._registry.scopes(method, route.name)
            return route.mount.server.required_scopes(method, route.name)
        if method == "resources/read" or method == "resources/subscribe":
            if name in table.resources:
                owner = table.resources[name]
            else:
                matching = (m for t, m in table.matchers if t.match(name) is not None)
                found = next(matching, _NOWHERE)
                if found is _NOWHERE:
                    return ()
                owner = found
            if owner is None:
                return self.parent._registry.scopes(method, name)
            return owner.server.required_scopes(method, name)
        return ()

    def tool_output(self, name: str, structured: Any) -> Any:
        """The value a tool returned, rebuilt by the server that owns it."""
        route = self._current().tools.get(name)
        if route is None:
            return structured
        if route.mount is None:
            return self.parent._registry.tool_output(route.name, structured)
        changed = route.transform.transform if route.transform is not None else None
        if changed is not None and (changed.after or changed.output_schema):
            return structured  # no longer what the original's annotation describes
        return route.mount.server.tool_output(route.name, structured)
