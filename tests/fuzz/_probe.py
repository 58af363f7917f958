"""The attack probe's served process and the raw clients its cases talk to it with.

One ``mcpactor serve`` per HTTP server (built-in and hypercorn), started from a
deployment file the way an operator would: the bundled fs, sqlite, memory and clock
plugins and ``_probe_target.py`` mounted, the admin listener on, an access log, short
request and write deadlines and a 1 MiB message limit (so oversize cases stay cheap).
The fs root holds the files an attacker goes for: symlinks out of the root, to a device
and to ``/proc``, and a FIFO.

The clients are deliberately raw: ``exchange`` writes bytes and parses what comes back
(any number of responses, and whether the connection was closed), ``WsClient`` writes
WebSocket frames by hand, so that a case can send what no library would.
"""

from __future__ import annotations

import contextlib
import os
import re
import sqlite3
import struct
import subprocess
import sys
import textwrap
import time
from collections.abc import AsyncIterator, Iterator, Mapping
from pathlib import Path
from typing import Any, Final

import attrs
import orjson
import trio

from tests.transports._http_client import McpClient, SocketClient

TOKEN: Final = "an-admin-token-for-the-attack-probe-0123456789"
#: the servers' deadlines, in seconds: a request's arrival, a write to a client
REQUEST_TIMEOUT: Final = 2
WRITE_TIMEOUT: Final = 3
#: the longest message either way, in bytes
MAX_MESSAGE: Final = 1 << 20
REVISION: Final = "2025-11-25"
#: sessions (and, at 2026-07-28, requests in flight) one client address may hold
PER_CLIENT: Final = 8
ACCEPT: Final = "application/json, text/event-stream"
#: a secret outside the fs root, which no case may read
SECRET: Final = "the-secret-outside-the-root"
_TARGET: Final = Path(__file__).with_name("_probe_target.py")


@attrs.frozen
class Served:
    """One served process: its listeners, its files, its log."""

    kind: str
    popen: subprocess.Popen[bytes]
    port: int
    admin_port: int
    log: Path
    root: Path
    outside: Path
    database: Path

    @property
    def host(self) -> bytes:
        return b"127.0.0.1:%d" % self.port

    def check_alive(self) -> None:
        """The process still runs."""
        assert self.popen.poll() is None, self.log_text()[-4000:]

    def log_text(self) -> str:
        return self.log.read_bytes().decode("utf-8", "replace")

    def log_size(self) -> int:
        return self.log.stat().st_size

    def log_since(self, offset: int) -> str:
        with self.log.open("rb") as file:
            file.seek(offset)
            return file.read().decode("utf-8", "replace")

    def whole_lines_since(self, offset: int) -> tuple[str, int]:
        """The log's whole lines from ``offset``, and the offset after them."""
        with self.log.open("rb") as file:
            file.seek(offset)
            data = file.read()
        end = data.rfind(b"\n") + 1
        return data[:end].decode("utf-8", "replace"), offset + end

    def rss(self) -> int:
        """The process's resident memory, in bytes."""
        status = Path(f"/proc/{self.popen.pid}/status").read_text()
        found = re.search(r"VmRSS:\s+(\d+) kB", status)
        assert found is not None
        return int(found.group(1)) * 1024


def _plant(directory: Path) -> tuple[Path, Path, Path]:
    # The fs root and what an attacker goes for around it; the sqlite database.
    root = directory / "root"
    outside = directory / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET)
    (root / "hello.txt").write_text("hello\n")
    (root / "docs").mkdir()
    (root / "docs" / "a.md").write_text("# a\n")
    (root / "escape").symlink_to(outside)
    (root / "secret-link").symlink_to(outside / "secret.txt")
    (root / "etc-link").symlink_to("/etc")
    (root / "zero").symlink_to("/dev/zero")
    (root / "environ").symlink_to("/proc/self/environ")
    (root / "up").symlink_to("..")
    os.mkfifo(root / "pipe")
    database = directory / "data.sqlite"
    with contextlib.closing(sqlite3.connect(database)) as connection:
        connection.execute("CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT, data BLOB)")
        connection.execute("CREATE INDEX items_by_name ON items (name)")
        connection.executemany(
            "INSERT INTO items (name, data) VALUES (?, ?)",
            [(f"item {n}", bytes(64)) for n in range(100)],
        )
        connection.commit()
    return root, outside, database


def _deployment(kind: str, directory: Path, root: Path, database: Path) -> Path:
    config = directory / "mcpactor.toml"
    config.write_text(
        textwrap.dedent(
            f"""\
            transport = "http"
            log_level = "info"

            [env]
            MCPACTOR_FS_ROOTS = "{root}"
            MCPACTOR_SQLITE_DB = "{database}"
            MCPACTOR_SQLITE_TIMEOUT = "1"
            MCPACTOR_MEMORY_DB = "{directory / "memory.db"}"
            MCPACTOR_MEMORY_MAX_RESULT_BYTES = "262144"
            MCPACTOR_MEMORY_MAX_GRAPH_BYTES = "2097152"

            [http]
            host = "127.0.0.1"
            port = 0
            server = "{kind}"
            access_log = true
            request_timeout = {REQUEST_TIMEOUT}
            write_timeout = {WRITE_TIMEOUT}
            keep_alive_timeout = 5
            websocket_idle_timeout = 30
            # The probe is its own reverse proxy: a case names a client by X-Forwarded-For
            # (without it, the client is loopback, which no per-client limit counts).
            forwarded_allow_ips = ["127.0.0.1"]
            max_sessions_per_client = {PER_CLIENT}

            [servers.fs]
            [servers.sqlite]
            [servers.memory]
            [servers.clock]
            [servers.probe]
            target = "{_TARGET}"
            """
        )
    )
    return config


@contextlib.contextmanager
def serve(kind: str, directory: Path) -> Iterator[Served]:
    """Run the probe's ``mcpactor serve`` with ``kind``'s HTTP server until the block ends."""
    root, outside, database = _plant(directory)
    config = _deployment(kind, directory, root, database)
    token_file = directory / "token"
    token_file.write_text(TOKEN + "\n")
    log = directory / "stderr"
    command = [
        sys.executable, "-m", "mcpactor", "serve", "--config", str(config),
        "--admin", "127.0.0.1:0", "--admin-token-file", str(token_file),
        "--max-message-bytes", str(MAX_MESSAGE),
    ]  # fmt: skip
    with log.open("wb") as err:
        popen = subprocess.Popen(command, stderr=err, cwd=directory)
    try:
        said = ""
        deadline = time.monotonic() + 60
        while "mcpactor: serving" not in said:
            assert popen.poll() is None, said
            assert time.monotonic() < deadline, said
            time.sleep(0.05)
            said = log.read_text()
        admin = re.search(r"admin page http://127\.0\.0\.1:(\d+)/", said)
        mcp = re.search(r"serving http://127\.0\.0\.1:(\d+)/mcp", said)
        assert admin is not None, said
        assert mcp is not None, said
        yield Served(
            kind, popen, int(mcp.group(1)), int(admin.group(1)), log, root, outside, database
        )
    finally:
        if popen.poll() is None:
            popen.terminate()
            try:
                popen.wait(30)
            except subprocess.TimeoutExpired:
                popen.kill()
                popen.wait()


# --- the log --------------------------------------------------------------------------------

# A record's first line, as ``mcpactor serve`` writes text logs, or its own start-up lines.
_RECORD: Final = re.compile(r"(DEBUG|INFO|WARNING|ERROR|CRITICAL) [\w.]+: |mcpactor: ")
# What no line of a text log may hold raw: control characters (a forged line, a
# rewritten screen), the Unicode line separators and the bidirectional controls.
_UNSAFE: Final = re.compile(
    "[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]"
)
#: the longest line a record writes (a message is clipped at 4096 characters, each
#: escaped into at most six)
MAX_LOG_LINE: Final = 6 * 4096 + 512


def check_log(text: str) -> None:
    """Every line is a record's, or a continuation (a traceback's, starting with
    whitespace); none holds a control character raw; none is longer than a record."""
    for line in text.split("\n"):
        if not line:
            continue
        assert _RECORD.match(line) or line[0] == " ", f"not a record: {line[:300]!r}"
        unsafe = _UNSAFE.search(line)
        assert unsafe is None, f"raw {unsafe.group()!r} in {line[:300]!r}"
        assert len(line) <= MAX_LOG_LINE, f"a line of {len(line)} characters: {line[:300]!r}"


# --- raw HTTP/1.1 -------------------------------------------------------------------------


@attrs.define
class Reply:
    """One HTTP response as it came off the wire."""

    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return orjson.loads(self.body)

    @property
    def error_code(self) -> int | None:
        """The JSON-RPC error code of the body, if it is a JSON-RPC error."""
        try:
            message = orjson.loads(self.body)
        except orjson.JSONDecodeError:
            return None
        if type(message) is dict and type(message.get("error")) is dict:
            code = message["error"].get("code")
            return code if type(code) is int else None
        return None

    @property
    def error_message(self) -> str:
        message = orjson.loads(self.body)
        return str(message["error"]["message"])


@attrs.define
class Exchange:
    """What came back on one connection: the responses, and whether it was closed."""

    replies: list[Reply]
    closed: bool
    #: bytes after the last whole response
    rest: bytes

    @property
    def only(self) -> Reply:
        assert len(self.replies) == 1, (self.replies, self.rest[:300])
        return self.replies[0]


def _parse_one(data: bytes, closed: bool) -> tuple[Reply, bytes] | None:
    # One response from the front of ``data``, or None if it is not complete yet.
    head_end = data.find(b"\r\n\r\n")
    if head_end < 0:
        return None
    head = data[:head_end].decode("latin-1").split("\r\n")
    version, _, rest = head[0].partition(" ")
    assert version.startswith("HTTP/1."), head[0]
    status = int(rest.split(" ", 1)[0])
    headers: dict[str, str] = {}
    for line in head[1:]:
        name, _, value = line.partition(":")
        key = name.strip().lower()
        headers[key] = f"{headers[key]}, {value.strip()}" if key in headers else value.strip()
    body_start = head_end + 4
    if 100 <= status < 200 and status != 101:
        return Reply(status, headers, b""), data[body_start:]
    if "chunked" in headers.get("transfer-encoding", "").lower():
        body = b""
        at = body_start
        while True:
            line_end = data.find(b"\r\n", at)
            if line_end < 0:
                return None
            size = int(data[at:line_end].split(b";")[0], 16)
            if size == 0:
                end = data.find(b"\r\n\r\n", line_end)
                if end < 0:
                    return None
                return Reply(status, headers, body), data[end + 4 :]
            if len(data) < line_end + 2 + size + 2:
                return None
            body += data[line_end + 2 : line_end + 2 + size]
            at = line_end + 2 + size + 2
    if "content-length" in headers:
        size = int(headers["content-length"])
        if len(data) < body_start + size:
            return None
        return Reply(status, headers, data[body_start : body_start + size]), data[
            body_start + size :
        ]
    if status in (101, 204, 304):
        return Reply(status, headers, b""), data[body_start:]
    if not closed:
        return None
    return Reply(status, headers, data[body_start:]), b""


def parse_replies(data: bytes, closed: bool) -> tuple[list[Reply], bytes]:
    """The whole responses at the front of ``data`` (interim ones left out), and the rest."""
    replies: list[Reply] = []
    while data:
        parsed = _parse_one(data, closed)
        if parsed is None:
            break
        reply, data = parsed
        if not 100 <= reply.status < 200:
            replies.append(reply)
    return replies, data


async def send_quietly(stream: trio.abc.SendStream, data: bytes) -> bool:
    """Send ``data``; False if the server closed the connection first."""
    try:
        await stream.send_all(data)
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        return False
    return True


async def read_exchange(
    stream: trio.SocketStream, *, responses: int = 1, linger: float = 0.5, timeout: float = 10
) -> Exchange:
    """Read until ``responses`` whole responses came, then ``linger`` more seconds (to see
    anything extra, or the close); at most ``timeout`` seconds in all."""
    data = b""
    closed = False
    replies: list[Reply] = []
    with trio.move_on_after(timeout):
        while True:
            replies, _ = parse_replies(data, closed)
            if len(replies) >= responses:
                break
            try:
                chunk = await stream.receive_some(1 << 20)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                chunk = b""
            if not chunk:
                closed = True
                break
            data += chunk
    if not closed:
        with trio.move_on_after(linger):
            while True:
                try:
                    chunk = await stream.receive_some(1 << 20)
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    chunk = b""
                if not chunk:
                    closed = True
                    break
                data += chunk
    replies, rest = parse_replies(data, closed)
    return Exchange(replies, closed, rest)


async def exchange(
    port: int, data: bytes, *, responses: int = 1, linger: float = 0.5, timeout: float = 10
) -> Exchange:
    """Send ``data`` on a new connection (while reading, so an early refusal is seen)."""
    async with await trio.open_tcp_stream("127.0.0.1", port) as stream:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(send_quietly, stream, data)
            found = await read_exchange(
                stream, responses=responses, linger=linger, timeout=timeout
            )
            nursery.cancel_scope.cancel()
        return found


def request(
    method: str,
    target: str,
    served: Served,
    body: bytes | None = None,
    *,
    headers: Mapping[str, str] | None = None,
    close: bool = True,
    host: bool = True,
) -> bytes:
    """The bytes of one HTTP/1.1 request (Content-Length framing when there is a body)."""
    lines = [f"{method} {target} HTTP/1.1".encode()]
    if host:
        lines.append(b"Host: " + served.host)
    for name, value in (headers or {}).items():
        lines.append(f"{name}: {value}".encode("utf-8", "surrogateescape"))
    if body is not None:
        lines.append(b"Content-Length: %d" % len(body))
    if close:
        lines.append(b"Connection: close")
    return b"\r\n".join(lines) + b"\r\n\r\n" + (body or b"")


def mcp_headers(session: str | None = None, **extra: str) -> dict[str, str]:
    """What an MCP POST carries: Accept, Content-Type, the session and revision."""
    headers = {"Accept": ACCEPT, "Content-Type": "application/json"}
    if session is not None:
        headers["Mcp-Session-Id"] = session
        headers["MCP-Protocol-Version"] = REVISION
    headers.update(extra)
    return headers


def assert_refused(
    found: Exchange, *statuses: int, closed: bool = True, code: int | None = None
) -> Reply:
    """One refusal of one of ``statuses``: its body (when it has one) a JSON-RPC error of
    ``code`` (default: -32600 for a 4xx, -32603 for a 5xx), nothing after it, and the
    connection closed if ``closed``."""
    reply = found.only
    assert reply.status in statuses, (reply.status, reply.body[:300])
    if reply.body:
        expected = code if code is not None else -32603 if reply.status >= 500 else -32600
        assert reply.error_code == expected, reply.body[:300]
    assert not found.rest, found.rest[:300]
    if closed:
        assert found.closed, "the connection was left open after a refusal"
    return reply


async def post(served: Served, message: Any, session: str | None = None, **extra: str) -> Reply:
    """POST one JSON-RPC message (or raw bytes) on its own connection; the one answer."""
    body = message if type(message) is bytes else orjson.dumps(message)
    found = await exchange(
        served.port, request("POST", "/mcp", served, body, headers=mcp_headers(session, **extra))
    )
    return found.only


def sse_messages(reply: Reply) -> list[Any]:
    """The messages of an SSE body (or the one JSON message of a JSON body)."""
    if reply.headers.get("content-type", "").startswith("application/json"):
        return [reply.json()]
    messages = []
    for block in reply.body.decode().replace("\r\n", "\n").split("\n\n"):
        data = [line[5:].lstrip(" ") for line in block.split("\n") if line.startswith("data:")]
        if data and any(data):
            messages.append(orjson.loads("\n".join(data)))
    return messages


def answer(reply: Reply, request_id: Any) -> Any:
    """The response to ``request_id`` in a POST's answer."""
    assert reply.status == 200, (reply.status, reply.body[:300])
    found = [m for m in sse_messages(reply) if "method" not in m and m.get("id") == request_id]
    assert len(found) == 1, reply.body[:500]
    return found[0]


def initialize_message(version: str = REVISION, **capabilities: Any) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": "init",
        "method": "initialize",
        "params": {
            "protocolVersion": version,
            "capabilities": capabilities,
            "clientInfo": {"name": "probe", "version": "1"},
        },
    }


async def open_session(served: Served, version: str = REVISION) -> str:
    """An initialized session's id."""
    reply = await post(served, initialize_message(version))
    assert reply.status == 200, reply.body[:300]
    session = reply.headers["mcp-session-id"]
    done = await post(
        served,
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        session,
        **{"MCP-Protocol-Version": version},
    )
    assert done.status == 202, done.body[:300]
    return session


async def ping(served: Served, session: str, version: str = REVISION) -> None:
    """The session answers a ping."""
    reply = await post(
        served,
        {"jsonrpc": "2.0", "id": "ping", "method": "ping"},
        session,
        **{"MCP-Protocol-Version": version},
    )
    assert answer(reply, "ping")["result"] == {}


async def call_tool(
    served: Served, session: str, name: str, arguments: Mapping[str, Any], request_id: Any = 1
) -> Any:
    """Call a tool; its response message."""
    message = {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": name, "arguments": dict(arguments)},
    }
    return answer(await post(served, message, session), request_id)


def tool_text(response: Any) -> str:
    """The text of a tool result's content."""
    result = response["result"]
    return "".join(item.get("text", "") for item in result["content"])


@contextlib.asynccontextmanager
async def mcp_client(served: Served, version: str = REVISION) -> AsyncIterator[McpClient]:
    """An initialized session through the keep-alive h11 client (streams, GETs)."""
    async with trio.open_nursery() as nursery:
        http = SocketClient("127.0.0.1", served.port, nursery)
        client = McpClient(http)
        await client.initialize(version)
        try:
            yield client
        finally:
            await http.aclose()
            nursery.cancel_scope.cancel()


# --- raw WebSocket ------------------------------------------------------------------------

_HANDSHAKE_KEY: Final = "dGhlIHNhbXBsZSBub25jZQ=="
_MASK: Final = b"\x11\x22\x33\x44"


def frame(
    opcode: int, payload: bytes, *, fin: bool = True, mask: bool = True, rsv: int = 0
) -> bytes:
    """A WebSocket frame as a client writes it (masked unless ``mask`` is false)."""
    first = (0x80 if fin else 0) | (rsv << 4) | opcode
    size = len(payload)
    if size < 126:
        head = struct.pack("!BB", first, (0x80 if mask else 0) | size)
    elif size < 1 << 16:
        head = struct.pack("!BBH", first, (0x80 if mask else 0) | 126, size)
    else:
        head = struct.pack("!BBQ", first, (0x80 if mask else 0) | 127, size)
    if not mask:
        return head + payload
    masked = bytes(byte ^ _MASK[index % 4] for index, byte in enumerate(payload))
    return head + _MASK + masked


def text_frame(message: Any) -> bytes:
    return frame(0x1, orjson.dumps(message))


@attrs.define
class WsFrame:
    opcode: int
    payload: bytes

    @property
    def close_code(self) -> int | None:
        if self.opcode != 0x8 or len(self.payload) < 2:
            return None
        code: int = struct.unpack("!H", self.payload[:2])[0]
        return code

    def message(self) -> Any:
        return orjson.loads(self.payload)


class WsClient:
    """One WebSocket connection, frames written and read by hand."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.buffer = b""
        self.closed = False

    @classmethod
    @contextlib.asynccontextmanager
    async def connect(
        cls, served: Served, *, headers: Mapping[str, str] | None = None, path: str = "/ws"
    ) -> AsyncIterator[WsClient]:
        async with await trio.open_tcp_stream("127.0.0.1", served.port) as stream:
            client = cls(stream)
            all_headers = {
                "Upgrade": "websocket",
                "Connection": "Upgrade",
                "Sec-WebSocket-Key": _HANDSHAKE_KEY,
                "Sec-WebSocket-Version": "13",
                "Sec-WebSocket-Protocol": "mcp",
            }
            all_headers.update(headers or {})
            await stream.send_all(request("GET", path, served, headers=all_headers, close=False))
            client.handshake = await client._read_head()
            yield client

    async def _read_head(self) -> Reply:
        with trio.fail_after(10):
            while b"\r\n\r\n" not in self.buffer:
                if not await self._receive():
                    return Reply(0, {}, self.buffer)
        head, _, self.buffer = self.buffer.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        reply = Reply(int(lines[0].split(" ")[1]), headers, b"")
        if reply.status != 101 and "content-length" in headers:
            size = int(headers["content-length"])
            with trio.move_on_after(5):
                while len(self.buffer) < size and await self._receive():
                    pass
            reply.body, self.buffer = self.buffer[:size], self.buffer[size:]
        return reply

    handshake: Reply

    async def _receive(self) -> bytes:
        try:
            chunk = await self.stream.receive_some(1 << 20)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            chunk = b""
        if not chunk:
            self.closed = True
        self.buffer += chunk
        return chunk

    async def send(self, data: bytes) -> bool:
        return await send_quietly(self.stream, data)

    async def next_frame(self, timeout: float = 10) -> WsFrame | None:
        """The next frame from the server, or None once the connection is closed."""
        with trio.fail_after(timeout):
            while True:
                parsed = self._frame()
                if parsed is not None:
                    return parsed
                if self.closed or not await self._receive():
                    return None

    def _frame(self) -> WsFrame | None:
        data = self.buffer
        if len(data) < 2:
            return None
        opcode = data[0] & 0x0F
        size = data[1] & 0x7F
        at = 2
        if size == 126:
            if len(data) < 4:
                return None
            size = struct.unpack("!H", data[2:4])[0]
            at = 4
        elif size == 127:
            if len(data) < 10:
                return None
            size = struct.unpack("!Q", data[2:10])[0]
            at = 10
        if len(data) < at + size:
            return None
        self.buffer = data[at + size :]
        return WsFrame(opcode, data[at : at + size])

    async def message(self, request_id: Any = None, timeout: float = 10) -> Any:
        """The next text message (the response to ``request_id``, when given)."""
        while True:
            found = await self.next_frame(timeout)
            assert found is not None, "the socket closed"
            if found.opcode == 0x1:
                message = found.message()
                if request_id is None or (
                    "method" not in message and message.get("id") == request_id
                ):
                    return message
            assert found.opcode in (0x1, 0x9, 0xA), found

    async def close_frame(self, timeout: float = 10) -> WsFrame | None:
        """Read until the server's close frame (None: closed without one)."""
        while True:
            found = await self.next_frame(timeout)
            if found is None or found.opcode == 0x8:
                return found

    async def initialize(self) -> None:
        await self.send(text_frame(initialize_message()))
        reply = await self.message("init")
        assert "result" in reply, reply
        await self.send(text_frame({"jsonrpc": "2.0", "method": "notifications/initialized"}))


class Streamed:
    """A request whose answer is read as it comes (an SSE stream), on its own connection."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.data = b""
        #: the whole answer, once ``finish`` read it
        self.reply: Reply | None = None

    async def wait_for(self, needle: bytes, timeout: float = 10) -> None:
        """Read until ``needle`` has come."""
        with trio.fail_after(timeout):
            while needle not in self.data:
                try:
                    chunk = await self.stream.receive_some(1 << 20)
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    chunk = b""
                assert chunk, f"closed before {needle!r} came: {self.data[:300]!r}"
                self.data += chunk

    async def finish(self, timeout: float = 10) -> Reply:
        """Read to the end of the answer (the server closes: the request asked it to)."""
        with trio.fail_after(timeout):
            while True:
                try:
                    chunk = await self.stream.receive_some(1 << 20)
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    chunk = b""
                if not chunk:
                    break
                self.data += chunk
        replies, _ = parse_replies(self.data, True)
        assert len(replies) == 1, self.data[:500]
        self.reply = replies[0]
        return self.reply


@contextlib.asynccontextmanager
async def streamed(
    served: Served, message: Any, session: str | None, *, until: bytes, **extra: str
) -> AsyncIterator[Streamed]:
    """POST ``message``; enter once ``until`` arrived in its answer."""
    body = orjson.dumps(message)
    async with await trio.open_tcp_stream("127.0.0.1", served.port) as stream:
        await stream.send_all(
            request("POST", "/mcp", served, body, headers=mcp_headers(session, **extra))
        )
        answer = Streamed(stream)
        await answer.wait_for(until)
        yield answer


def hold_message(key: str, request_id: Any) -> dict[str, Any]:
    """A call of ``probe_hold``: in flight until ``probe_release`` names ``key``."""
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {
            "name": "probe_hold",
            "arguments": {"key": key},
            "_meta": {"progressToken": key},
        },
    }


@contextlib.asynccontextmanager
async def holding(
    served: Served, session: str, key: str, request_id: Any
) -> AsyncIterator[Streamed]:
    """A ``probe_hold`` call in flight in ``session`` for the block; released after it,
    and its answer read (``reply``)."""
    async with streamed(
        served, hold_message(key, request_id), session, until=b"notifications/progress"
    ) as held:
        try:
            yield held
        finally:
            with trio.CancelScope(shield=True):
                await call_tool(served, session, "probe_release", {"key": key}, "release")
        await held.finish()
