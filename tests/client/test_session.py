"""ClientSession message by message: the test plays the server on raw channels."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Final

import pytest
import trio
import trio.testing

from mcpactor import RemoteProtocolError, RequestError, TransportBroken
from mcpactor.client import ClientSession, RequestCancelled, open_client_session
from mcpactor.protocol import JSONObject, JSONValue, ProtocolError
from mcpactor.protocol._client_session import DEFAULT_MAX_SERVING

GUARD: Final = 10_000.0


class FakeServer:
    """The server end of a client's channels, driven by hand."""

    def __init__(
        self,
        inbox: trio.MemoryReceiveChannel[JSONValue],
        outbox: trio.MemorySendChannel[JSONValue | ProtocolError],
    ) -> None:
        self.inbox = inbox
        self.outbox = outbox

    async def receive(self) -> JSONObject:
        """The next message the client sent."""
        with trio.fail_after(GUARD):
            message: JSONObject = await self.inbox.receive()
        return message

    async def send(self, message: JSONValue | ProtocolError) -> None:
        """Send the client a message."""
        await self.outbox.send(message)

    async def answer(self, request: JSONObject, result: JSONObject) -> None:
        """Answer one of the client's requests."""
        await self.send({"jsonrpc": "2.0", "id": request["id"], "result": result})

    async def nothing_more(self) -> None:
        """Assert that the client has sent nothing else."""
        await trio.testing.wait_all_tasks_blocked()
        with pytest.raises(trio.WouldBlock):
            self.inbox.receive_nowait()


@asynccontextmanager
async def fake_server(**client: Any) -> AsyncIterator[tuple[ClientSession, FakeServer]]:
    """A client whose server is the test."""
    to_server_send, to_server_receive = trio.open_memory_channel[JSONValue](100)
    to_client_send, to_client_receive = trio.open_memory_channel[JSONValue | ProtocolError](100)
    async with open_client_session(to_server_send, to_client_receive, **client) as session:
        yield session, FakeServer(to_server_receive, to_client_send)


async def test_responses_are_matched_by_id_in_any_order(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with fake_server() as (client, server), trio.open_nursery() as nursery:
        results: dict[str, JSONObject] = {}

        async def call(name: str) -> None:
            results[name] = await client.call_tool(name)

        nursery.start_soon(call, "first")
        first = await server.receive()
        nursery.start_soon(call, "second")
        second = await server.receive()
        assert first["id"] != second["id"]
        pending = client.statistics().requests_pending
        assert pending == {first["id"]: "tools/call", second["id"]: "tools/call"}
        await server.answer(second, {"content": [], "n": 2})
        await server.answer(first, {"content": [], "n": 1})
        await trio.testing.wait_all_tasks_blocked()
        assert results == {"first": {"content": [], "n": 1}, "second": {"content": [], "n": 2}}
        assert client.statistics().requests_pending == {}


async def test_errors_become_request_errors(autojump_clock: trio.testing.MockClock) -> None:
    async with fake_server() as (client, server), trio.open_nursery() as nursery:
        errors: list[RequestError] = []

        async def call() -> None:
            with pytest.raises(RequestError) as info:
                await client.read_resource("file:///x")
            errors.append(info.value)

        nursery.start_soon(call)
        request = await server.receive()
        await server.send(
            {
                "jsonrpc": "2.0",
                "id": request["id"],
                "error": {"code": -32002, "message": "not found", "data": {"uri": "file:///x"}},
            }
        )
    [error] = errors
    assert (error.code, error.message, error.data) == (-32002, "not found", {"uri": "file:///x"})


async def test_the_server_gets_method_not_found_for_what_the_client_cannot_do(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with fake_server() as (_, server):
        for request_id, method in enumerate(
            ["sampling/createMessage", "elicitation/create", "roots/list", "tasks/list"]
        ):
            await server.send({"jsonrpc": "2.0", "id": request_id, "method": method})
            reply = await server.receive()
            assert reply["id"] == request_id
            assert reply["error"]["code"] == -32601
            assert reply["error"]["data"] == {"method": method}
        await server.send({"jsonrpc": "2.0", "id": "p", "method": "ping"})
        assert await server.receive() == {"jsonrpc": "2.0", "id": "p", "result": {}}


async def test_the_servers_cancellation_stops_the_handler_and_suppresses_the_reply(
    autojump_clock: trio.testing.MockClock,
) -> None:
    started = trio.Event()
    stopped = trio.Event()

    async def sample(params: JSONObject) -> JSONObject:
        started.set()
        try:
            await trio.sleep_forever()
        finally:
            stopped.set()
        raise AssertionError("unreachable")  # pragma: no cover

    async with fake_server(sampling_handler=sample) as (client, server):
        await server.send(
            {"jsonrpc": "2.0", "id": 7, "method": "sampling/createMessage", "params": {}}
        )
        with trio.fail_after(GUARD):
            await started.wait()
        assert client.statistics().requests_serving == 1
        await server.send(
            {
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": 7, "reason": "too slow"},
            }
        )
        with trio.fail_after(GUARD):
            await stopped.wait()
        await server.nothing_more()
        assert client.statistics().requests_serving == 0


async def test_a_cancellation_right_behind_its_request_is_honoured(
    autojump_clock: trio.testing.MockClock,
) -> None:
    calls: list[JSONObject] = []

    async def sample(params: JSONObject) -> JSONObject:
        calls.append(params)
        return {"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"}

    async with fake_server(sampling_handler=sample) as (client, server):
        server.outbox.send_nowait(
            {"jsonrpc": "2.0", "id": 3, "method": "sampling/createMessage", "params": {}}
        )
        server.outbox.send_nowait(
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 3}}
        )
        await server.nothing_more()
        assert calls == []
        assert client.statistics().requests_serving == 0


async def test_a_reused_server_request_id_is_refused(
    autojump_clock: trio.testing.MockClock,
) -> None:
    release = trio.Event()

    async def sample(params: JSONObject) -> JSONObject:
        await release.wait()
        return {"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"}

    async with fake_server(sampling_handler=sample) as (_, server):
        message = {"jsonrpc": "2.0", "id": 1, "method": "sampling/createMessage"}
        await server.send(message)
        await trio.testing.wait_all_tasks_blocked()
        await server.send(message)
        refused = await server.receive()
        assert refused["error"]["code"] == -32600
        release.set()
        answered = await server.receive()
        assert answered["result"]["model"] == "m"


async def test_cancelling_the_caller_tells_the_server_and_ignores_the_late_answer(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with fake_server() as (client, server):
        async with trio.open_nursery() as nursery:
            scope = trio.CancelScope()

            async def call() -> None:
                with scope:
                    await client.call_tool("slow")

            nursery.start_soon(call)
            request = await server.receive()
            scope.cancel()
        notice = await server.receive()
        assert notice == {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": request["id"], "reason": "the caller stopped waiting"},
        }
        await server.answer(request, {"content": []})  # too late: ignored
        await server.send({"jsonrpc": "2.0", "id": 12345, "result": {}})  # never asked
        pinged = trio.Event()

        async def ping() -> None:
            await client.ping()
            pinged.set()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(ping)
            ping_request = await server.receive()
            assert ping_request["method"] == "ping"
            assert ping_request["id"] != request["id"]
            await server.answer(ping_request, {})
        assert pinged.is_set()


async def test_a_timeout_cancels_with_a_reason(autojump_clock: trio.testing.MockClock) -> None:
    async with fake_server() as (client, server):
        with pytest.raises(trio.TooSlowError):
            await client.request("tools/call", {"name": "x"}, timeout=3)
        request = await server.receive()
        notice = await server.receive()
        assert notice["params"] == {
            "requestId": request["id"],
            "reason": "no response within 3 s",
        }


async def test_initialize_is_never_cancelled(autojump_clock: trio.testing.MockClock) -> None:
    async with fake_server() as (client, server):
        with pytest.raises(trio.TooSlowError):
            await client.request("initialize", {}, timeout=3)
        assert (await server.receive())["method"] == "initialize"
        await server.nothing_more()


async def test_cancel_of_an_unknown_request_sends_nothing(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with fake_server() as (client, server):
        assert await client.cancel(99, "what?") is False
        await server.nothing_more()


async def test_initialize_sends_capabilities_then_initialized(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def sample(params: JSONObject) -> JSONObject:
        raise AssertionError("never called")  # pragma: no cover

    async with fake_server(sampling_handler=sample, roots=[]) as (client, server):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(client.initialize)
            request = await server.receive()
            assert request["method"] == "initialize"
            assert request["params"]["protocolVersion"] == "2025-11-25"
            assert request["params"]["capabilities"] == {
                "sampling": {},
                "roots": {"listChanged": True},
            }
            assert request["params"]["clientInfo"]["name"] == "mcpactor"
            result = {
                "protocolVersion": "2025-06-18",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "fake", "version": "1"},
            }
            await server.answer(request, result)
            assert await server.receive() == {
                "jsonrpc": "2.0",
                "method": "notifications/initialized",
            }
        assert client.server.protocol_version == "2025-06-18"
        assert client.server.capabilities == {"tools": {}}
        assert client.server.info == {"name": "fake", "version": "1"}
        await client.set_roots([{"uri": "file:///new"}])
        assert await server.receive() == {
            "jsonrpc": "2.0",
            "method": "notifications/roots/list_changed",
        }


async def test_initialize_refuses_a_revision_it_does_not_know(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with fake_server() as (client, server), trio.open_nursery() as nursery:

        async def initialize() -> None:
            with pytest.raises(RemoteProtocolError, match="1999-01-01"):
                await client.initialize()

        nursery.start_soon(initialize)
        request = await server.receive()
        await server.answer(
            request, {"protocolVersion": "1999-01-01", "capabilities": {}, "serverInfo": {}}
        )
        await server.nothing_more()
        assert client.server.protocol_version is None


async def test_roots_changes_before_initialize_are_not_announced(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with fake_server(roots=[]) as (client, server):
        await client.set_roots([{"uri": "file:///a"}])
        await server.nothing_more()
        await server.send({"jsonrpc": "2.0", "id": 1, "method": "roots/list"})
        assert (await server.receive())["result"] == {"roots": [{"uri": "file:///a"}]}


async def test_the_server_closing_fails_everything_waiting(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with fake_server() as (client, server):
        failures: list[type[BaseException]] = []

        async def expect_broken(fn: Any, *args: Any) -> None:
            with pytest.raises(TransportBroken) as info:
                await fn(*args)
            failures.append(type(info.value))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(expect_broken, client.ping)
            nursery.start_soon(expect_broken, client.notifications.wait_for, "notifications/x")
            await server.receive()
            await trio.testing.wait_all_tasks_blocked()
            await server.outbox.aclose()
        assert failures == [TransportBroken, TransportBroken]
        with pytest.raises(TransportBroken):
            await client.ping()
        with pytest.raises(TransportBroken):
            await client.notifications.wait_for("notifications/x")


async def test_the_hook_sees_every_message_with_the_method_it_answers(
    autojump_clock: trio.testing.MockClock,
) -> None:
    seen: list[tuple[JSONValue, str | None]] = []

    async with (
        fake_server(on_server_message=lambda m, method: seen.append((m, method))) as (
            client,
            server,
        ),
        trio.open_nursery() as nursery,
    ):
        nursery.start_soon(client.list_page, "prompts/list")
        request = await server.receive()
        note = {"jsonrpc": "2.0", "method": "notifications/message", "params": {}}
        await server.send(note)
        ping = {"jsonrpc": "2.0", "id": "s1", "method": "ping"}
        await server.send(ping)
        answer = {"jsonrpc": "2.0", "id": request["id"], "result": {"prompts": []}}
        await server.send(answer)
        late = {"jsonrpc": "2.0", "id": 999, "result": {}}
        await server.send(late)
    assert seen == [(note, None), (ping, None), (answer, "prompts/list"), (late, None)]


async def test_bad_messages_from_the_server_are_survived(
    caplog: pytest.LogCaptureFixture, autojump_clock: trio.testing.MockClock
) -> None:
    caplog.set_level(logging.WARNING, logger="mcpactor.client")
    async with fake_server() as (_, server):
        await server.send(RemoteProtocolError("invalid JSON: oops", code=-32700))
        await server.send({"jsonrpc": "2.0", "id": 5, "method": "ping", "params": [1]})
        reply = await server.receive()
        assert reply["id"] == 5
        # by-position params: the wrong params, not a bad request
        assert reply["error"]["code"] == -32602
        await server.send({"jsonrpc": "1.0", "result": {}})
        # Ids that cannot be dict keys are no ids, and no crash.
        for method, params in [
            ("notifications/progress", {"progressToken": [1], "progress": 1}),
            ("notifications/cancelled", {"requestId": {"x": 1}}),
        ]:
            await server.send({"jsonrpc": "2.0", "method": method, "params": params})
        await server.send({"id": [1], "jsonrpc": "2.0", "result": {}})
        await server.send({"jsonrpc": "2.0", "error": {"code": -32700, "message": "bad"}})
        # A batch is taken apart.
        await server.send([{"jsonrpc": "2.0", "id": "b", "method": "ping"}])
        assert (await server.receive())["id"] == "b"
        await server.nothing_more()
    messages = " ".join(record.getMessage() for record in caplog.records)
    assert "invalid JSON: oops" in messages
    assert "'jsonrpc': '2.0'" in messages
    assert "could not read a request: bad" in messages


async def test_list_all_guards_against_bad_pages(autojump_clock: trio.testing.MockClock) -> None:
    async with fake_server() as (client, server), trio.open_nursery() as nursery:

        async def list_twice() -> None:
            with pytest.raises(RemoteProtocolError, match="cursor 'a' twice"):
                await client.list_tools()
            with pytest.raises(RemoteProtocolError, match="no 'tools' list"):
                await client.list_tools()

        nursery.start_soon(list_twice)
        first = await server.receive()
        assert "params" not in first
        await server.answer(first, {"tools": [{"name": "x"}], "nextCursor": "a"})
        second = await server.receive()
        assert second["params"] == {"cursor": "a"}
        await server.answer(second, {"tools": [], "nextCursor": "a"})
        third = await server.receive()
        await server.answer(third, {"prompts": []})


async def test_a_progress_token_given_in_meta_is_used(
    autojump_clock: trio.testing.MockClock,
) -> None:
    updates: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        updates.append(progress)

    async with fake_server() as (client, server), trio.open_nursery() as nursery:
        nursery.start_soon(
            lambda: client.call_tool(
                "x", {"a": 1}, meta={"progressToken": "mine"}, progress_handler=on_progress
            )
        )
        request = await server.receive()
        assert request["params"]["_meta"] == {"progressToken": "mine"}
        for progress in (1, "bad", 2.5):
            await server.send(
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/progress",
                    "params": {"progressToken": "mine", "progress": progress},
                }
            )
        await server.answer(request, {"content": []})
    assert updates == [1, 2.5]


async def test_a_slow_progress_handler_never_blocks_the_reader(
    autojump_clock: trio.testing.MockClock,
) -> None:
    release = trio.Event()
    updates: list[float] = []

    async def slow(progress: float, total: float | None, message: str | None) -> None:
        updates.append(progress)
        await release.wait()

    async with fake_server() as (client, server), trio.open_nursery() as nursery:
        result: list[JSONObject] = []

        async def call() -> None:
            result.append(await client.call_tool("x", progress_handler=slow))

        nursery.start_soon(call)
        request = await server.receive()
        token = request["params"]["_meta"]["progressToken"]
        for progress in range(1, 91):
            await server.send(
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/progress",
                    "params": {"progressToken": token, "progress": progress},
                }
            )
        await server.answer(request, {"content": []})
        # The reader is free: it answers a ping while the handler is stuck.
        await server.send({"jsonrpc": "2.0", "id": "p", "method": "ping"})
        assert (await server.receive())["id"] == "p"
        assert updates == [1]
        release.set()
    assert result == [{"content": []}]
    # What did not fit in the call's buffer was dropped, in order.
    assert updates[:3] == [1, 2, 3]
    assert len(updates) < 90


async def test_cancelling_initialize_fails_its_caller_and_tells_the_server_nothing(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with fake_server() as (client, server), trio.open_nursery() as nursery:

        async def initialize() -> None:
            with pytest.raises(RequestCancelled):
                await client.initialize()

        nursery.start_soon(initialize)
        request = await server.receive()
        assert await client.cancel(request["id"], "impatient") is True
        await server.nothing_more()
        assert client.statistics().requests_pending == {}
        assert client.server.protocol_version is None


async def test_server_requests_beyond_the_limit_are_refused(
    autojump_clock: trio.testing.MockClock,
) -> None:
    release = trio.Event()

    async def sample(params: JSONObject) -> JSONObject:
        await release.wait()
        return {"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"}

    async with fake_server(sampling_handler=sample) as (client, server):
        limit = DEFAULT_MAX_SERVING
        for request_id in range(limit + 1):
            await server.send(
                {"jsonrpc": "2.0", "id": request_id, "method": "sampling/createMessage"}
            )
        refused = await server.receive()
        assert refused["id"] == limit
        assert refused["error"]["code"] == -32603
        assert f"limit {limit}" in refused["error"]["message"]
        assert client.statistics().requests_serving == limit
        release.set()
        answered = {(await server.receive())["id"] for _ in range(limit)}
        assert answered == set(range(limit))
