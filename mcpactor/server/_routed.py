# The request handlers of a composed server: each finds the owner of the name or URI a
# request carries in the routing table (_routing.py) and forwards the request to it,
# under the name the owner knows (a mounted server's through its ``Mount``, within its
# limit). Lists are answered from the merged catalogue, paged by the parent's handlers.

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._exceptions import INVALID_PARAMS, RequestError
from ..protocol import JSONObject, ResourceSubscriptions, bounded_value, describe
from ._context import Context
from ._dispatch import Composable
from ._mount import Mount
from ._routing import Table

__all__ = ["RoutedHandlers"]


class RoutedHandlers:
    """The handlers of a composed server, by the names the method table gives them."""

    def __init__(self, parent: Composable, table: Callable[[], Table]) -> None:
        self._parent = parent
        # The current routing table (built again after a change).
        self._table = table

    async def _forward(
        self, mount: Mount | None, method: str, params: JSONObject, ctx: Context
    ) -> JSONObject:
        if mount is None:
            result: JSONObject = await self._parent._methods[method](params, ctx)
            return result
        return await mount._call(method, params, ctx)

    async def _list_tools(self, params: JSONObject, ctx: Context) -> JSONObject:
        return self._page("tools", params, ctx, self._table().listed_tools.values())

    async def _list_prompts(self, params: JSONObject, ctx: Context) -> JSONObject:
        return self._page("prompts", params, ctx, self._table().listed_prompts.values())

    async def _list_resources(self, params: JSONObject, ctx: Context) -> JSONObject:
        return self._page("resources", params, ctx, self._table().listed_resources.values())

    async def _list_templates(self, params: JSONObject, ctx: Context) -> JSONObject:
        templates = self._table().listed_templates.values()
        return self._page("resourceTemplates", params, ctx, templates)

    def _page(self, kind: str, params: JSONObject, ctx: Context, entries: Any) -> JSONObject:
        # The parent's list pages serve the merged lists: a change anywhere drops them.
        return self._parent._handlers.page(kind, ctx.negotiated.revision, params, entries, ctx)

    async def own(self, method: str, params: JSONObject, ctx: Context) -> JSONObject:
        """Serve ``method`` with the parent's own handler (``tasks/*`` are the session's)."""
        return await self._forward(None, method, params, ctx)

    async def _call_tool(self, params: JSONObject, ctx: Context) -> JSONObject:
        name = params.get("name")
        route = self._table().tools.get(name) if isinstance(name, str) else None
        if route is None:
            raise RequestError(
                INVALID_PARAMS, f"unknown tool: {describe(name)}", {"name": bounded_value(name)}
            )
        if route.transform is not None:
            mount = route.mount

            async def original(sent: JSONObject, ctx: Context) -> JSONObject:
                return await self._forward(mount, "tools/call", sent, ctx)

            return await route.transform.call(params, ctx, original)
        return await self._forward(route.mount, "tools/call", {**params, "name": route.name}, ctx)

    async def _get_prompt(self, params: JSONObject, ctx: Context) -> JSONObject:
        name = params.get("name")
        route = self._table().prompts.get(name) if isinstance(name, str) else None
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
        table = self._table()
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
        uri = params.get("uri")
        if type(uri) is str and uri:
            # Bounded before templates walk it, as the owner's own handler does.
            ResourceSubscriptions.check_uri(uri)
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
        table = self._table()
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
