# Proxying: a remote MCP server served as a local one.
#
# ``ProxyServer`` is a Server whose lists and answers come from a remote server, through
# this package's client. While it runs (its lifespan) it holds one connection: it
# initializes, fetches every list, and fetches a list again when the remote says it
# changed (then tells its own sessions, or the server it is mounted in).
#
# A request is forwarded in the caller's task, so cancelling the caller's request (the
# client's notifications/cancelled, a timeout, shutdown) cancels the remote request: the
# client sends notifications/cancelled on its way out. What the remote sends while it
# serves a forwarded request goes back through that request's Context: progress by the
# token the client gave the forwarded request, log messages, and the remote's own
# requests (sampling, elicitation, roots); which client gets them is _proxy_relay.py's
# business. The lists as kept, and the adapting of definitions and answers to each
# client's revision, are in _proxy_catalog.py.

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, Final

import trio

from .._exceptions import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    ProtocolError,
    RequestError,
    TransportError,
)
from ..protocol import LATEST, JSONObject, JSONValue, Revision, bounded_value, describe
from ..server import Context, Mount, Server
from ..server._registry import Catalog
from ..server._results import adapt_tool_result, error_result
from ._connect import connect_stdio
from ._errors import unwrap_single_errors
from ._http import connect_http
from ._proxy_catalog import (
    LIST_CHANGED,
    LISTS,
    Remote,
    adapt_prompt,
    by_key,
    templates,
    without_progress_token,
)
from ._proxy_relay import Relays, report_progress
from ._session import ClientSession
from ._websocket import connect_websocket

__all__ = ["Connector", "ProxyServer", "proxy_stdio", "proxy_url"]

_log = logging.getLogger("mcpactor.proxy")

#: ``connect(**client_args)``: an async context manager yielding a connected (not yet
#: initialized) ClientSession; ``client_args`` are ClientSession's keyword arguments
Connector = Callable[..., AbstractAsyncContextManager[ClientSession]]

_FORWARDED: Final = frozenset(
    {"tools/call", "prompts/get", "resources/read", "completion/complete"}
)
# What the proxy offers the remote: whatever the real client turns out to support.
_CLIENT_CAPABILITIES: Final[JSONObject] = {
    "sampling": {},
    "elicitation": {"form": {}, "url": {}},
    "roots": {"listChanged": True},
}


class ProxyServer(Server):
    """A Server that serves what a remote MCP server serves, by forwarding to it.

    ``connect`` opens the connection (see ``proxy_stdio`` and ``proxy_url``, which build
    one). The connection is made when the proxy starts running (its lifespan) and closed
    when it stops; mount the proxy in another Server to serve the remote next to local
    servers. ``log_level`` is the level the remote is asked to log at (None: leave it);
    what reaches the real client is filtered by the level that client chose.
    ``tool_timeout`` (seconds) bounds each forwarded tool call: the remote is told to
    cancel it and the client gets a tool error.
    """

    def __init__(
        self,
        connect: Connector,
        name: str,
        version: str = "0.1.0",
        *,
        protocol_version: str = LATEST.version,
        log_level: str | None = "debug",
        title: str | None = None,
        description: str | None = None,
        instructions: str | None = None,
        page_size: int = 100,
        tool_timeout: float | None = None,
    ) -> None:
        super().__init__(
            name,
            version,
            title=title,
            description=description,
            instructions=instructions,
            page_size=page_size,
            tool_timeout=tool_timeout,
        )
        self._connect = connect
        self.protocol_version = protocol_version
        self.log_level = log_level
        self._client: ClientSession | None = None
        self._remote_capabilities: JSONObject = {}
        self._remote_info: JSONObject | None = None
        self._remote_tools: dict[str, Remote] = {}
        self._remote_prompts: dict[str, Remote] = {}
        self._remote_resources: dict[str, Remote] = {}
        self._remote_templates: dict[str, Remote] = {}
        self._relays = Relays(name)
        self._subscribed: set[str] = set()
        self._stale: set[str] = set()
        self._stale_event = trio.Event()
        self.roots_changed_hooks.append(self._roots_changed)

    def __repr__(self) -> str:
        return f"<ProxyServer {describe(self.name)}>"

    @property
    def remote_info(self) -> JSONObject | None:
        """The remote's ``serverInfo``, once connected."""
        return self._remote_info

    @property
    def connected(self) -> bool:
        """Whether the proxy is running and connected to the remote."""
        return self._client is not None

    def mount(
        self,
        server: Server,
        prefix: str | None = None,
        *,
        name: str | None = None,
        max_concurrent: int | None = None,
    ) -> Mount:
        """A proxy serves its remote only; mount both in a third server instead."""
        raise TypeError(f"{self!r} cannot mount servers; mount both in another Server")

    # --- what the composition and the session see ------------------------------------

    def capabilities(self, revision: Revision) -> JSONObject:
        """The remote's capabilities, as served through the proxy."""
        remote = self._remote_capabilities
        capabilities: JSONObject = {"logging": {}}
        for kind in ("tools", "resources", "prompts"):
            declared = remote.get(kind)
            if isinstance(declared, dict):
                # Changes are relayed, whether or not the remote says it sends them.
                capabilities[kind] = {**declared, "listChanged": True}
        if revision.completions_capability and isinstance(remote.get("completions"), dict):
            capabilities["completions"] = {}
        return capabilities

    def _catalog(self) -> Catalog:
        return Catalog(
            self._remote_tools,
            self._remote_prompts,
            self._remote_resources,
            self._remote_templates,
        )

    # --- the connection -----------------------------------------------------------------

    @asynccontextmanager
    async def running(self) -> AsyncIterator[Server]:
        """Connect to the remote, fetch its lists and keep them fresh; disconnect at exit.

        Raises:
            TransportError: the remote went away (while starting or serving).
            RequestError: the remote refused ``initialize``.
        """
        async with super().running():
            with unwrap_single_errors():
                async with (
                    self._connect(
                        sampling_handler=functools.partial(
                            self._relays.ask_client, "sampling/createMessage"
                        ),
                        elicitation_handler=functools.partial(
                            self._relays.ask_client, "elicitation/create"
                        ),
                        roots=self._relays.client_roots,
                        on_server_message=self._heard,
                    ) as client,
                    trio.open_nursery() as nursery,
                ):
                    await self._open(client)
                    nursery.start_soon(self._keep_lists_fresh, client)
                    nursery.start_soon(_watch_connection, client)
                    try:
                        yield self
                    finally:
                        self._client = None
                        nursery.cancel_scope.cancel("the proxy stopped")

    async def _open(self, client: ClientSession) -> None:
        result = await client.initialize(self.protocol_version, capabilities=_CLIENT_CAPABILITIES)
        self._remote_capabilities = client.server_capabilities
        self._remote_info = client.server_info
        instructions = result.get("instructions")
        if self.instructions is None and isinstance(instructions, str):
            self.instructions = instructions
        if self.log_level is not None and "logging" in self._remote_capabilities:
            await client.set_logging_level(self.log_level)
        self._subscribed.clear()
        await self._refresh(client, {"tools", "resources", "prompts"})
        self._client = client

    async def _refresh(self, client: ClientSession, kinds: set[str]) -> None:
        remote = self._remote_capabilities
        for kind in sorted(kinds):
            if kind not in remote:
                continue
            if kind == "tools":
                # Tasks are not relayed: the tools are offered as plain calls only.
                tools = [
                    {k: v for k, v in tool.items() if k != "execution"}
                    for tool in await client.list_tools()
                ]
                self._remote_tools = by_key(tools, "name", "tool")
            elif kind == "prompts":
                self._remote_prompts = by_key(await client.list_prompts(), "name", "prompt")
            else:
                self._remote_resources = by_key(await client.list_resources(), "uri", "resource")
                self._remote_templates = templates(await client.list_resource_templates())
            self._changes.list_changed(kind)

    async def _keep_lists_fresh(self, client: ClientSession) -> None:
        while True:
            await self._stale_event.wait()
            self._stale_event = trio.Event()
            kinds, self._stale = self._stale, set()
            try:
                await self._refresh(client, kinds)
            except (RequestError, ProtocolError) as exc:
                _log.error("%r: could not fetch the remote's changed lists: %s", self.name, exc)

    def _heard(self, message: JSONValue, request_method: str | None) -> None:
        # Every message from the remote, in the client's reader, before the client acts
        # on it: a log message is queued before the response it precedes completes.
        if type(message) is not dict or "id" in message:
            return
        method = message.get("method")
        params = message.get("params")
        params = params if isinstance(params, dict) else {}
        if method == "notifications/message":
            self._relays.log(params)
        elif method in LIST_CHANGED:
            self._stale.add(LIST_CHANGED[method])
            self._stale_event.set()
        elif method == "notifications/resources/updated":
            uri = params.get("uri")
            if isinstance(uri, str):
                self.notify_resource_updated(uri)

    async def _roots_changed(self, ctx: Context) -> None:
        self._relays.remember(ctx)
        client = self._client
        if client is not None:
            with contextlib.suppress(TransportError):
                await client.notify("notifications/roots/list_changed")

    # --- requests ---------------------------------------------------------------------

    async def handle_request(
        self, method: str, params: JSONObject | None, ctx: Context
    ) -> JSONObject:
        """Serve one request by forwarding it to the remote."""
        params = params or {}
        listing = LISTS.get(method)
        if listing is not None:
            capability, key = listing
            if capability not in self._remote_capabilities:
                raise RequestError(
                    METHOD_NOT_FOUND,
                    f"method not found: {describe(method)}",
                    {"method": bounded_value(method)},
                )
            entries = {
                "tools": self._remote_tools,
                "prompts": self._remote_prompts,
                "resources": self._remote_resources,
                "resourceTemplates": self._remote_templates,
            }[key]
            return self._handlers.page(key, ctx.negotiated.revision, params, entries.values())
        if method == "resources/unsubscribe":
            ctx._peer.unsubscribe(self._handlers.resource_uri(params))
            return {}
        if method == "resources/subscribe":
            uri = self._handlers.resource_uri(params)
            # One remote subscription serves every client; clients are told apart by
            # their own sessions, which is also why an unsubscribe stays local.
            if uri not in self._subscribed:
                await self._forward(method, params, ctx)
                self._subscribed.add(uri)
            ctx._peer.subscribe(uri)
            return {}
        if method not in _FORWARDED:
            raise RequestError(
                METHOD_NOT_FOUND,
                f"method not found: {describe(method)}",
                {"method": bounded_value(method)},
            )
        if "task" in params:
            raise RequestError(
                INVALID_PARAMS,
                f"{describe(self.name)} does not relay tasks: send {describe(method)} "
                "without 'task'",
            )
        timeout = self.tool_timeout if method == "tools/call" else None
        try:
            result = await self._forward(method, params, ctx, timeout=timeout)
        except trio.TooSlowError:
            # As a local tool's deadline: the remote was told to cancel, the client
            # gets a tool error.
            return error_result(
                f"tool {describe(params.get('name'))} timed out after {timeout:g} s"
            )
        revision = ctx.negotiated.revision
        if method == "tools/call":
            content = result.get("content")
            if not isinstance(content, list) or not all(
                type(block) is dict and type(block.get("type")) is str for block in content
            ):
                # Relayed as it is, it would be our answer that breaks the schema.
                raise RequestError(
                    INTERNAL_ERROR,
                    f"{describe(self.name)}: the remote server answered tools/call without "
                    f"a list of content blocks: {describe(content)}",
                )
            return adapt_tool_result(result, revision)
        if method == "prompts/get":
            return adapt_prompt(result, revision)
        return result

    async def _forward(
        self, method: str, params: JSONObject, ctx: Context, *, timeout: float | None = None
    ) -> JSONObject:
        client = self._client
        if client is None:
            raise RequestError(
                INTERNAL_ERROR,
                f"{describe(self.name)} is not connected to its remote server (is it running?)",
                {"server": self.name},
            )
        relay = self._relays.open(ctx)
        progress = (
            functools.partial(report_progress, ctx) if ctx.progress_token is not None else None
        )
        try:
            with unwrap_single_errors():
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(relay.run)
                    try:
                        result = await client.request(
                            method,
                            without_progress_token(params),
                            progress_handler=progress,
                            timeout=timeout,
                        )
                    finally:
                        relay.close()
        except TransportError as exc:
            raise RequestError(
                INTERNAL_ERROR,
                f"{describe(self.name)} lost its remote server: {exc}",
                {"server": self.name},
            ) from None
        finally:
            self._relays.close(relay)
        return result


def proxy_stdio(
    command: Sequence[str],
    *,
    name: str = "proxy",
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    shutdown_timeout: float = 5.0,
    **options: Any,
) -> ProxyServer:
    """A ProxyServer for the stdio MCP server started by ``command``.

    ``env`` replaces the child's environment (default: inherit); ``options`` are those
    of ``ProxyServer`` (``version``, ``protocol_version``, ``log_level``, …).
    """
    connect = functools.partial(
        connect_stdio, list(command), env=env, cwd=cwd, shutdown_timeout=shutdown_timeout
    )
    return ProxyServer(connect, name, **options)


def proxy_url(
    url: str,
    *,
    name: str = "proxy",
    headers: Mapping[str, str] | None = None,
    **options: Any,
) -> ProxyServer:
    """A ProxyServer for the MCP server at ``url``: Streamable HTTP or WebSocket.

    ``http://``/``https://`` URLs are reached with ``connect_http``, ``ws://``/``wss://``
    with ``connect_websocket``; ``headers`` go with every request (or the handshake).
    ``options`` are those of ``ProxyServer``.

    Raises:
        ValueError: the URL's scheme cannot be served.
    """
    scheme = url.partition("://")[0].lower()
    if scheme in ("ws", "wss"):
        connect: Connector = functools.partial(connect_websocket, url, headers=headers)
    elif scheme in ("http", "https"):
        connect = functools.partial(connect_http, url, headers=headers)
    else:
        raise ValueError(
            f"cannot proxy {describe(url)}: expected a ws://, wss://, http:// or https:// URL"
        )
    return ProxyServer(connect, name, **options)


async def _watch_connection(client: ClientSession) -> None:
    # No notification matches, so this returns only by raising, when the connection is
    # lost: the proxy's lifespan then fails (and its supervisor marks it failed).
    await client.wait_for_notification("notifications/message", lambda _: False)
