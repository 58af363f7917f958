"""One set of checks that every MCP transport passes: memory, stdio, Streamable HTTP, WebSocket.

Each check runs once per transport against the same server (``_conformance.make_server``),
through a client connected and initialized over that transport. What the server sent is
read off the wire as the client received it (``Wire``), so ids, order and absence are
checked on the messages themselves, not on what the client made of them.

The in-memory transport runs on virtual time; the others are real sockets or a child
process, in real time, where every wait is bounded by ``GUARD`` and nothing sleeps.
"""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, Final

import attrs
import pytest
import trio
import trio.testing
from trio.abc import Clock

from mcpactor.client import (
    ClientSession,
    connect_http,
    connect_memory,
    connect_stdio,
    connect_websocket,
)
from mcpactor.protocol import JSONValue
from mcpactor.runtime import SessionOptions

from ._conformance import Wire, is_response, make_server, progress_of
from ._http_server import served_app

# Only a hang trips it: virtual seconds on the in-memory transport, real ones elsewhere.
GUARD: Final = 30.0
# Seconds a handler still running when its client goes keeps running: short, since the
# sleeping handler a closing check leaves behind only ends by being cancelled.
GRACE: Final = 0.1
OPTIONS: Final = SessionOptions(shutdown_grace=GRACE)

TRANSPORTS: Final = ("memory", "stdio", "http", "websocket")

STDIO_SERVER: Final = [
    sys.executable,
    "-m",
    "mcpactor",
    "serve",
    str(Path(__file__).with_name("_conformance.py")),
    "--grace",
    str(GRACE),
]


def _tasks() -> set[trio.lowlevel.Task]:
    found: set[trio.lowlevel.Task] = set()
    todo = [trio.lowlevel.current_root_task()]
    while todo:
        task = todo.pop()
        if task is None or task in found:
            continue
        found.add(task)
        for nursery in task.child_nurseries:
            todo.extend(nursery.child_tasks)
    return found


async def _wait_for_tasks_to_end(baseline: set[trio.lowlevel.Task]) -> None:
    # A socket's end reaches its server task through the kernel: each pass lets every
    # task run until it blocks, and the loop ends once no task younger than the
    # connection is left.
    while _tasks() - baseline:
        await trio.testing.wait_all_tasks_blocked()


@attrs.define
class Connection:
    """A connected, initialized client and what the server sent it."""

    client: ClientSession
    wire: Wire

    async def send(self, message: JSONValue) -> None:
        """Put ``message`` on the wire as it is, bypassing the client's bookkeeping."""
        # A raw message is the point of these checks: chosen ids, malformed envelopes.
        await self.client._requests.send(message)

    async def call(self, request_id: object, name: str, arguments: Any, **meta: Any) -> None:
        """Send a tools/call request with ``request_id`` (and ``_meta``), unanswered yet."""
        params: dict[str, Any] = {"name": name, "arguments": arguments}
        if meta:
            params["_meta"] = meta
        await self.send(
            {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
        )

    async def settle(self) -> None:
        """Let what the server sent before now land: a ping round trip."""
        await self.client.ping()


@attrs.define
class Transport:
    """One way to reach the conformance server, and how to tell its session ended."""

    name: str
    connect: Callable[[Wire], contextlib.AbstractAsyncContextManager[ClientSession]]
    in_process: bool
    # Warnings the client logged: a stdio server that had to be terminated says so here.
    warnings: list[logging.LogRecord] = attrs.field(factory=list)
    _baseline: set[trio.lowlevel.Task] = attrs.field(factory=set)

    @contextlib.asynccontextmanager
    async def open(self) -> AsyncIterator[Connection]:
        """Connect a client with a fresh ``Wire``; close it on exit."""
        self._baseline = _tasks()
        wire = Wire()
        async with self.connect(wire) as client:
            yield Connection(client, wire)

    async def server_session_ended(self) -> None:
        """Return once the server side of the last connection is gone, or fail."""
        if self.in_process:
            await _wait_for_tasks_to_end(self._baseline)
        # A child process: connect_stdio waited for its exit on the way out, and had it
        # not exited by itself at the end of its input, the client would have said so.
        stopped = [r for r in self.warnings if "did not exit" in r.getMessage()]
        assert stopped == []


class _Collect(logging.Handler):
    def __init__(self, records: list[logging.LogRecord]) -> None:
        super().__init__(logging.WARNING)
        self.records = records

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture(params=TRANSPORTS)
def transport_name(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


@pytest.fixture
def clock(transport_name: str) -> Clock | None:
    # Only the in-memory transport lives entirely in this trio run.
    return trio.testing.MockClock(autojump_threshold=0) if transport_name == "memory" else None


@pytest.fixture
async def transport(transport_name: str) -> AsyncIterator[Transport]:
    if transport_name == "memory":
        server = make_server()
        yield Transport(
            "memory",
            lambda wire: connect_memory(
                server, options=OPTIONS, initialize=True, on_server_message=wire
            ),
            in_process=True,
        )
    elif transport_name == "stdio":
        found = Transport(
            "stdio",
            lambda wire: connect_stdio(
                STDIO_SERVER, initialize=True, shutdown_timeout=GUARD, on_server_message=wire
            ),
            in_process=False,
        )
        handler = _Collect(found.warnings)
        logger = logging.getLogger("mcpactor.client")
        logger.addHandler(handler)
        try:
            yield found
        finally:
            logger.removeHandler(handler)
    else:
        async with served_app(make_server(), session_options=OPTIONS) as (_, http):
            if transport_name == "http":
                url = f"http://{http.host}:{http.port}/mcp"
                yield Transport(
                    "http",
                    lambda wire: connect_http(url, initialize=True, on_server_message=wire),
                    in_process=True,
                )
            else:
                url = f"ws://{http.host}:{http.port}/ws"
                yield Transport(
                    "websocket",
                    lambda wire: connect_websocket(url, initialize=True, on_server_message=wire),
                    in_process=True,
                )


@pytest.fixture
async def conn(transport: Transport) -> AsyncIterator[Connection]:
    with trio.fail_after(GUARD):
        async with transport.open() as connection:
            yield connection


async def test_a_request_is_answered_with_its_own_id(
    conn: Connection, clock: Clock | None
) -> None:
    with trio.fail_after(GUARD):
        for request_id in ("first", 4242, "", 0):
            await conn.call(request_id, "echo", {"text": f"to {request_id!r}"})
            answer = await conn.wire.response(request_id)
            assert answer["jsonrpc"] == "2.0"
            assert answer["result"]["content"] == [{"type": "text", "text": f"to {request_id!r}"}]
    # A client request goes through the same way, to the same id.
    assert (await conn.client.call_tool("echo", {"text": "hi"}))["content"][0]["text"] == "hi"


async def test_concurrent_requests_are_all_answered_each_with_its_own_id(
    conn: Connection, clock: Clock | None
) -> None:
    ids = [f"many-{n}" for n in range(24)]
    with trio.fail_after(GUARD):
        async with trio.open_nursery() as nursery:
            for request_id in ids:
                nursery.start_soon(conn.call, request_id, "echo", {"text": f"for {request_id}"})
        for request_id in ids:
            answer = await conn.wire.response(request_id)
            assert answer["result"]["content"][0]["text"] == f"for {request_id}"
    for request_id in ids:
        assert len(conn.wire.responses(request_id)) == 1


async def test_a_notification_gets_no_answer(conn: Connection, clock: Clock | None) -> None:
    before = len(conn.wire.messages)
    with trio.fail_after(GUARD):
        await conn.send({"jsonrpc": "2.0", "method": "notifications/conformance/unknown"})
        await conn.send(
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "x"}}
        )
        await conn.send({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"})
        await conn.send({"jsonrpc": "2.0", "id": "after", "method": "ping"})
        await conn.wire.response("after")
    # Everything the server sent since is the answer to the ping, which came after them.
    assert conn.wire.messages[before:] == [{"jsonrpc": "2.0", "id": "after", "result": {}}]


async def test_progress_arrives_before_the_result(conn: Connection, clock: Clock | None) -> None:
    with trio.fail_after(GUARD):
        await conn.call("counted", "count", {"steps": 5}, progressToken="count-token")
        await conn.wire.response("counted")
    messages = conn.wire.messages
    answer = next(i for i, m in enumerate(messages) if is_response(m, "counted"))
    progress = [i for i, m in enumerate(messages) if progress_of(m, "count-token")]
    assert [messages[i]["params"]["progress"] for i in progress] == [1, 2, 3, 4, 5]
    assert max(progress) < answer
    assert messages[answer]["result"]["content"][0]["text"] == "counted 5"


async def test_a_cancelled_request_ends_its_handler_and_gets_no_result(
    conn: Connection, clock: Clock | None
) -> None:
    with trio.fail_after(GUARD):
        await conn.call("sleeper", "sleep", {"tag": "sleeper"}, progressToken="sleep-token")
        # The handler reports progress once it runs: from then on it is asleep.
        await conn.wire.wait_for(lambda m: progress_of(m, "sleep-token"))
        await conn.client.notify(
            "notifications/cancelled", {"requestId": "sleeper", "reason": "enough"}
        )
        # Answers only once the sleeping handler's finally has run.
        cleaned = await conn.client.call_tool("cleaned", {"tag": "sleeper"})
        assert cleaned["structuredContent"] == {"result": True}
        await conn.settle()
    assert conn.wire.responses("sleeper") == []


async def test_a_handler_that_raises_is_an_error_result_and_the_session_goes_on(
    conn: Connection, clock: Clock | None
) -> None:
    with trio.fail_after(GUARD):
        await conn.call("failing", "fail", {"reason": "on purpose"})
        answer = await conn.wire.response("failing")
        assert answer["result"]["isError"] is True
        assert "on purpose" in answer["result"]["content"][0]["text"]
        echoed = await conn.client.call_tool("echo", {"text": "still here"})
    assert echoed["content"][0]["text"] == "still here"


MALFORMED: Final = {
    "method-not-a-string": ({"jsonrpc": "2.0", "id": "bad", "method": 7}, -32600),
    "wrong-version": ({"jsonrpc": "1.0", "id": "bad", "method": "ping"}, -32600),
    "unknown-method": ({"jsonrpc": "2.0", "id": "bad", "method": "no/such/method"}, -32601),
    # By-position params are JSON-RPC, but not what an MCP method takes.
    "params-a-list": (
        {"jsonrpc": "2.0", "id": "bad", "method": "tools/call", "params": [1]},
        -32602,
    ),
    "params-a-number": (
        {"jsonrpc": "2.0", "id": "bad", "method": "tools/call", "params": 5},
        -32600,
    ),
    "no-name": ({"jsonrpc": "2.0", "id": "bad", "method": "tools/call", "params": {}}, -32602),
}


@pytest.mark.parametrize(
    ("transport_name", "message", "code"),
    [
        pytest.param(name, message, code, id=f"{name}-{case}")
        for name in TRANSPORTS
        for case, (message, code) in MALFORMED.items()
    ],
)
async def test_a_malformed_message_gets_its_error_and_the_session_goes_on(
    conn: Connection, clock: Clock | None, message: JSONValue, code: int
) -> None:
    with trio.fail_after(GUARD):
        await conn.send(message)
        answer = await conn.wire.response("bad")
        assert answer["jsonrpc"] == "2.0"
        assert answer["error"]["code"] == code
        assert isinstance(answer["error"]["message"], str)
        assert "result" not in answer
        echoed = await conn.client.call_tool("echo", {"text": "still here"})
    assert echoed["content"][0]["text"] == "still here"
    assert len(conn.wire.responses("bad")) == 1


async def test_closing_the_client_ends_the_server_session(
    transport: Transport, clock: Clock | None
) -> None:
    with trio.fail_after(GUARD):
        async with transport.open() as connection:
            # Leave work behind: a handler asleep on the server when the client goes.
            await connection.call("left", "sleep", {"tag": "left"}, progressToken="left-token")
            await connection.wire.wait_for(lambda m: progress_of(m, "left-token"))
        await transport.server_session_ended()
