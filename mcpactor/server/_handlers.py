# The request handlers of a Server: a method's params and Context in, its result out.
#
# ``Handlers`` holds one handler per entry of ``_dispatch.HANDLERS`` (the Server builds its
# method table from those names) and what they share: running an entry's function
# (awaited, or through the Context's peer in a worker thread), shaping its result
# (_results.py) and paging the lists (_paging.py, with the pages it keeps until the lists
# change). ``tools/call`` is the registry's ``ToolCalls`` (_registered.py): a tool owns
# how it is called. They read the Server's ``Registry`` and, for the settings an author
# may change at any time, the Server itself.

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, Protocol

from .._exceptions import INVALID_PARAMS, RequestError
from ..auth import InsufficientScope
from ..protocol import (
    JSONObject,
    Revision,
    bounded_value,
    clip_all,
    describe,
)
from . import _results
from ._context import Context
from ._paging import Pages, paginate
from ._registered import CallSettings, Registry, ToolCalls
from ._registry import PromptEntry, ResourceEntry, TemplateEntry, is_async_callable
from ._rounds import InputRequired, end_round
from ._scopes import check_scopes, merged, scope_error, scopes_of

if TYPE_CHECKING:
    from ..auth import Principal

__all__ = ["Handlers", "Settings"]

#: list views kept per set of granted scopes (hiding lists); more are built afresh
_SCOPED_VIEWS: Final = 64


class Settings(CallSettings, Protocol):
    """What the handlers read of their Server on each request (authors may change it)."""

    page_size: int
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
        # The ``tools/call`` handler: the registered tool runs its own call.
        self._call_tool = ToolCalls(settings, registry.tools, registry.offers_tasks)

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

    # tools

    async def _list_tools(self, params: JSONObject, ctx: Context) -> JSONObject:
        return self.page("tools", ctx.negotiated.revision, params, self._tools.values(), ctx)

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
        if isinstance(value, InputRequired):
            end_round(value, ctx.negotiated.revision)
        contents = _results.to_resource_contents(value, uri, entry.mime_type)
        return {"contents": contents}

    async def _subscribe(self, params: JSONObject, ctx: Context) -> JSONObject:
        # Imported here: a server that is never subscribed to does not load the table.
        from ..protocol import ResourceSubscriptions

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
        if isinstance(value, InputRequired):
            end_round(value, ctx.negotiated.revision)
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
