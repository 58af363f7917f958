"""Small HTTP clients for the transport tests: in-process ASGI and raw HTTP/1.1 (h11).

Both return a ``Response`` that can be read whole (``body``/``json``) or as SSE events
(``events``), and dropped mid-stream (``disconnect``) — which is what the tests need to
play an MCP client that loses its connection. ``McpClient`` adds the MCP headers and a
few shortcuts on top of either.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import attrs
import h11
import orjson
import trio

from mcpactor.transports import McpHttpApp

from ..spec_schema import check_server_message

ACCEPT_BOTH = "application/json, text/event-stream"
TIMEOUT = 10


@attrs.define
class SseEvent:
    """One dispatched SSE event (``data`` is None for a priming/retry-only block)."""

    id: str | None
    event: str | None
    data: str | None
    retry: int | None

    def message(self) -> Any:
        assert self.data, f"expected a message event, got {self!r}"
        return orjson.loads(self.data)


class SseParser:
    """Incremental text/event-stream parser (enough of the WHATWG rules for our server)."""

    def __init__(self) -> None:
        self._buffer = b""
        self._fields: dict[str, str] = {}
        self._data: list[str] | None = None

    def feed(self, chunk: bytes) -> list[SseEvent]:
        self._buffer += chunk
        events = []
        while b"\n" in self._buffer:
            raw, _, self._buffer = self._buffer.partition(b"\n")
            line = raw.decode().rstrip("\r")
            if not line:
                if self._fields or self._data is not None:
                    retry = self._fields.get("retry")
                    events.append(
                        SseEvent(
                            id=self._fields.get("id"),
                            event=self._fields.get("event"),
                            data=None if self._data is None else "\n".join(self._data),
                            retry=int(retry) if retry is not None else None,
                        )
                    )
                self._fields = {}
                self._data = None
                continue
            if line.startswith(":"):
                continue
            name, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if name == "data":
                self._data = [*(self._data or []), value]
            else:
                self._fields[name] = value
        return events


class Response:
    """A response whose body arrives as chunks; read it whole or as SSE events."""

    def __init__(
        self,
        status: int,
        headers: Mapping[str, str],
        chunks: trio.MemoryReceiveChannel[bytes],
        disconnect: Callable[[], Awaitable[None]],
    ) -> None:
        self.status = status
        self.headers = dict(headers)
        self._chunks = chunks
        self._disconnect = disconnect
        self._parser = SseParser()
        self._pending: list[SseEvent] = []
        #: the body of the app's last ASGI message, once it came (in-process client only)
        self.last_body: list[bytes] = []

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "").split(";")[0]

    async def body(self) -> bytes:
        with trio.fail_after(TIMEOUT):
            return b"".join([chunk async for chunk in self._chunks])

    async def json(self) -> Any:
        return orjson.loads(await self.body())

    async def next_event(self) -> SseEvent | None:
        """The next SSE event, or None at the end of the stream."""
        with trio.fail_after(TIMEOUT):
            while not self._pending:
                try:
                    chunk = await self._chunks.receive()
                except trio.EndOfChannel:
                    return None
                self._pending.extend(self._parser.feed(chunk))
        return self._pending.pop(0)

    async def events(self) -> list[SseEvent]:
        """Every remaining event, until the server ends the stream."""
        events = []
        while (event := await self.next_event()) is not None:
            events.append(event)
        return events

    async def messages(self) -> list[Any]:
        """Every remaining message (events with data), until the stream ends."""
        return [event.message() for event in await self.events() if event.data]

    async def disconnect(self) -> None:
        """Drop the connection as a client that went away would."""
        await self._disconnect()


class AsgiClient:
    """Calls an ASGI app in this trio run; every request is a task in ``nursery``."""

    def __init__(self, app: McpHttpApp, nursery: trio.Nursery) -> None:
        self.app = app
        self.nursery = nursery
        #: the client address the app sees
        self.client = ("127.0.0.1", 50000)

    async def request(
        self,
        method: str,
        path: str,
        headers: Mapping[str, str],
        body: bytes = b"",
        *,
        timeout: float = TIMEOUT,
    ) -> Response:
        to_app_send, to_app_receive = trio.open_memory_channel[dict[str, Any]](math.inf)
        from_app_send, from_app_receive = trio.open_memory_channel[dict[str, Any]](math.inf)
        path, _, query = path.partition("?")
        scope = {
            "type": "http",
            "http_version": "1.1",
            "method": method,
            "scheme": "http",
            "path": path,
            "raw_path": path.encode(),
            "query_string": query.encode(),
            "root_path": "",
            "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()],
            "client": self.client,
            "server": ("127.0.0.1", 8000),
        }
        if "host" not in (name.lower() for name in headers):
            scope["headers"].insert(0, (b"host", b"127.0.0.1:8000"))
        to_app_send.send_nowait({"type": "http.request", "body": body, "more_body": False})

        async def run() -> None:
            async with from_app_send:
                await self.app(scope, to_app_receive.receive, from_app_send.send)

        self.nursery.start_soon(run)
        with trio.fail_after(timeout):
            start = await from_app_receive.receive()
        assert start["type"] == "http.response.start", start
        chunks_send, chunks_receive = trio.open_memory_channel[bytes](math.inf)
        last_body: list[bytes] = []

        async def pump() -> None:
            async with chunks_send:
                async for message in from_app_receive:
                    # After ``disconnect`` the app may still send a little: dropped.
                    with contextlib.suppress(trio.BrokenResourceError):
                        chunks_send.send_nowait(message.get("body", b""))
                    if not message.get("more_body", False):
                        last_body.append(message.get("body", b""))
                        return

        self.nursery.start_soon(pump)

        async def disconnect() -> None:
            to_app_send.send_nowait({"type": "http.disconnect"})
            chunks_receive.close()

        response_headers = {k.decode().lower(): v.decode() for k, v in start["headers"]}
        response = Response(start["status"], response_headers, chunks_receive, disconnect)
        response.last_body = last_body
        return response


class SocketClient:
    """HTTP/1.1 over real TCP connections (h11), kept alive and reused between requests.

    A response read to its end hands its connection back for the next request; one
    dropped with ``disconnect`` closes it, as a client that went away would.
    """

    def __init__(
        self, host: str, port: int, nursery: trio.Nursery, *, local_address: str | None = None
    ) -> None:
        self.host = host
        self.port = port
        self.nursery = nursery
        #: the address connections come from (127.0.0.2, say: another loopback peer)
        self.local_address = local_address
        self._idle: list[tuple[trio.SocketStream, h11.Connection]] = []
        self._closed = False

    async def request(
        self,
        method: str,
        path: str,
        headers: Mapping[str, str],
        body: bytes = b"",
        *,
        timeout: float = TIMEOUT,
    ) -> Response:
        request_headers = list(headers.items())
        if "host" not in headers:
            request_headers.insert(0, ("host", f"{self.host}:{self.port}"))
        if body or method == "POST":
            request_headers.append(("content-length", str(len(body))))
        while self._idle:
            stream, connection = self._idle.pop()
            try:
                return await self._exchange(
                    stream, connection, method, path, request_headers, body, timeout
                )
            except (trio.BrokenResourceError, trio.ClosedResourceError, h11.RemoteProtocolError):
                await stream.aclose()  # the server closed an idle connection: try another
        stream = await trio.open_tcp_stream(self.host, self.port, local_address=self.local_address)
        try:
            return await self._exchange(
                stream, h11.Connection(h11.CLIENT), method, path, request_headers, body, timeout
            )
        except BaseException:
            with trio.CancelScope(shield=True):
                await stream.aclose()
            raise

    async def _exchange(
        self,
        stream: trio.SocketStream,
        connection: h11.Connection,
        method: str,
        path: str,
        request_headers: list[tuple[str, str]],
        body: bytes,
        timeout: float,
    ) -> Response:
        data = connection.send(h11.Request(method=method, target=path, headers=request_headers))
        data += connection.send(h11.Data(data=body)) if body else b""
        data += connection.send(h11.EndOfMessage())
        await stream.send_all(data)

        async def next_event() -> Any:
            while True:
                event = connection.next_event()
                if event is h11.NEED_DATA:
                    connection.receive_data(await stream.receive_some(65536))
                    continue
                return event

        with trio.fail_after(timeout):
            head = await next_event()
        if isinstance(head, h11.ConnectionClosed):
            raise trio.BrokenResourceError("the server closed the connection")
        chunks_send, chunks_receive = trio.open_memory_channel[bytes](math.inf)
        if isinstance(head, h11.InformationalResponse) and head.status_code == 101:
            # Switched protocols (a WebSocket handshake): no HTTP body follows.
            chunks_send.close()

            async def hang_up() -> None:
                await stream.aclose()

            upgraded = {k.decode().lower(): v.decode() for k, v in head.headers}
            return Response(101, upgraded, chunks_receive, hang_up)
        assert isinstance(head, h11.Response), head
        cancel = trio.CancelScope()

        async def pump() -> None:
            reusable = False
            try:
                with cancel:
                    async with chunks_send:
                        while True:
                            try:
                                event = await next_event()
                            except (trio.BrokenResourceError, trio.ClosedResourceError):
                                return
                            if isinstance(event, h11.Data):
                                chunks_send.send_nowait(bytes(event.data))
                                continue
                            reusable = (
                                isinstance(event, h11.EndOfMessage)
                                and connection.our_state is h11.DONE
                                and connection.their_state is h11.DONE
                            )
                            return
            finally:
                if reusable and not self._closed:
                    connection.start_next_cycle()
                    self._idle.append((stream, connection))
                else:
                    with trio.CancelScope(shield=True):
                        await stream.aclose()

        self.nursery.start_soon(pump)

        async def disconnect() -> None:
            cancel.cancel()
            chunks_receive.close()

        response_headers = {k.decode().lower(): v.decode() for k, v in head.headers}
        return Response(head.status_code, response_headers, chunks_receive, disconnect)

    async def aclose(self) -> None:
        """Close the idle connections; connections still busy close when done."""
        self._closed = True
        while self._idle:
            stream, _ = self._idle.pop()
            await stream.aclose()


Transport = AsgiClient | SocketClient


class McpClient:
    """An MCP client over either transport, speaking raw JSON-RPC for the tests."""

    def __init__(self, http: Transport, path: str = "/mcp") -> None:
        self.http = http
        self.path = path
        self.session_id: str | None = None
        self.protocol_version: str | None = None
        self._next_id = 0

    def next_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def headers(self, **extra: str) -> dict[str, str]:
        headers = {"accept": ACCEPT_BOTH, "content-type": "application/json"}
        if self.session_id is not None:
            headers["mcp-session-id"] = self.session_id
        if self.protocol_version is not None:
            headers["mcp-protocol-version"] = self.protocol_version
        headers.update({k.replace("_", "-"): v for k, v in extra.items()})
        return headers

    async def post(self, message: Any, *, timeout: float = TIMEOUT, **headers: str) -> Response:
        return await self.http.request(
            "POST", self.path, self.headers(**headers), orjson.dumps(message), timeout=timeout
        )

    async def get(self, **headers: str) -> Response:
        headers.setdefault("accept", "text/event-stream")
        all_headers = self.headers(**headers)
        del all_headers["content-type"]
        return await self.http.request("GET", self.path, all_headers)

    async def delete(self) -> Response:
        return await self.http.request("DELETE", self.path, self.headers())

    async def initialize(
        self, version: str = "2025-11-25", capabilities: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        response = await self.post(
            {
                "jsonrpc": "2.0",
                "id": self.next_id(),
                "method": "initialize",
                "params": {
                    "protocolVersion": version,
                    "capabilities": dict(capabilities or {}),
                    "clientInfo": {"name": "test", "version": "1"},
                },
            }
        )
        assert response.status == 200, (response.status, await response.body())
        self.session_id = response.headers["mcp-session-id"]
        message = await read_reply(response)
        check_server_message(message, version, request_method="initialize")
        self.protocol_version = message["result"]["protocolVersion"]
        initialized = await self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        assert initialized.status == 202
        assert await initialized.body() == b""
        return message  # type: ignore[no-any-return]

    def request(self, method: str, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self.next_id(), "method": method}
        if params is not None:
            message["params"] = dict(params)
        return message

    async def call(self, method: str, params: Mapping[str, Any] | None = None) -> Any:
        """Send a request and return its one response (JSON or SSE)."""
        response = await self.post(self.request(method, params))
        assert response.status == 200, (response.status, await response.body())
        reply = await read_reply(response)
        assert self.protocol_version is not None
        check_server_message(reply, self.protocol_version, request_method=method)
        return reply


async def read_reply(response: Response) -> Any:
    """The response message of a POST answered with JSON or with an SSE stream."""
    if response.content_type == "application/json":
        return await response.json()
    assert response.content_type == "text/event-stream", response.headers
    messages = await response.messages()
    replies = [m for m in messages if "method" not in m]
    assert len(replies) == 1, messages
    return replies[0]


class Later:
    """The result of a call running in the background (a request whose head is late)."""

    def __init__(self) -> None:
        self._done = trio.Event()
        self._value: Any = None

    async def wait(self) -> Any:
        with trio.fail_after(TIMEOUT):
            await self._done.wait()
        return self._value

    def _set(self, value: Any) -> None:
        self._value = value
        self._done.set()


def start_post(client: McpClient, message: Any, **headers: str) -> Later:
    """POST in the background; ``await later.wait()`` gives the Response."""
    later = Later()

    async def run() -> None:
        # No deadline here: the caller's ``wait`` has one, and a test on a mock clock
        # may let virtual hours pass while the answer is outstanding.
        later._set(await client.post(message, timeout=math.inf, **headers))

    client.http.nursery.start_soon(run)
    return later
