# ``Server``: the object users decorate, and the dispatcher the runtime calls.
#
# The Server knows nothing of trio or transports. The runtime hands it one request at a
# time (``handle_request``) with a Context; blocking handlers are run through the
# Context's peer (``run_sync``), so the thread pool and its cancellation stay in the
# runtime. Registry changes at run time bump a generation, drop cached list pages and
# tell every listening session (``ServerListener``) so it can send ``list_changed``.

from __future__ import annotations

import functools
import logging
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from typing import TYPE_CHECKING, Any, Final, TypeVar, Unpack, overload

from .._exceptions import INVALID_PARAMS, RequestError, SchemaError, ToolError
from ..protocol import (
    CallToolResult,
    GetPromptResult,
    Icon,
    JSONObject,
    Revision,
    bounded_value,
    clip_all,
    describe,
    describe_error,
    error_text,
    unstructure,
)
from . import _results, _tasks
from ._context import Context
from ._dispatch import ServerListener, method_not_found, method_table, serves_family
from ._execution import HandlerTimeout
from ._options import PromptOptions, ResourceOptions, ToolOptions, check_options, registrar
from ._paging import Pages, paginate
from ._registration import (
    completer_context,
    is_template,
    prompt_entry,
    resource_entry,
    tool_entry,
)
from ._registry import (
    Catalog,
    PromptEntry,
    ResourceEntry,
    TemplateEntry,
    ToolEntry,
    check_tool_name,
    is_async_callable,
    validation_errors,
)

if TYPE_CHECKING:
    # Composition (``mount``) and URI templates are loaded when a server first uses them.
    from ._compose import Composition, Mount

__all__ = ["Server", "ServerListener"]

F = TypeVar("F", bound=Callable[..., Any])

_log = logging.getLogger("mcpactor")

_SKIP_OUTPUT: Final = (*_results.CONTENT_TYPES, CallToolResult, GetPromptResult, bytes)
_RESOURCE_NOT_FOUND: Final = -32002


Completer = Callable[..., Any]


class Server:
    """An MCP server: tools, resources and prompts registered with decorators."""

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
        self._tools: dict[str, ToolEntry] = {}
        # whether some tool may run as a task (cached until the tools change)
        self._task_tools: bool | None = None
        self._resources: dict[str, ResourceEntry] = {}
        self._templates: dict[str, TemplateEntry] = {}
        self._prompts: dict[str, PromptEntry] = {}
        # (kind, ref, argument) -> (completer, its Context parameter or None)
        self._completers: dict[tuple[str, str, str], tuple[Completer, str | None]] = {}
        self._listeners: set[ServerListener] = set()
        # The servers mounted in this one, once ``mount`` is called.
        self._mounts: Composition | None = None
        self._pages: Pages = {}
        self._lifespans: list[Callable[[Server], AbstractAsyncContextManager[Any]]] = []
        #: async callables run with a Context when a client says its roots changed
        self.roots_changed_hooks: list[Callable[[Context], Any]] = []
        self._methods: Mapping[str, Callable[[JSONObject, Context], Any]] = method_table(
            self, _tasks.handle
        )

    def __repr__(self) -> str:
        return f"<Server {describe(self.name)} {self.version}>"

    # --- identity and capabilities ----------------------------------------------

    def info(self, revision: Revision) -> JSONObject:
        """The ``serverInfo`` object for ``initialize``, with the fields the revision has."""
        fields = {
            "name": self.name,
            "version": self.version,
            "title": self.title,
            "description": self.description,
            "websiteUrl": self.website_url,
            "icons": unstructure(self.icons),
        }
        allowed = revision.implementation_fields
        return {k: v for k, v in fields.items() if v is not None and k in allowed}

    def capabilities(self, revision: Revision) -> JSONObject:
        """The server capabilities: exactly what this server serves."""
        capabilities: JSONObject = {"logging": {}}
        if self._tools:
            capabilities["tools"] = {"listChanged": True}
        if self._resources or self._templates:
            capabilities["resources"] = {"subscribe": True, "listChanged": True}
        if self._prompts:
            capabilities["prompts"] = {"listChanged": True}
        if revision.completions_capability and (self._prompts or self._templates):
            capabilities["completions"] = {}
        if revision.tasks and self._offers_tasks():
            capabilities["tasks"] = _tasks.tasks_capability()
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
        2025-11-25 clients may call it as a task. A ``def`` tool runs in a worker thread;
        ``offload="process"`` runs it in a worker process that is killed on cancellation
        (the function must be importable by module path). ``timeout`` (seconds) cancels
        the call and answers with an error result; it defaults to the server's
        ``tool_timeout``. The other options (``title``, ``description``, ``annotations``,
        ``icons``, ``meta``, ``output_schema``) go into the tool's definition.
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
        if tool_name in self._tools:
            raise SchemaError(f"tool {describe(tool_name)} is already registered on {self!r}")
        self._tools[tool_name] = tool_entry(fn, tool_name, options)
        self._changed("tools")

    def remove_tool(self, name: str) -> None:
        """Unregister a tool; KeyError if there is none of that name."""
        del self._tools[name]
        self._changed("tools")

    def resource(self, uri: str, **options: Unpack[ResourceOptions]) -> Callable[[F], F]:
        """Register a resource at ``uri``, or a template when ``uri`` has ``{variables}``."""
        check_options("resource", ResourceOptions, options)
        return registrar(self.add_resource, uri, **options)

    def add_resource(
        self, fn: Callable[..., Any], uri: str, **options: Unpack[ResourceOptions]
    ) -> None:
        """Register a resource or resource template (the non-decorator form)."""
        check_options("add_resource", ResourceOptions, options)
        entry = resource_entry(
            fn, uri, options, resources=self._resources, templates=self._templates
        )
        if isinstance(entry, TemplateEntry):
            self._templates[uri] = entry
        else:
            self._resources[uri] = entry
        self._changed("resources")

    def remove_resource(self, uri: str) -> None:
        """Unregister a resource or template by its URI; KeyError if there is none."""
        if uri in self._resources:
            del self._resources[uri]
        else:
            del self._templates[uri]
        self._changed("resources")

    @overload
    def prompt(self, fn: F, /) -> F: ...
    @overload
    def prompt(
        self, name: str | None = None, **options: Unpack[PromptOptions]
    ) -> Callable[[F], F]: ...

    def prompt(self, name: Any = None, **options: Unpack[PromptOptions]) -> Any:
        """Register a prompt; its parameters are the prompt's (string) arguments."""
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
        if prompt_name in self._prompts:
            raise SchemaError(f"prompt {describe(prompt_name)} is already registered on {self!r}")
        self._prompts[prompt_name] = prompt_entry(fn, prompt_name, options)
        self._changed("prompts")

    def remove_prompt(self, name: str) -> None:
        """Unregister a prompt; KeyError if there is none of that name."""
        del self._prompts[name]
        self._changed("prompts")

    def completion(self, ref: str, argument: str) -> Callable[[F], F]:
        """Register the completer for one argument of a prompt or resource template.

        ``ref`` is a prompt name or a URI template. The completer is called as
        ``fn(value, context_arguments)`` (plus a Context parameter if it declares one) and
        returns a list of strings or a Completion.
        """

        def register(fn: F) -> F:
            kind = "ref/resource" if is_template(ref) else "ref/prompt"
            self._completers[(kind, ref, argument)] = (fn, completer_context(fn))
            return fn

        return register

    def lifespan(
        self, fn: Callable[[Server], AbstractAsyncContextManager[Any]]
    ) -> Callable[[Server], AbstractAsyncContextManager[Any]]:
        """Register an async context manager factory entered while the server runs."""
        self._lifespans.append(fn)
        return fn

    def on_roots_changed(self, fn: F) -> F:
        """Register ``async fn(ctx)``, run when a client sends roots/list_changed."""
        self.roots_changed_hooks.append(fn)
        return fn

    @asynccontextmanager
    async def running(self) -> AsyncIterator[Server]:
        """Enter every lifespan in order (left in reverse) around serving.

        Mounted servers start after this server's own lifespans, each supervised in a task
        of its own (see ``mount``), and stop before them.
        """
        async with _enter_all([factory(self) for factory in self._lifespans]):
            if self._mounts is None:
                yield self
            else:
                async with self._mounts.running():
                    yield self

    # --- composition ------------------------------------------------------------------

    def mount(
        self,
        server: Server,
        prefix: str | None = None,
        *,
        name: str | None = None,
        max_concurrent: int | None = None,
    ) -> Mount:
        """Serve ``server`` as part of this one and return its ``Mount``.

        Its tools and prompts are exposed as ``<prefix>_<name>`` (unchanged without a
        prefix); its resource URIs and templates are unchanged. ``name`` (default: the
        prefix, else the server's name) names it in logs and errors; ``max_concurrent``
        limits how many of its requests run at once. While this server runs, the mounted
        one's lifespans run under supervision: if they fail, only its requests fail.

        Raises:
            PluginError: a name or URI would be served twice (the message names both
                owners), or the prefix or name is unusable.
        """
        if not isinstance(server, Server):
            raise TypeError(f"can only mount a Server, got {type(server).__name__}")
        if self._mounts is None:
            from ._compose import Composition

            self._mounts = Composition(self)
        return self._mounts.add(server, prefix=prefix, name=name, max_concurrent=max_concurrent)

    @property
    def mounts(self) -> tuple[Mount, ...]:
        """The servers mounted in this one, in mount order."""
        return tuple(self._mounts.mounts) if self._mounts is not None else ()

    def _catalog(self) -> Catalog:
        # What this server lists (mounted servers included), for a server mounting it.
        if self._mounts is not None:
            return self._mounts.catalog()
        return self._own_catalog()

    def _own_catalog(self) -> Catalog:
        # Only what is registered on this server itself, for its composition.
        return Catalog(self._tools, self._prompts, self._resources, self._templates)

    # --- notifications to live sessions -----------------------------------------

    def add_listener(self, listener: ServerListener) -> None:
        """Start telling ``listener`` about list changes and resource updates."""
        self._listeners.add(listener)

    def remove_listener(self, listener: ServerListener) -> None:
        """Stop telling ``listener``; missing listeners are ignored."""
        self._listeners.discard(listener)

    def notify_resource_updated(self, uri: str) -> None:
        """Tell every session subscribed to ``uri`` that the resource changed."""
        for listener in list(self._listeners):
            listener.resource_updated(uri)

    def _changed(self, kind: str) -> None:
        if kind == "tools":
            self._task_tools = None
        if self._mounts is not None:
            self._mounts.invalidate()
        for key in [key for key in self._pages if key[0] == kind or kind == "resources"]:
            del self._pages[key]
        for listener in list(self._listeners):
            listener.list_changed(kind)

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
        handler = self._methods.get(method)
        if handler is None or not self._serves(method):
            raise method_not_found(method)
        result: JSONObject = await handler(params or {}, ctx)
        return result

    def _serves(self, method: str) -> bool:
        family = method.partition("/")[0]
        if family == "tasks":
            return self._offers_tasks()
        return serves_family(family, self._tools, self._prompts, self._resources, self._templates)

    def _offers_tasks(self) -> bool:
        if self._task_tools is None:
            self._task_tools = any(
                tool.execution.task_support != "forbidden" for tool in self._tools.values()
            )
        return self._task_tools

    async def _invoke(
        self, fn: Callable[..., Any], is_async: bool, kwargs: dict[str, Any], ctx: Context
    ) -> Any:
        if is_async:
            return await fn(**kwargs)
        return await ctx._peer.run_sync(functools.partial(fn, **kwargs))

    async def _invoke_tool(self, tool: ToolEntry, kwargs: dict[str, Any], ctx: Context) -> Any:
        execution = tool.execution
        timeout = execution.timeout if execution.timeout is not None else self.tool_timeout
        if execution.offload is None and timeout is None:
            return await self._invoke(tool.fn, tool.is_async, kwargs, ctx)
        # Deadlines and worker processes need the event loop: the runtime runs those.
        offload = execution.offload_for(tool.is_async)
        return await ctx._peer.call(tool.fn, kwargs, offload=offload, timeout=timeout)

    # tools

    async def _list_tools(self, params: JSONObject, ctx: Context) -> JSONObject:
        return self._page("tools", ctx.negotiated.revision, params, self._tools.values())

    async def _call_tool(self, params: JSONObject, ctx: Context) -> JSONObject:
        name = params.get("name")
        tool = self._tools.get(name) if isinstance(name, str) else None
        if tool is None:
            raise RequestError(
                INVALID_PARAMS, f"unknown tool: {describe(name)}", {"name": bounded_value(name)}
            )
        task = _tasks.requested_task(
            params,
            tool=tool.name,
            support=tool.execution.task_support,
            revision=ctx.negotiated.revision,
            offered=self._offers_tasks(),
        )
        if task is not None:
            # Answered at once with a CreateTaskResult; the call runs on as a task.
            return await ctx._peer.tasks.create(
                functools.partial(self._run_tool, tool, params), ctx, task
            )
        return await self._run_tool(tool, params, ctx)

    async def _run_tool(self, tool: ToolEntry, params: JSONObject, ctx: Context) -> JSONObject:
        name = tool.name
        arguments = params.get("arguments")
        if arguments is None:
            arguments = {}
        elif type(arguments) is not dict:
            raise RequestError(
                INVALID_PARAMS, f"tool {describe(name)}: 'arguments' must be an object"
            )
        revision = ctx.negotiated.revision
        errors = validation_errors(tool.input_validator, arguments)
        if errors:
            message = f"invalid arguments for tool {describe(name)}: " + "; ".join(
                f"{e['path']}: {e['message']}" for e in errors
            )
            if revision.input_errors_in_result:
                return _results.error_result(message)
            raise RequestError(INVALID_PARAMS, message, {"tool": name, "errors": errors})
        kwargs = tool.signature.bind(arguments) if tool.binds_arguments else dict(arguments)
        if tool.context_param is not None:
            kwargs[tool.context_param] = ctx
        try:
            value = await self._invoke_tool(tool, kwargs, ctx)
        except ToolError as exc:
            # The tool's own words, unclipped; only a str() that cannot finish is replaced.
            return _results.error_result(error_text(exc, None))
        except HandlerTimeout as exc:
            return _results.error_result(
                f"tool {describe(name)} timed out after {exc.timeout:g} s"
            )
        except RequestError:
            raise
        except Exception as exc:
            _log.exception("tool %r failed", name)
            return _results.error_result(f"tool {describe(name)} failed: {describe_error(exc)}")
        structured = None
        if tool.output_validator is not None and not isinstance(value, CallToolResult):
            structured = tool.signature.structure_output(value)
            errors = validation_errors(tool.output_validator, structured)
            if errors:
                _log.error(
                    "tool %r returned output that breaks its outputSchema: %s", name, errors
                )
                return _results.error_result(
                    f"tool {describe(name)} returned output that does not match its outputSchema: "
                    + "; ".join(f"{e['path']}: {e['message']}" for e in errors)
                )
        result = _results.tool_result(
            value, structured, has_output_schema=tool.output_validator is not None
        )
        return _results.adapt_tool_result(result, revision)

    # resources

    async def _list_resources(self, params: JSONObject, ctx: Context) -> JSONObject:
        return self._page("resources", ctx.negotiated.revision, params, self._resources.values())

    async def _list_templates(self, params: JSONObject, ctx: Context) -> JSONObject:
        return self._page(
            "resourceTemplates", ctx.negotiated.revision, params, self._templates.values()
        )

    def _find_resource(
        self, uri: str
    ) -> tuple[ResourceEntry | TemplateEntry, dict[str, Any]] | None:
        entry = self._resources.get(uri)
        if entry is not None:
            return entry, {}
        for template in self._templates.values():
            values = template.template.match(uri)
            if values is not None:
                return template, template.arguments(values)
        return None

    def _resource_uri(self, params: JSONObject) -> str:
        uri = params.get("uri")
        if not isinstance(uri, str) or not uri:
            raise RequestError(
                INVALID_PARAMS, f"'uri' must be a non-empty string, got {describe(uri)}"
            )
        return uri

    async def _read_resource(self, params: JSONObject, ctx: Context) -> JSONObject:
        uri = self._resource_uri(params)
        found = self._find_resource(uri)
        if found is None:
            raise RequestError(
                ctx.negotiated.revision.resource_not_found_code,
                f"resource not found: {describe(uri)}",
                {"uri": bounded_value(uri)},
            )
        entry, kwargs = found
        if entry.context_param is not None:
            kwargs[entry.context_param] = ctx
        value = await self._invoke(entry.fn, entry.is_async, kwargs, ctx)
        contents = _results.to_resource_contents(value, uri, entry.mime_type)
        return {"contents": contents}

    async def _subscribe(self, params: JSONObject, ctx: Context) -> JSONObject:
        uri = self._resource_uri(params)
        if self._find_resource(uri) is None:
            raise RequestError(
                ctx.negotiated.revision.resource_not_found_code,
                f"resource not found: {describe(uri)}",
                {"uri": bounded_value(uri)},
            )
        ctx._peer.subscribe(uri)
        return {}

    async def _unsubscribe(self, params: JSONObject, ctx: Context) -> JSONObject:
        ctx._peer.unsubscribe(self._resource_uri(params))
        return {}

    # prompts

    async def _list_prompts(self, params: JSONObject, ctx: Context) -> JSONObject:
        return self._page("prompts", ctx.negotiated.revision, params, self._prompts.values())

    async def _get_prompt(self, params: JSONObject, ctx: Context) -> JSONObject:
        name = params.get("name")
        prompt = self._prompts.get(name) if isinstance(name, str) else None
        if prompt is None:
            raise RequestError(
                INVALID_PARAMS, f"unknown prompt: {describe(name)}", {"name": bounded_value(name)}
            )
        arguments = params.get("arguments") or {}
        if not isinstance(arguments, dict) or not all(
            isinstance(v, str) for v in arguments.values()
        ):
            raise RequestError(
                INVALID_PARAMS, f"prompt {describe(name)}: 'arguments' must map names to strings"
            )
        missing = sorted(prompt.required - arguments.keys())
        if missing:
            raise RequestError(
                INVALID_PARAMS,
                f"prompt {describe(name)}: missing required arguments {missing}",
                {"missing": missing},
            )
        unknown = sorted(arguments.keys() - prompt.binder.coercers.keys())
        if unknown:
            raise RequestError(
                INVALID_PARAMS,
                f"prompt {describe(name)}: unknown arguments {describe(unknown)}",
                {"unknown": clip_all(unknown)},
            )
        kwargs = prompt.binder.bind(arguments)
        if prompt.context_param is not None:
            kwargs[prompt.context_param] = ctx
        value = await self._invoke(prompt.fn, prompt.is_async, kwargs, ctx)
        result = _results.to_prompt_result(value, prompt.definition.get("description"))
        revision = ctx.negotiated.revision
        for message in result["messages"]:
            message["content"] = _results.adapt_content([message["content"]], revision)[0]
        return result

    # completion

    async def _complete(self, params: JSONObject, ctx: Context) -> JSONObject:
        ref = params.get("ref")
        argument = params.get("argument")
        if not isinstance(ref, dict) or not isinstance(argument, dict):
            raise RequestError(
                INVALID_PARAMS, "completion/complete needs 'ref' and 'argument' objects"
            )
        kind = ref.get("type")
        key = ref.get("name") if kind == "ref/prompt" else ref.get("uri")
        arg_name = argument.get("name")
        value = argument.get("value", "")
        if not isinstance(key, str) or not isinstance(arg_name, str) or not isinstance(value, str):
            raise RequestError(
                INVALID_PARAMS,
                "completion/complete: ref name/uri and argument name/value must be strings",
            )
        if kind == "ref/prompt":
            if key not in self._prompts:
                raise RequestError(
                    INVALID_PARAMS,
                    f"unknown prompt: {describe(key)}",
                    {"name": bounded_value(key)},
                )
        elif kind == "ref/resource":
            if key not in self._templates and key not in self._resources:
                raise RequestError(
                    INVALID_PARAMS,
                    f"unknown resource template: {describe(key)}",
                    {"uri": bounded_value(key)},
                )
        else:
            raise RequestError(INVALID_PARAMS, f"unknown reference type {describe(kind)}")
        context = params.get("context")
        context_args = context.get("arguments") if isinstance(context, dict) else None
        context_args = context_args if isinstance(context_args, dict) else {}
        found = self._completers.get((kind, key, arg_name))
        if found is not None:
            completer, context_param = found
            extra = {context_param: ctx} if context_param is not None else {}
            call = functools.partial(completer, value, context_args, **extra)
            answer = await self._invoke(call, is_async_callable(completer), {}, ctx)
        else:
            prompt = self._prompts.get(key) if kind == "ref/prompt" else None
            options = prompt.choices.get(arg_name, ()) if prompt is not None else ()
            answer = [option for option in options if option.startswith(value)]
        return {"completion": _results.completion_result(answer)}

    # pagination

    def _page(self, kind: str, revision: Revision, params: JSONObject, entries: Any) -> JSONObject:
        return paginate(self._pages, kind, revision, params, entries, self.page_size)


@asynccontextmanager
async def _enter_all(managers: list[AbstractAsyncContextManager[Any]]) -> AsyncIterator[None]:
    async with AsyncExitStack() as stack:
        for manager in managers:
            await stack.enter_async_context(manager)
        yield
