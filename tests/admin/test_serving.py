"""How the admin app is served: on the contained worker, so no client can end the listener.

The admin listener used to run on ``hypercorn.trio.serve`` in the server's own nursery,
where one connection's failure was the whole run's: a WebSocket upgrade followed by a
stray byte ended the process. It now runs on the worker ``--http-server hypercorn``
uses (``serve_asgi``). These run it in the test's own trio run, so a failure that
escapes a connection fails the test.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import AsyncIterator

import orjson
import trio
import trio.testing

from mcpactor.admin import create_admin_app, serve_admin
from mcpactor.runtime import Observatory
from mcpactor.transports.http import ConnectionLimits

TOKEN = "the-admin-token-of-the-serving-tests"
UPGRADE = (
    b"Upgrade: websocket\r\nConnection: Upgrade\r\n"
    b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
)


@contextlib.asynccontextmanager
async def admin_port(limits: ConnectionLimits | None = None) -> AsyncIterator[int]:
    app = create_admin_app(Observatory(), token=TOKEN)
    async with trio.open_nursery() as nursery:
        _, port = await nursery.start(functools.partial(serve_admin, app, limits=limits))
        yield port
        nursery.cancel_scope.cancel()


async def exchange(port: int, data: bytes) -> bytes:
    """Send ``data`` on a new connection; what came back before the server closed it."""
    said = b""
    async with await trio.open_tcp_stream("127.0.0.1", port) as stream:
        await stream.send_all(data)
        with trio.fail_after(10), contextlib.suppress(trio.BrokenResourceError):
            while chunk := await stream.receive_some(65536):
                said += chunk
    return said


def page_request(port: int) -> bytes:
    return (
        b"GET / HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAuthorization: Bearer %s\r\n"
        b"Connection: close\r\n\r\n" % (port, TOKEN.encode())
    )


async def test_a_websocket_upgrade_and_a_stray_byte_leave_the_listener_serving() -> None:
    async with admin_port() as port:
        for path in (b"/", b"/api/stream", b"/login"):
            head = b"GET " + path + b" HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n" % port + UPGRADE
            await exchange(port, head + b"\r\nX")
        page = await exchange(port, page_request(port))
        assert page.startswith(b"HTTP/1.1 200 ")


async def test_a_connection_asking_to_close_is_closed_after_its_answer() -> None:
    # hypercorn closes it from the app's task, which quart-trio cancels once the answer
    # is out: the close must happen anyway (``exchange`` waits for it, 10 s at most).
    async with admin_port() as port:
        page = await exchange(port, page_request(port))
        assert page.startswith(b"HTTP/1.1 200 ")
        assert page.endswith(b"</html>\n")


async def test_refused_connections_give_their_place_back_at_once() -> None:
    # A malformed head is answered 400 and closed; its place among the listener's
    # connections is free again then, not after the keep-alive timeout.
    limits = ConnectionLimits(max_connections=2)
    async with admin_port(limits) as port:
        for _ in range(5):
            refused = await exchange(port, b"NOT HTTP\r\n\r\n")
            assert refused.startswith(b"HTTP/1.1 400 ")
            await trio.testing.wait_all_tasks_blocked()
        assert (await exchange(port, page_request(port))).startswith(b"HTTP/1.1 200 ")


async def test_connections_over_the_limit_are_turned_away_in_the_apis_words() -> None:
    limits = ConnectionLimits(max_connections=1)
    async with (
        admin_port(limits) as port,
        await trio.open_tcp_stream("127.0.0.1", port) as held,
    ):
        await held.send_all(b"GET /login HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        assert (await held.receive_some(65536)).startswith(b"HTTP/1.1 200 ")
        turned_away = await exchange(port, page_request(port))
        assert turned_away.startswith(b"HTTP/1.1 503 ")
        body = turned_away.partition(b"\r\n\r\n")[2]
        assert orjson.loads(body) == {"error": "too many open connections; try again later"}
