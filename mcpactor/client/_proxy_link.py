# A proxy's one connection to its remote server, while the proxy runs.
#
# ``RemoteLink`` holds the connected client and what the remote told it: its
# capabilities and info, and its lists as kept (``Remote``, _proxy_catalog.py). It
# fetches every list when it opens and a list again when the remote says it changed
# (then the proxy's ``changed`` tells its own sessions, or the server it is mounted in).
# It forwards a request in the caller's task, so cancelling the caller's request (the
# client's notifications/cancelled, a timeout, shutdown) cancels the remote request:
# the client sends notifications/cancelled on its way out. What the remote sends while
# it serves a forwarded request goes back through that request's Context, by the relay
# _proxy_forwarded.py opens for it.

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import Callable
from typing import Final

import trio

from .._exceptions import INTERNAL_ERROR, ProtocolError, RequestError, TransportError
from ..protocol import JSONObject, JSONValue, describe
from ..server import Catalog, Context
from ._errors import unwrap_single_errors
from ._proxy_catalog import LIST_CHANGED, Remote, by_key, templates, without_progress_token
from ._proxy_forwarded import ForwardedRequests, report_progress
from ._session import ClientSession

__all__ = ["RemoteLink"]

_log = logging.getLogger("mcpactor.proxy")

# What the proxy offers the remote: whatever the real client turns out to support.
_CLIENT_CAPABILITIES: Final[JSONObject] = {
    "sampling": {},
    "elicitation": {"form": {}, "url": {}},
    "roots": {"listChanged": True},
}


class RemoteLink:
    """The connection of a proxy named ``name`` to its remote, and what it keeps of it."""

    def __init__(
        self,
        name: str,
        changed: Callable[[str], None],
        resource_updated: Callable[[str], None],
    ) -> None:
        self._name = name
        self._changed = changed
        self._resource_updated = resource_updated
        #: the connected client, while the proxy runs
        self.client: ClientSession | None = None
        #: what the remote declared in ``initialize``
        self.capabilities: JSONObject = {}
        #: the remote's ``serverInfo``, once connected
        self.info: JSONObject | None = None
        #: the remote's lists as kept, by the key the catalog looks them up by
        self.tools: dict[str, Remote] = {}
        self.prompts: dict[str, Remote] = {}
        self.resources: dict[str, Remote] = {}
        self.templates: dict[str, Remote] = {}
        #: who answers the remote's own requests and hears its log messages
        self.relays = ForwardedRequests(name)
        self._subscribed: set[str] = set()
        self._stale: set[str] = set()
        self._stale_event = trio.Event()

    @property
    def connected(self) -> bool:
        """Whether the proxy is running and connected to the remote."""
        return self.client is not None

    def catalog(self) -> Catalog:
        """The remote's lists, as the proxy's catalog."""
        return Catalog(self.tools, self.prompts, self.resources, self.templates)

    async def open(
        self, client: ClientSession, protocol_version: str, log_level: str | None
    ) -> JSONObject:
        """Initialize the remote, fetch every list; return the ``initialize`` result."""
        result = await client.initialize(protocol_version, capabilities=_CLIENT_CAPABILITIES)
        self.capabilities = client.server.capabilities
        self.info = client.server.info
        if log_level is not None and "logging" in self.capabilities:
            await client.set_logging_level(log_level)
        self._subscribed.clear()
        await self._refresh(client, {"tools", "resources", "prompts"})
        self.client = client
        return result

    async def keep_lists_fresh(self, client: ClientSession) -> None:
        """Fetch each list again when the remote says it changed; runs until cancelled."""
        while True:
            await self._stale_event.wait()
            self._stale_event = trio.Event()
            kinds, self._stale = self._stale, set()
            try:
                await self._refresh(client, kinds)
            except (RequestError, ProtocolError) as exc:
                _log.error("%r: could not fetch the remote's changed lists: %s", self._name, exc)

    async def _refresh(self, client: ClientSession, kinds: set[str]) -> None:
        remote = self.capabilities
        for kind in sorted(kinds):
            if kind not in remote:
                continue
            if kind == "tools":
                # Tasks are not relayed: the tools are offered as plain calls only.
                tools = [
                    {k: v for k, v in tool.items() if k != "execution"}
                    for tool in await client.list_tools()
                ]
                self.tools = by_key(tools, "name", "tool")
            elif kind == "prompts":
                self.prompts = by_key(await client.list_prompts(), "name", "prompt")
            else:
                self.resources = by_key(await client.list_resources(), "uri", "resource")
                self.templates = templates(await client.list_resource_templates())
            self._changed(kind)

    def heard(self, message: JSONValue, request_method: str | None) -> None:
        """See a message from the remote, in the client's reader, before the client acts.

        So a log message is queued before the response it precedes completes.
        """
        if type(message) is not dict or "id" in message:
            return
        method = message.get("method")
        params = message.get("params")
        params = params if isinstance(params, dict) else {}
        if method == "notifications/message":
            self.relays.log(params)
        elif method in LIST_CHANGED:
            self._stale.add(LIST_CHANGED[method])
            self._stale_event.set()
        elif method == "notifications/resources/updated":
            uri = params.get("uri")
            if isinstance(uri, str):
                self._resource_updated(uri)

    async def roots_changed(self, ctx: Context) -> None:
        """A client's roots changed: tell the remote (it asks the client through ``ctx``)."""
        self.relays.remember(ctx)
        client = self.client
        if client is not None:
            with contextlib.suppress(TransportError):
                await client.notify("notifications/roots/list_changed")

    async def subscribe(self, uri: str, params: JSONObject, ctx: Context) -> None:
        """Subscribe to ``uri`` at the remote unless subscribed already."""
        # One remote subscription serves every client; clients are told apart by their
        # own sessions, which is also why an unsubscribe stays local.
        if uri not in self._subscribed:
            await self.forward("resources/subscribe", params, ctx)
            self._subscribed.add(uri)

    async def forward(
        self, method: str, params: JSONObject, ctx: Context, *, timeout: float | None = None
    ) -> JSONObject:
        """Send one request to the remote in the caller's task; return its result."""
        client = self.client
        if client is None:
            raise RequestError(
                INTERNAL_ERROR,
                f"{describe(self._name)} is not connected to its remote server (is it running?)",
                {"server": self._name},
            )
        relay = self.relays.open(ctx)
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
                f"{describe(self._name)} lost its remote server: {exc}",
                {"server": self._name},
            ) from None
        finally:
            self.relays.close(relay)
        return result
