"""A raw client for SessionActor tests.

The harness plays the client by hand: it pushes JSON values into a session actor's
inbox and reads ``Outbound`` items from its outbox, checking every payload against the
official schema of the negotiated revision (responses against the result type of the
request they answer). It deliberately does not use ``mcpactor.client``: these tests pin
down the actor itself, message by message.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, Final

import trio
import trio.testing

from mcpactor import ProtocolError
from mcpactor.protocol import LATEST, JSONObject, JSONValue, Phase, RequestId
from mcpactor.runtime import Outbound, OutboundKind, SessionActor, SessionOptions
from mcpactor.server import Server
from tests.spec_schema import check_server_message

__all__ = [
    "SESSION_REVISIONS",
    "SessionHarness",
    "assert_idle",
    "live_tasks",
    "open_session",
    "tool_text",
]

SESSION_REVISIONS: Final = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")

# How long a harness wait may take before the test fails: under a MockClock, longer
# than every legitimate virtual wait (the longest is the default 300 s client-request
# timeout); in real time, long enough for a worker thread to be scheduled.
VIRTUAL_GUARD: Final = 10_000.0
REAL_GUARD: Final = 10.0


def kind_of(message: JSONObject) -> OutboundKind:
    """The kind an item carrying ``message`` must have, read from its keys."""
    if "method" not in message:
        return OutboundKind.RESPONSE
    if "id" in message:
        return OutboundKind.REQUEST
    return OutboundKind.NOTIFICATION


def default_guard() -> float:
    """The guard for harness waits under the clock this test runs with."""
    if isinstance(trio.lowlevel.current_clock(), trio.testing.MockClock):
        return VIRTUAL_GUARD
    return REAL_GUARD


class SessionHarness:
    """The client end of one session actor."""

    def __init__(
        self,
        actor: SessionActor,
        inbox: trio.MemorySendChannel[JSONValue | ProtocolError],
        outbox: trio.MemoryReceiveChannel[Outbound],
        *,
        guard: float,
    ) -> None:
        self.actor = actor
        self.inbox = inbox
        self.outbox = outbox
        self.guard = guard
        #: the revision messages are checked against (the latest until initialized)
        self.revision = LATEST.version
        #: every item the actor sent, in order
        self.received: list[Outbound] = []
        self._methods: dict[RequestId, str] = {}
        self._backlog: list[Outbound] = []
        self._next_id = 0
        #: set when ``actor.run`` has returned, at virtual time ``ended_at``
        self.ended = trio.Event()
        self.ended_at: float | None = None

    # --- what the client sends ------------------------------------------------------

    async def send(self, message: JSONValue) -> None:
        """Push one raw JSON value into the session's inbox."""
        await self.inbox.send(message)

    async def send_request(
        self,
        method: str,
        params: JSONObject | None = None,
        *,
        request_id: RequestId | None = None,
    ) -> RequestId:
        """Send a request and return its id (a fresh integer unless one is given)."""
        if request_id is None:
            self._next_id += 1
            request_id = self._next_id
        message: JSONObject = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self._methods[request_id] = method
        await self.send(message)
        return request_id

    async def send_batch(self, messages: list[JSONObject]) -> None:
        """Send a JSON-RPC batch, remembering the method of each request in it."""
        for message in messages:
            if "id" in message and "method" in message:
                self._methods[message["id"]] = message["method"]
        await self.send(messages)

    async def notify(self, method: str, params: JSONObject | None = None) -> None:
        """Send a notification."""
        message: JSONObject = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)

    async def cancel(self, request_id: RequestId, reason: str | None = None) -> None:
        """Send ``notifications/cancelled`` for one of our requests."""
        params: JSONObject = {"requestId": request_id}
        if reason is not None:
            params["reason"] = reason
        await self.notify("notifications/cancelled", params)

    async def start_tool(
        self, name: str, arguments: JSONObject | None = None, *, meta: JSONObject | None = None
    ) -> RequestId:
        """Send ``tools/call`` without waiting for its result."""
        params: JSONObject = {"name": name, "arguments": arguments or {}}
        if meta is not None:
            params["_meta"] = meta
        return await self.send_request("tools/call", params)

    async def answer(self, request: JSONObject, result: JSONObject) -> None:
        """Answer a server→client request with a result."""
        await self.send({"jsonrpc": "2.0", "id": request["id"], "result": result})

    async def answer_error(
        self, request: JSONObject, code: int, message: str, data: JSONValue = None
    ) -> None:
        """Answer a server→client request with an error."""
        error: JSONObject = {"code": code, "message": message}
        if data is not None:
            error["data"] = data
        await self.send({"jsonrpc": "2.0", "id": request["id"], "error": error})

    async def close(self) -> None:
        """Close the inbox: the client went away."""
        await self.inbox.aclose()

    async def wait_ended(self) -> float:
        """Wait until ``actor.run`` returns; return the time it did."""
        with trio.fail_after(self.guard):
            await self.ended.wait()
        assert self.ended_at is not None
        return self.ended_at

    # --- what the server sends -------------------------------------------------------

    def _check(self, item: Outbound) -> None:
        payload = item.payload
        items = payload if isinstance(payload, list) else [payload]
        for message in items:
            assert isinstance(message, dict), f"not a JSON-RPC message: {message!r}"
            # Every item says what it carries, and says it right.
            assert item.kind is kind_of(message), (item.kind, message)
            method = None
            if "result" in message or "error" in message:
                method = self._methods.get(message.get("id"))  # type: ignore[arg-type]
                if method == "initialize" and "result" in message:
                    self.revision = message["result"]["protocolVersion"]
            check_server_message(message, self.revision, request_method=method)
        self.received.append(item)

    async def _read(self) -> Outbound:
        with trio.fail_after(self.guard):
            item = await self.outbox.receive()
        self._check(item)
        return item

    async def next_item(self) -> Outbound:
        """Return the next item the actor sent (the oldest unclaimed one first)."""
        if self._backlog:
            return self._backlog.pop(0)
        return await self._read()

    async def item_where(self, predicate: Callable[[JSONObject], bool]) -> Outbound:
        """Wait for the first item whose payload matches; keep the others for later."""
        for index, item in enumerate(self._backlog):
            if isinstance(item.payload, dict) and predicate(item.payload):
                return self._backlog.pop(index)
        while True:
            item = await self._read()
            if isinstance(item.payload, dict) and predicate(item.payload):
                return item
            self._backlog.append(item)

    async def response(self, request_id: RequestId) -> JSONObject:
        """Wait for the response to our request ``request_id``."""
        item = await self.item_where(
            lambda m: m.get("id") == request_id and ("result" in m or "error" in m)
        )
        assert item.related_request_id == request_id, item
        payload: JSONObject = item.payload
        return payload

    async def result_of(self, request_id: RequestId) -> JSONObject:
        """Wait for a successful response to ``request_id`` and return its result."""
        response = await self.response(request_id)
        assert "result" in response, f"expected a result, got {response!r}"
        result: JSONObject = response["result"]
        return result

    async def error_of(self, request_id: RequestId) -> JSONObject:
        """Wait for an error response to ``request_id`` and return its error object."""
        response = await self.response(request_id)
        assert "error" in response, f"expected an error, got {response!r}"
        error: JSONObject = response["error"]
        return error

    async def request(self, method: str, params: JSONObject | None = None) -> JSONObject:
        """Send a request and return the result of its (successful) response."""
        return await self.result_of(await self.send_request(method, params))

    async def call_tool(
        self, name: str, arguments: JSONObject | None = None, *, meta: JSONObject | None = None
    ) -> JSONObject:
        """Call a tool and return its ``CallToolResult``."""
        return await self.result_of(await self.start_tool(name, arguments, meta=meta))

    async def server_request(self, method: str) -> JSONObject:
        """Wait for the server to send a request of ``method``; return the message."""
        item = await self.item_where(lambda m: m.get("method") == method and "id" in m)
        payload: JSONObject = item.payload
        return payload

    async def notification(self, method: str) -> Outbound:
        """Wait for the server to send a notification of ``method``."""
        return await self.item_where(lambda m: m.get("method") == method and "id" not in m)

    async def pending(self) -> list[Outbound]:
        """Once every task is blocked, return (and claim) everything sent but unclaimed."""
        await trio.testing.wait_all_tasks_blocked()
        items, self._backlog = self._backlog, []
        while True:
            try:
                item = self.outbox.receive_nowait()
            except (trio.WouldBlock, trio.EndOfChannel):
                return items
            self._check(item)
            items.append(item)

    async def expect_nothing(self) -> None:
        """Assert that the actor has nothing more to say right now."""
        items = await self.pending()
        assert not items, f"expected no messages, got {[i.payload for i in items]!r}"

    # --- the lifecycle --------------------------------------------------------------

    async def initialize(
        self,
        revision: str = LATEST.version,
        capabilities: JSONObject | None = None,
        *,
        initialized: bool = True,
    ) -> JSONObject:
        """Open the session at ``revision``; send ``initialized`` unless told not to."""
        result = await self.request(
            "initialize",
            {
                "protocolVersion": revision,
                "capabilities": capabilities or {},
                "clientInfo": {"name": "harness", "version": "1.0"},
            },
        )
        assert result["protocolVersion"] == revision
        if initialized:
            await self.notify("notifications/initialized")
            # Let the actor take it in, so what the test does next happens after it.
            await trio.testing.wait_all_tasks_blocked()
            assert self.actor.statistics().phase is Phase.OPERATING
        return result


def assert_idle(actor: SessionActor) -> None:
    """Assert invariant 2: no request, client request or helper task is left."""
    stats = actor.statistics()
    assert stats.requests_in_flight == 0, stats
    assert stats.client_requests_pending == 0, stats
    assert actor._nursery is not None
    # The stored tasks' expiry waits in the session's nursery while tasks are kept: it is
    # not work.
    names = sorted(task.name.rpartition(".")[2] for task in actor._nursery.child_tasks)
    assert [name for name in names if name != "_reap"] == [], names
    assert actor.resting()


def live_tasks() -> set[trio.lowlevel.Task]:
    """Return every task alive in this run."""
    found: set[trio.lowlevel.Task] = set()
    todo = [trio.lowlevel.current_root_task()]
    while todo:
        task = todo.pop()
        if task is None:
            continue
        found.add(task)
        for nursery in task.child_nurseries:
            todo.extend(nursery.child_tasks)
    return found


@asynccontextmanager
async def open_session(
    server: Server,
    options: SessionOptions | None = None,
    *,
    outbox_size: int = 64,
    guard: float | None = None,
) -> AsyncIterator[SessionHarness]:
    """Run a SessionActor for ``server``; on exit close its inbox and let it finish."""
    if guard is None:
        guard = default_guard()
    outbox_send, outbox_receive = trio.open_memory_channel[Outbound](outbox_size)
    inbox_send, inbox_receive = trio.open_memory_channel[JSONValue | ProtocolError](64)
    actor = SessionActor(server, outbox_send, options)
    harness = SessionHarness(actor, inbox_send, outbox_receive, guard=guard)

    async def run(*, task_status: trio.TaskStatus[SessionActor]) -> None:
        await actor.run(inbox_receive, task_status=task_status)
        harness.ended_at = trio.current_time()
        harness.ended.set()

    async with trio.open_nursery() as nursery:
        started = await nursery.start(run)
        assert started is actor
        try:
            yield harness
        finally:
            await inbox_send.aclose()
            # Keep reading (and checking) so the actor can finish its last replies.
            with trio.fail_after(guard):
                async for item in outbox_receive:
                    harness._check(item)


def tool_text(result: Any) -> str:
    """The text of a ``CallToolResult`` with one text block."""
    content = result["content"]
    assert len(content) == 1, result
    assert content[0]["type"] == "text", result
    text: str = content[0]["text"]
    return text
