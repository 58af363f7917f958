# The request handlers of a Server: a method's params and Context in, its result out.
#
# ``Handlers`` holds one method per entry of ``_dispatch.HANDLERS`` (the Server builds its
# method table from those names) and what they share: running an entry's function
# (awaited, or through the Context's peer in a worker thread or process, with its
# deadline), shaping its result (_results.py) and paging the lists (_paging.py, with the
# pages it keeps until the lists change). They read the Server's ``Registry`` and, for
# the settings an author may change at any time, the Server itself.

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any, Final, Protocol

import orjson
import trio

from .._exceptions import INVALID_PARAMS, CapabilityError, RequestError, ToolError
from ..auth import InsufficientScope, Principal
from ..protocol import (
    MISSING_CLIENT_CAPABILITY,
    CallToolResult,
    JSONObject,
    ResourceSubscriptions,
    Revision,
    bounded_value,
    clip_all,
    describe,
    describe_error,
    error_text,
)
from . import _results, _tasks
from ._context import Context
from ._execution import HandlerTimeout
from ._paging import Pages, paginate
from ._registered import Registry
from ._registry import (
    PromptEntry,
    ResourceEntry,
    TemplateEntry,
    ToolEntry,
    is_async_callable,
    validation_errors,
)
from ._rounds import InputNeeded, check_returned
from ._scopes import check_scopes, merged, scope_error, scopes_of
from ._validation import SchemaValidator

__all__ = ["Handlers", "Settings"]

#: list views kept per set of granted scopes (hiding lists); more are built afresh
_SCOPED_VIEWS: Final = 64

_log = logging.getLogger("mcpactor")


class Settings(Protocol):
    """What the handlers read of their Server on each request (authors may change it)."""

    page_size: int
    tool_timeout: float | None
    #: whether lists leave out what the caller's principal may not call
    hide_unauthorized: bool


class Handlers:
    """The request handlers of one Server, by the names the method table gives them."""

    def __init__(self, settings: Settings, registry: Registry) -> None:
        self._settings = settings
        self._registry = registry
        # The registry's own dicts, read on every request.
        self._tools = registry.tools
        self._resources = registry.resources
        self._templates = registry.templates
        self._prompts = registry.prompts
        self._pages: Pages = {}
        # The pages of hiding lists, by the scopes (of those the entries need) a caller has.
        self._scoped_pages: dict[frozenset[str], Pages] = {}

    @staticmethod
    def resource_uri(params: JSONObject) -> str:
        """The ``uri`` of a resource request; -32602 unless it is a non-empty string."""
        uri = params.get("uri")
        if not isinstance(uri, str) or not uri:
            raise RequestError(
                INVALID_PARAMS, f"'uri' must be a non-empty string, got {describe(uri)}"
            )
        return uri

    def forget_pages(self, kind: str) -> None:
        """Drop the list pages built from ``kind`` (a resource change drops them all)."""
        self._scoped_pages.clear()
        for key in [key for key in self._pages if key[0] == kind or kind == "resources"]:
            del self._pages[key]

    async def _invoke(
        self, fn: Callable[..., Any], is_async: bool, kwargs: dict[str, Any], ctx: Context
    ) -> Any:
        if is_async:
            return await fn(**kwargs)
        return await ctx._peer.run_sync(functools.partial(fn, **kwargs))

    async def _invoke_scoped(
        self,
        entry: ResourceEntry | TemplateEntry | PromptEntry,
        kwargs: dict[str, Any],
        ctx: Context,
    ) -> Any:
        try:
            return await self._invoke(entry.fn, entry.is_async, kwargs, ctx)
        except InsufficientScope as exc:
            # A step-up (ctx.require_scopes): the same error as the backstop's.
            raise scope_error(merged(entry.scopes, exc)) from None

    async def _invoke_tool(self, tool: ToolEntry, kwargs: dict[str, Any], ctx: Context) -> Any:
        execution = tool.execution
        timeout = (
            execution.timeout if execution.timeout is not None else self._settings.tool_timeout
        )
        if execution.offload is None and timeout is None:
            return await self._invoke(tool.fn, tool.is_async, kwargs, ctx)
        # Deadlines and worker processes need the event loop: the runtime runs those.
        offload = execution.offload_for(tool.is_async)
        return await ctx._peer.call(tool.fn, kwargs, offload=offload, timeout=timeout)

    # tools

    async def _list_tools(self, params: JSONObject, ctx: Context) -> JSONObject:
        return self.page("tools", ctx.negotiated.revision, params, self._tools.values(), ctx)

    async def _call_tool(self, params: JSONObject, ctx: Context) -> JSONObject:
        name = params.get("name")
        tool = self._tools.get(name) if isinstance(name, str) else None
        if tool is None:
            raise RequestError(
                INVALID_PARAMS, f"unknown tool: {describe(name)}", {"name": bounded_value(name)}
            )
        if tool.scopes:
            # Before a task is made of it: a caller without them starts nothing.
            check_scopes(tool.scopes, ctx.principal)
        task = _tasks.requested_task(
            params,
            tool=tool.name,
            support=tool.execution.task_support,
            revision=ctx.negotiated.revision,
            offered=self._registry.offers_tasks(),
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
        errors = await _validate(tool.input_validator, arguments)
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
        except (RequestError, InputNeeded):
            raise
        except InsufficientScope as exc:
            # A step-up is a refusal of the request, not a failure of the tool.
            raise scope_error(merged(tool.scopes, exc)) from None
        except Exception as exc:
            if isinstance(exc, CapabilityError) and exc.code == MISSING_CLIENT_CAPABILITY:
                # A stateless request that needs what its client did not declare: -32021.
                raise
            _log.exception("tool %r failed", name)
            return _results.error_result(f"tool {describe(name)} failed: {describe_error(exc)}")
        check_returned(value, revision)
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
        resources = self._resources.values()
        return self.page("resources", ctx.negotiated.revision, params, resources, ctx)

    async def _list_templates(self, params: JSONObject, ctx: Context) -> JSONObject:
        return self.page(
            "resourceTemplates", ctx.negotiated.revision, params, self._templates.values(), ctx
        )

    async def _read_resource(self, params: JSONObject, ctx: Context) -> JSONObject:
        uri = self.resource_uri(params)
        found = self._registry.find_resource(uri)
        if found is None:
            raise RequestError(
                ctx.negotiated.revision.resource_not_found_code,
                f"resource not found: {describe(uri)}",
                {"uri": bounded_value(uri)},
            )
        entry, kwargs = found
        if entry.scopes:
            check_scopes(entry.scopes, ctx.principal)
        if entry.context_param is not None:
            kwargs[entry.context_param] = ctx
        value = await self._invoke_scoped(entry, kwargs, ctx)
        check_returned(value, ctx.negotiated.revision)
        contents = _results.to_resource_contents(value, uri, entry.mime_type)
        return {"contents": contents}

    async def _subscribe(self, params: JSONObject, ctx: Context) -> JSONObject:
        uri = self.resource_uri(params)
        # Bounded before templates walk it, with the words the session's table would use.
        ResourceSubscriptions.check_uri(uri)
        found = self._registry.find_resource(uri)
        if found is None:
            raise RequestError(
                ctx.negotiated.revision.resource_not_found_code,
                f"resource not found: {describe(uri)}",
                {"uri": bounded_value(uri)},
            )
        if found[0].scopes:
            # Updates of a resource tell what changed: only for those who may read it.
            check_scopes(found[0].scopes, ctx.principal)
        ctx._peer.subscribe(uri)
        await ctx._peer.subscriptions_changed()
        return {}

    async def _unsubscribe(self, params: JSONObject, ctx: Context) -> JSONObject:
        ctx._peer.unsubscribe(self.resource_uri(params))
        await ctx._peer.subscriptions_changed()
        return {}

    # prompts

    async def _list_prompts(self, params: JSONObject, ctx: Context) -> JSONObject:
        return self.page("prompts", ctx.negotiated.revision, params, self._prompts.values(), ctx)

    async def _get_prompt(self, params: JSONObject, ctx: Context) -> JSONObject:
        name = params.get("name")
        prompt = self._prompts.get(name) if isinstance(name, str) else None
        if prompt is None:
            raise RequestError(
                INVALID_PARAMS, f"unknown prompt: {describe(name)}", {"name": bounded_value(name)}
            )
        if prompt.scopes:
            check_scopes(prompt.scopes, ctx.principal)
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
        value = await self._invoke_scoped(prompt, kwargs, ctx)
        check_returned(value, ctx.negotiated.revision)
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
        referred: PromptEntry | TemplateEntry | ResourceEntry | None
        if kind == "ref/prompt":
            referred = self._prompts.get(key)
            if referred is None:
                raise RequestError(
                    INVALID_PARAMS,
                    f"unknown prompt: {describe(key)}",
                    {"name": bounded_value(key)},
                )
        elif kind == "ref/resource":
            referred = self._templates.get(key) or self._resources.get(key)
            if referred is None:
                raise RequestError(
                    INVALID_PARAMS,
                    f"unknown resource template: {describe(key)}",
                    {"uri": bounded_value(key)},
                )
        else:
            raise RequestError(INVALID_PARAMS, f"unknown reference type {describe(kind)}")
        if referred.scopes:
            # Completions tell what the arguments may be: only to those who may use it.
            check_scopes(referred.scopes, ctx.principal)
        context = params.get("context")
        context_args = context.get("arguments") if isinstance(context, dict) else None
        context_args = context_args if isinstance(context_args, dict) else {}
        found = self._registry.completers.get((kind, key, arg_name))
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

    def page(
        self,
        kind: str,
        revision: Revision,
        params: JSONObject,
        entries: Any,
        ctx: Context | None = None,
    ) -> JSONObject:
        """One page of a list of ``entries``, as ``ctx``'s principal may see it."""
        settings = self._settings
        if settings.hide_unauthorized and ctx is not None:
            principal = ctx.principal
            if principal is not None:
                return self._scoped_page(kind, revision, params, entries, principal)
        return paginate(self._pages, kind, revision, params, entries, settings.page_size)

    def _scoped_page(
        self, kind: str, revision: Revision, params: JSONObject, entries: Any, who: Principal
    ) -> JSONObject:
        # What a caller sees depends only on which of the scopes the entries need it has,
        # so the pages are built once per such set (a few, in practice), not per call.
        listed = list(entries)
        needed = {scope for entry in listed for scope in scopes_of(entry)}
        if not needed:
            return paginate(self._pages, kind, revision, params, listed, self._settings.page_size)
        granted = frozenset(needed & who.scopes)
        pages = self._scoped_pages.get(granted)
        if pages is None:
            if len(self._scoped_pages) >= _SCOPED_VIEWS:
                self._scoped_pages.clear()
            pages = self._scoped_pages[granted] = {}
        shown = [entry for entry in listed if granted.issuperset(scopes_of(entry))]
        return paginate(pages, kind, revision, params, shown, self._settings.page_size)


#: arguments larger than this (as JSON) that the fast check cannot settle are validated
#: in a worker thread: jsonschema takes seconds over a few MiB, and the event loop that
#: serves every other session must not wait for it
SLOW_VALIDATION_BYTES: Final = 64 * 1024


async def _validate(validator: SchemaValidator, arguments: JSONObject) -> list[JSONObject]:
    if validator.passes_fast(arguments):
        return []
    try:
        size = len(orjson.dumps(arguments))
    except TypeError:  # orjson.JSONEncodeError: judged in place, as before
        size = 0
    if size <= SLOW_VALIDATION_BYTES:
        return validation_errors(validator, arguments)
    return await trio.to_thread.run_sync(validation_errors, validator, arguments)
