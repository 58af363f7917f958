"""HTTP/1.1 framing verdicts (RFC 9112) of both HTTP servers, from raw bytes on a socket.

Each case is sent as bytes over a real loopback connection to ``serve_http`` with the
built-in server and with hypercorn, and the verdict is the status codes that came back
and whether the connection was closed after them (a connection left open must then
serve a follow-up request). Where hypercorn (h11) reads a case differently and the RFC
allows both readings, the case names hypercorn's verdict and says why.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import AsyncIterator

import attrs
import orjson
import pytest
import trio
import trio.testing

from mcpactor.transports import HttpOptions, serve_http
from mcpactor.transports.http import HttpServerKind

from ._http_server import Probe, make_server

# Small limits, so that the limit cases stay small.
OPTIONS = HttpOptions(
    max_head_bytes=4096,
    max_header_count=20,
    max_body_bytes=2048,
    request_timeout=2.0,
)
INITIALIZE = orjson.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "framing", "version": "1"},
        },
    }
)
MCP_HEADERS = b"Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n"


def get(path: bytes = b"/healthz", extra: bytes = b"", version: bytes = b"1.1") -> bytes:
    host = b"Host: {host}\r\n" if version == b"1.1" else b""
    return b"GET " + path + b" HTTP/" + version + b"\r\n" + host + extra + b"\r\n"


def post(extra: bytes = b"", body: bytes = INITIALIZE, *, host: bytes = b"{host}") -> bytes:
    return (
        b"POST /mcp HTTP/1.1\r\nHost: " + host + b"\r\n" + MCP_HEADERS + extra
        + b"Content-Length: %d\r\n\r\n" % len(body) + body
    )  # fmt: skip


def chunked(
    chunks: list[bytes], extra: bytes = b"", trailer: bytes = b"", target: bytes = b"/mcp"
) -> bytes:
    head = b"POST " + target + b" HTTP/1.1\r\nHost: {host}\r\n" + MCP_HEADERS + extra
    body = b"".join(chunks) + b"0\r\n" + trailer + b"\r\n"
    return head + b"Transfer-Encoding: chunked\r\n\r\n" + body


def chunks_of(body: bytes, size: int = 40) -> list[bytes]:
    return [
        b"%x\r\n%b\r\n" % (len(body[i : i + size]), body[i : i + size])
        for i in range(0, len(body), size)
    ]


@attrs.frozen
class Verdict:
    statuses: tuple[int, ...]
    closes: bool


OK = Verdict((200,), closes=False)


def refused(status: int) -> Verdict:
    return Verdict((status,), closes=True)


@attrs.frozen
class Case:
    name: str
    data: bytes
    verdict: Verdict
    #: hypercorn's verdicts where h11 reads the case differently (see its ``why``)
    hypercorn: Verdict | tuple[Verdict, ...] | None = None
    why: str = ""


BODY = INITIALIZE
CASES = [
    # --- well-formed -------------------------------------------------------------------
    Case("get", get(), OK),
    Case("post with Content-Length", post(), OK),
    Case("post chunked", chunked(chunks_of(BODY)), OK),
    Case("chunk extensions", chunked([b"%x;a=b;c=\"d\"\r\n%b\r\n" % (len(BODY), BODY)]), OK),
    Case("Transfer-Encoding is case-insensitive", chunked(chunks_of(BODY)).replace(
        b"Transfer-Encoding: chunked", b"Transfer-Encoding: Chunked"), OK),
    Case("Content-Length with leading zeros", post().replace(
        b"Content-Length: ", b"Content-Length: 000"), OK),
    Case("pipelined requests", get() + get(), Verdict((200, 200), closes=False)),
    Case("pipelined after Connection: close", get(extra=b"Connection: close\r\n") + get(),
         refused(200)),
    Case("pipelined after a POST with Connection: close",
         post(b"Connection: close\r\n") + get() + get(), refused(200)),
    Case("HTTP/1.0 without Host", get(version=b"1.0"), refused(200)),
    Case("HTTP/1.0 keep-alive", get(version=b"1.0", extra=b"Connection: keep-alive\r\n"), OK,
         refused(200), "h11 closes every HTTP/1.0 connection, as RFC 9112 §9.3 allows"),
    Case("HTTP/1.0 gets no 100 Continue",
         post(b"Expect: 100-continue\r\n").replace(b"HTTP/1.1", b"HTTP/1.0"), refused(200)),
    # --- Host (RFC 9112 §3.2) -----------------------------------------------------------
    Case("HTTP/1.1 without Host", b"GET /healthz HTTP/1.1\r\n\r\n", refused(400)),
    Case("two Host headers", get(extra=b"Host: {host}\r\n"), refused(400)),
    Case("two different Host headers", get(extra=b"Host: evil.example\r\n"), refused(400)),
    Case("malformed Host", post(host=b"[::1]evil.example"), refused(400)),
    Case("Host with a path", post(host=b"localhost/x"), refused(400)),
    Case("Host not allowed", post(host=b"evil.example"), Verdict((421,), closes=False)),
    Case("absolute-form names a foreign host",
         post().replace(b"POST /mcp", b"POST http://evil.example/mcp"),
         Verdict((421,), closes=False)),
    Case("absolute-form authority wins over Host",
         post(host=b"evil.example").replace(b"POST /mcp", b"POST http://{host}/mcp"), OK),
    Case("absolute-form of another scheme",
         post().replace(b"POST /mcp", b"POST ftp://{host}/mcp"), refused(400)),
    # --- smuggling: Content-Length and Transfer-Encoding (RFC 9112 §6) -------------------
    Case("Content-Length with Transfer-Encoding",
         chunked(chunks_of(BODY), extra=b"Content-Length: 5\r\n"), refused(400)),
    Case("Transfer-Encoding before Content-Length",
         chunked(chunks_of(BODY)).replace(b"Transfer-Encoding: chunked\r\n",
                                          b"Transfer-Encoding: chunked\r\nContent-Length: 5\r\n"),
         refused(400)),
    Case("CL.TE smuggling shape",
         chunked([], extra=b"Content-Length: 6\r\n") + b"G", refused(400)),
    Case("a request smuggled behind CL.TE", chunked([], extra=b"Content-Length: 60\r\n")
         + get(), refused(400)),
    Case("differing Content-Length headers",
         post(b"Content-Length: 7\r\n"), refused(400)),
    Case("repeated identical Content-Length",
         post(b"Content-Length: %d\r\n" % len(BODY)), refused(400), OK,
         "h11 merges identical values into one, which RFC 9110 §8.6 allows"),
    Case("Content-Length as a list",
         post().replace(b"Content-Length: ", b"Content-Length: %d, " % len(BODY)),
         refused(400), OK, "h11 merges a list of identical values, as RFC 9110 §8.6 allows"),
    Case("Content-Length with a sign", post().replace(b"Content-Length: ", b"Content-Length: +"),
         refused(400)),
    Case("Transfer-Encoding: gzip, chunked",
         chunked(chunks_of(BODY)).replace(b"chunked", b"gzip, chunked"), refused(501)),
    Case("Transfer-Encoding: chunked, gzip",
         chunked(chunks_of(BODY)).replace(b"chunked", b"chunked, gzip"), refused(400),
         refused(501), "h11 answers 501 for every coding but a lone chunked"),
    Case("Transfer-Encoding: gzip", post(b"Transfer-Encoding: gzip\r\n").replace(
        b"Content-Length: %d\r\n" % len(BODY), b""), refused(400), refused(501),
         "h11 answers 501 for every coding but a lone chunked"),
    Case("Transfer-Encoding: chunked, chunked",
         chunked(chunks_of(BODY)).replace(b"chunked", b"chunked, chunked"), refused(400),
         refused(501), "h11 answers 501 for every coding but a lone chunked"),
    Case("chunked twice", chunked(chunks_of(BODY), extra=b"Transfer-Encoding: chunked\r\n"),
         refused(400), refused(501), "h11 answers 501 for every coding but a lone chunked"),
    Case("Transfer-Encoding in HTTP/1.0",
         chunked(chunks_of(BODY)).replace(b"HTTP/1.1", b"HTTP/1.0"), refused(400)),
    Case("space before the colon",
         chunked(chunks_of(BODY)).replace(b"Transfer-Encoding:", b"Transfer-Encoding :"),
         refused(400)),
    Case("vertical tab in Transfer-Encoding",
         chunked(chunks_of(BODY)).replace(b"Encoding: chunked", b"Encoding:\x0bchunked"),
         refused(400)),
    # --- field syntax (RFC 9112 §5, RFC 9110 §5.5) -------------------------------------
    Case("repeated fields other than Host and Content-Length",
         get(extra=b"X-A: 1\r\nAccept: */*\r\nX-A: 2\r\nAccept: text/plain\r\n"), OK),
    Case("obs-fold", get(extra=b"X-A: b\r\n c\r\n"), refused(400), OK,
         "h11 replaces obs-fold with a space, the other reading RFC 9112 §5.2 allows"),
    Case("bare CR in a field", get(extra=b"X-A: b\rc\r\n"), refused(400)),
    Case("NUL in a field", get(extra=b"X-A: b\x00c\r\n"), refused(400)),
    Case("control character in a field", get(extra=b"X-A: b\x01c\r\n"), refused(400)),
    Case("bare LF line ends", get().replace(b"\r\n", b"\n"), refused(400), OK,
         "h11 takes a lone LF as a line end, which RFC 9112 §2.2 allows"),
    Case("invalid field name", get(extra=b"X(A): b\r\n"), refused(400)),
    Case("continuation line first", b"GET /healthz HTTP/1.1\r\n Host: {host}\r\n\r\n",
         refused(400)),
    Case("garbage", b"\x16\x03\x01 hello\r\n\r\n", refused(400)),
    Case("HTTP/0.9 request line", b"GET /healthz\r\n\r\n", refused(400)),
    Case("HTTP/2.0 in an HTTP/1 request line", get(version=b"2.0").replace(
        b"HTTP/2.0\r\n", b"HTTP/2.0\r\nHost: {host}\r\n"), refused(505)),
    Case("control character in the target", get(path=b"/heal\x01thz"), refused(400)),
    # --- chunked bodies (RFC 9112 §7.1) ---------------------------------------------------
    Case("chunk size not hex", chunked([b"zz\r\n" + BODY + b"\r\n"]), refused(400)),
    Case("negative chunk size", chunked([b"-5\r\nhello\r\n"]), refused(400)),
    Case("chunk size with a space", chunked([b"5 ;a\r\nhello\r\n"]), refused(400)),
    Case("chunk size overflow", chunked([b"fffffffffffffffffff\r\nhello\r\n"]), refused(400)),
    Case("NUL in a chunk extension", chunked([b"5;\x00\r\nhello\r\n"]), refused(400),
         Verdict((400,), closes=False), "h11 skips extensions; the body is not valid JSON"),
    Case("chunk data without its CRLF", chunked([b"5\r\nhelloXX"]), refused(400)),
    # --- trailers never become headers ---------------------------------------------------
    Case("trailer fields are dropped",
         chunked(chunks_of(BODY), trailer=b"Host: evil.example\r\nMcp-Session-Id: x\r\n"), OK),
    # --- limits ----------------------------------------------------------------------------
    Case("too many header fields",
         get(extra=b"".join(b"X-%d: v\r\n" % n for n in range(25))), refused(431)),
    Case("head too large", get(extra=b"X-Big: " + b"y" * 5000 + b"\r\n"), refused(431)),
    Case("unterminated header value", b"GET /healthz HTTP/1.1\r\nHost: {host}\r\nX-Big: "
         + b"y" * 200_000, refused(431)),
    Case("request target too long", get(path=b"/" + b"x" * 5000), refused(414)),
    Case("body too large", post(body=b"x" * 3000), refused(413)),
    Case("declared body too large", post(body=b"").replace(b"Content-Length: 0",
         b"Content-Length: 99999999999999999999"), refused(400), refused(413),
         "llhttp refuses a length past 2**64 as malformed; the app refuses it as too large"),
    Case("chunked body too large", chunked(chunks_of(b"x" * 3000, 1000)), refused(413)),
]  # fmt: skip


@contextlib.asynccontextmanager
async def serving(kind: HttpServerKind) -> AsyncIterator[int]:
    async with trio.open_nursery() as nursery:
        _, port = await nursery.start(
            functools.partial(
                serve_http, make_server(Probe()), port=0, options=OPTIONS, http_server=kind
            )
        )
        yield port
        nursery.cancel_scope.cancel()


class Responses:
    """Reads HTTP/1.1 responses off a socket; EOF and a reset both count as closed."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.buffer = b""
        self.closed = False

    async def _fill(self) -> bool:
        if self.closed:
            return False
        try:
            data = await self.stream.receive_some(65536)
        except trio.BrokenResourceError:
            data = b""
        self.closed = not data
        self.buffer += data
        return bool(data)

    async def _line(self) -> bytes | None:
        while b"\r\n" not in self.buffer:
            if not await self._fill():
                return None
        line, self.buffer = self.buffer.split(b"\r\n", 1)
        return line

    async def _exactly(self, n: int) -> bytes | None:
        while len(self.buffer) < n:
            if not await self._fill():
                return None
        data, self.buffer = self.buffer[:n], self.buffer[n:]
        return data

    async def next(self) -> int | None:
        """The next response's status (1xx included); None if the connection closed."""
        status_line = await self._line()
        if status_line is None:
            return None
        status = int(status_line.split()[1])
        headers = {}
        while line := await self._line():
            name, _, value = line.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        if status < 200:
            return status
        if "content-length" in headers:
            await self._exactly(int(headers["content-length"]))
        elif headers.get("transfer-encoding") == "chunked":
            while (size := await self._line()) is not None and int(size, 16):
                await self._exactly(int(size, 16) + 2)
            await self._exactly(2)
        return status

    async def at_eof(self) -> bool:
        return not self.buffer and not await self._fill()


async def verdict_of(
    port: int, data: bytes, *expected: Verdict, byte_by_byte: bool = False
) -> Verdict:
    """Send ``data`` and read as many responses as the longest expected verdict has.

    ``byte_by_byte``: one byte per write, each read by the server before the next.
    """
    host = b"127.0.0.1:%d" % port
    count = max(len(verdict.statuses) for verdict in expected)
    async with await trio.open_tcp_stream("127.0.0.1", port) as stream:
        data = data.replace(b"{host}", host)
        with contextlib.suppress(trio.BrokenResourceError):
            if byte_by_byte:
                for index in range(len(data)):
                    await stream.send_all(data[index : index + 1])
                    await trio.testing.wait_all_tasks_blocked()
            else:
                await stream.send_all(data)
        responses = Responses(stream)
        statuses: list[int] = []
        with trio.fail_after(20):
            for _ in range(count):
                status = await responses.next()
                if status is None:
                    break
                statuses.append(status)
            if responses.closed or any(verdict.closes for verdict in expected):
                closes = await responses.at_eof()
            else:
                # Open: it serves the next request.
                await stream.send_all(get().replace(b"{host}", host))
                closes = await responses.next() != 200
    return Verdict(tuple(statuses), closes)


@pytest.mark.parametrize("kind", ["builtin", "hypercorn"])
@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
async def test_framing_verdict(kind: HttpServerKind, case: Case) -> None:
    expected = case.verdict if kind == "builtin" or case.hypercorn is None else case.hypercorn
    allowed = expected if isinstance(expected, tuple) else (expected,)
    async with serving(kind) as port:
        assert await verdict_of(port, case.data, *allowed) in allowed
        # Whatever the case did, the server serves the next connection.
        assert await verdict_of(port, get(), OK) == OK


#: cases whose verdict must not depend on how the bytes are split into reads
BYTE_BY_BYTE = [
    "post with Content-Length",
    "post chunked",
    "chunk extensions",
    "pipelined requests",
    "Content-Length with Transfer-Encoding",
    "Transfer-Encoding: gzip, chunked",
    "obs-fold",
    "bare LF line ends",
    "chunk size not hex",
    "trailer fields are dropped",
]


@pytest.mark.parametrize("kind", ["builtin", "hypercorn"])
@pytest.mark.parametrize("name", BYTE_BY_BYTE)
async def test_framing_verdict_byte_by_byte(kind: HttpServerKind, name: str) -> None:
    [case] = [case for case in CASES if case.name == name]
    expected = case.verdict if kind == "builtin" or case.hypercorn is None else case.hypercorn
    allowed = expected if isinstance(expected, tuple) else (expected,)
    async with serving(kind) as port:
        assert await verdict_of(port, case.data, *allowed, byte_by_byte=True) in allowed
