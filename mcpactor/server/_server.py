# ``Server``: the object users decorate, and the dispatcher the runtime calls.
#
# The Server knows nothing of trio or transports. The runtime hands it one request at a
# time (``handle_request``) with a Context; blocking handlers are run through the
# Context's peer (``run_sync``), so the thread pool and its cancellation stay in the
# runtime.
#
# This module is the Server's own API: identity and capabilities, registration, lifespans,
# mounting and listeners. The work is done by the pieces it is composed of:
#
# - ``Registry`` (_registered.py): the entries registered on it, built by _registration.py
#   from the options of _options.py;
# - ``Handlers`` (_handlers.py): the request handlers its method table (_dispatch.py)
#   names, and the list pages they keep;
# - ``Changes`` (_changes.py): its listening sessions, and what a change invalidates;
# - ``Lifespans`` (_lifespans.py): its lifespans, and the state the first one yields;
# - ``Composition`` (_compose.py), once it mounts another server: then it serves the
#   merged catalogue and routes each request to the owner of what it names.

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import TYPE_CHECKING, Any, Generic, TypeVar, Unpack, overload

from .._exceptions import SchemaError
from ..auth import InsufficientScope
from ..protocol import JSONObject, Revision, describe, unstructure
from ._caching import CacheHint
from ._changes import Changes
from ._context import Context, StateT
from ._dispatch import Handler, ServedMethods, ServerListener, method_table
from ._extension_set import Extensions, serving
from ._handlers import Handlers
from ._lifespans import Lifespans
from ._middleware import MiddlewareChain, refuse_mounted_middleware
from ._options import PromptOptions, ResourceOptions, ToolOptions, check_options, registrar
from ._registered import Registry
from ._registration import completer_context, is_template, prompt_entry, resource_entry, tool_entry
from ._registry import Catalog, TemplateEntry, check_tool_name
from ._scopes import scope_error

if TYPE_CHECKING:
    # Extension values load with the first extension made (_extension_set.py).
    # Composition (``mount``) and URI templates are loaded when a server first uses them.
    from ..protocol import Icon
    from ._compose import Composition, Mount
    from ._extensions import Extension
    from ._transform import ToolTransform

__all__ = ["Server", "ServerListener"]


async def _answer_tasks(method: str, params: JSONObject, ctx: Context[Any]) -> JSONObject:
    # The tasks requests' module (and the tasks extension's wire forms it reads) loads
    # with the first tasks/* request: a session that never sends one does not read it.
    from ._tasks import handle

    return await handle(method, params, ctx)


F = TypeVar("F", bound=Callable[..., Any])
V = TypeVar("V")
S = TypeVar("S")


class _InfoField(Generic[V]):
    """A server attribute ``serverInfo`` is built from: assigning it drops the built ones."""

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = name

    @overload
    def __get__(self, obj: None, owner: type) -> _InfoField[V]: ...
    @overload
    def __get__(self, obj: object, owner: type) -> V: ...
    def __get__(self, obj: object, owner: type) -> Any:
        if obj is None:
            return self
        return obj.__dict__[self._name]

    def __set__(self, obj: object, value: V) -> None:
        state = obj.__dict__
        state[self._name] = value
        built = state.get("_info")
        if built:
            built.clear()


class Server(Generic[StateT]):
    """An MCP server: tools, resources and prompts registered with decorators.

    ``lifespan`` (an async context manager factory, called with the server) is entered
    while the server runs; what it yields is ``server.state`` and ``ctx.state``, and the
    server is a ``Server[State]`` of its type. ``extensions`` are enabled as
    ``server.extensions.enable`` does, in order, once the rest is set.
    """

    # What serverInfo says; assign a new value (a new list of icons) to change it.
    name: _InfoField[str] = _InfoField()
    version: _InfoField[str] = _InfoField()
    title: _InfoField[str | None] = _InfoField()
    description: _InfoField[str | None] = _InfoField()
    website_url: _InfoField[str | None] = _InfoField()
    icons: _InfoField[list[Icon] | None] = _InfoField()

    # Without a lifespan a server's state is None; with one, of the type it yields.
    @overload
    def __init__(
        self: Server[None],
        name: str,
        version: str = "0.1.0",
        *,
        title: str | None = None,
        description: str | None = None,
        instructions: str | None = None,
        website_url: str | None = None,
        icons: Sequence[Icon] | None = None,
        page_size: int = 100,
        tool_timeout: float | None = None,
        cache: CacheHint | None = None,
        hide_unauthorized: bool = False,
        extensions: Iterable[Extension] = (),
        lifespan: None = None,
    ) -> None: ...
    @overload
    def __init__(
        self: Server[S],
        name: str,
        version: str = "0.1.0",
        *,
        title: str | None = None,
        description: str | None = None,
        instructions: str | None = None,
        website_url: str | None = None,
        icons: Sequence[Icon] | None = None,
        page_size: int = 100,
        tool_timeout: float | None = None,
        cache: CacheHint | None = None,
        hide_unauthorized: bool = False,
        extensions: Iterable[Extension] = (),
        lifespan: Callable[[Server[Any]], AbstractAsyncContextManager[S]],
    ) -> None: ...
    def __init__(
        self,
        name: str,
        version: str = "0.1.0",
        *,
        title: str | None = None,
        description: str | None = None,
        instructions: str | None = None,
        website_url: str | None = None,
        icons: Sequence[Icon] | None = None,
        page_size: int = 100,
        tool_timeout: float | None = None,
        cache: CacheHint | None = None,
        hide_unauthorized: bool = False,
        extensions: Iterable[Extension] = (),
        lifespan: Callable[[Server[Any]], AbstractAsyncContextManager[Any]] | None = None,
    ) -> None:
        if page_size < 1:
            raise ValueError(f"page_size must be at least 1, got {describe(page_size)}")
        if tool_timeout is not None and not tool_timeout > 0:
            raise ValueError(
                f"tool_timeout must be positive seconds, got {describe(tool_timeout)}"
            )
        self.name = name
        self.version = version
        self.title = title
        self.description = description
        self.instructions = instructions
        self.website_url = website_url
        self.icons = list(icons) if icons else None
        self.page_size = page_size
        #: seconds a tool may run unless it sets its own ``timeout`` (None: no limit)
        self.tool_timeout = tool_timeout
        if cache is not None and not isinstance(cache, CacheHint):
            raise TypeError(f"cache must be a CacheHint, got {type(cache).__name__}")
        #: the cache hint of cacheable results (lists, reads, discovery) at the revisions
        #: that have them, unless a tool or resource sets its own
        self.cache = cache if cache is not None else CacheHint()
        #: with a principal (HTTP authorization), lists leave out the tools, resources,
        #: templates and prompts whose scopes it lacks; the server answering the list
        #: decides, for what it mounts as well
        self.hide_unauthorized = hide_unauthorized
        # revision's version -> its serverInfo object
        self._info: dict[str, JSONObject] = {}
        #: async callables run with a Context when a client says its roots changed
        self.roots_changed_hooks: list[Callable[[Context], Any]] = []
        #: the servers mounted in this one, in mount order
        self.mounts: tuple[Mount, ...] = ()
        # How requests reach them, once ``mount`` is called.
        self._mounts: Composition | None = None
        self._registry = Registry()
        self._handlers = Handlers(self, self._registry)
        # Core methods, and the custom ones of its extensions as they are enabled.
        self._methods: dict[str, Handler] = method_table(self._handlers, _answer_tasks)
        #: the extensions enabled on it (``enable`` more; iterate; ``in``)
        self.extensions = Extensions(self)
        # The handlers of what it serves now: asked once per method and change.
        self._served = ServedMethods(self._methods, serving(self._registry, self.extensions))
        self._changes = Changes(self._registry, self._handlers, self._served)
        self._lifespans = Lifespans(lifespan)
        #: the ``ServerListener``\ s told about list changes and resource updates: add
        #: one to start telling it, discard it to stop
        self.listeners: set[ServerListener] = self._changes.listeners
        #: the middleware around every request it serves: ``server.middleware.use(layer)``
        #: adds one inside those added before (docs/middleware.md)
        self.middleware = MiddlewareChain()
        # Last: an extension's setup registers on the server as it is built.
        self.extensions.enable(*extensions)

    def __repr__(self) -> str:
        return f"<Server {describe(self.name)} {self.version}>"

    # --- identity and capabilities ----------------------------------------------

    def info(self, revision: Revision) -> JSONObject:
        """The ``serverInfo`` object for ``initialize``, with the fields the revision has.

        The object is shared between calls (every 2026-07-28 result carries it): read it,
        do not change it.
        """
        # Built once per revision (assigning a field drops it): a stateless revision sends
        # it on every result.
        info = self._info.get(revision.version)
        if info is None:
            info = self._info[revision.version] = _server_info(self, revision)
        return info

    def capabilities(self, revision: Revision) -> JSONObject:
        """The server capabilities: exactly what this server serves."""
        capabilities = self._registry.capabilities(revision)
        extensions = self.extensions.capabilities(revision)
        if extensions is not None:
            capabilities["extensions"] = extensions
        if self._mounts is not None:
            return self._mounts.capabilities(revision, capabilities)
        return capabilities

    # --- registration -------------------------------------------------------------

    @overload
    def tool(self, fn: F, /) -> F: ...
    @overload
    def tool(
        self, name: str | None = None, **options: Unpack[ToolOptions]
    ) -> Callable[[F], F]: ...

    def tool(self, name: Any = None, **options: Unpack[ToolOptions]) -> Any:
        """Register a tool; use as ``@server.tool`` or ``@server.tool(name=..., ...)``.

        The input schema comes from the signature unless ``input_schema`` is given (then it
        is sent verbatim and the arguments are passed as keywords). The output schema
        comes from the return annotation when it describes structured data; set
        ``structured_output=False`` to send text only.

        ``task_support`` (``"forbidden"``, ``"optional"``, ``"required"``) says whether
        it may run as a task: in a 2025-11-25 session when the client asks (``task``),
        and at 2026-07-28 (the tasks extension) whenever the request declares the
        extension, a ``required`` tool refusing one that does not. With
        ``task_after_input=True`` such a call first asks in ``input_required`` rounds and
        becomes a task on the retry that brings the answers. A ``def`` tool runs
        in a worker thread; ``offload="process"`` runs it in a worker process that is
        killed on cancellation (the function must be importable by module path).
        ``timeout`` (seconds) cancels the call and answers with an error result; it
        defaults to the server's ``tool_timeout``. The other options (``title``,
        ``description``, ``annotations``, ``icons``, ``meta``, ``output_schema``) go into
        the tool's definition.

        ``cache`` (a ``CacheHint``) is its own hint for ``tools/list`` where lists carry
        hints (a list is as fresh as its stalest tool). A parameter annotated
        ``Annotated[str, Header("Name")]`` is mirrored into the ``Mcp-Param-Name`` HTTP
        header (``x-mcp-header``); invalid declarations are a SchemaError here.

        ``scopes`` (a list of OAuth scope tokens) are what a caller's access token must
        grant to call it, checked over HTTP with authorization: the HTTP layer answers
        403 ``insufficient_scope`` and the dispatcher the -32010 error. Without a
        principal (stdio, no authorization configured) they are not enforced.
        """
        if callable(name):
            return self.tool()(name)
        check_options("tool", ToolOptions, options)
        return registrar(self.add_tool, name=name, **options)

    def add_tool(
        self, fn: Callable[..., Any], *, name: str | None = None, **options: Unpack[ToolOptions]
    ) -> None:
        """Register a tool (the non-decorator form); replaces nothing silently."""
        check_options("add_tool", ToolOptions, options)
        tool_name = name or fn.__name__
        check_tool_name(tool_name)
        tools = self._registry.tools
        if tool_name in tools:
            raise SchemaError(f"tool {describe(tool_name)} is already registered on {self!r}")
        tools[tool_name] = tool_entry(fn, tool_name, options)
        self._changes.list_changed("tools")

    def remove_tool(self, name: str) -> None:
        """Unregister a tool; KeyError if there is none of that name."""
        del self._registry.tools[name]
        self._changes.list_changed("tools")

    def resource(self, uri: str, **options: Unpack[ResourceOptions]) -> Callable[[F], F]:
        """Register a resource at ``uri``, or a template when ``uri`` has ``{variables}``.

        ``cache`` (a ``CacheHint``) is its own hint for its reads and lists, where results
        carry hints; the server's ``cache`` otherwise. ``scopes`` are what a caller's
        token must grant to read it (or, for a template, what it matches), as for tools.
        """
        check_options("resource", ResourceOptions, options)
        return registrar(self.add_resource, uri, **options)

    def add_resource(
        self, fn: Callable[..., Any], uri: str, **options: Unpack[ResourceOptions]
    ) -> None:
        """Register a resource or resource template (the non-decorator form)."""
        check_options("add_resource", ResourceOptions, options)
        registry = self._registry
        resources, templates = registry.resources, registry.templates
        entry = resource_entry(fn, uri, options, resources=resources, templates=templates)
        if isinstance(entry, TemplateEntry):
            templates[uri] = entry
        else:
            resources[uri] = entry
        self._changes.list_changed("resources")

    def remove_resource(self, uri: str) -> None:
        """Unregister a resource or template by its URI; KeyError if there is none."""
        registry = self._registry
        if uri in registry.resources:
            del registry.resources[uri]
        else:
            del registry.templates[uri]
        self._changes.list_changed("resources")

    @overload
    def prompt(self, fn: F, /) -> F: ...
    @overload
    def prompt(
        self, name: str | None = None, **options: Unpack[PromptOptions]
    ) -> Callable[[F], F]: ...

    def prompt(self, name: Any = None, **options: Unpack[PromptOptions]) -> Any:
        """Register a prompt; its parameters are the prompt's (string) arguments.

        ``scopes`` are what a caller's token must grant to get it, as for tools.
        """
        if callable(name):
            return self.prompt()(name)
        check_options("prompt", PromptOptions, options)
        return registrar(self.add_prompt, name=name, **options)

    def add_prompt(
        self, fn: Callable[..., Any], *, name: str | None = None, **options: Unpack[PromptOptions]
    ) -> None:
        """Register a prompt (the non-decorator form)."""
        check_options("add_prompt", PromptOptions, options)
        prompt_name = name or fn.__name__
        prompts = self._registry.prompts
        if prompt_name in prompts:
            raise SchemaError(f"prompt {describe(prompt_name)} is already registered on {self!r}")
        prompts[prompt_name] = prompt_entry(fn, prompt_name, options)
        self._changes.list_changed("prompts")

    def remove_prompt(self, name: str) -> None:
        """Unregister a prompt; KeyError if there is none of that name."""
        del self._registry.prompts[name]
        self._changes.list_changed("prompts")

    def completion(self, ref: str, argument: str) -> Callable[[F], F]:
        """Register the completer for one argument of a prompt or resource template.

        ``ref`` is a prompt name or a URI template. The completer is called as
        ``fn(value, context_arguments)`` (plus a Context parameter if it declares one) and
        returns a list of strings or a Completion.
        """

        def register(fn: F) -> F:
            kind = "ref/resource" if is_template(ref) else "ref/prompt"
            self._registry.completers[(kind, ref, argument)] = (fn, completer_context(fn))
            return fn

        return register

    def lifespan(
        self, fn: Callable[[Server], AbstractAsyncContextManager[Any]]
    ) -> Callable[[Server], AbstractAsyncContextManager[Any]]:
        """Register an async context manager factory entered while the server runs.

        What it yields is not kept: the state handlers read is what the ``lifespan`` given
        to ``Server`` yields, entered before these.
        """
        self._lifespans.others.append(fn)
        return fn

    @property
    def state(self) -> StateT:
        """What the server's ``lifespan`` yielded, while it runs; None without a lifespan.

        A server running more than once at a time (two in-memory clients of it at once)
        enters its lifespan each time; its handlers then see the latest running's state.

        Raises:
            RuntimeError: the server has a lifespan but is not running it.
        """
        state: StateT = self._lifespans.state(self)
        return state

    def on_roots_changed(self, fn: F) -> F:
        """Register ``async fn(ctx)``, run when a client sends roots/list_changed."""
        self.roots_changed_hooks.append(fn)
        return fn

    @asynccontextmanager
    async def running(self) -> AsyncIterator[Server[StateT]]:
        """Enter every lifespan in order (left in reverse) around serving.

        The ``lifespan`` given to ``Server`` comes first, and what it yields is
        ``state`` until it is left. Mounted servers start after this server's own
        lifespans, each supervised in a task of its own (see ``mount``), and stop before
        them.

        Raises:
            ExtensionError: an extension's requirement is not met (before anything
                starts; the message names the extension and what is missing).
        """
        refuse_mounted_middleware(self)
        checked = self.extensions.check()
        try:
            async with self._lifespans.running(self):
                if self._mounts is None:
                    yield self
                else:
                    async with self._mounts.running():
                        yield self
        finally:
            self.extensions.checked(checked)

    # --- composition ------------------------------------------------------------------

    def mount(
        self,
        server: Server,
        prefix: str | None = None,
        *,
        name: str | None = None,
        max_concurrent: int | None = None,
        tools: Mapping[str, ToolTransform] | None = None,
    ) -> Mount:
        """Serve ``server`` as part of this one and return its ``Mount``.

        Its tools and prompts are exposed as ``<prefix>_<name>`` (unchanged without a
        prefix); its resource URIs and templates are unchanged. ``name`` (default: the
        prefix, else the server's name) names it in logs and errors; ``max_concurrent``
        limits how many of its requests run at once. While this server runs, the mounted
        one's lifespans run under supervision: if they fail, only its requests fail.
        ``tools`` maps some of its tool names to a ``ToolTransform``: the tool is exposed
        renamed, redescribed, with other arguments, wrapped or hidden
        (docs/transformations.md).

        Raises:
            PluginError: a name or URI would be served twice (the message names both
                owners), or the prefix or name is unusable.
        """
        if not isinstance(server, Server):
            raise TypeError(f"can only mount a Server, got {type(server).__name__}")
        if self._mounts is None:
            from ._compose import Composition

            self._mounts = self._changes.composition = Composition(self)
        mount = self._mounts.add(
            server, prefix=prefix, name=name, max_concurrent=max_concurrent, tools=tools
        )
        self.mounts = tuple(self._mounts.mounts)
        return mount

    def _catalog(self) -> Catalog:
        # What this server lists (mounted servers included), for a server mounting it.
        if self._mounts is not None:
            return self._mounts.catalog()
        return self._registry.catalog()

    # --- what tools returned, for clients in the same process -------------------------

    def tool_output(self, name: str, structured: Any) -> Any:
        """The value tool ``name`` returned, rebuilt from its ``structuredContent``.

        A tool whose output schema comes from its return annotation gets a value of that
        type back (an attrs class, dataclass or TypedDict; a ``{"result": ...}`` wrapper
        undone). Anything else, a proxied tool or one that does not load, is returned as
        it came. This is what ``ToolResult.data`` of an in-memory client holds.
        """
        if self._mounts is not None:
            return self._mounts.tool_output(name, structured)
        return self._registry.tool_output(name, structured)

    # --- notifications to live sessions -----------------------------------------

    def notify_resource_updated(self, uri: str) -> None:
        """Tell every session subscribed to ``uri`` that the resource changed."""
        self._changes.resource_updated(uri)

    # --- authorization ----------------------------------------------------------------

    def required_scopes(self, method: str, name: str) -> tuple[str, ...]:
        """The scopes a request needs: ``tools/call`` and ``prompts/get`` by name,
        ``resources/read`` (and ``resources/subscribe``) by URI, templates matching.

        Empty for anything else and for names that are not served, so the HTTP layer can
        ask before dispatch and leave the errors to it. Scopes are an HTTP authorization
        feature: nothing checks them where there is no principal.
        """
        if self._mounts is not None:
            return self._mounts.required_scopes(method, name)
        return self._registry.scopes(method, name)

    # --- dispatch -------------------------------------------------------------------

    async def handle_request(
        self, method: str, params: JSONObject | None, ctx: Context
    ) -> JSONObject:
        """Serve one request and return its result.

        Raises:
            RequestError: the request gets this JSON-RPC error.
        """
        if self._mounts is not None:
            return await self._mounts.handle_request(method, params or {}, ctx)
        handler = self._served[method]  # -32601 for a method not served now
        try:
            result: JSONObject = await handler(params or {}, ctx)
        except InsufficientScope as exc:
            # A step-up where no entry is known (a completer): still a refusal for scope.
            raise scope_error(exc.scopes) from None
        return result


def _server_info(server: Server[Any], revision: Revision) -> JSONObject:
    fields = {
        "name": server.name,
        "version": server.version,
        "title": server.title,
        "description": server.description,
        "websiteUrl": server.website_url,
        "icons": unstructure(server.icons),
    }
    allowed = revision.implementation_fields
    return {k: v for k, v in fields.items() if v is not None and k in allowed}
