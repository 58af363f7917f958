"""Hostile connections to every listener of a real ``mcpactor serve``: the process lives.

One ``mcpactor serve --http … --admin …`` process per HTTP server (built-in and
hypercorn); each case does something no client should to one listener — the MCP port or
the admin port, unauthenticated — and then the process must still be running, the admin
page must answer its token, and the MCP endpoint must answer an ``initialize``. The
cases are the ways connections go wrong on the wire (malformed request lines, a
WebSocket upgrade followed by garbage, half-closed and reset connections, pipelined
garbage, a slowloris, HTTP/2 prefaces and frames, TLS on the plain port), then
arbitrary bytes and arbitrary request heads from hypothesis.
"""

from __future__ import annotations

import contextlib
import random
import re
import signal
import socket
import struct
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Final

import attrs
import orjson
import pytest
import trio
from hypothesis import given
from hypothesis import strategies as st

from tests.transports._h2_client import H2Client

from ._hostile import FUZZ

TOKEN: Final = "a-token-for-the-listener-fuzz-0123456789"
#: the servers' deadline for a request to arrive (both listeners), in seconds
REQUEST_TIMEOUT: Final = 2
INITIALIZE: Final = orjson.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "fuzz", "version": "1"},
        },
    }
)
_UPGRADE: Final = (
    b"Upgrade: websocket\r\nConnection: Upgrade\r\n"
    b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
)
_PREFACE: Final = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
#: a fixed seed: the noise is the same on every run
_NOISE: Final = random.Random(43).randbytes(8192)


@attrs.frozen
class Process:
    """The served process: where its two listeners are, and its log."""

    popen: subprocess.Popen[bytes]
    mcp_port: int
    admin_port: int
    log: Path

    def port(self, listener: str) -> int:
        return self.mcp_port if listener == "mcp" else self.admin_port


@pytest.fixture(scope="module", params=["builtin", "hypercorn"])
def served(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Process]:
    directory = tmp_path_factory.mktemp("listener-fuzz")
    token_file = directory / "token"
    token_file.write_text(TOKEN + "\n")
    log = directory / "stderr"
    command = [
        sys.executable, "-m", "mcpactor", "serve", "clock",
        "--http", "127.0.0.1:0", "--http-server", request.param,
        "--admin", "127.0.0.1:0", "--admin-token-file", str(token_file),
        "--request-timeout", str(REQUEST_TIMEOUT),
    ]  # fmt: skip
    with log.open("wb") as err:
        popen = subprocess.Popen(command, stderr=err)
    try:
        said = ""
        deadline = time.monotonic() + 60
        while "mcpactor: serving" not in said:
            assert popen.poll() is None, log.read_text()
            assert time.monotonic() < deadline, said
            time.sleep(0.05)
            said = log.read_text()
        admin = re.search(r"admin page http://127\.0\.0\.1:(\d+)/", said)
        mcp = re.search(r"serving http://127\.0\.0\.1:(\d+)/mcp", said)
        assert admin is not None, said
        assert mcp is not None, said
        yield Process(popen, int(mcp.group(1)), int(admin.group(1)), log)
    finally:
        if popen.poll() is None:
            popen.send_signal(signal.SIGTERM)
            try:
                popen.wait(30)
            except subprocess.TimeoutExpired:
                popen.kill()
                popen.wait()


# --- talking to a listener ------------------------------------------------------------


async def _exchange(port: int, data: bytes) -> bytes:
    # One request on its own connection (it asks to close), read to the end.
    answer = b""
    async with await trio.open_tcp_stream("127.0.0.1", port) as stream:
        await stream.send_all(data)
        with trio.fail_after(20), contextlib.suppress(trio.BrokenResourceError):
            while chunk := await stream.receive_some(65536):
                answer += chunk
    return answer


async def admin_page(port: int) -> bytes:
    return await _exchange(
        port,
        b"GET / HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAuthorization: Bearer %s\r\n"
        b"Connection: close\r\n\r\n" % (port, TOKEN.encode()),
    )


async def initialize(port: int) -> bytes:
    return await _exchange(
        port,
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
        b"Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (port, len(INITIALIZE), INITIALIZE),
    )


def check_alive(served: Process) -> None:
    """The process runs, the admin page answers its token, the MCP endpoint initializes."""

    async def check() -> None:
        page = await admin_page(served.admin_port)
        assert page.startswith(b"HTTP/1.1 200 "), page[:300]
        assert b"<!doctype html>" in page.lower()
        answer = await initialize(served.mcp_port)
        assert answer.startswith(b"HTTP/1.1 200 "), answer[:300]
        assert b'"serverInfo"' in answer

    assert served.popen.poll() is None, served.log.read_text()[-3000:]
    trio.run(check)
    assert served.popen.poll() is None, served.log.read_text()[-3000:]


@contextlib.asynccontextmanager
async def connection(port: int) -> AsyncIterator[trio.SocketStream]:
    async with await trio.open_tcp_stream("127.0.0.1", port) as stream:
        yield stream


async def send_quietly(stream: trio.SocketStream, data: bytes) -> None:
    with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
        await stream.send_all(data)


async def drain(stream: trio.SocketStream, seconds: float = 3.0) -> bytes:
    """Read what the server says until it closes (or ``seconds`` pass)."""
    said = b""
    with (
        trio.move_on_after(seconds),
        contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError),
    ):
        while chunk := await stream.receive_some(65536):
            said += chunk
    return said


def half_close(stream: trio.SocketStream) -> None:
    with contextlib.suppress(OSError):
        stream.socket.shutdown(socket.SHUT_WR)


def reset(stream: trio.SocketStream) -> None:
    # Close with RST instead of FIN.
    stream.socket.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


# --- the cases ------------------------------------------------------------------------

Case = Callable[[int, str], Awaitable[None]]
CASES: dict[str, Case] = {}


def case(fn: Case) -> Case:
    CASES[fn.__name__.removeprefix("case_").replace("_", " ")] = fn
    return fn


def _host(port: int) -> bytes:
    return b"Host: 127.0.0.1:%d\r\n" % port


def _path(listener: str, websocket: bool = False) -> bytes:
    if websocket:
        return b"/ws" if listener == "mcp" else b"/api/stream"
    return b"/mcp" if listener == "mcp" else b"/"


async def _send_then_drain(port: int, data: bytes) -> None:
    async with connection(port) as stream:
        await send_quietly(stream, data)
        await drain(stream)


@case
async def case_malformed_request_line(port: int, listener: str) -> None:
    await _send_then_drain(port, b"GARBAGE\r\n\r\n")


@case
async def case_request_line_without_a_version(port: int, listener: str) -> None:
    await _send_then_drain(port, b"GET " + _path(listener) + b"\r\n\r\n")


@case
async def case_request_line_with_an_unknown_version(port: int, listener: str) -> None:
    await _send_then_drain(port, b"GET / HTTP/7.3\r\n" + _host(port) + b"\r\n")


@case
async def case_binary_noise(port: int, listener: str) -> None:
    await _send_then_drain(port, _NOISE)


@case
async def case_a_huge_request_line(port: int, listener: str) -> None:
    await _send_then_drain(port, b"GET /" + b"a" * 200_000 + b" HTTP/1.1\r\n\r\n")


@case
async def case_a_huge_header_field(port: int, listener: str) -> None:
    await _send_then_drain(
        port, b"GET / HTTP/1.1\r\n" + _host(port) + b"X: " + b"y" * 200_000 + b"\r\n\r\n"
    )


@case
async def case_thousands_of_header_fields(port: int, listener: str) -> None:
    fields = b"".join(b"X-%d: v\r\n" % n for n in range(5000))
    await _send_then_drain(port, b"GET / HTTP/1.1\r\n" + _host(port) + fields + b"\r\n")


@case
async def case_conflicting_body_lengths(port: int, listener: str) -> None:
    await _send_then_drain(
        port,
        b"POST " + _path(listener) + b" HTTP/1.1\r\n" + _host(port)
        + b"Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
        + b"GET / HTTP/1.1\r\n\r\n",
    )  # fmt: skip


@case
async def case_a_body_shorter_than_declared_then_a_half_close(port: int, listener: str) -> None:
    async with connection(port) as stream:
        await send_quietly(
            stream,
            b"POST " + _path(listener) + b" HTTP/1.1\r\n" + _host(port)
            + b"Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"a\":",
        )  # fmt: skip
        half_close(stream)
        await drain(stream)


@case
async def case_websocket_upgrade_and_one_stray_byte(port: int, listener: str) -> None:
    for path in (_path(listener), _path(listener, websocket=True)):
        head = b"GET " + path + b" HTTP/1.1\r\n" + _host(port) + _UPGRADE + b"\r\n"
        await _send_then_drain(port, head + b"X")


@case
async def case_websocket_upgrade_and_garbage_frames(port: int, listener: str) -> None:
    head = b"GET " + _path(listener, True) + b" HTTP/1.1\r\n" + _host(port) + _UPGRADE + b"\r\n"
    async with connection(port) as stream:
        await send_quietly(stream, head)
        with trio.move_on_after(1):
            await stream.receive_some(65536)
        await send_quietly(stream, _NOISE[:2000])
        await drain(stream)


@case
async def case_websocket_upgrade_then_a_half_close(port: int, listener: str) -> None:
    head = b"GET " + _path(listener, True) + b" HTTP/1.1\r\n" + _host(port) + _UPGRADE + b"\r\n"
    async with connection(port) as stream:
        await send_quietly(stream, head)
        half_close(stream)
        await drain(stream)


@case
async def case_websocket_upgrade_then_a_reset(port: int, listener: str) -> None:
    head = b"GET " + _path(listener, True) + b" HTTP/1.1\r\n" + _host(port) + _UPGRADE + b"\r\n"
    async with connection(port) as stream:
        await send_quietly(stream, head + b"\x81")
        reset(stream)


@case
async def case_half_closed_in_the_middle_of_a_head(port: int, listener: str) -> None:
    async with connection(port) as stream:
        await send_quietly(stream, b"GET / HTTP/1.1\r\nHo")
        half_close(stream)
        await drain(stream)


@case
async def case_half_closed_after_a_whole_request(port: int, listener: str) -> None:
    async with connection(port) as stream:
        await send_quietly(stream, b"GET /healthz HTTP/1.1\r\n" + _host(port) + b"\r\n")
        half_close(stream)
        await drain(stream)


@case
async def case_reset_in_the_middle_of_a_request(port: int, listener: str) -> None:
    async with connection(port) as stream:
        head = b"POST / HTTP/1.1\r\n" + _host(port) + b"Content-Length: 99\r\n"
        await send_quietly(stream, head)
        reset(stream)


@case
async def case_pipelined_garbage(port: int, listener: str) -> None:
    request = b"GET /healthz HTTP/1.1\r\n" + _host(port) + b"\r\n"
    await _send_then_drain(port, request + _NOISE[:500] + request)


@case
async def case_pipelined_requests_after_connection_close(port: int, listener: str) -> None:
    close = b"GET / HTTP/1.1\r\n" + _host(port) + b"Connection: close\r\n\r\n"
    request = b"GET / HTTP/1.1\r\n" + _host(port) + b"\r\n"
    for _ in range(5):
        await _send_then_drain(port, close + request * 20)


@case
async def case_a_slowloris(port: int, listener: str) -> None:
    # One byte of a head at a time: the server ends it at the request timeout, well
    # before the head could be complete, and serves others meanwhile.
    head = b"GET / HTTP/1.1\r\n" + _host(port) + b"X-Slow: " + b"s" * 400 + b"\r\n\r\n"
    async with connection(port) as stream:
        start = trio.current_time()
        closed = False
        for byte in head:
            try:
                await stream.send_all(bytes([byte]))
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                closed = True
                break
            with trio.move_on_after(0.05):
                if not await stream.receive_some(65536):
                    closed = True
                    break
            if trio.current_time() - start > REQUEST_TIMEOUT + 15:
                break
        assert closed, "a head that never ends was held past the request timeout"


@case
async def case_many_idle_connections(port: int, listener: str) -> None:
    async with contextlib.AsyncExitStack() as stack:
        for _ in range(20):
            stream = await stack.enter_async_context(connection(port))
            await send_quietly(stream, b"G")
        # Held meanwhile: the others are served.
        assert (await admin_page_or_health(port, listener)).startswith(b"HTTP/1.1 200 ")


async def admin_page_or_health(port: int, listener: str) -> bytes:
    if listener == "admin":
        return await admin_page(port)
    return await _exchange(
        port, b"GET /healthz HTTP/1.1\r\n" + _host(port) + b"Connection: close\r\n\r\n"
    )


@case
async def case_http2_preface_then_garbage(port: int, listener: str) -> None:
    await _send_then_drain(port, _PREFACE + _NOISE[:1000])


@case
async def case_http2_preface_then_nothing(port: int, listener: str) -> None:
    async with connection(port) as stream:
        await send_quietly(stream, _PREFACE)
        with trio.move_on_after(0.5):
            await stream.receive_some(65536)


@case
async def case_http2_headers_that_do_not_decode(port: int, listener: str) -> None:
    settings = b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
    # A HEADERS frame (END_HEADERS) on stream 1 whose HPACK block is nonsense.
    block = b"\xff\xff\xff\xff\xff"
    headers = struct.pack(">I", len(block))[1:] + b"\x01\x04" + struct.pack(">I", 1) + block
    await _send_then_drain(port, _PREFACE + settings + headers)


@case
async def case_http2_streams_left_without_their_bodies(port: int, listener: str) -> None:
    async with connection(port) as stream:
        client = H2Client(stream, f"127.0.0.1:{port}")
        with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
            await client.start()
            for _ in range(10):
                await client.request("POST", _path(listener).decode(), body=None)
            with trio.move_on_after(1):
                await client.read()


@case
async def case_h2c_upgrade_then_garbage(port: int, listener: str) -> None:
    await _send_then_drain(
        port,
        b"GET / HTTP/1.1\r\n" + _host(port) + b"Connection: Upgrade, HTTP2-Settings\r\n"
        b"Upgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n" + _NOISE[:300],
    )


@case
async def case_tls_on_the_plain_port(port: int, listener: str) -> None:
    hello = b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03" + _NOISE[:160]
    await _send_then_drain(port, hello)


@case
async def case_connect_and_absolute_form_targets(port: int, listener: str) -> None:
    close = b"Connection: close\r\n\r\n"
    await _send_then_drain(port, b"CONNECT 127.0.0.1:22 HTTP/1.1\r\n" + _host(port) + close)
    await _send_then_drain(port, b"GET http://evil.example/ HTTP/1.1\r\n" + _host(port) + close)


@case
async def case_expect_100_continue_then_a_reset(port: int, listener: str) -> None:
    async with connection(port) as stream:
        await send_quietly(
            stream,
            b"POST " + _path(listener) + b" HTTP/1.1\r\n" + _host(port)
            + b"Expect: 100-continue\r\nContent-Length: 10\r\n\r\n",
        )  # fmt: skip
        with trio.move_on_after(0.5):
            await stream.receive_some(65536)
        reset(stream)


@pytest.mark.parametrize("listener", ["admin", "mcp"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_a_hostile_connection_leaves_the_process_serving(
    served: Process, listener: str, name: str
) -> None:
    trio.run(CASES[name], served.port(listener), listener)
    check_alive(served)


# --- arbitrary bytes and heads --------------------------------------------------------

_TOKENS: Final = [
    b"GET", b"POST", b"PRI", b"*", b" ", b"/", b"/mcp", b"/ws", b"/api/stream", b"HTTP/1.1",
    b"HTTP/1.0", b"HTTP/2.0", b"\r\n", b"\n", b"\r", b":", b"Host: 127.0.0.1", b"Upgrade: ",
    b"websocket", b"h2c", b"Connection: ", b"close", b"keep-alive", b"Content-Length: ",
    b"Transfer-Encoding: chunked", b"0", b"5", b"-1", b"ffffffffffffffff", b"\x00", b"\xff",
    b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", b"Sec-WebSocket-Version: 13",
    b"Expect: 100-continue", b"SM", b"\x16\x03\x01",
]  # fmt: skip


async def _throw(port: int, data: bytes) -> None:
    async with connection(port) as stream:
        await send_quietly(stream, data)
        # Whatever the server makes of it, the check that follows is the point.
        await drain(stream, 0.3)


@FUZZ
@given(listener=st.sampled_from(["admin", "mcp"]), data=st.binary(max_size=4096))
def test_arbitrary_bytes_leave_the_process_serving(
    served: Process, listener: str, data: bytes
) -> None:
    trio.run(_throw, served.port(listener), data)
    check_alive(served)


@FUZZ
@given(
    listener=st.sampled_from(["admin", "mcp"]),
    parts=st.lists(st.sampled_from(_TOKENS) | st.binary(max_size=8), max_size=60),
)
def test_arbitrary_request_heads_leave_the_process_serving(
    served: Process, listener: str, parts: list[bytes]
) -> None:
    trio.run(_throw, served.port(listener), b"".join(parts) + b"\r\n\r\n")
    check_alive(served)
