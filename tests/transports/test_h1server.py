"""The built-in HTTP/1.1 server, on raw sockets: framing, limits, timeouts, shutdown."""

from __future__ import annotations

import contextlib
import functools
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import orjson
import pytest
import trio
import trio.testing
from hypothesis import given, settings
from hypothesis import strategies as st

from mcpactor.runtime import StartGate
from mcpactor.transports.h1 import H1Config, serve_h1
from mcpactor.transports.h1._connection import (
    OPS_PER_CHECKPOINT,
    Connection,
    Exchange,
    Handler,
    ServerState,
)
from mcpactor.transports.h1._protocol import H1Protocol

App = Callable[[dict[str, Any], Any, Any], Awaitable[None]]


async def echo_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """Answer with what the request was: method, path, query, body and headers."""
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    answer = orjson.dumps(
        {
            "method": scope["method"],
            "path": scope["path"],
            "query": scope["query_string"].decode(),
            "body": body.decode(),
            "headers": {k.decode(): v.decode() for k, v in scope["headers"]},
            "http_version": scope["http_version"],
        }
    )
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-type", b"application/json")],
        }
    )
    await send({"type": "http.response.body", "body": answer})


def json_error_body(status: int, message: str) -> tuple[bytes, bytes]:
    return b"application/json", orjson.dumps({"status": status, "message": message})


@asynccontextmanager
async def running(
    app: App, *, intake: StartGate | None = None, handle: Handler | None = None, **config: Any
) -> AsyncIterator[tuple[int, trio.Event]]:
    shutdown = trio.Event()
    async with trio.open_nursery() as nursery:
        _, port = await nursery.start(
            functools.partial(
                serve_h1,
                app,
                host="127.0.0.1",
                port=0,
                config=H1Config(**config),
                shutdown=shutdown,
                graceful_timeout=5,
                error_body=json_error_body,
                intake=intake,
                handle=handle,
            )
        )
        yield port, shutdown
        shutdown.set()


class Reader:
    """Reads HTTP/1.1 responses off a client stream."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.buffer = b""

    async def _fill(self) -> bool:
        data = await self.stream.receive_some(65536)
        self.buffer += data
        return bool(data)

    async def line(self) -> bytes:
        while b"\r\n" not in self.buffer:
            if not await self._fill():
                raise EOFError
        line, self.buffer = self.buffer.split(b"\r\n", 1)
        return line

    async def exactly(self, n: int) -> bytes:
        while len(self.buffer) < n:
            if not await self._fill():
                raise EOFError
        data, self.buffer = self.buffer[:n], self.buffer[n:]
        return data

    async def response(self, *, head: bool = False) -> tuple[int, dict[str, str], bytes]:
        status_line = await self.line()
        status = int(status_line.split()[1])
        headers: dict[str, str] = {}
        while line := await self.line():
            name, _, value = line.decode().partition(":")
            headers[name.lower()] = value.strip()
        if head or status in (100, 204, 304):
            return status, headers, b""
        if "content-length" in headers:
            return status, headers, await self.exactly(int(headers["content-length"]))
        if headers.get("transfer-encoding") == "chunked":
            body = b""
            while size := int(await self.line(), 16):
                body += await self.exactly(size)
                assert await self.exactly(2) == b"\r\n"
            assert await self.exactly(2) == b"\r\n"
            return status, headers, body
        while await self._fill():
            pass
        body, self.buffer = self.buffer, b""
        return status, headers, body

    async def at_eof(self) -> bool:
        return not self.buffer and not await self._fill()


def post(path: str, body: bytes, *extra: str) -> bytes:
    head = [f"POST {path} HTTP/1.1", "Host: 127.0.0.1", f"Content-Length: {len(body)}", *extra]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


async def test_keep_alive_serves_requests_in_turn_on_one_connection() -> None:
    async with running(echo_app) as (port, _), await trio.open_tcp_stream("127.0.0.1", port) as s:
        reader = Reader(s)
        for n in range(3):
            await s.send_all(post("/mcp?x=1", b"body %d" % n))
            status, headers, body = await reader.response()
            assert status == 200
            assert headers["content-type"] == "application/json"
            assert "date" in headers
            assert "connection" not in headers
            seen = orjson.loads(body)
            assert (seen["method"], seen["path"], seen["query"]) == ("POST", "/mcp", "x=1")
            assert seen["body"] == f"body {n}"
            assert seen["headers"]["host"] == "127.0.0.1"


async def test_pipelined_requests_are_answered_in_order() -> None:
    async with running(echo_app) as (port, _), await trio.open_tcp_stream("127.0.0.1", port) as s:
        await s.send_all(b"".join(post("/", b"%d" % n) for n in range(5)))
        reader = Reader(s)
        bodies = [orjson.loads((await reader.response())[2])["body"] for _ in range(5)]
        assert bodies == ["0", "1", "2", "3", "4"]


async def test_chunked_request_body_is_decoded_and_path_unquoted() -> None:
    request = (
        b"POST /a%20b HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"
    )
    async with running(echo_app) as (port, _), await trio.open_tcp_stream("127.0.0.1", port) as s:
        await s.send_all(request)
        status, _, body = await Reader(s).response()
        assert status == 200
        seen = orjson.loads(body)
        assert (seen["path"], seen["body"]) == ("/a b", "hello world")


async def streaming_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    await receive()
    await send({"type": "http.response.start", "status": 200, "headers": []})
    for part in (b"one ", b"", b"two"):
        await send({"type": "http.response.body", "body": part, "more_body": True})
    await send({"type": "http.response.body", "body": b"", "more_body": False})


async def test_a_streamed_response_is_chunked_for_http11_and_close_delimited_for_http10() -> None:
    async with running(streaming_app) as (port, _):
        async with await trio.open_tcp_stream("127.0.0.1", port) as s:
            await s.send_all(post("/", b""))
            reader = Reader(s)
            status, headers, body = await reader.response()
            assert (status, headers["transfer-encoding"], body) == (200, "chunked", b"one two")
            # still usable afterwards
            await s.send_all(post("/", b""))
            assert (await reader.response())[2] == b"one two"
        async with await trio.open_tcp_stream("127.0.0.1", port) as s:
            await s.send_all(b"GET / HTTP/1.0\r\n\r\n")
            reader = Reader(s)
            status, headers, body = await reader.response()
            assert headers["connection"] == "close"
            assert "transfer-encoding" not in headers
            assert body == b"one two"
            assert await reader.at_eof()


async def test_http10_keep_alive_is_honoured_when_asked_for() -> None:
    async with running(echo_app) as (port, _), await trio.open_tcp_stream("127.0.0.1", port) as s:
        reader = Reader(s)
        for _ in range(2):
            await s.send_all(b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
            status, headers, body = await reader.response()
            assert (status, headers["connection"]) == (200, "keep-alive")
            assert orjson.loads(body)["http_version"] == "1.0"


async def test_connection_close_from_the_client_ends_the_connection() -> None:
    async with running(echo_app) as (port, _), await trio.open_tcp_stream("127.0.0.1", port) as s:
        await s.send_all(post("/", b"x", "Connection: close"))
        reader = Reader(s)
        status, headers, _ = await reader.response()
        assert (status, headers["connection"]) == (200, "close")
        assert await reader.at_eof()


async def test_head_requests_get_headers_without_a_body() -> None:
    async with running(echo_app) as (port, _), await trio.open_tcp_stream("127.0.0.1", port) as s:
        await s.send_all(b"HEAD / HTTP/1.1\r\nHost: h\r\n\r\n")
        reader = Reader(s)
        status, headers, _ = await reader.response(head=True)
        assert status == 200
        assert int(headers["content-length"]) > 0
        # Nothing but the next response follows: the body was not sent.
        await s.send_all(post("/", b"after"))
        assert orjson.loads((await reader.response())[2])["body"] == "after"


async def test_expect_100_continue_gets_an_interim_response_before_the_body_is_read() -> None:
    async with running(echo_app) as (port, _), await trio.open_tcp_stream("127.0.0.1", port) as s:
        reader = Reader(s)
        await s.send_all(
            b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n"
        )
        status, _, _ = await reader.response()
        assert status == 100
        await s.send_all(b"hello")
        status, _, body = await reader.response()
        assert (status, orjson.loads(body)["body"]) == (200, "hello")


@pytest.mark.parametrize(
    ("request_bytes", "status", "why"),
    [
        (b"NOT HTTP AT ALL\r\n\r\n", 400, "malformed HTTP request"),
        (post("/", b"x" * 101), 413, "larger than 100 bytes"),
        (
            b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
            b"40\r\n" + b"x" * 64 + b"\r\n40\r\n" + b"x" * 64 + b"\r\n0\r\n\r\n",
            413,
            "larger than 100 bytes",
        ),
        (
            b"GET / HTTP/1.1\r\nHost: h\r\n" + b"X-Big: " + b"y" * 3000 + b"\r\n\r\n",
            431,
            "request head larger than 2048 bytes",
        ),
        (
            b"GET / HTTP/1.1\r\n" + b"".join(b"X-%d: v\r\n" % n for n in range(30)) + b"\r\n",
            431,
            "more than 20 header fields",
        ),
        (
            b"POST / HTTP/1.1\r\nHost: h\r\nConnection: upgrade\r\nUpgrade: h2c\r\n"
            b"Content-Length: 2\r\n\r\nhi",
            400,
            "upgrades other than WebSocket",
        ),
    ],
)
async def test_bad_requests_get_a_clear_error_and_the_connection_closes(
    request_bytes: bytes, status: int, why: str
) -> None:
    async with (
        running(echo_app, max_body_bytes=100, max_head_bytes=2048, max_headers=20) as (port, _),
        await trio.open_tcp_stream("127.0.0.1", port) as s,
    ):
        await s.send_all(request_bytes)
        reader = Reader(s)
        got, headers, body = await reader.response()
        assert got == status
        assert headers["connection"] == "close"
        error = orjson.loads(body)
        assert error["status"] == status
        assert why in error["message"]
        assert await reader.at_eof()


async def test_the_server_survives_bad_requests_and_serves_the_next_connection() -> None:
    async with running(echo_app) as (port, _):
        for _ in range(3):
            async with await trio.open_tcp_stream("127.0.0.1", port) as s:
                await s.send_all(b"\x00\x01garbage\r\n\r\n")
                assert (await Reader(s).response())[0] == 400
        async with await trio.open_tcp_stream("127.0.0.1", port) as s:
            await s.send_all(post("/", b"fine"))
            assert (await Reader(s).response())[0] == 200


async def test_an_app_that_fails_gets_500_and_one_that_does_not_answer_too() -> None:
    async def failing(scope: dict[str, Any], receive: Any, send: Any) -> None:
        raise RuntimeError("boom")

    async def silent(scope: dict[str, Any], receive: Any, send: Any) -> None:
        await receive()

    for app, why in ((failing, "internal server error"), (silent, "sent no response")):
        async with running(app) as (port, _), await trio.open_tcp_stream("127.0.0.1", port) as s:
            await s.send_all(post("/", b""))
            reader = Reader(s)
            status, headers, body = await reader.response()
            assert (status, headers["connection"]) == (500, "close")
            assert why in orjson.loads(body)["message"]
            assert await reader.at_eof()


async def test_the_app_hears_when_the_client_goes_away_mid_stream() -> None:
    heard = trio.Event()

    async def watching(scope: dict[str, Any], receive: Any, send: Any) -> None:
        await receive()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"first", "more_body": True})
        message = await receive()
        assert message["type"] == "http.disconnect"
        heard.set()
        # Writing to a client that left is not an error for the app.
        await send({"type": "http.response.body", "body": b"late", "more_body": False})

    async with running(watching) as (port, _):
        s = await trio.open_tcp_stream("127.0.0.1", port)
        await s.send_all(post("/", b""))
        reader = Reader(s)
        assert await reader.line() == b"HTTP/1.1 200 OK"
        await s.aclose()
        await heard.wait()


async def test_idle_connections_are_closed_after_the_keep_alive_timeout() -> None:
    async with (
        running(echo_app, keep_alive_timeout=0.2) as (port, _),
        await trio.open_tcp_stream("127.0.0.1", port) as s,
    ):
        await s.send_all(post("/", b"x"))
        reader = Reader(s)
        assert (await reader.response())[0] == 200
        with trio.fail_after(5):
            assert await reader.at_eof()


async def test_a_request_that_never_completes_is_cut_at_the_request_timeout() -> None:
    async with (
        running(echo_app, request_timeout=0.2) as (port, _),
        await trio.open_tcp_stream("127.0.0.1", port) as s,
    ):
        await s.send_all(b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\nabc")
        with trio.fail_after(5):
            assert await Reader(s).at_eof()


async def test_shutdown_closes_idle_connections_and_lets_responses_finish() -> None:
    release = trio.Event()
    started = trio.Event()

    async def slow(scope: dict[str, Any], receive: Any, send: Any) -> None:
        await receive()
        started.set()
        await release.wait()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"done"})

    async with running(slow) as (port, shutdown):
        idle = await trio.open_tcp_stream("127.0.0.1", port)
        busy = await trio.open_tcp_stream("127.0.0.1", port)
        await busy.send_all(post("/", b""))
        await started.wait()
        shutdown.set()
        with trio.fail_after(5):
            assert await Reader(idle).at_eof()
        release.set()
        reader = Reader(busy)
        status, headers, body = await reader.response()
        assert (status, headers["connection"], body) == (200, "close", b"done")
        assert await reader.at_eof()
        # No longer accepting.
        with pytest.raises(OSError, match="connect"):
            await trio.open_tcp_stream("127.0.0.1", port)
        await idle.aclose()
        await busy.aclose()


async def test_shutdown_serves_the_first_request_of_a_connection_it_accepted() -> None:
    # A client whose connection was accepted just before the stop sends its request
    # right after: it is answered (and the connection closed), not dropped unanswered.
    async with running(echo_app) as (port, shutdown):
        fresh = await trio.open_tcp_stream("127.0.0.1", port)
        kept = await trio.open_tcp_stream("127.0.0.1", port)
        await kept.send_all(post("/", b"first"))
        kept_reader = Reader(kept)
        status, headers, _ = await kept_reader.response()
        assert (status, headers.get("connection")) == (200, None)
        await trio.testing.wait_all_tasks_blocked()
        shutdown.set()
        await trio.testing.wait_all_tasks_blocked()
        # Kept alive after an answer, and idle: closed at once.
        with trio.fail_after(5):
            assert await kept_reader.at_eof()
        await fresh.send_all(post("/", b"late"))
        reader = Reader(fresh)
        with trio.fail_after(5):
            status, headers, body = await reader.response()
        assert (status, headers["connection"]) == (200, "close")
        assert orjson.loads(body)["body"] == "late"
        assert await reader.at_eof()
        await fresh.aclose()
        await kept.aclose()


async def test_a_connection_that_fails_inside_the_server_does_not_stop_it(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    real_feed = H1Protocol.receive_data

    def failing_feed(self: Any, data: bytes) -> None:
        if b"/explode" in data:
            raise RuntimeError("a bug in the server")
        real_feed(self, data)

    monkeypatch.setattr(H1Protocol, "receive_data", failing_feed)
    async with running(echo_app) as (port, _):
        async with await trio.open_tcp_stream("127.0.0.1", port) as s:
            await s.send_all(post("/explode", b""))
            assert await Reader(s).at_eof()
        async with await trio.open_tcp_stream("127.0.0.1", port) as s:
            await s.send_all(post("/fine", b""))
            assert (await Reader(s).response())[0] == 200
    assert "an HTTP connection failed" in caplog.text


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.binary(max_size=200),
            st.sampled_from(
                [
                    b"POST / HTTP/1.1\r\n",
                    b"GET /ws HTTP/1.1\r\nUpgrade: websocket\r\nConnection: upgrade\r\n",
                    b"Content-Length: 5\r\n",
                    b"Content-Length: -1\r\n",
                    b"Transfer-Encoding: chunked\r\n",
                    b"\r\n",
                    b"ffffffff\r\n",
                    b"0\r\n\r\n",
                ]
            ),
        ),
        max_size=8,
    )
)
def test_no_bytes_crash_the_server(pieces: list[bytes]) -> None:
    async def main() -> None:
        async with running(echo_app, keep_alive_timeout=0.5, request_timeout=0.5) as (port, _):
            async with await trio.open_tcp_stream("127.0.0.1", port) as s:
                with contextlib.suppress(trio.BrokenResourceError):
                    await s.send_all(b"".join(pieces))
                    await s.send_eof()
                # Whatever came back, the connection ends (answered, refused or timed out).
                with trio.fail_after(5), contextlib.suppress(trio.BrokenResourceError):
                    while await s.receive_some(65536):
                        pass
            async with await trio.open_tcp_stream("127.0.0.1", port) as s:
                await s.send_all(post("/", b"still here"))
                status, _, body = await Reader(s).response()
                assert status == 200
                assert orjson.loads(body)["body"] == "still here"

    trio.run(main)


async def test_new_requests_wait_while_the_handlers_of_earlier_ones_have_not_started() -> None:
    # An app that hands each request to a task of its own, as the MCP app does with
    # request actors, counted through the start gate; /note starts no task at all.
    gate = StartGate(limit=2)
    seen: list[tuple[int, int]] = []
    started: list[str] = []

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        seen.append(gate.statistics())
        done = trio.Event()

        async def handler() -> None:
            gate.started()
            started.append(scope["path"])
            done.set()

        if scope["path"] == "/work":
            nursery.start_soon(handler)
            gate.spawned()
            await done.wait()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": scope["path"].encode()})

    async with trio.open_nursery() as nursery, running(app, intake=gate) as (port, _):
        clients = [socket.create_connection(("127.0.0.1", port)) for _ in range(24)]
        try:
            await trio.testing.wait_all_tasks_blocked()
            # Sent without yielding: the server finds all 24 requests at once.
            for index, client in enumerate(clients):
                path = "/work" if index % 3 else "/note"
                client.sendall(f"GET {path} HTTP/1.1\r\nhost: x\r\n\r\n".encode())
            answers = []
            for client in clients:
                stream = trio.SocketStream(trio.socket.from_stdlib_socket(client))
                status, _, body = await Reader(stream).response()
                answers.append((status, body))
        finally:
            for client in clients:
                client.close()
        nursery.cancel_scope.cancel()
    assert answers == [(200, b"/work" if i % 3 else b"/note") for i in range(24)]
    assert len(started) == 16
    # Some requests waited for earlier handlers to start, and the backlog stayed small.
    assert max(parked for _, parked in seen) > 0
    assert max(waiting for waiting, _ in seen) <= 2 * gate.limit


async def test_trailer_fields_never_become_request_headers() -> None:
    request = (
        b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"5\r\nhello\r\n0\r\nHost: evil.example\r\nAuthorization: Bearer x\r\n"
        b"Mcp-Session-Id: s\r\n\r\n"
    )
    async with running(echo_app) as (port, _), await trio.open_tcp_stream("127.0.0.1", port) as s:
        await s.send_all(request)
        status, _, body = await Reader(s).response()
        assert status == 200
        seen = orjson.loads(body)
        assert seen["body"] == "hello"
        assert seen["headers"] == {"host": "h", "transfer-encoding": "chunked"}


async def test_trailers_count_against_the_head_limit() -> None:
    trailers = b"".join(b"X-T%d: %s\r\n" % (n, b"v" * 100) for n in range(30))
    request = (
        b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n"
        + trailers
        + b"\r\n"
    )
    async with (
        running(echo_app, max_head_bytes=2048) as (port, _),
        await trio.open_tcp_stream("127.0.0.1", port) as s,
    ):
        await s.send_all(request)
        reader = Reader(s)
        assert (await reader.response())[0] == 431
        assert await reader.at_eof()


async def test_a_head_sent_piece_by_piece_is_cut_at_the_limit_before_it_ends() -> None:
    # Every piece arrives in a read of its own; none completes a field.
    async with (
        running(echo_app, max_head_bytes=2048) as (port, _),
        await trio.open_tcp_stream("127.0.0.1", port) as s,
    ):
        await s.send_all(b"GET / HTTP/1.1\r\nHost: h\r\nX-Endless: ")
        reader = Reader(s)
        with contextlib.suppress(trio.BrokenResourceError):
            for _ in range(40):
                await trio.testing.wait_all_tasks_blocked()
                await s.send_all(b"y" * 100)
        status, headers, body = await reader.response()
        assert (status, headers["connection"]) == (431, "close")
        assert b"request head larger than 2048 bytes" in body


async def test_a_read_cancelled_at_its_checkpoint_loses_no_bytes() -> None:
    # A stream's writer watching for its client is cancelled by each item it is sent:
    # whatever the client sent meanwhile (a pipelined request) must still be read whole.
    server_side, client_side = socket.socketpair()
    server_side.setblocking(False)
    try:
        state = ServerState(echo_app, H1Config(), error_body=json_error_body)
        connection = Connection(state, server_side)
        sent = received = b""
        for round_ in range(3):
            with trio.CancelScope() as scope:
                scope.cancel()
                for i in range(2 * OPS_PER_CHECKPOINT):
                    piece = b"%d.%d," % (round_, i)
                    client_side.sendall(piece)
                    sent += piece
                    received += await connection._read()
            assert scope.cancelled_caught
        client_side.shutdown(socket.SHUT_WR)
        while data := await connection._read():
            received += data
        assert received == sent
    finally:
        server_side.close()
        client_side.close()


async def test_a_connection_that_keeps_sending_reaches_a_checkpoint() -> None:
    # A read that finds data waiting does not park; without a checkpoint now and then,
    # a client that keeps the socket full would keep every other task from running.
    server_side, client_side = socket.socketpair()
    server_side.setblocking(False)
    try:
        state = ServerState(echo_app, H1Config(), error_body=json_error_body)
        connection = Connection(state, server_side)
        reads = 0
        with trio.CancelScope() as scope:
            scope.cancel()
            for _ in range(10 * OPS_PER_CHECKPOINT):
                client_side.sendall(b"x")
                await connection._read()
                reads += 1
        assert scope.cancelled_caught
        assert reads < OPS_PER_CHECKPOINT
    finally:
        server_side.close()
        client_side.close()


async def test_a_client_that_does_not_read_is_dropped_after_the_write_timeout(
    autojump_clock: trio.testing.MockClock,
) -> None:
    finished: list[float] = []
    done = trio.Event()

    async def big(scope: dict[str, Any], receive: Any, send: Any) -> None:
        await receive()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        started = trio.current_time()
        for _ in range(64):
            await send(
                {"type": "http.response.body", "body": b"x" * 1024 * 1024, "more_body": True}
            )
        await send({"type": "http.response.body", "body": b""})
        finished.append(trio.current_time() - started)
        done.set()

    async with running(big, write_timeout=7.0) as (port, _):
        client = await trio.open_tcp_stream("127.0.0.1", port)
        await client.send_all(post("/", b""))
        # The client never reads: the server's writes park, then give up.
        await done.wait()
        assert 7.0 <= finished[0] < 8.0
        with trio.fail_after(5):
            # Dropped: what was buffered can be read, then the connection ends.
            with contextlib.suppress(trio.BrokenResourceError):
                while await client.receive_some(1024 * 1024):
                    pass
        await client.aclose()


async def test_connections_over_the_limit_get_503_and_are_closed() -> None:
    async with running(echo_app, max_connections=2) as (port, _):
        first = await trio.open_tcp_stream("127.0.0.1", port)
        second = await trio.open_tcp_stream("127.0.0.1", port)
        await first.send_all(post("/", b"1"))
        assert (await Reader(first).response())[0] == 200
        await second.send_all(post("/", b"2"))
        assert (await Reader(second).response())[0] == 200
        async with await trio.open_tcp_stream("127.0.0.1", port) as third:
            await third.send_all(post("/", b"3"))
            reader = Reader(third)
            status, headers, body = await reader.response()
            assert (status, headers["connection"]) == (503, "close")
            assert b"too many open connections" in body
            assert await reader.at_eof()
        await first.aclose()
        # A closed connection frees its place.
        with trio.fail_after(5):
            while True:
                async with await trio.open_tcp_stream("127.0.0.1", port) as fourth:
                    await fourth.send_all(post("/", b"4"))
                    if (await Reader(fourth).response())[0] == 200:
                        break
                await trio.testing.wait_all_tasks_blocked()
        await second.aclose()


async def test_a_malformed_websocket_handshake_gets_400_and_no_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with running(echo_app) as (port, _), await trio.open_tcp_stream("127.0.0.1", port) as s:
        # No Sec-WebSocket-Key, no version.
        await s.send_all(
            b"GET /ws HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\r\n"
        )
        reader = Reader(s)
        status, headers, body = await reader.response()
        assert (status, headers["connection"]) == (400, "close")
        assert b"malformed WebSocket handshake" in body
        assert await reader.at_eof()
    assert "Traceback" not in caplog.text
    assert "connection failed" not in caplog.text


async def test_refusals_are_in_the_access_log(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("INFO", logger="mcpactor.access")
    async with (
        running(echo_app, access_log=True) as (port, _),
        await trio.open_tcp_stream("127.0.0.1", port) as s,
    ):
        await s.send_all(b"GET / HTTP/1.1\r\n\r\n")
        assert (await Reader(s).response())[0] == 400
    [record] = [r for r in caplog.records if r.name == "mcpactor.access"]
    assert " 400 " in record.getMessage()
    assert "needs a Host" in record.getMessage()


@pytest.fixture
def events(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """What happened, in order: "write" for each write of a connection, and the test's own."""
    happened: list[str] = []
    write = Connection._write

    async def logged_write(self: Connection, data: bytes) -> None:
        happened.append("write")
        await write(self, data)

    monkeypatch.setattr(Connection, "_write", logged_write)
    return happened


async def test_whole_responses_finished_together_leave_together(events: list[str]) -> None:
    # The order of answers and writes, and the bodies each client read back.
    arrived = 0
    all_arrived = trio.Event()
    clients = 4

    async def barrier_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        nonlocal arrived
        body = (await receive())["body"]
        arrived += 1
        if arrived == clients:
            all_arrived.set()
        await all_arrived.wait()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        events.append("answer")
        await send({"type": "http.response.body", "body": body})

    answers: dict[int, bytes] = {}

    async def client(n: int, port: int) -> None:
        async with await trio.open_tcp_stream("127.0.0.1", port) as stream:
            await stream.send_all(post("/", b"%d" % n))
            answers[n] = (await Reader(stream).response())[2]

    with trio.fail_after(10):
        async with running(barrier_app) as (port, _), trio.open_nursery() as nursery:
            for n in range(clients):
                nursery.start_soon(client, n, port)
    assert answers == {n: b"%d" % n for n in range(clients)}
    # Released in one batch, every answer is given before the first one is written.
    assert events == ["answer"] * clients + ["write"] * clients


async def test_a_batched_response_is_written_without_a_turn(events: list[str]) -> None:
    # An answer that another task woke its connection with (a session's) left that
    # task's batch with the others: it is written at once, before the next is given.
    arrived = 0
    all_arrived = trio.Event()
    clients = 4

    async def handle(exchange: Exchange) -> None:
        nonlocal arrived
        arrived += 1
        if arrived == clients:
            all_arrived.set()
        await all_arrived.wait()
        events.append("answer")
        await exchange.respond(200, exchange.body, batched=True)

    answers: dict[int, bytes] = {}

    async def client(n: int, port: int) -> None:
        async with await trio.open_tcp_stream("127.0.0.1", port) as stream:
            await stream.send_all(post("/", b"%d" % n))
            answers[n] = (await Reader(stream).response())[2]

    with trio.fail_after(10):
        async with (
            running(echo_app, handle=handle) as (port, _),
            trio.open_nursery() as nursery,
        ):
            for n in range(clients):
                nursery.start_soon(client, n, port)
    assert answers == {n: b"%d" % n for n in range(clients)}
    assert events == ["answer", "write"] * clients


async def test_a_lone_connections_response_is_written_at_once(events: list[str]) -> None:

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        await receive()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"one"})
        events.append("sent")

    async with running(app) as (port, _), await trio.open_tcp_stream("127.0.0.1", port) as s:
        await s.send_all(post("/", b""))
        assert (await Reader(s).response())[2] == b"one"
    assert events == ["write", "sent"]


# --- WebSocket message limits ----------------------------------------------------------


async def ws_app(scope: dict[str, Any], receive: Any, send: Any, *, got: list[Any]) -> None:
    """Accept, then note every message's size in UTF-8 bytes and the disconnect code."""
    assert (await receive())["type"] == "websocket.connect"
    await send({"type": "websocket.accept"})
    while True:
        message = await receive()
        if message["type"] == "websocket.disconnect":
            got.append(("disconnect", message["code"]))
            return
        got.append(("text", len(message["text"].encode())))
        await send({"type": "websocket.send", "text": "ok"})


async def ws_client(port: int) -> tuple[trio.SocketStream, Any]:
    from wsproto import ConnectionType, WSConnection
    from wsproto.events import AcceptConnection, Request

    stream = await trio.open_tcp_stream("127.0.0.1", port)
    ws = WSConnection(ConnectionType.CLIENT)
    await stream.send_all(ws.send(Request(host="127.0.0.1", target="/ws")))
    while True:
        ws.receive_data(await stream.receive_some(65536))
        if any(isinstance(event, AcceptConnection) for event in ws.events()):
            return stream, ws


async def ws_events(stream: trio.SocketStream, ws: Any) -> list[Any]:
    with trio.fail_after(5):
        ws.receive_data(await stream.receive_some(65536))
    return list(ws.events())


async def test_a_websocket_message_is_bounded_in_utf8_bytes_while_it_arrives() -> None:
    # Issue 43, item 17: the limit counted characters, so a text of 4 MiB characters,
    # some of them two bytes, passed a 4 MiB limit. Sent in fragments, the message is
    # refused at the fragment that goes past the limit, before the rest arrives.
    from wsproto.events import CloseConnection, Message, TextMessage

    limit = 64 * 1024
    got: list[Any] = []
    app = functools.partial(ws_app, got=got)
    async with running(app, max_message_bytes=limit) as (port, _):
        stream, ws = await ws_client(port)
        # Exactly the limit in bytes, in two fragments: delivered whole.
        half = "é" * (limit // 4)
        await stream.send_all(ws.send(Message(data=half, message_finished=False)))
        await stream.send_all(ws.send(Message(data=half, message_finished=True)))
        [reply] = await ws_events(stream, ws)
        assert isinstance(reply, TextMessage)
        assert got == [("text", limit)]
        # Fewer characters than the limit, more bytes: closed with 1009 on the fragment
        # that goes past it; the app never sees a message.
        fragment = "é" * (limit // 8)  # a quarter of the limit in bytes
        for _ in range(5):
            await stream.send_all(ws.send(Message(data=fragment, message_finished=False)))
        [close] = await ws_events(stream, ws)
        assert isinstance(close, CloseConnection)
        assert close.code == 1009
        assert close.reason == f"message larger than {limit} bytes"
        assert got == [("text", limit), ("disconnect", 1009)]
        await stream.aclose()
