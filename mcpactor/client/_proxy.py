# Proxying: a remote MCP server served as a local one.
#
# ``ProxyServer`` is a Server whose lists and answers come from a remote server, through
# this package's client. While it runs (its lifespan) it holds one connection, its
# ``remote`` (a ``RemoteLink``, _proxy_link.py): it initializes, fetches every list,
# fetches a list again when the remote says it changed (then tells its own sessions, or
# the server it is mounted in), and forwards requests in the caller's task, so
# cancelling the caller's request cancels the remote one; ``remote.info`` and
# ``remote.connected`` say what it reached. ``ProxyServer`` itself answers as a Server:
# its lists from the link's, the rest forwarded and adapted to the caller's revision.
#
# What the remote sends while it serves a forwarded request goes back through that
# request's Context: progress by the token the client gave the forwarded request, log
# messages, and the remote's own requests (sampling, elicitation, roots); which client
# gets them is _proxy_forwarded.py's business. The lists as kept, and the adapting of
# definitions and answers to each client's revision, are in _proxy_catalog.py.

from __future__ import annotations

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
    RequestError,
)
from ..protocol import LATEST, JSONObject, Revision, bounded_value, describe
from ..server import (
    Catalog,
    Context,
    Mount,
    Server,
    ToolTransform,
    adapt_tool_result,
    error_result,
)
from ._connect import connect_stdio
from ._errors import unwrap_single_errors
from ._http import connect_http
from ._proxy_catalog import (
    LISTS,
    adapt_prompt,
)
from ._proxy_link import RemoteLink
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
        #: the connection to the remote while the proxy runs, and what the remote told it
        self.remote = RemoteLink(name, self._changes.list_changed, self.notify_resource_updated)
        self.roots_changed_hooks.append(self.remote.roots_changed)

    def __repr__(self) -> str:
        return f"<ProxyServer {describe(self.name)}>"

    def mount(
        self,
        server: Server,
        prefix: str | None = None,
        *,
        name: str | None = None,
        max_concurrent: int | None = None,
        tools: Mapping[str, ToolTransform] | None = None,
    ) -> Mount:
        """A proxy serves its remote only; mount both in a third server instead."""
        raise TypeError(f"{self!r} cannot mount servers; mount both in another Server")

    # --- what the composition and the session see ------------------------------------

    def capabilities(self, revision: Revision) -> JSONObject:
        """The remote's capabilities, as served through the proxy."""
        remote = self.remote.capabilities
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
        return self.remote.catalog()

    # --- the connection -----------------------------------------------------------------

    @asynccontextmanager
    async def running(self) -> AsyncIterator[Server]:
        """Connect to the remote, fetch its lists and keep them fresh; disconnect at exit.

        Raises:
            TransportError: the remote went away (while starting or serving).
            RequestError: the remote refused ``initialize``.
        """
        link = self.remote
        async with super().running():
            with unwrap_single_errors():
                async with (
                    self._connect(
                        sampling_handler=functools.partial(
                            link.relays.ask_client, "sampling/createMessage"
                        ),
                        elicitation_handler=functools.partial(
                            link.relays.ask_client, "elicitation/create"
                        ),
                        roots=link.relays.client_roots,
                        on_server_message=link.heard,
                    ) as client,
                    trio.open_nursery() as nursery,
                ):
                    result = await link.open(client, self.protocol_version, self.log_level)
                    instructions = result.get("instructions")
                    if self.instructions is None and isinstance(instructions, str):
                        self.instructions = instructions
                    nursery.start_soon(link.keep_lists_fresh, client)
                    nursery.start_soon(_watch_connection, client)
                    try:
                        yield self
                    finally:
                        link.client = None
                        nursery.cancel_scope.cancel("the proxy stopped")

    # --- requests ---------------------------------------------------------------------

    async def handle_request(
        self, method: str, params: JSONObject | None, ctx: Context
    ) -> JSONObject:
        """Serve one request by forwarding it to the remote."""
        params = params or {}
        listing = LISTS.get(method)
        if listing is not None:
            capability, key = listing
            if capability not in self.remote.capabilities:
                raise RequestError(
                    METHOD_NOT_FOUND,
                    f"method not found: {describe(method)}",
                    {"method": bounded_value(method)},
                )
            link = self.remote
            entries = {
                "tools": link.tools,
                "prompts": link.prompts,
                "resources": link.resources,
                "resourceTemplates": link.templates,
            }[key]
            return self._handlers.page(key, ctx.negotiated.revision, params, entries.values())
        if method == "resources/unsubscribe":
            ctx._peer.unsubscribe(self._handlers.resource_uri(params))
            return {}
        if method == "resources/subscribe":
            uri = self._handlers.resource_uri(params)
            await self.remote.subscribe(uri, params, ctx)
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
            result = await self.remote.forward(method, params, ctx, timeout=timeout)
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
    await client.notifications.wait_for("notifications/message", lambda _: False)
