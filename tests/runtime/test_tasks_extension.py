"""The tasks extension (2026-07-28) served by serve_stateless with a real TaskRegistry.

Every request goes through ``serve_stateless`` with its own envelope, as the stateless
transports hand it over; the task host is the runtime's process-wide ``TaskRegistry``,
its actors in the test's nursery. Each message is checked against the extension's
schema (``tests/spec/ext-tasks``), plain results and errors against the revision's.
Time is virtual (``autojump_clock``), so TTLs and sleeps are exact.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
import trio.testing

from mcpactor import Context, RequestError, SchemaError, Server, TaskOptions, ToolError
from mcpactor._exceptions import ProtocolError
from mcpactor.protocol import Request
from mcpactor.protocol._envelope import SUBSCRIPTION_ID, EnvelopeError, read_envelope
from mcpactor.protocol._ext_tasks import EXTENSION
from mcpactor.protocol._mrtr import elicitation_request
from mcpactor.protocol._sealing import KeyRing, SealingKey, StateSealer
from mcpactor.runtime._bus import ChangeEvent, InMemoryBus
from mcpactor.runtime.tasks import TaskRegistry
from mcpactor.server._rounds import InputRequired
from mcpactor.server._stateless import serve_stateless
from tests.protocol.test_ext_tasks import ext_check
from tests.spec_schema import check

from ..server.conftest import FakePeer
from .conftest import open_session

MODERN = "2026-07-28"
DECLARES = {"extensions": {EXTENSION: {}}, "elicitation": {}}
SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}}
# What each tasks/* request and its answer are, in the extension's schema.
REQUESTS = {
    "tasks/get": "GetTaskRequest",
    "tasks/update": "UpdateTaskRequest",
    "tasks/cancel": "CancelTaskRequest",
}
RESULTS = {
    "tasks/get": "GetTaskResult",
    "tasks/update": "UpdateTaskResult",
    "tasks/cancel": "CancelTaskResult",
}


def jobs_server(log: list[str]) -> Server:
    server = Server("jobs")

    @server.tool
    async def greet(name: str) -> str:
        """Sync only."""
        return f"Hello, {name}!"

    @server.tool(task_support="optional")
    async def slow_compute(seconds: int, label: str = "") -> str:
        """Sleep, then answer; records how it ended."""
        try:
            await trio.sleep(seconds)
        finally:
            log.append(f"slow_compute {label} ended at {trio.current_time():g}")
        return f"computed {label}"

    @server.tool(task_support="required")
    async def failing_job() -> str:
        """A tool error after a second."""
        await trio.sleep(1)
        raise ToolError("the job failed")

    @server.tool(task_support="optional")
    async def protocol_error_job() -> str:
        """A protocol error after a second."""
        await trio.sleep(1)
        raise RequestError(-32000, "the backend refused", {"backend": "db"})

    @server.tool(task_support="optional")
    async def confirm_delete(filename: str, ctx: Context) -> str:
        """Ask before deleting; the work before the question runs once."""
        log.append(f"confirming {filename}")
        answer = await ctx.elicit(f"Delete {filename}?", SCHEMA)
        return f"{answer.action}: {answer.content}"

    @server.tool(task_support="optional")
    async def multi_input(ctx: Context) -> str:
        """Two questions at once."""
        answers: dict[str, Any] = {}

        async def ask(which: str) -> None:
            answers[which] = (await ctx.elicit(f"{which}?", SCHEMA)).content

        async with trio.open_nursery() as nursery:
            nursery.start_soon(ask, "first")
            nursery.start_soon(ask, "second")
        return f"first={answers['first']} second={answers['second']}"

    @server.tool(task_support="optional")
    async def explicit(ctx: Context) -> Any:
        """Manages its own rounds: asks with InputRequired, reads ctx.input_responses."""
        answer = ctx.input_responses.get("name")
        if answer is None:
            log.append("explicit asked")
            return InputRequired(
                {"name": elicitation_request("Your name?", SCHEMA)}, state={"round": 1}
            )
        return f"hello {answer['content']} after {ctx.request_state}"

    @server.tool(task_support="required", task_after_input=True)
    async def test_tool_with_task(ctx: Context) -> str:
        """Ask in rounds first, then go on as a task."""
        log.append("composition ran")
        answer = await ctx.elicit("Your name?", {"type": "object", "properties": {}})
        await trio.sleep(2)
        return f"hello {answer.content}"

    return server


SEALER = StateSealer(KeyRing.of(SealingKey.generate("k1")), ttl=60)


class Recorder:
    """A change bus that keeps what is published."""

    def __init__(self) -> None:
        self.events: list[Any] = []

    def publish(self, event: ChangeEvent) -> None:
        self.events.append(event)

    def statuses(self, task_id: str) -> list[str]:
        return [e.payload["status"] for e in self.events if e.task_id == task_id]


class Client:
    """Stateless requests to one server, each with its envelope, the registry as host."""

    def __init__(self, server: Server, registry: TaskRegistry | None) -> None:
        self.server = server
        self.registry = registry
        self._next_id = 0

    async def send(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        capabilities: dict[str, Any] | None = None,
        principal: str | None = None,
        malformed: bool = False,
    ) -> Any:
        self._next_id += 1
        request_id = self._next_id
        meta = {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": (
                DECLARES if capabilities is None else capabilities
            ),
        }
        sent = {**(params or {}), "_meta": meta}
        message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": sent}
        if method in REQUESTS and not malformed:
            ext_check(message, REQUESTS[method])
        envelope = read_envelope(Request(request_id, method, sent))
        ctx = Context(peer=FakePeer(), request_id=request_id, negotiated=envelope, meta=meta)
        result = await serve_stateless(
            self.server,
            method,
            sent,
            ctx,
            tasks=self.registry,
            principal=principal,
            sealer=SEALER,
            now=1_000.0,
        )
        check({"jsonrpc": "2.0", "id": request_id, "result": result}, MODERN, "JSONRPCResponse")
        if method in RESULTS:
            ext_check(result, RESULTS[method])
        elif result.get("resultType") == "task":
            ext_check(result, "CreateTaskResult")
        elif result.get("resultType") == "input_required":
            check(result, MODERN, "InputRequiredResult")
        elif method == "tools/call":
            check(result, MODERN, "CallToolResult")
        return result

    async def fails(self, method: str, params: dict[str, Any] | None = None, **kw: Any) -> Any:
        with pytest.raises((RequestError, ProtocolError)) as info:
            await self.send(method, params, **kw)
        error = info.value
        response = {"jsonrpc": "2.0", "id": self._next_id, "error": error.to_error()}
        check(response, MODERN, "JSONRPCErrorResponse")
        return error

    async def create(self, name: str, arguments: dict[str, Any] | None = None) -> Any:
        result = await self.send("tools/call", {"name": name, "arguments": arguments or {}})
        assert result["resultType"] == "task", result
        return result

    async def get(self, task_id: str, **kw: Any) -> Any:
        return await self.send("tasks/get", {"taskId": task_id}, **kw)


@asynccontextmanager
async def serving(
    log: list[str] | None = None, options: TaskOptions | None = None
) -> AsyncIterator[tuple[Client, Recorder, TaskRegistry]]:
    bus = Recorder()
    async with trio.open_nursery() as nursery:
        registry = TaskRegistry(nursery, bus=bus, options=options)
        yield Client(jobs_server([] if log is None else log), registry), bus, registry
        nursery.cancel_scope.cancel()


def notification(event: Any) -> dict[str, Any]:
    """The ``notifications/tasks`` a listen stream sends for a published change."""
    assert event.kind == "task"
    params = {**event.payload, "_meta": {SUBSCRIPTION_ID: 7}}
    message = {"jsonrpc": "2.0", "method": "notifications/tasks", "params": params}
    ext_check(message, "TaskStatusNotification")
    return message


# --- creation and completion ------------------------------------------------------------


async def test_a_task_is_created_polled_and_completed(autojump_clock: Any) -> None:
    async with serving() as (client, bus, registry):
        created = await client.create("slow_compute", {"seconds": 5, "label": "a"})
        assert "task" not in created
        assert "requestState" not in created
        assert created["status"] == "working"
        assert created["ttlMs"] == 3_600_000
        assert created["pollIntervalMs"] == 1000
        assert "ttl" not in created
        assert "pollInterval" not in created
        task_id = created["taskId"]
        # Durable at once: a get right after the CreateTaskResult resolves.
        got = await client.get(task_id)
        assert got["status"] == "working"
        assert "result" not in got
        assert got["createdAt"] == created["createdAt"]
        await trio.sleep(6)
        done = await client.get(task_id)
        assert done["resultType"] == "complete"
        assert done["status"] == "completed"
        result = done["result"]
        assert result["content"] == [{"type": "text", "text": "computed a"}]
        assert result.get("isError") is not True
        assert "io.modelcontextprotocol/related-task" not in result.get("_meta", {})
        check(result, MODERN, "CallToolResult")
        assert done["lastUpdatedAt"] > done["createdAt"]
        assert bus.statuses(task_id) == ["completed"]
        assert notification(bus.events[-1])["params"]["result"] == result
        assert registry.statistics().running == 0


async def test_a_sync_tool_and_a_legacy_task_param_stay_plain_calls() -> None:
    async with serving() as (client, _bus, registry):
        result = await client.send(
            "tools/call", {"name": "greet", "arguments": {"name": "x"}, "task": {"ttl": 60000}}
        )
        assert result["resultType"] == "complete"
        assert "taskId" not in result
        assert result["content"] == [{"type": "text", "text": "Hello, x!"}]
        assert registry.statistics().stored == 0


async def test_a_tool_error_completes_the_task_and_a_protocol_error_fails_it(
    autojump_clock: Any,
) -> None:
    async with serving() as (client, bus, _):
        tool = (await client.create("failing_job"))["taskId"]
        protocol = (await client.create("protocol_error_job"))["taskId"]
        await trio.sleep(2)
        completed = await client.get(tool)
        assert completed["status"] == "completed"
        assert completed["result"]["isError"] is True
        assert completed["result"]["content"][0]["text"] == "the job failed"
        failed = await client.get(protocol)
        assert failed["status"] == "failed"
        assert "result" not in failed
        assert failed["error"] == {
            "code": -32000,
            "message": "the backend refused",
            "data": {"backend": "db"},
        }
        assert failed["statusMessage"] == "the backend refused"
        for event in bus.events:
            notification(event)


async def test_status_changes_reach_a_listener_of_the_change_bus(autojump_clock: Any) -> None:
    bus = InMemoryBus()
    async with trio.open_nursery() as nursery:
        client = Client(jobs_server([]), TaskRegistry(nursery, bus=bus))
        with bus.listen() as listener:
            task_id = (await client.create("confirm_delete", {"filename": "f"}))["taskId"]
            parked = await listener.next()
            assert parked.kind == "task"
            assert parked.task_id == task_id
            assert parked.payload is not None
            [key] = parked.payload["inputRequests"]
            answer = {"action": "accept", "content": {"ok": False}}
            await client.send("tasks/update", {"taskId": task_id, "inputResponses": {key: answer}})
            working = await listener.next()
            completed = await listener.next()
        assert [e.payload["status"] for e in (parked, working, completed) if e.payload] == [
            "input_required",
            "working",
            "completed",
        ]
        assert notification(completed)["params"]["taskId"] == task_id
        nursery.cancel_scope.cancel()


# --- cancellation -----------------------------------------------------------------------


async def test_cancel_reaches_the_handlers_scope_and_is_acknowledged_empty(
    autojump_clock: Any,
) -> None:
    log: list[str] = []
    async with serving(log) as (client, bus, registry):
        task_id = (await client.create("slow_compute", {"seconds": 60, "label": "c"}))["taskId"]
        await trio.sleep(3)
        ack = await client.send("tasks/cancel", {"taskId": task_id})
        assert set(ack) == {"resultType", "_meta"}
        assert ack["resultType"] == "complete"
        await trio.testing.wait_all_tasks_blocked()
        # The handler's finally ran at the moment of the cancel, not after its sleep.
        assert log == ["slow_compute c ended at 3"]
        got = await client.get(task_id)
        assert got["status"] == "cancelled"
        assert "result" not in got
        assert "error" not in got
        assert registry.statistics().running == 0
        # Cancelling a finished task is the same empty ack, and changes nothing.
        again = await client.send("tasks/cancel", {"taskId": task_id})
        assert again["resultType"] == "complete"
        assert bus.statuses(task_id) == ["cancelled"]
        done = (await client.create("slow_compute", {"seconds": 0, "label": "d"}))["taskId"]
        await trio.sleep(1)
        await client.send("tasks/cancel", {"taskId": done})
        assert (await client.get(done))["status"] == "completed"


async def test_unknown_ids_are_invalid_params_and_removed_methods_not_found() -> None:
    async with serving() as (client, _, _):
        for method in ("tasks/get", "tasks/cancel"):
            error = await client.fails(method, {"taskId": "nonexistent"})
            assert error.code == -32602
        error = await client.fails("tasks/update", {"taskId": "nonexistent", "inputResponses": {}})
        assert error.code == -32602
        for method in ("tasks/result", "tasks/list"):
            error = await client.fails(method, {"taskId": "x"})
            assert error.code == -32601
        error = await client.fails("tasks/get", {}, malformed=True)
        assert error.code == -32602
        error = await client.fails("tasks/update", {"taskId": "x"}, malformed=True)
        assert error.code == -32602


async def test_another_principals_task_is_not_found(autojump_clock: Any) -> None:
    async with serving() as (client, _, registry):
        created = await client.send(
            "tools/call", {"name": "slow_compute", "arguments": {"seconds": 9}}, principal="ann"
        )
        task_id = created["taskId"]
        assert (await client.get(task_id, principal="ann"))["status"] == "working"
        error = await client.fails("tasks/get", {"taskId": task_id}, principal="bob")
        assert error.code == -32602
        error = await client.fails("tasks/cancel", {"taskId": task_id})
        assert error.code == -32602
        assert registry.known(task_id, principal="ann")
        assert not registry.known(task_id)


# --- input_required ---------------------------------------------------------------------


async def test_a_question_parks_the_task_until_tasks_update_answers_it(
    autojump_clock: Any,
) -> None:
    log: list[str] = []
    async with serving(log) as (client, bus, _):
        task_id = (await client.create("confirm_delete", {"filename": "rt.txt"}))["taskId"]
        await trio.testing.wait_all_tasks_blocked()
        parked = await client.get(task_id)
        assert parked["status"] == "input_required"
        [(key, request)] = parked["inputRequests"].items()
        assert request["method"] == "elicitation/create"
        assert request["params"]["message"] == "Delete rt.txt?"
        # An answer to a key nobody asked is acknowledged and ignored.
        ack = await client.send(
            "tasks/update",
            {"taskId": task_id, "inputResponses": {"unknown": {"action": "cancel"}}},
        )
        assert ack["resultType"] == "complete"
        assert (await client.get(task_id))["status"] == "input_required"
        answer = {"action": "accept", "content": {"ok": True}}
        await client.send("tasks/update", {"taskId": task_id, "inputResponses": {key: answer}})
        await trio.testing.wait_all_tasks_blocked()
        done = await client.get(task_id)
        assert done["status"] == "completed"
        assert done["result"]["content"][0]["text"] == "accept: {'ok': True}"
        # The handler went on where it stopped: the work before the question ran once.
        assert log == ["confirming rt.txt"]
        assert bus.statuses(task_id) == ["input_required", "working", "completed"]
        for event in bus.events:
            notification(event)


async def test_a_partial_update_leaves_the_rest_pending(autojump_clock: Any) -> None:
    async with serving() as (client, _, _):
        task_id = (await client.create("multi_input"))["taskId"]
        await trio.testing.wait_all_tasks_blocked()
        parked = await client.get(task_id)
        keys = sorted(parked["inputRequests"])
        assert len(keys) == 2
        assert len(set(keys)) == 2
        first, second = keys
        await client.send(
            "tasks/update",
            {"taskId": task_id, "inputResponses": {first: {"action": "accept", "content": {}}}},
        )
        await trio.testing.wait_all_tasks_blocked()
        partial = await client.get(task_id)
        assert partial["status"] == "input_required"
        assert list(partial["inputRequests"]) == [second]
        await client.send(
            "tasks/update",
            {"taskId": task_id, "inputResponses": {second: {"action": "decline"}}},
        )
        await trio.testing.wait_all_tasks_blocked()
        done = await client.get(task_id)
        assert done["status"] == "completed"
        assert "first=" in done["result"]["content"][0]["text"]


async def test_a_returned_input_required_parks_and_runs_the_handler_again(
    autojump_clock: Any,
) -> None:
    log: list[str] = []
    async with serving(log) as (client, _, _):
        task_id = (await client.create("explicit"))["taskId"]
        await trio.testing.wait_all_tasks_blocked()
        parked = await client.get(task_id)
        assert list(parked["inputRequests"]) == ["name"]
        answer = {"action": "accept", "content": {"ok": True}}
        await client.send("tasks/update", {"taskId": task_id, "inputResponses": {"name": answer}})
        await trio.testing.wait_all_tasks_blocked()
        done = await client.get(task_id)
        assert done["status"] == "completed"
        assert done["result"]["content"][0]["text"] == "hello {'ok': True} after {'round': 1}"
        assert log == ["explicit asked"]


async def test_a_question_the_client_cannot_take_fails_the_task(autojump_clock: Any) -> None:
    async with serving() as (client, _, _):
        created = await client.send(
            "tools/call",
            {"name": "confirm_delete", "arguments": {"filename": "f"}},
            capabilities={"extensions": {EXTENSION: {}}},
        )
        await trio.testing.wait_all_tasks_blocked()
        failed = await client.get(created["taskId"])
        assert failed["status"] == "failed"
        assert failed["error"]["code"] == -32021
        assert failed["error"]["data"] == {"requiredCapabilities": {"elicitation": {"form": {}}}}


async def test_rounds_first_then_a_task_on_the_retry_that_answers(autojump_clock: Any) -> None:
    log: list[str] = []
    async with serving(log) as (client, _, registry):
        first = await client.send("tools/call", {"name": "test_tool_with_task"})
        assert first["resultType"] == "input_required"
        assert "taskId" not in first
        [(key, request)] = first["inputRequests"].items()
        assert request["params"]["message"] == "Your name?"
        assert registry.statistics().stored == 0
        answer = {"action": "accept", "content": {"user_name": "Ada"}}
        created = await client.send(
            "tools/call",
            {
                "name": "test_tool_with_task",
                "inputResponses": {key: answer},
                "requestState": first["requestState"],
            },
        )
        assert created["resultType"] == "task"
        assert "requestState" not in created
        await trio.sleep(3)
        done = await client.get(created["taskId"])
        assert done["status"] == "completed"
        assert done["result"]["content"][0]["text"] == "hello {'user_name': 'Ada'}"
        # The question was answered from the retry: the task never parked.
        assert log == ["composition ran", "composition ran"]


def test_task_after_input_needs_a_task_tool() -> None:
    server = Server("bad")
    with pytest.raises(SchemaError, match="task_after_input needs a task_support"):

        @server.tool(task_after_input=True)
        async def plain() -> str:
            return "x"


# --- negotiation ------------------------------------------------------------------------


async def test_an_undeclaring_request_gets_plain_calls_and_no_task_methods(
    autojump_clock: Any,
) -> None:
    async with serving() as (client, _, registry):
        plain = await client.send(
            "tools/call", {"name": "slow_compute", "arguments": {"seconds": 1}}, capabilities={}
        )
        assert plain["resultType"] == "complete"
        assert "taskId" not in plain
        error = await client.fails("tools/call", {"name": "failing_job"}, capabilities={})
        assert isinstance(error, EnvelopeError)
        assert error.code == -32021
        assert error.http_status == 400
        assert error.data == {"requiredCapabilities": {"extensions": {EXTENSION: {}}}}
        task_id = (await client.create("slow_compute", {"seconds": 5}))["taskId"]
        for method in ("tasks/get", "tasks/cancel"):
            error = await client.fails(method, {"taskId": task_id}, capabilities={})
            assert error.code == -32021
        assert registry.statistics().stored == 1


async def test_discovery_lists_the_extension_only_with_a_host() -> None:
    async with serving() as (client, _, _):
        discovered = await client.send("server/discover")
        capabilities = discovered["capabilities"]
        assert capabilities["extensions"] == {EXTENSION: {}}
        assert "tasks" not in capabilities
        check(discovered, MODERN, "DiscoverResult")
    plain = Client(jobs_server([]), None)
    assert "extensions" not in (await plain.send("server/discover"))["capabilities"]


async def test_without_a_host_the_extension_does_not_exist(autojump_clock: Any) -> None:
    client = Client(jobs_server([]), None)
    result = await client.send("tools/call", {"name": "failing_job"})
    assert result["resultType"] == "complete"
    assert result["isError"] is True
    error = await client.fails("tasks/get", {"taskId": "x"})
    assert error.code == -32601


# --- ttl and limits -----------------------------------------------------------------------


async def test_a_task_is_kept_for_its_ttl_and_a_running_one_cancelled_at_it(
    autojump_clock: Any,
) -> None:
    log: list[str] = []
    options = TaskOptions(default_ttl=10)
    async with serving(log, options) as (client, bus, registry):
        quick = (await client.create("slow_compute", {"seconds": 1, "label": "q"}))["taskId"]
        stuck = (await client.create("slow_compute", {"seconds": 99, "label": "s"}))["taskId"]
        assert (await client.get(quick))["ttlMs"] == 10_000
        await trio.sleep(9.5)
        assert (await client.get(quick))["status"] == "completed"
        assert (await client.get(stuck))["status"] == "working"
        await trio.sleep(1)
        for task_id in (quick, stuck):
            assert (await client.fails("tasks/get", {"taskId": task_id})).code == -32602
        assert "slow_compute s ended at 10" in log
        assert bus.statuses(stuck) == ["cancelled"]
        assert registry.statistics() == registry.statistics().__class__(0, 0, 0)


async def test_the_process_wide_limits_refuse_more_tasks(autojump_clock: Any) -> None:
    async with serving(options=TaskOptions(max_running=1)) as (client, _, _):
        await client.create("slow_compute", {"seconds": 5})
        error = await client.fails(
            "tools/call", {"name": "slow_compute", "arguments": {"seconds": 5}}
        )
        assert error.code == -32603
        assert "per process" in error.message
        await trio.sleep(6)
        await client.create("slow_compute", {"seconds": 5})


# --- one Task actor for both eras -----------------------------------------------------------


async def test_both_eras_run_their_tasks_in_the_one_task_actor(autojump_clock: Any) -> None:
    actors: list[tuple[str, str]] = []
    server = Server("eras")

    @server.tool(task_support="optional")
    async def where(ctx: Context) -> str:
        coro = trio.lowlevel.current_task().coro
        actors.append((ctx.protocol_version, coro.cr_code.co_qualname))  # type: ignore[union-attr]
        return "here"

    async with trio.open_nursery() as nursery:
        client = Client(server, TaskRegistry(nursery))
        created = await client.create("where")
        await trio.testing.wait_all_tasks_blocked()
        assert (await client.get(created["taskId"]))["status"] == "completed"
        async with open_session(server) as h:
            await h.initialize("2025-11-25")
            result = await h.request("tools/call", {"name": "where", "task": {}})
            assert result["task"]["status"] == "working"
            await trio.testing.wait_all_tasks_blocked()
        nursery.cancel_scope.cancel()
    assert actors == [(MODERN, "TaskRunner._run_task"), ("2025-11-25", "TaskRunner._run_task")]
