"""The fronts of ``mcpactor dev`` in one process: real clients, real servers behind them.

Each "child" here is a ``serve_http`` of its own on a loopback port, and the test plays
the supervisor: it begins generations and says when each serves or fails, as the
child's status pipe would. So every step is deterministic: no process, no file watch.
"""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import AsyncIterator
from typing import Final

import orjson
import pytest
import trio

from mcpactor import Context, RequestError, Server
from mcpactor.cli._dev_child import STOPPED, Children, Failure, Generation, Opening
from mcpactor.cli._dev_http import EventRelay, HttpFront
from mcpactor.cli._dev_messages import serve_websocket_front
from mcpactor.client import connect_http, connect_websocket
from mcpactor.client._http11 import HttpPool, Url
from mcpactor.protocol import Notification, Request, classify_body
from mcpactor.transports import HttpOptions, serve_http
from mcpactor.transports.h1 import H1Config, serve_h1

WAIT: Final = 20.0
BROKEN: Final = Failure(
    (
        "'edited.py': edited.py:10: SyntaxError: invalid syntax\n    def oops(:",
        "(--debug shows the traceback)",
    )
)


def make_server(*tools: str) -> Server:
    """A server with some of the tools ``add``, ``mul``, ``grow`` (which adds one) and
    ``whisper`` (which logs at debug level), and the resource ``memo://note``."""
    server = Server("edited")

    def add(a: int, b: int) -> int:
        return a + b

    def mul(a: int, b: int) -> int:
        return a * b

    def grow() -> str:
        server.add_tool(lambda: "grown", name="grown")
        return "grew"

    async def whisper(ctx: Context) -> str:
        await ctx.debug("psst")
        return "whispered"

    for fn in (add, mul, grow, whisper):
        if fn.__name__ in tools:
            server.add_tool(fn)

    @server.resource("memo://note")
    def note() -> str:
        return "a note"

    return server


class Bench:
    """A front on a free port, and children the test starts and fails."""

    def __init__(self, nursery: trio.Nursery) -> None:
        self.nursery = nursery
        self.children = Children()
        self.front = HttpFront(
            self.children,
            max_message_bytes=4 * 1024 * 1024,
            on_websocket=functools.partial(
                serve_websocket_front, self.children, max_message_bytes=4 * 1024 * 1024
            ),
        )
        self.url = ""

    async def start(self) -> None:
        host, port = await self.nursery.start(
            functools.partial(
                serve_h1,
                self.front,
                host="127.0.0.1",
                port=0,
                config=H1Config(),
                shutdown=trio.Event(),
                graceful_timeout=1.0,
            )
        )
        self.url = f"http://{host}:{port}/mcp"

    async def serve(self, server: Server, options: HttpOptions | None = None) -> Generation:
        """Begin a generation served by ``server`` (which starts at once)."""
        generation = self.children.begin()
        host, port = await self.nursery.start(
            functools.partial(serve_http, server, port=0, options=options, tune_gc=False)
        )
        generation.url = Url("http", host, port, "/mcp")
        generation.serve()
        return generation

    def fail(self, failure: Failure = BROKEN) -> Generation:
        """Begin a generation that cannot start."""
        generation = self.children.begin()
        generation.fail(failure)
        generation.ended.set()
        return generation


@contextlib.asynccontextmanager
async def bench() -> AsyncIterator[Bench]:
    async with trio.open_nursery() as nursery:
        front = Bench(nursery)
        await front.start()
        try:
            yield front
        finally:
            nursery.cancel_scope.cancel()
            with trio.CancelScope(shield=True):
                await front.front.aclose()


async def test_a_session_lives_through_a_broken_child_and_a_fixed_one() -> None:
    with trio.fail_after(WAIT):
        async with bench() as front:
            await front.serve(make_server("add"))
            async with connect_http(front.url, initialize=True) as client:
                assert (await client.call_tool("add", {"a": 1, "b": 2})).data == {"result": 3}
                front.fail()
                with pytest.raises(RequestError) as raised:
                    await client.call_tool("add", {"a": 1, "b": 2})
                error = raised.value
                assert error.message == (
                    "the server is not running: 'edited.py': edited.py:10: SyntaxError: "
                    "invalid syntax"
                )
                assert error.data == {"report": list(BROKEN.lines)}
                fixed = make_server("add", "mul", "grow")
                await front.serve(fixed)
                # The same session, on a server that never saw its initialize.
                assert (await client.call_tool("mul", {"a": 2, "b": 3})).data == {"result": 6}
                assert {tool["name"] for tool in await client.list_tools()} == {
                    "add",
                    "mul",
                    "grow",
                }
                # Its GET stream, held while no server ran, follows to the new one.
                client.notifications.clear()
                await client.call_tool("grow", {})
                await client.notifications.wait_for("notifications/tools/list_changed")


@pytest.mark.parametrize("transport", ["http", "websocket"])
async def test_what_a_session_set_is_set_again_on_the_next_child(
    transport: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="mcpactor.client")
    with trio.fail_after(WAIT):
        async with bench() as front:
            await front.serve(make_server("add"))
            if transport == "http":
                connection = connect_http(front.url, initialize=True)
            else:
                ws_url = front.url.replace("http://", "ws://").replace("/mcp", "/ws")
                connection = connect_websocket(ws_url, initialize=True)
            async with connection as client:
                await client.subscribe_resource("memo://note")
                await client.set_logging_level("debug")
                fixed = make_server("whisper")
                await front.serve(fixed)
                # Its first request reaches the new server, which is told first what the
                # session had set: debug messages, and the note's updates.
                assert (await client.call_tool("whisper", {})).data == {"result": "whispered"}
                logged = await client.notifications.wait_for("notifications/message")
                assert logged.params is not None
                assert logged.params["level"] == "debug"
                fixed.notify_resource_updated("memo://note")
                updated = await client.notifications.wait_for("notifications/resources/updated")
                assert updated.params == {"uri": "memo://note"}
    # The front's own requests were answered to the front alone.
    strays = [r for r in caplog.records if "which is not pending" in r.getMessage()]
    assert not strays


def test_an_opening_is_what_the_session_set_since() -> None:
    opening = Opening()
    for message in (
        Notification("notifications/initialized"),
        Request(1, "resources/subscribe", {"uri": "memo://a"}),
        Request(2, "resources/subscribe", {"uri": "memo://b"}),
        Request(3, "logging/setLevel", {"level": "info"}),
        Request(4, "resources/unsubscribe", {"uri": "memo://a"}),
        Request(5, "logging/setLevel", {"level": "debug"}),
        Request(6, "tools/call", {"name": "add", "uri": "memo://c"}),
    ):
        opening.note(classify_body(message.to_json()))
    assert opening.after_initialize("p") == [
        Notification("notifications/initialized"),
        Request("p/level", "logging/setLevel", {"level": "debug"}),
        Request("p/0", "resources/subscribe", {"uri": "memo://b"}),
    ]
    # Not initialized: nothing follows initialize (the client sends it itself).
    assert Opening().after_initialize("p") == []


async def test_a_request_waits_for_a_starting_child(monkeypatch: pytest.MonkeyPatch) -> None:
    with trio.fail_after(WAIT):
        async with bench() as front:
            await front.serve(make_server("add"))
            async with connect_http(front.url, initialize=True) as client:
                starting = front.children.begin()
                waiting = trio.Event()
                settled = front.children.settled

                async def settled_seen() -> Generation:
                    if not front.children.current.settled.is_set():
                        waiting.set()
                    return await settled()

                async def call() -> None:
                    # Only the new server has mul: the call waited for it.
                    assert (await client.call_tool("mul", {"a": 2, "b": 3})).data == {"result": 6}

                monkeypatch.setattr(front.children, "settled", settled_seen)
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(call)
                    await waiting.wait()
                    host, port = await front.nursery.start(
                        functools.partial(serve_http, make_server("mul"), port=0, tune_gc=False)
                    )
                    starting.url = Url("http", host, port, "/mcp")
                    starting.serve()


async def test_a_session_the_next_child_refuses_is_gone() -> None:
    with trio.fail_after(WAIT):
        async with bench() as front:
            await front.serve(make_server("add"))
            async with HttpPool() as pool:
                session_id, _ = await _initialize(pool, front.url)
                # A server without sessions answers initialize without one: the session
                # cannot be carried over, and the client is told so as the protocol says.
                await front.serve(make_server("add"), HttpOptions(stateless=True))
                status, body = await _post(pool, front.url, _call("add", 7), session_id)
                assert status == 404
                assert body["error"]["message"].startswith(
                    "session not found: the server restarted and did not take the session"
                )
                # Forgotten: the same id is not replayed again.
                assert session_id not in front.front.sessions


async def test_events_of_an_earlier_child_are_not_resumed_on_the_next() -> None:
    with trio.fail_after(WAIT):
        async with bench() as front:
            first = await front.serve(make_server("add"))
            async with HttpPool() as pool:
                session_id, _ = await _initialize(pool, front.url)
                # The GET stream opens with a priming event: its id names the child.
                head = await _listen(pool, front.url, session_id)
                assert head.startswith(f"id: {first.number}/")
                event_id = head.partition("\n")[0][4:]
                second = await front.serve(make_server("add"))
                # The second child never wrote that id (it would refuse it with 400):
                # the stream is listened to afresh there.
                head = await _listen(pool, front.url, session_id, event_id)
                assert head.startswith(f"id: {second.number}/")
                # An id the front did not tag reaches the child as it is (which refuses
                # one it never wrote).
                async with pool.request(
                    "GET", Url.parse(front.url), _listen_headers(session_id, "0.999")
                ) as response:
                    assert response.status == 400


async def test_a_listening_stream_moves_to_the_next_child() -> None:
    with trio.fail_after(WAIT):
        async with bench() as front:
            await front.serve(make_server("add"))
            async with HttpPool() as pool:
                session_id, _ = await _initialize(pool, front.url)
                async with pool.request(
                    "GET", Url.parse(front.url), _listen_headers(session_id)
                ) as response:
                    assert response.status == 200
                    await response.receive_some()
                    # Its child still runs, but a newer one is begun: the stream ends.
                    front.children.begin()
                    assert await response.read(1 << 20) == b""


async def test_a_listening_stream_is_held_while_no_server_runs() -> None:
    with trio.fail_after(WAIT):
        async with bench() as front:
            await front.serve(make_server("add"))
            async with HttpPool() as pool:
                session_id, _ = await _initialize(pool, front.url)
                broken = front.fail()
                url = Url.parse(front.url)
                async with pool.request("GET", url, _listen_headers(session_id)) as response:
                    # Open, saying why nothing comes, so the client does not give up on it.
                    assert response.status == 200
                    assert response.content_type == "text/event-stream"
                    comment = await response.receive_some()
                    assert comment == (
                        b": 'edited.py': edited.py:10: SyntaxError: invalid syntax\n\n"
                    )
                    assert not broken.superseded.is_set()
                    # Until the next start begins: then the client listens there.
                    front.fail()
                    assert await response.read(1 << 20) == b""
                # A session the front does not know: no stream to hold.
                async with pool.request("GET", url, _listen_headers("unknown")) as response:
                    assert response.status == 503
                    await response.read(1 << 20)


async def test_a_session_ended_by_its_client_is_forgotten() -> None:
    with trio.fail_after(WAIT):
        async with bench() as front:
            await front.serve(make_server("add"))
            async with HttpPool() as pool:
                url = Url.parse(front.url)
                for restart in (False, True):
                    session_id, _ = await _initialize(pool, front.url)
                    assert session_id in front.front.sessions
                    if restart:
                        # Its server is gone: there is nothing to replay it on.
                        await front.serve(make_server("add"))
                    headers = _listen_headers(session_id)
                    async with pool.request("DELETE", url, headers) as response:
                        assert response.status == 204
                        await response.read(1 << 20)
                    assert session_id not in front.front.sessions


async def test_a_websocket_session_lives_through_a_broken_child() -> None:
    with trio.fail_after(WAIT):
        async with bench() as front:
            await front.serve(make_server("add"))
            ws_url = front.url.replace("http://", "ws://").replace("/mcp", "/ws")
            async with connect_websocket(ws_url, initialize=True) as client:
                assert (await client.call_tool("add", {"a": 1, "b": 2})).data == {"result": 3}
                front.fail()
                with pytest.raises(RequestError, match=r"edited\.py:10: SyntaxError"):
                    await client.call_tool("add", {"a": 1, "b": 2})
                await front.serve(make_server("mul"))
                assert (await client.call_tool("mul", {"a": 2, "b": 3})).data == {"result": 6}


async def test_a_broken_server_answers_each_request_of_a_post() -> None:
    with trio.fail_after(WAIT):
        async with bench() as front:
            front.fail()
            async with HttpPool() as pool:
                status, body = await _post(pool, front.url, _call("add", 5))
                assert status == 503
                assert body["id"] == 5
                assert "edited.py:10: SyntaxError" in body["error"]["message"]
                # A notification has no id to answer: the error says why, without one.
                note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
                status, body = await _post(pool, front.url, note)
                assert status == 503
                assert "id" not in body
                assert body["error"]["data"] == {"report": list(BROKEN.lines)}


def test_event_ids_are_tagged_and_answers_counted() -> None:
    relay = EventRelay(3, [1, "two"], limit=1000)
    stream = (
        b"id: 0\nretry: 1000\ndata: \n\n"
        # A request of the server, whose id happens to be one of the client's.
        b'event: message\nid: 1\ndata: {"jsonrpc":"2.0","id":1,"method":"ping"}\n\n'
        b'event: message\nid: 2\ndata: {"jsonrpc":"2.0","id":1,"result":{}}\n\n'
    )
    # Cut anywhere, the stream comes out the same.
    out = b"".join(relay.feed(stream[i : i + 7]) for i in range(0, len(stream), 7))
    assert out == stream.replace(b"id: 0\n", b"id: 3/0\n").replace(
        b"id: 1\n", b"id: 3/1\n"
    ).replace(b"id: 2\n", b"id: 3/2\n")
    assert relay.pending == {"two"}
    tail = relay.unanswered(STOPPED)
    assert tail.startswith(b"event: message\ndata: ")
    (answer,) = [orjson.loads(line[6:]) for line in tail.splitlines() if line.startswith(b"data:")]
    assert answer["id"] == "two"
    assert answer["error"]["message"].startswith("the server is not running: the server stopped")
    assert relay.pending == set()


def test_an_overlong_line_is_refused() -> None:
    from mcpactor import RemoteProtocolError

    relay = EventRelay(1, [], limit=10)
    with pytest.raises(RemoteProtocolError):
        relay.feed(b"data: " + b"x" * 20)


# --- raw HTTP, for what the clients do not show ---------------------------------------


def _call(name: str, request_id: int) -> dict[str, object]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": name, "arguments": {"a": 1, "b": 2}},
    }


def _headers(session_id: str | None, accept: str) -> list[tuple[str, str]]:
    headers = [("content-type", "application/json"), ("accept", accept)]
    if session_id is not None:
        headers += [("mcp-session-id", session_id), ("mcp-protocol-version", "2025-11-25")]
    return headers


async def _initialize(pool: HttpPool, url: str) -> tuple[str, dict[str, object]]:
    initialize = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"},
        },
    }
    async with pool.request(
        "POST",
        Url.parse(url),
        _headers(None, "application/json, text/event-stream"),
        orjson.dumps(initialize),
    ) as response:
        session_id = response.headers["mcp-session-id"]
        await response.read(1 << 20)
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    status, _ = await _post(pool, url, note, session_id, parse=False)
    assert status == 202
    return session_id, initialize


async def _post(
    pool: HttpPool,
    url: str,
    message: dict[str, object],
    session_id: str | None = None,
    *,
    parse: bool = True,
) -> tuple[int, dict[str, object]]:
    async with pool.request(
        "POST",
        Url.parse(url),
        _headers(session_id, "application/json, text/event-stream"),
        orjson.dumps(message),
    ) as response:
        data = await response.read(1 << 20)
    return response.status, orjson.loads(data) if parse and data else {}


def _listen_headers(session_id: str, last_event_id: str | None = None) -> list[tuple[str, str]]:
    headers = [
        ("accept", "text/event-stream"),
        ("mcp-session-id", session_id),
        ("mcp-protocol-version", "2025-11-25"),
    ]
    if last_event_id is not None:
        headers.append(("last-event-id", last_event_id))
    return headers


async def _listen(
    pool: HttpPool, url: str, session_id: str, last_event_id: str | None = None
) -> str:
    # The first chunk of a GET stream, which is then left.
    async with pool.request(
        "GET", Url.parse(url), _listen_headers(session_id, last_event_id)
    ) as response:
        assert response.status == 200, await response.read(1 << 20)
        assert response.content_type == "text/event-stream"
        return (await response.receive_some()).decode()
