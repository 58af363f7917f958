"""The driver's side of the wire: JSON-RPC over a child's stdio and over HTTP/1.1 keep-alive.

Callback-based asyncio protocols, so that the driver spends as little CPU per call as it
can and the servers, not the client, are what is measured.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import socket
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

PROTOCOL_VERSION = "2025-11-25"
INIT_PARAMS = {
    "protocolVersion": PROTOCOL_VERSION,
    "capabilities": {},
    "clientInfo": {"name": "mcpbench", "version": "0.1"},
}
ECHO_TEXT = "hello, mcp benchmark"
CLIENT_INFO = INIT_PARAMS["clientInfo"]

# The revisions without a handshake: every request says in params._meta which revision it
# speaks and what the client can do, and is a POST of its own over HTTP.
STATELESS_VERSIONS = ("2026-07-28",)
PROTOCOL_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO_KEY = "io.modelcontextprotocol/clientInfo"


def request(
    rid: Any, method: str, params: dict[str, Any] | None = None, meta: dict[str, Any] | None = None
) -> bytes:
    """A JSON-RPC request; meta (an envelope) is merged under the params' own _meta."""
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
    if meta is not None:
        params = stamped(params, meta)
    if params is not None:
        message["params"] = params
    return orjson.dumps(message)


def stamped(params: dict[str, Any] | None, meta: dict[str, Any]) -> dict[str, Any]:
    """params with meta's keys in its _meta (a key the params set themselves wins)."""
    params = dict(params or {})
    own = params.get("_meta")
    params["_meta"] = {**meta, **own} if isinstance(own, dict) else dict(meta)
    return params


def notification(method: str, params: dict[str, Any] | None = None) -> bytes:
    """A JSON-RPC notification."""
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return orjson.dumps(message)


def call_template(
    tool: str, arguments: dict[str, Any], meta: dict[str, Any] | None = None
) -> Callable[[int], bytes]:
    """A tools/call request as a function of its id, built without re-serialising."""
    params: dict[str, Any] = {"name": tool, "arguments": arguments}
    if meta is not None:
        params = stamped(params, meta)
    tail = orjson.dumps({"method": "tools/call", "params": params})
    after = b"," + tail[1:]
    return lambda rid: b'{"jsonrpc":"2.0","id":%d%s' % (rid, after)


def succeeded(message: dict[str, Any]) -> bool:
    """A JSON-RPC response with a result that is not a tool error."""
    result = message.get("result")
    return isinstance(result, dict) and not result.get("isError", False)


def completed(message: dict[str, Any]) -> bool:
    """succeeded, and its result says it is complete (not input_required, not a task)."""
    return succeeded(message) and message["result"].get("resultType") == "complete"


@dataclass(frozen=True)
class Revision:
    """The protocol revision a client speaks, and what that changes on its wire."""

    version: str = PROTOCOL_VERSION

    def __post_init__(self) -> None:
        if self.version != PROTOCOL_VERSION and self.version not in STATELESS_VERSIONS:
            known = ", ".join((PROTOCOL_VERSION, *STATELESS_VERSIONS))
            raise ValueError(f"unknown revision {self.version!r}: one of {known}")

    @property
    def stateless(self) -> bool:
        """Whether requests carry their own envelope instead of opening a session."""
        return self.version in STATELESS_VERSIONS

    @property
    def meta(self) -> dict[str, Any] | None:
        """The envelope each request carries in params._meta (None: a session's revision)."""
        if not self.stateless:
            return None
        return {
            PROTOCOL_VERSION_KEY: self.version,
            CLIENT_CAPABILITIES_KEY: {},
            CLIENT_INFO_KEY: CLIENT_INFO,
        }

    def request(self, rid: Any, method: str, params: dict[str, Any] | None = None) -> bytes:
        """A request of this revision."""
        return request(rid, method, params, self.meta)

    def call_template(self, tool: str, arguments: dict[str, Any]) -> Callable[[int], bytes]:
        """A tools/call template of this revision."""
        return call_template(tool, arguments, self.meta)

    def succeeded(self, message: dict[str, Any]) -> bool:
        """A successful response, complete where the revision tags results with resultType."""
        return completed(message) if self.stateless else succeeded(message)

    def opening(self) -> tuple[str, dict[str, Any] | None]:
        """The first request: initialize, or server/discover where there is no handshake."""
        return ("server/discover", None) if self.stateless else ("initialize", INIT_PARAMS)

    def check_opening(self, message: dict[str, Any]) -> None:
        """Raise unless message answers opening() as this revision expects."""
        method, _ = self.opening()
        result = message.get("result")
        if not isinstance(result, dict):
            raise RuntimeError(f"{method} failed: {str(message)[:200]}")
        if self.stateless:
            versions = result.get("supportedVersions")
            if not isinstance(versions, list) or self.version not in versions:
                raise RuntimeError(f"{method}: {self.version} not in {str(versions)[:200]}")


SESSION = Revision()


# --- stdio -------------------------------------------------------------------------------

OnMessage = Callable[[dict[str, Any]], None]


class StdioClient(asyncio.SubprocessProtocol):
    """Newline-delimited JSON-RPC with a child process; responses go to per-id callbacks."""

    def __init__(self) -> None:
        self.buffer = bytearray()
        self.waiting: dict[Any, OnMessage] = {}
        self.on_notification: OnMessage | None = None
        self.transport: asyncio.SubprocessTransport | None = None
        self.stdin: Any = None
        self.exited = asyncio.get_running_loop().create_future()
        self.unreadable_lines = 0  # a stray print() on a server's stdout, say
        self._held: list[bytes] | None = None
        self.revision = SESSION

    @classmethod
    async def start(
        cls, argv: list[str], env: dict[str, str], stderr: Any, revision: Revision = SESSION
    ) -> StdioClient:
        """Spawn argv and speak to it at revision."""
        loop = asyncio.get_running_loop()
        transport, client = await loop.subprocess_exec(
            cls, *argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, env=env
        )
        client.transport = transport
        client.stdin = transport.get_pipe_transport(0)
        client.revision = revision
        return client

    @property
    def pid(self) -> int:
        """The child's PID."""
        assert self.transport is not None
        pid: int = self.transport.get_pid()
        return pid

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        if fd != 1:
            return
        self.buffer += data
        # Writes made by the callbacks below go out as one, after the whole chunk is read.
        self._held = []
        start = 0
        try:
            while (end := self.buffer.find(b"\n", start)) >= 0:
                line = self.buffer[start:end]
                start = end + 1
                if line.strip():
                    try:
                        message = orjson.loads(line)
                    except orjson.JSONDecodeError:
                        self.unreadable_lines += 1
                        continue
                    self._dispatch(message)
        finally:
            del self.buffer[:start]
            held, self._held = self._held, None
            if held:
                self.write(b"".join(held))

    def _dispatch(self, message: Any) -> None:
        if not isinstance(message, dict):
            self.unreadable_lines += 1
        elif "method" not in message:
            callback = self.waiting.pop(message.get("id"), None)
            if callback is not None:
                callback(message)
        elif "id" in message:  # a request from the server: ping is all a benchmark client does
            if message["method"] == "ping":
                reply: dict[str, Any] = {"result": {}}
            else:
                reply = {"error": {"code": -32601, "message": "not supported by mcpbench"}}
            self.write(orjson.dumps({"jsonrpc": "2.0", "id": message["id"], **reply}) + b"\n")
        elif self.on_notification is not None:
            self.on_notification(message)

    def write(self, data: bytes) -> None:
        """Send bytes to the child's stdin."""
        if self._held is not None:
            self._held.append(data)
        elif not self.stdin.is_closing():
            self.stdin.write(data)

    def expect(self, rid: Any, callback: OnMessage) -> None:
        """Call callback with the response to rid."""
        self.waiting[rid] = callback

    def process_exited(self) -> None:
        if not self.exited.done():
            self.exited.set_result(None)
        waiting, self.waiting = self.waiting, {}
        for callback in waiting.values():
            callback({"error": {"code": -1, "message": "server exited"}})

    async def call(
        self, rid: Any, method: str, params: dict[str, Any] | None = None, timeout: float = 30
    ) -> dict[str, Any]:
        """Send a request of the client's revision and wait for its response."""
        future = asyncio.get_running_loop().create_future()
        self.expect(rid, lambda m: future.done() or future.set_result(m))
        self.write(self.revision.request(rid, method, params) + b"\n")
        return await asyncio.wait_for(future, timeout)

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send a notification."""
        self.write(notification(method, params) + b"\n")

    async def initialize(self) -> None:
        """The MCP handshake."""
        reply = await self.call("init", "initialize", INIT_PARAMS)
        if "result" not in reply:
            raise RuntimeError(f"initialize failed: {str(reply)[:200]}")
        self.notify("notifications/initialized")

    async def open(self) -> None:
        """Be ready to call tools: the handshake, or server/discover at a stateless revision."""
        if not self.revision.stateless:
            await self.initialize()
            return
        method, params = self.revision.opening()
        self.revision.check_opening(await self.call("open", method, params))

    async def close(self, grace: float = 3.0) -> None:
        """Close stdin and let the child exit; SIGTERM, then SIGKILL if it does not."""
        if self.transport is None:
            return
        if not self.stdin.is_closing():
            self.stdin.close()
        for step in (None, self.transport.terminate, self.transport.kill):
            try:
                if step is not None:
                    step()
                await asyncio.wait_for(asyncio.shield(self.exited), grace)
                break
            except (TimeoutError, ProcessLookupError):
                continue
        self.transport.close()


# --- HTTP/1.1 ----------------------------------------------------------------------------

Response = tuple[int, dict[bytes, bytes], bytes]  # status, headers (lower-case names), body


def parse_head(buffer: bytes | bytearray) -> tuple[int, dict[bytes, bytes], int] | None:
    """(status, headers with lower-case names, where the body starts), once the head is in."""
    end = buffer.find(b"\r\n\r\n")
    if end < 0:
        return None
    lines = bytes(buffer[:end]).split(b"\r\n")
    status = int(lines[0].split(b" ", 2)[1])
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        headers[name.strip().lower()] = value.strip()
    return status, headers, end + 4


def parse_response(buffer: bytes | bytearray) -> tuple[Response, int] | None:
    """The first complete HTTP/1.1 response in buffer and the bytes it took, or None.

    Bodies framed by Content-Length or chunked; a body that ends with the connection
    (no framing) is never complete here: see HttpConnection.connection_lost.
    """
    head = parse_head(buffer)
    if head is None:
        return None
    status, headers, at = head
    if status in (204, 304) or status < 200:
        return (status, headers, b""), at
    if b"content-length" in headers:
        size = int(headers[b"content-length"])
        if len(buffer) < at + size:
            return None
        return (status, headers, bytes(buffer[at : at + size])), at + size
    if headers.get(b"transfer-encoding", b"").lower() != b"chunked":
        return None
    chunks = []
    while True:
        line_end = buffer.find(b"\r\n", at)
        if line_end < 0:
            return None
        size = int(bytes(buffer[at:line_end]).split(b";")[0], 16)
        at = line_end + 2
        if size == 0:
            break
        if len(buffer) < at + size + 2:
            return None
        chunks.append(bytes(buffer[at : at + size]))
        at += size + 2
    while True:  # trailers, up to the empty line
        line_end = buffer.find(b"\r\n", at)
        if line_end < 0:
            return None
        empty = line_end == at
        at = line_end + 2
        if empty:
            return (status, headers, b"".join(chunks)), at


def sse_messages(body: bytes) -> list[Any]:
    """The JSON messages in the data of an event stream's events."""
    out = []
    for event in body.replace(b"\r\n", b"\n").split(b"\n\n"):
        data = [line[5:].lstrip(b" ") for line in event.split(b"\n") if line.startswith(b"data:")]
        if data:
            with contextlib.suppress(orjson.JSONDecodeError):
                out.append(orjson.loads(b"\n".join(data)))
    return out


def messages(headers: dict[bytes, bytes], body: bytes) -> list[Any]:
    """The JSON-RPC messages in a response body, JSON or event stream."""
    if not body:
        return []
    if headers.get(b"content-type", b"").startswith(b"text/event-stream"):
        return sse_messages(body)
    try:
        message = orjson.loads(body)
    except orjson.JSONDecodeError:
        return []
    return message if isinstance(message, list) else [message]


def answered(
    rid: Any, response: Response, check: Callable[[dict[str, Any]], bool] = succeeded
) -> bool:
    """A 200 response whose body holds a response to rid that passes check."""
    status, headers, body = response
    return status == 200 and any(
        isinstance(m, dict) and m.get("id") == rid and check(m) for m in messages(headers, body)
    )


OnResponse = Callable[[Response | None], None]  # None: the connection closed first


class HttpConnection(asyncio.Protocol):
    """One keep-alive connection, one request at a time, a callback per response."""

    def __init__(self) -> None:
        self.buffer = bytearray()
        self.transport: asyncio.Transport | None = None
        self.callback: OnResponse | None = None
        self.closed = False

    def connection_made(self, transport: Any) -> None:
        self.transport = transport  # uvloop's transports are not asyncio.Transport
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while self.callback is not None and (parsed := parse_response(self.buffer)) is not None:
            response, used = parsed
            del self.buffer[:used]
            if response[1].get(b"connection", b"").lower() == b"close":
                self.close()  # the server's last response on it (hypercorn: 1 000 requests)
            callback, self.callback = self.callback, None
            callback(response)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        callback, self.callback = self.callback, None
        if callback is None:
            return
        head = parse_head(self.buffer)
        if head is None or b"content-length" in head[1] or b"transfer-encoding" in head[1]:
            callback(None)
        else:  # a body without framing ends with the connection
            callback((head[0], head[1], bytes(self.buffer[head[2] :])))

    def send(self, data: bytes, callback: OnResponse) -> None:
        """Send one request; callback gets its response."""
        if self.closed:
            callback(None)
            return
        self.callback = callback
        assert self.transport is not None
        self.transport.write(data)

    async def exchange(self, data: bytes, timeout: float = 30) -> Response | None:
        """Send one request and wait for its response."""
        future: asyncio.Future[Response | None] = asyncio.get_running_loop().create_future()
        self.send(data, lambda r: future.done() or future.set_result(r))
        return await asyncio.wait_for(future, timeout)

    def close(self) -> None:
        """Close the connection."""
        self.closed = True
        if self.transport is not None:
            self.transport.close()


# The methods whose Mcp-Name header mirrors a parameter, and which parameter.
NAMED_BY = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}


def header_value(text: str) -> bytes:
    """text as a header value: itself when plain visible ASCII, else the base64 sentinel."""
    if text.isascii() and text.isprintable() and text == text.strip():
        return text.encode()
    return b"=?base64?" + base64.b64encode(text.encode()) + b"?="


def routing(body: bytes) -> tuple[str, str]:
    """The method of a request body and the parameter its Mcp-Name mirrors ("" if none)."""
    message = orjson.loads(body)
    if not isinstance(message, dict):
        return "", ""
    method = message.get("method")
    if not isinstance(method, str):
        return "", ""
    params = message.get("params")
    key = NAMED_BY.get(method)
    name = params.get(key) if key and isinstance(params, dict) else None
    return method, name if isinstance(name, str) else ""


class Endpoint:
    """A Streamable HTTP endpoint: where it is and how its requests look at a revision."""

    def __init__(self, url: str, revision: Revision = SESSION, token: str = "") -> None:
        if not url.startswith("http://"):
            raise ValueError(f"only http:// endpoints: {url!r}")
        authority, _, path = url[len("http://") :].partition("/")
        host, colon, port = authority.rpartition(":")
        self.host, self.port = (host, int(port)) if colon else (authority, 80)
        self.path = b"/" + path.encode()
        self.authority = authority.encode()
        self.revision = revision
        # sent on every request when the server is a resource server (RFC 6750 §2.1)
        self.authorization = b"Authorization: Bearer " + token.encode() if token else b""

    def post_head(
        self, session: str | None, initialize: bool = False, method: str = "", name: str = ""
    ) -> bytes:
        """A POST's head up to and including the "Content-Length: " name.

        At a stateless revision method and name become Mcp-Method and Mcp-Name.
        """
        lines = [
            b"POST " + self.path + b" HTTP/1.1",
            b"Host: " + self.authority,
            b"Content-Type: application/json",
            b"Accept: application/json, text/event-stream",
        ]
        if not initialize:
            lines.append(b"Mcp-Protocol-Version: " + self.revision.version.encode())
        if session:
            lines.append(b"Mcp-Session-Id: " + session.encode())
        if self.authorization:
            lines.append(self.authorization)
        if self.revision.stateless:
            if method:
                lines.append(b"Mcp-Method: " + header_value(method))
            if name:
                lines.append(b"Mcp-Name: " + header_value(name))
        return b"\r\n".join(lines) + b"\r\nContent-Length: "

    def post(self, body: bytes, session: str | None, initialize: bool = False) -> bytes:
        """A whole POST carrying body (at a stateless revision, with the headers it mirrors)."""
        method, name = routing(body) if self.revision.stateless else ("", "")
        head = self.post_head(session, initialize, method, name)
        return head + b"%d\r\n\r\n" % len(body) + body

    def answered(self, rid: Any, response: Response) -> bool:
        """A 200 response holding a successful response to rid, as the revision judges it."""
        return answered(rid, response, self.revision.succeeded)

    async def connect(self) -> HttpConnection:
        """A new connection."""
        loop = asyncio.get_running_loop()
        _, connection = await loop.create_connection(HttpConnection, self.host, self.port)
        return connection

    async def connect_many(self, n: int, at_once: int = 64) -> list[HttpConnection]:
        """n new connections, opened at_once at a time."""
        gate = asyncio.Semaphore(at_once)

        async def one() -> HttpConnection:
            async with gate:
                return await self.connect()

        return list(await asyncio.gather(*(one() for _ in range(n))))

    async def call(
        self,
        connection: HttpConnection,
        rid: Any,
        method: str,
        params: dict[str, Any] | None,
        session: str | None,
        timeout: float = 30,
    ) -> Response | None:
        """POST one request of the endpoint's revision and wait for its response."""
        data = self.post(self.revision.request(rid, method, params), session)
        return await connection.exchange(data, timeout)

    async def open_session(self, connection: HttpConnection) -> str | None:
        """initialize and notifications/initialized; the session id (None when stateless).

        At a stateless revision there is no session: server/discover, once, instead.
        """
        if self.revision.stateless:
            method, params = self.revision.opening()
            response = await self.call(connection, "open", method, params, None)
            if response is None or response[0] != 200:
                raise RuntimeError(f"{method}: {_short(response)}")
            replies = [m for m in messages(response[1], response[2]) if isinstance(m, dict)]
            if not replies:
                raise RuntimeError(f"{method}: no reply in {response[2][:200]!r}")
            self.revision.check_opening(replies[0])
            return None
        data = self.post(request("init", "initialize", INIT_PARAMS), None, initialize=True)
        response = await connection.exchange(data)
        if response is None or response[0] != 200:
            raise RuntimeError(f"initialize: {_short(response)}")
        _status, headers, body = response
        if not any(isinstance(m, dict) and "result" in m for m in messages(headers, body)):
            raise RuntimeError(f"initialize: no result in {body[:200]!r}")
        raw = headers.get(b"mcp-session-id")
        session = raw.decode() if raw else None
        done = await connection.exchange(
            self.post(notification("notifications/initialized"), session)
        )
        if done is None or done[0] not in (200, 202):
            raise RuntimeError(f"notifications/initialized: {_short(done)}")
        return session


def _short(response: Response | None) -> str:
    if response is None:
        return "connection closed"
    return f"HTTP {response[0]} {response[2][:200]!r}"
