"""HTTP/2 on the contained hypercorn worker: the connection deadlines hold per stream.

HTTP/1.1 holds a connection to ``request_timeout`` while a request arrives and to
``write_timeout`` while an answer goes out. HTTP/2 multiplexes, so the worker keeps the
same deadlines per stream: a stream whose body never comes gets 408 and ends, an answer
the client never opens the window for drops the connection, and a connection whose
streams have all ended is closed after the keep-alive timeout. Both apps the worker
serves are checked: the MCP endpoint (``--http-server hypercorn``) and the admin page.
Real sockets, cleartext HTTP/2 with prior knowledge (and once over TLS), virtual time.
"""

from __future__ import annotations

import contextlib
import functools
import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import attrs
import pytest
import trio
import trio.testing
import trustme

from mcpactor.admin import create_admin_app, serve_admin
from mcpactor.runtime import Observatory
from mcpactor.transports import HttpOptions, serve_http
from mcpactor.transports.http import ConnectionLimits

from ._h2_client import H2Client
from ._http_server import Probe, make_server

LIMITS = ConnectionLimits(
    request_timeout=30, keep_alive_timeout=75, write_timeout=20, max_header_count=20
)
TOKEN = "an-admin-token-for-http2-tests"


@attrs.frozen
class Listener:
    """Where one app listens, a request whose body it reads, and a GET with a body."""

    port: int
    post: str
    get: str
    headers: tuple[tuple[bytes, bytes], ...]


@contextlib.asynccontextmanager
async def listening(kind: str) -> AsyncIterator[Listener]:
    async with trio.open_nursery() as nursery:
        if kind == "mcp":
            options = HttpOptions(
                request_timeout=LIMITS.request_timeout,
                keep_alive_timeout=LIMITS.keep_alive_timeout,
                write_timeout=LIMITS.write_timeout,
                max_header_count=LIMITS.max_header_count,
            )
            _, port = await nursery.start(
                functools.partial(
                    serve_http,
                    make_server(Probe()),
                    port=0,
                    options=options,
                    http_server="hypercorn",
                    tune_gc=False,
                )
            )
            accept = (b"accept", b"application/json, text/event-stream")
            headers = (accept, (b"content-type", b"application/json"))
            yield Listener(port, "/mcp", "/healthz", headers)
        else:
            app = create_admin_app(Observatory(), token=TOKEN)
            _, port = await nursery.start(
                functools.partial(serve_admin, app, port=0, limits=LIMITS)
            )
            bearer = (b"authorization", b"Bearer " + TOKEN.encode())
            yield Listener(port, "/api/actions/close-session", "/login", (bearer,))
        nursery.cancel_scope.cancel()


@contextlib.asynccontextmanager
async def h2_connection(port: int, window: int | None = None) -> AsyncIterator[H2Client]:
    async with await trio.open_tcp_stream("127.0.0.1", port) as stream:
        client = H2Client(stream, f"127.0.0.1:{port}")
        await client.start(window=window)
        yield client


@pytest.fixture(params=["mcp", "admin"])
def kind(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


async def served_over_h2(port: int, path: str) -> int | None:
    """The status of a GET over a fresh HTTP/2 connection."""
    async with h2_connection(port) as client:
        return (await client.answer(await client.request("GET", path))).status


async def test_a_stream_whose_body_never_comes_gets_408_and_the_connection_goes_idle(
    kind: str, autojump_clock: trio.testing.MockClock
) -> None:
    async with listening(kind) as listener, h2_connection(listener.port) as client:
        start = trio.current_time()
        held = await client.request(
            "POST", listener.post, [*listener.headers, (b"content-length", b"40")], body=None
        )
        with trio.fail_after(1000):
            answer = await client.answer(held)
        assert answer.status == 408
        assert b"did not arrive" in answer.body
        assert trio.current_time() - start == pytest.approx(LIMITS.request_timeout, abs=0.5)
        # Nothing else runs on it: the keep-alive timeout ends it, and it is no longer
        # one of the listener's connections.
        idle_from = trio.current_time()
        with trio.fail_after(1000):
            await client.wait_closed()
        assert trio.current_time() - idle_from == pytest.approx(LIMITS.keep_alive_timeout, abs=1)
        assert await served_over_h2(listener.port, listener.get) == 200


async def test_a_stream_whose_body_comes_in_time_is_answered(
    kind: str, autojump_clock: trio.testing.MockClock
) -> None:
    async with listening(kind) as listener, h2_connection(listener.port) as client:
        body = b'{"session": "none"}' if kind == "admin" else b'{"jsonrpc": "2.0", "id": 1}'
        stream_id = await client.request(
            "POST", listener.post, [*listener.headers, (b"content-length", b"%d" % len(body))],
            body=None,
        )  # fmt: skip
        await trio.sleep(LIMITS.request_timeout - 1)
        client.conn.send_data(stream_id, body, end_stream=True)
        await client.flush()
        with trio.fail_after(LIMITS.request_timeout):
            answer = await client.answer(stream_id)
        # Refused for what it says, not for when it came.
        assert answer.status is not None
        assert answer.status != 408


async def test_an_answer_the_client_never_takes_drops_the_connection(
    kind: str, autojump_clock: trio.testing.MockClock
) -> None:
    # The client opens no window for the answer's body: h2 flow control holds the
    # write back though the socket is free.
    async with listening(kind) as listener, h2_connection(listener.port, window=0) as client:
        start = trio.current_time()
        stream_id = await client.request("GET", listener.get)
        with trio.fail_after(1000):
            await client.wait_closed()
        assert client.answers[stream_id].body == b""
        assert trio.current_time() - start == pytest.approx(LIMITS.write_timeout, abs=0.5)
        assert await served_over_h2(listener.port, listener.get) == 200


async def test_a_connection_that_opens_no_stream_is_held_to_the_request_timeout(
    kind: str, autojump_clock: trio.testing.MockClock
) -> None:
    async with listening(kind) as listener, h2_connection(listener.port) as client:
        start = trio.current_time()
        with trio.fail_after(1000):
            await client.wait_closed()
        assert trio.current_time() - start == pytest.approx(LIMITS.request_timeout, abs=0.5)


async def test_a_refusal_reaches_an_http2_client(
    kind: str, autojump_clock: trio.testing.MockClock
) -> None:
    # The framing checks hold per stream too, and refuse only that stream.
    async with listening(kind) as listener, h2_connection(listener.port) as client:
        many = [(b"x-%d" % n, b"v") for n in range(LIMITS.max_header_count + 5)]
        with trio.fail_after(10):
            answer = await client.answer(await client.request("GET", listener.get, many))
        assert answer.status == 431
        assert b"header fields" in answer.body
        # The connection serves on.
        with trio.fail_after(10):
            assert (await client.answer(await client.request("GET", listener.get))).status == 200


async def test_the_deadline_holds_over_tls_as_negotiated_by_alpn(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    # HTTP/2 as browsers and most clients reach it: over TLS, chosen through ALPN.
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1")
    cert_file, key_file = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert.private_key_and_cert_chain_pem.write_to_path(str(cert_file))
    cert.private_key_pem.write_to_path(str(key_file))
    context = ssl.create_default_context()
    ca.configure_trust(context)
    context.set_alpn_protocols(["h2"])
    options = HttpOptions(request_timeout=30, tls_cert=str(cert_file), tls_key=str(key_file))
    async with trio.open_nursery() as nursery:
        _, port = await nursery.start(
            functools.partial(
                serve_http,
                make_server(Probe()),
                port=0,
                options=options,
                http_server="hypercorn",
                tune_gc=False,
            )
        )
        tcp = await trio.open_tcp_stream("127.0.0.1", port)
        async with trio.SSLStream(tcp, context, server_hostname="127.0.0.1") as tls:
            await tls.do_handshake()
            assert tls.selected_alpn_protocol() == "h2"
            client = H2Client(tls, f"127.0.0.1:{port}")
            await client.start()
            start = trio.current_time()
            headers = [
                (b"accept", b"application/json, text/event-stream"),
                (b"content-type", b"application/json"),
                (b"content-length", b"40"),
            ]
            held = await client.request("POST", "/mcp", headers, body=None)
            with trio.fail_after(1000):
                answer = await client.answer(held)
            assert answer.status == 408
            assert trio.current_time() - start == pytest.approx(30, abs=0.5)
        nursery.cancel_scope.cancel()
