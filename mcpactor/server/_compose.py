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
#   resources/updated reach the parent's sessions through a listener on the child.
#
# The routing table is built from the catalogues (``Server._catalog``) and thrown away
# whenever one of them changes. A name or URI served by two owners is an error naming
# both, raised by ``mount`` and again at start-up (when proxied servers know their
# lists); one that appears while serving (a child registered a tool late) is logged and
# the first owner keeps it — nothing is shadowed silently.
#
# Supervision. ``Composition.running`` is the only place of the server layer that needs
# trio: the plugin subtrees of DESIGN's actor tree. Each child's lifespans are entered in
# a supervisor task of its own, in mount order, and left in reverse. A child whose
# lifespan (or a background task its lifespan started) raises is logged under its name
# and marked failed: its requests get an error naming it, the others keep serving.

from __future__ import annotations

import contextlib
import copy
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from contextlib import asynccontextmanager
from typing import Any, Final, Literal, final

import attrs
import trio

from .._exceptions import INTERNAL_ERROR, INVALID_PARAMS, PluginError, RequestError, SchemaError
from ..protocol import LATEST, JSONObject, Revision, bounded_value, describe
from ._context import Context
from ._dispatch import Composable, method_not_found, method_table, serves_family
from ._registry import Catalog, Listed, ListedTemplate, check_tool_name
from ._uritemplate import UriTemplate

__all__ = ["Composition", "Mount", "MountState", "MountStatistics"]

_log = logging.getLogger("mcpactor")

_PREFIX_CHARS: Final = frozenset(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-"
)

#: where a mounted server is in its life
MountState = Literal["idle", "starting", "running", "failed", "stopped"]


@attrs.frozen
class MountStatistics:
    """A snapshot of one mounted server, for tests, logs and debug output."""

    name: str
    prefix: str | None
    state: MountState
    #: what made it fail, when ``state`` is ``"failed"``
    error: str | None
    #: requests being served by it right now
    calls_in_flight: int
    #: requests waiting for room under ``max_concurrent``
    calls_waiting: int
    #: requests routed to it since it was mounted
    calls_total: int
    max_concurrent: int | None


@final
class Mount:
    """A server mounted in another: its name, prefix, state and limit on concurrent calls."""

    def __init__(
        self, server: Composable, *, name: str, prefix: str | None, max_concurrent: int | None
    ) -> None:
        #: the mounted server
        self.server = server
        #: the name it is known by in logs, errors and statistics
        self.name = name
        #: what its tool and prompt names are prefixed with (joined by ``_``), or None
        self.prefix = prefix
        #: how many of its requests may run at once (None: no limit)
        self.max_concurrent = max_concurrent
        self._limiter = trio.CapacityLimiter(max_concurrent) if max_concurrent else None
        self._state: MountState = "idle"
        self._error: BaseException | None = None
        self._in_flight = 0
        self._calls = 0
        self._down = trio.Event()
        self._down.set()

    def __repr__(self) -> str:
        return f"<Mount {describe(self.name)} of {self.server!r} ({self._state})>"

    @property
    def state(self) -> MountState:
        """Where it is in its life: idle, starting, running, failed or stopped."""
        return self._state

    @property
    def failed(self) -> bool:
        """Whether its lifespan crashed; its requests are refused until it is served again."""
        return self._state == "failed"

    @property
    def error(self) -> BaseException | None:
        """What made it fail, or None."""
        return self._error

    async def wait_down(self) -> None:
        """Wait until its lifespans have ended: it stopped, or it failed."""
        await self._down.wait()

    def expose(self, name: str) -> str:
        """The name a tool or prompt of this server has in the parent."""
        return f"{self.prefix}_{name}" if self.prefix else name

    def statistics(self) -> MountStatistics:
        """Return its state and how busy it is right now."""
        limiter = self._limiter
        return MountStatistics(
            name=self.name,
            prefix=self.prefix,
            state=self._state,
            error=_describe(self._error) if self._error is not None else None,
            calls_in_flight=self._in_flight,
            calls_waiting=limiter.statistics().tasks_waiting if limiter is not None else 0,
            calls_total=self._calls,
            max_concurrent=self.max_concurrent,
        )

    def _context(self, ctx: Context) -> Context:
        """The Context its handlers see for a request the parent received."""
        return Context(
            peer=ctx._peer,
            request_id=ctx.request_id,
            negotiated=ctx.negotiated,
            meta=ctx.meta,
            server=self.server,
        )

    async def _call(self, method: str, params: JSONObject, ctx: Context) -> JSONObject:
        """Serve one request with the mounted server, within its limit.

        Raises:
            RequestError: it has failed, or its handler answered with an error.
        """
        self._check_alive()
        self._calls += 1
        limiter = self._limiter
        # A token per call, not the task: a task may route to the same child twice.
        token = object()
        if limiter is not None:
            await limiter.acquire_on_behalf_of(token)
        try:
            self._check_alive()
            self._in_flight += 1
            try:
                return await self.server.handle_request(method, params, self._context(ctx))
            finally:
                self._in_flight -= 1
        finally:
            if limiter is not None:
                limiter.release_on_behalf_of(token)

    def _check_alive(self) -> None:
        if self._state == "failed":
            assert self._error is not None
            raise RequestError(
                INTERNAL_ERROR,
                f"server {describe(self.name)} has failed ({_describe(self._error)}); "
                "its tools, resources and prompts are unavailable",
                {"server": self.name, "error": _describe(self._error)},
            )

    def _fail(self, exc: BaseException, when: str) -> None:
        self._state = "failed"
        self._error = exc
        _log.error(
            "server %r failed %s and is marked failed; the others keep serving: %s",
            self.name,
            when,
            _describe(exc),
            exc_info=exc,
        )


@attrs.frozen
class _Renamed:
    # A child's tool or prompt under the name the parent exposes it by.
    entry: Listed
    name: str

    def wire(self, revision: Revision) -> JSONObject:
        return {**self.entry.wire(revision), "name": self.name}


@attrs.frozen
class _Route:
    mount: Mount | None  # None: the parent's own
    name: str  # the name the owner knows it by


@attrs.define
class _Table:
    tools: dict[str, _Route] = attrs.Factory(dict)
    prompts: dict[str, _Route] = attrs.Factory(dict)
    resources: dict[str, Mount | None] = attrs.Factory(dict)
    templates: dict[str, Mount | None] = attrs.Factory(dict)
    matchers: list[tuple[UriTemplate, Mount | None]] = attrs.Factory(list)
    listed_tools: dict[str, Listed] = attrs.Factory(dict)
    listed_prompts: dict[str, Listed] = attrs.Factory(dict)
    listed_resources: dict[str, Listed] = attrs.Factory(dict)
    listed_templates: dict[str, ListedTemplate] = attrs.Factory(dict)
    problems: list[str] = attrs.Factory(list)

    def catalog(self) -> Catalog:
        return Catalog(
            self.listed_tools, self.listed_prompts, self.listed_resources, self.listed_templates
        )


class _Forwarder:
    # The parent's ear on one child: its changes become the parent's.

    def __init__(self, composition: Composition) -> None:
        self._composition = composition

    def list_changed(self, kind: str) -> None:
        self._composition.parent._changed(kind)

    def resource_updated(self, uri: str) -> None:
        self._composition.parent.notify_resource_updated(uri)


class Composition:
    """The mounted children of one Server, and how requests reach them."""

    def __init__(self, parent: Composable) -> None:
        self.parent = parent
        self.mounts: list[Mount] = []
        self._forwarder = _Forwarder(self)
        self._table: _Table | None = None
        self._running = False
        # Tasks belong to the session, whichever server's tool started them.
        self._routes: Mapping[str, Callable[[JSONObject, Context], Awaitable[JSONObject]]] = (
            method_table(self, self._own)
        )

    # --- mounting -------------------------------------------------------------------

    def add(
        self,
        server: Composable,
        *,
        prefix: str | None,
        name: str | None,
        max_concurrent: int | None,
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
        mount = Mount(server, name=label, prefix=prefix, max_concurrent=max_concurrent)
        self.mounts.append(mount)
        self._table = None
        table = self._build()
        if table.problems:
            self.mounts.remove(mount)
            self._table = None
            raise PluginError(_problem_report(label, table.problems))
        server.add_listener(self._forwarder)
        self.parent.roots_changed_hooks.append(_RootsHook(mount))
        for kind in ("tools", "resources", "prompts"):
            self.parent._changed(kind)
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
            _merge_into(merged, mount.server.capabilities(revision))
        for kind in ("tools", "resources", "prompts"):
            # Children's changes are relayed, whatever the children said.
            if kind in merged:
                merged[kind]["listChanged"] = True
        return merged

    def _current(self) -> _Table:
        table = self._table
        if table is None:
            table = self._build()
            for problem in table.problems:
                _log.error("%s; the first keeps it", problem)
            self._table = table
        return table

    def _build(self) -> _Table:
        table = _Table()
        parent = self.parent
        self._add_catalog(table, None, parent._own_catalog())
        for mount in self.mounts:
            self._add_catalog(table, mount, mount.server._catalog())
        return table

    def _add_catalog(self, table: _Table, mount: Mount | None, catalog: Catalog) -> None:
        owner = repr(mount.name if mount is not None else self.parent.name)
        for kind, entries, routes, listed in (
            ("tool", catalog.tools, table.tools, table.listed_tools),
            ("prompt", catalog.prompts, table.prompts, table.listed_prompts),
        ):
            for name, entry in entries.items():
                exposed = mount.expose(name) if mount is not None else name
                if kind == "tool":
                    try:
                        check_tool_name(exposed)
                    except SchemaError as exc:
                        table.problems.append(f"tool {describe(name)} of {owner}: {exc}")
                        continue
                taken = routes.get(exposed)
                if taken is not None:
                    table.problems.append(
                        f"{kind} {describe(exposed)} is served twice: by "
                        f"{self._owner(taken.mount)} "
                        f"(its {kind} {describe(taken.name)}) and by {owner} (its {kind} "
                        f"{describe(name)})"
                    )
                    continue
                routes[exposed] = _Route(mount, name)
                listed[exposed] = _Renamed(entry, exposed) if exposed != name else entry
        for uri, resource in catalog.resources.items():
            if uri in table.resources:
                table.problems.append(
                    f"resource {describe(uri)} is served twice: by "
                    f"{self._owner(table.resources[uri])} and by {owner}"
                )
                continue
            table.resources[uri] = mount
            table.listed_resources[uri] = resource
        for uri, template in catalog.templates.items():
            if uri in table.templates:
                table.problems.append(
                    f"resource template {describe(uri)} is served twice: by "
                    f"{self._owner(table.templates[uri])} and by {owner}"
                )
                continue
            table.templates[uri] = mount
            table.listed_templates[uri] = template
            parsed = template.template
            if parsed is not None:
                table.matchers.append((parsed, mount))

    def _owner(self, mount: Mount | None) -> str:
        return repr(mount.name if mount is not None else self.parent.name)

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
            with _single_errors_bare():
                async with trio.open_nursery() as nursery:
                    started: list[tuple[Mount, trio.Event]] = []
                    try:
                        for mount in self.mounts:
                            stop = trio.Event()
                            await nursery.start(self._supervise, mount, stop)
                            started.append((mount, stop))
                        for kind in ("tools", "resources", "prompts"):
                            self.parent._changed(kind)  # drops list pages built before
                        table = self._build()
                        if table.problems:
                            problem = PluginError(_problem_report(None, table.problems))
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

    async def _supervise(
        self,
        mount: Mount,
        stop: trio.Event,
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        mount._state = "starting"
        mount._error = None
        mount._down = trio.Event()
        up = False
        try:
            async with mount.server.running():
                mount._state = "running"
                up = True
                task_status.started()
                await stop.wait()
        except Exception as exc:
            # The supervisor's one job: one child's failure stays that child's.
            when = "while stopping" if stop.is_set() else "while serving"
            mount._fail(exc, when if up else "to start")
        finally:
            if not mount.failed:
                mount._state = "stopped"
            mount._down.set()
        if not up:
            task_status.started()

    # --- dispatch ---------------------------------------------------------------------

    async def handle_request(self, method: str, params: JSONObject, ctx: Context) -> JSONObject:
        """Serve one request of the composed server."""
        route = self._routes.get(method)
        if route is None or not self._serves(method):
            raise method_not_found(method)
        return await route(params, ctx)

    def _serves(self, method: str) -> bool:
        family = method.partition("/")[0]
        table = self._current()
        if serves_family(family, table.tools, table.prompts, table.resources, table.templates):
            return True
        # A proxied server may declare a capability before it lists anything.
        key = "completions" if family == "completion" else family
        return key in self.parent.capabilities(LATEST)

    async def _forward(
        self, mount: Mount | None, method: str, params: JSONObject, ctx: Context
    ) -> JSONObject:
        if mount is None:
            result: JSONObject = await self.parent._methods[method](params, ctx)
            return result
        return await mount._call(method, params, ctx)

    def _page(self, kind: str, params: JSONObject, ctx: Context, entries: Any) -> JSONObject:
        return self.parent._page(kind, ctx.negotiated.revision, params, entries)

    async def _list_tools(self, params: JSONObject, ctx: Context) -> JSONObject:
        return self._page("tools", params, ctx, self._current().listed_tools.values())

    async def _list_prompts(self, params: JSONObject, ctx: Context) -> JSONObject:
        return self._page("prompts", params, ctx, self._current().listed_prompts.values())

    async def _list_resources(self, params: JSONObject, ctx: Context) -> JSONObject:
        return self._page("resources", params, ctx, self._current().listed_resources.values())

    async def _list_templates(self, params: JSONObject, ctx: Context) -> JSONObject:
        templates = self._current().listed_templates.values()
        return self._page("resourceTemplates", params, ctx, templates)

    async def _own(self, method: str, params: JSONObject, ctx: Context) -> JSONObject:
        return await self._forward(None, method, params, ctx)

    async def _call_tool(self, params: JSONObject, ctx: Context) -> JSONObject:
        name = params.get("name")
        route = self._current().tools.get(name) if isinstance(name, str) else None
        if route is None:
            raise RequestError(
                INVALID_PARAMS, f"unknown tool: {describe(name)}", {"name": bounded_value(name)}
            )
        return await self._forward(route.mount, "tools/call", {**params, "name": route.name}, ctx)

    async def _get_prompt(self, params: JSONObject, ctx: Context) -> JSONObject:
        name = params.get("name")
        route = self._current().prompts.get(name) if isinstance(name, str) else None
        if route is None:
            raise RequestError(
                INVALID_PARAMS, f"unknown prompt: {describe(name)}", {"name": bounded_value(name)}
            )
        return await self._forward(route.mount, "prompts/get", {**params, "name": route.name}, ctx)

    def _uri_owner(self, params: JSONObject, ctx: Context) -> Mount | None:
        uri = params.get("uri")
        if not isinstance(uri, str) or not uri:
            raise RequestError(
                INVALID_PARAMS, f"'uri' must be a non-empty string, got {describe(uri)}"
            )
        table = self._current()
        if uri in table.resources:
            return table.resources[uri]
        for template, mount in table.matchers:
            if template.match(uri) is not None:
                return mount
        raise RequestError(
            ctx.negotiated.revision.resource_not_found_code,
            f"resource not found: {describe(uri)}",
            {"uri": bounded_value(uri)},
        )

    async def _read_resource(self, params: JSONObject, ctx: Context) -> JSONObject:
        return await self._forward(self._uri_owner(params, ctx), "resources/read", params, ctx)

    async def _subscribe(self, params: JSONObject, ctx: Context) -> JSONObject:
        mount = self._uri_owner(params, ctx)
        return await self._forward(mount, "resources/subscribe", params, ctx)

    async def _unsubscribe(self, params: JSONObject, ctx: Context) -> JSONObject:
        try:
            mount = self._uri_owner(params, ctx)
        except RequestError as exc:
            if exc.code == INVALID_PARAMS:
                raise
            mount = None  # gone since: forgetting the subscription is all there is to do
        if mount is not None and mount.failed:
            mount = None
        return await self._forward(mount, "resources/unsubscribe", params, ctx)

    async def _complete(self, params: JSONObject, ctx: Context) -> JSONObject:
        ref = params.get("ref")
        table = self._current()
        if isinstance(ref, dict) and ref.get("type") == "ref/prompt":
            name = ref.get("name")
            route = table.prompts.get(name) if isinstance(name, str) else None
            if route is None:
                raise RequestError(
                    INVALID_PARAMS,
                    f"unknown prompt: {describe(name)}",
                    {"name": bounded_value(name)},
                )
            params = {**params, "ref": {**ref, "name": route.name}}
            return await self._forward(route.mount, "completion/complete", params, ctx)
        if isinstance(ref, dict) and ref.get("type") == "ref/resource":
            uri = ref.get("uri")
            owners = (table.templates, table.resources)
            found = next((o for o in owners if isinstance(uri, str) and uri in o), None)
            if found is None:
                raise RequestError(
                    INVALID_PARAMS,
                    f"unknown resource template: {describe(uri)}",
                    {"uri": bounded_value(uri)},
                )
            assert isinstance(uri, str)
            return await self._forward(found[uri], "completion/complete", params, ctx)
        # The parent's own handler explains what is wrong with the request.
        return await self._forward(None, "completion/complete", params, ctx)


class _RootsHook:
    # Runs a child's roots-changed hooks when the parent's client changes its roots.

    def __init__(self, mount: Mount) -> None:
        self._mount = mount

    async def __call__(self, ctx: Context) -> None:
        mount = self._mount
        if mount.failed:
            return
        child_ctx = mount._context(ctx)
        for hook in list(mount.server.roots_changed_hooks):
            try:
                await hook(child_ctx)
            except Exception:
                _log.exception("server %r: roots-changed hook %r failed", mount.name, hook)


def _merge_into(merged: JSONObject, extra: Mapping[str, Any]) -> None:
    # Objects merge key by key, flags are or-ed, anything else keeps the first value.
    for key, value in extra.items():
        current = merged.get(key)
        if isinstance(value, dict) and isinstance(current, dict):
            _merge_into(current, value)
        elif isinstance(value, bool) and isinstance(current, bool):
            merged[key] = current or value
        elif key not in merged:
            merged[key] = copy.deepcopy(value)


def _problem_report(label: str | None, problems: list[str]) -> str:
    head = (
        f"cannot mount {describe(label)}" if label is not None else "the mounted servers collide"
    )
    lines = [head, *(f"  {problem}" for problem in problems)]
    lines.append("  give them different prefixes, or rename one of them")
    return "\n".join(lines)


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for sub in exc.exceptions for leaf in _leaves(sub)]
    return [exc]


def _describe(exc: BaseException) -> str:
    """``Type: message`` of an exception, or of each exception a group holds."""
    return "; ".join(f"{type(leaf).__name__}: {leaf}" for leaf in _leaves(exc))


@contextlib.contextmanager
def _single_errors_bare() -> Iterator[None]:
    # A nursery wraps even a lone exception of the body in a group; whoever is inside
    # ``async with server.running()`` expects to see its own exception come back, be it
    # a group itself. (The supervisors raise nothing, so a lone one is the body's.)
    try:
        yield
    except BaseExceptionGroup as group:
        if len(group.exceptions) != 1:
            raise
        single = group.exceptions[0]
        context = single.__context__
        try:
            raise single
        finally:
            single.__context__ = context
            del single, context
