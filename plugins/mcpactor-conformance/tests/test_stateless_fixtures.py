"""The 2026-07-28 fixtures and the tasks extension's, checked by value.

Each request is served as the runtime serves a stateless one (``StatelessHost``, with
the process's ``TaskRegistry`` for the tasks extension), built the way the 0.2 suite
builds it: the envelope in ``params._meta``, retries with ``inputResponses`` and the
echoed ``requestState``. The suite only looks at shapes; these tests check keys, texts,
the refused tampered state, the capabilities asked for and the tasks' outcomes. Inside
the mcpactor repository every answer is also checked against the 2026-07-28 schema.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, Final

import jsonschema
import orjson
import pytest
import trio
import trio.testing
from mcpactor_conformance import server

from mcpactor.protocol import JSONObject, Request
from mcpactor.protocol._sealing import KeyRing, SealingKey, StateSealer
from mcpactor.runtime._stateless import StatelessHost, StatelessOptions
from mcpactor.runtime.tasks import TaskRegistry

check: Callable[[Any, str, str], None] | None
try:
    from tests.spec_schema import RESULT_TYPES, SPEC_DIR, check
except ImportError:  # the plugin tested on its own, outside the mcpactor repository
    check = None

REVISION: Final = "2026-07-28"
# The tasks extension's results, by method (its own schema, kept beside the revision's).
_TASK_RESULTS: Final = {
    "tasks/get": "GetTaskResult",
    "tasks/update": "UpdateTaskResult",
    "tasks/cancel": "CancelTaskResult",
}
TASKS: Final = "io.modelcontextprotocol/tasks"
#: what the suite's stateless client declares
EVERYTHING: Final = {"sampling": {}, "elicitation": {}, "roots": {"listChanged": True}}
WITH_TASKS: Final = {**EVERYTHING, "extensions": {TASKS: {}}}
# Long enough for every legitimate wait (the jobs sleep half a second); a hang fails.
GUARD: Final = 30.0


def _ext_check(value: Any, definition: str) -> None:
    document = orjson.loads((SPEC_DIR / "ext-tasks" / "schema.json").read_bytes())
    schema = {**document, "$ref": f"#/$defs/{definition}"}
    errors = list(jsonschema.validators.validator_for(schema)(schema).iter_errors(value))
    assert not errors, f"not a valid {definition}: {[e.message for e in errors[:5]]}"


def check_message(message: JSONObject, method: str | None) -> None:
    """Check what the server sent against the 2026-07-28 schema (and the extension's)."""
    if check is None:
        return
    if "method" in message:
        check(message, REVISION, "JSONRPCNotification")
    elif "error" in message:
        check(message, REVISION, "JSONRPCErrorResponse")
    else:
        check(message, REVISION, "JSONRPCResultResponse")
        result = message["result"]
        if result.get("resultType") == "input_required":
            check(result, REVISION, "InputRequiredResult")
        elif result.get("resultType") == "task":
            _ext_check(result, "CreateTaskResult")
        elif method in _TASK_RESULTS:
            _ext_check(result, _TASK_RESULTS[method])
        elif method in RESULT_TYPES:
            check(result, REVISION, RESULT_TYPES[method])


def accept(content: JSONObject) -> JSONObject:
    """The suite's accepted elicitation answer."""
    return {"action": "accept", "content": content}


SAMPLED: Final = {
    "role": "assistant",
    "content": {"type": "text", "text": "The capital of France is Paris."},
    "model": "test-model",
    "stopReason": "endTurn",
}
ROOTS: Final = {"roots": [{"uri": "file:///test/root", "name": "Test Root"}]}


class Client:
    """Plays the suite's stateless client against one StatelessHost."""

    def __init__(self, host: StatelessHost) -> None:
        self.host = host
        self.ids = itertools.count(1)
        #: notifications sent while requests ran, in order
        self.notifications: list[JSONObject] = []

    async def _emit(self, message: JSONObject) -> None:
        check_message(message, None)
        self.notifications.append(message)

    async def answer(
        self,
        method: str,
        params: JSONObject | None = None,
        *,
        caps: JSONObject | None = None,
        meta: JSONObject | None = None,
    ) -> JSONObject:
        """The whole JSON-RPC answer (result or error) to one request."""
        body = dict(params or {})
        body["_meta"] = {
            "io.modelcontextprotocol/protocolVersion": REVISION,
            "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1.0"},
            "io.modelcontextprotocol/clientCapabilities": EVERYTHING if caps is None else caps,
            **(meta or {}),
        }
        request_id = next(self.ids)
        with trio.fail_after(GUARD):
            answer = await self.host.serve(Request(request_id, method, body), self._emit)
        assert answer["id"] == request_id
        check_message(answer, method)
        return answer

    async def result(self, method: str, params: JSONObject | None = None, **kw: Any) -> Any:
        """The result of a request that must succeed."""
        answer = await self.answer(method, params, **kw)
        assert "result" in answer, answer
        return answer["result"]

    async def call(self, name: str, arguments: JSONObject | None = None, **kw: Any) -> Any:
        """The result of ``tools/call``; ``inputResponses``/``requestState`` via ``retry``."""
        retry = kw.pop("retry", {})
        return await self.result(
            "tools/call", {"name": name, "arguments": arguments or {}, **retry}, **kw
        )


def retry_of(asked: JSONObject, answers: JSONObject) -> JSONObject:
    """What a retry adds: the answers by key and the state echoed back."""
    added: JSONObject = {"inputResponses": answers}
    if "requestState" in asked:
        added["requestState"] = asked["requestState"]
    return added


def text(result: JSONObject) -> str:
    """The first text of a complete tool result."""
    assert result["resultType"] == "complete", result
    value = result["content"][0]["text"]
    assert isinstance(value, str)
    return value


@asynccontextmanager
async def connect(*, with_tasks: bool = False) -> AsyncIterator[Client]:
    """A client of a fresh host of the conformance server (one sealing key, no memory)."""
    sealer = StateSealer(KeyRing.of(SealingKey.generate("test")))
    options = StatelessOptions(sealer=sealer)
    async with trio.open_nursery() as nursery:
        tasks = TaskRegistry(nursery) if with_tasks else None
        host = StatelessHost(server, options=options, tasks=tasks)
        yield Client(host)
        nursery.cancel_scope.cancel()


# --- listing and the diagnostic tools ---------------------------------------------------


async def test_tools_are_listed_by_name_with_the_mirrored_region() -> None:
    async with connect() as client:
        listed = await client.result("tools/list")
    names = [tool["name"] for tool in listed["tools"]]
    assert names == sorted(names)
    assert {"test_missing_capability", "test_x_mcp_header", "greet", "slow_compute"} <= set(names)
    [header_tool] = [tool for tool in listed["tools"] if tool["name"] == "test_x_mcp_header"]
    assert header_tool["inputSchema"]["properties"]["region"]["x-mcp-header"] == "Region"
    assert (listed["ttlMs"], listed["cacheScope"]) == (0, "private")


async def test_missing_capability_names_sampling_for_a_client_without_it() -> None:
    async with connect() as client:
        refused = await client.answer(
            "tools/call", {"name": "test_missing_capability", "arguments": {}}, caps={}
        )
        asked = await client.call("test_missing_capability")
    assert refused["error"]["code"] == -32021
    assert refused["error"]["data"]["requiredCapabilities"] == {"sampling": {}}
    assert asked["resultType"] == "input_required"
    [request] = asked["inputRequests"].values()
    assert request["method"] == "sampling/createMessage"


async def test_the_streaming_elicitation_asks_in_its_result() -> None:
    async with connect() as client:
        asked = await client.call("test_streaming_elicitation", caps={"elicitation": {}})
    assert asked["resultType"] == "input_required"
    [request] = asked["inputRequests"].values()
    assert request["method"] == "elicitation/create"
    assert client.notifications == []


async def test_the_logging_tool_logs_only_at_a_level_the_request_names() -> None:
    async with connect() as client:
        assert (
            text(await client.call("test_logging_tool")) == "Logged three messages at level info"
        )
        assert client.notifications == []
        await client.call("test_logging_tool", meta={"io.modelcontextprotocol/logLevel": "info"})
    assert [n["params"]["data"] for n in client.notifications] == [
        "Logging tool started",
        "Logging tool working",
        "Logging tool done",
    ]


async def test_the_triggers_add_and_remove_a_tool_and_a_prompt() -> None:
    async def names(client: Client, method: str, key: str) -> set[str]:
        return {entry["name"] for entry in (await client.result(method))[key]}

    async with connect() as client:
        assert "test_dynamic_tool" not in await names(client, "tools/list", "tools")
        assert text(await client.call("test_trigger_tool_change")) == "added test_dynamic_tool"
        assert "test_dynamic_tool" in await names(client, "tools/list", "tools")
        assert text(await client.call("test_dynamic_tool")) == "This tool was added at run time."
        assert text(await client.call("test_trigger_tool_change")) == "removed test_dynamic_tool"
        assert "test_dynamic_tool" not in await names(client, "tools/list", "tools")
        assert text(await client.call("test_trigger_prompt_change")) == "added test_dynamic_prompt"
        assert "test_dynamic_prompt" in await names(client, "prompts/list", "prompts")
        assert text(await client.call("test_trigger_prompt_change")).startswith("removed")
        assert "test_dynamic_prompt" not in await names(client, "prompts/list", "prompts")


async def test_the_header_tool_echoes_its_region() -> None:
    async with connect() as client:
        assert text(await client.call("test_x_mcp_header", {"region": "eu-west"})) == (
            "Region: eu-west"
        )


# --- input_required ------------------------------------------------------------------------


async def test_elicitation_asks_under_user_name_and_greets_on_the_retry() -> None:
    async with connect() as client:
        asked = await client.call("test_input_required_result_elicitation")
        assert asked["resultType"] == "input_required"
        assert list(asked["inputRequests"]) == ["user_name"]
        question = asked["inputRequests"]["user_name"]
        assert question["method"] == "elicitation/create"
        assert question["params"]["message"] == "What is your name?"
        assert question["params"]["requestedSchema"]["required"] == ["name"]
        done = await client.call(
            "test_input_required_result_elicitation",
            retry=retry_of(asked, {"user_name": accept({"name": "Alice"})}),
        )
        assert text(done) == "Hello, Alice!"
        # Keys nobody asked for are ignored, and no state is needed for this one.
        extra = await client.call(
            "test_input_required_result_elicitation",
            retry={
                "inputResponses": {
                    "user_name": accept({"name": "Bob"}),
                    "unknown_extra_key": accept({"foo": "bar"}),
                }
            },
        )
        assert text(extra) == "Hello, Bob!"
        # An answer under another key, or not an answer at all, is asked for again.
        wrong = await client.call(
            "test_input_required_result_elicitation",
            retry={"inputResponses": {"wrong_key": accept({"data": "wrong"})}},
        )
        assert list(wrong["inputRequests"]) == ["user_name"]
        malformed = await client.answer(
            "tools/call",
            {
                "name": "test_input_required_result_elicitation",
                "arguments": {},
                "inputResponses": {"user_name": 12345},
            },
        )
    assert malformed.get("result", {}).get("resultType") != "complete"


async def test_sampling_and_roots_come_back_in_the_text() -> None:
    async with connect() as client:
        asked = await client.call("test_input_required_result_sampling")
        [(key, question)] = asked["inputRequests"].items()
        assert question["params"]["messages"][0]["content"]["text"] == (
            "What is the capital of France?"
        )
        assert question["params"]["maxTokens"] == 100
        done = await client.call(
            "test_input_required_result_sampling", retry=retry_of(asked, {key: SAMPLED})
        )
        assert text(done) == "LLM response: The capital of France is Paris."
        asked = await client.call("test_input_required_result_list_roots")
        [(key, question)] = asked["inputRequests"].items()
        assert question == {"method": "roots/list", "params": {}}
        done = await client.call(
            "test_input_required_result_list_roots", retry=retry_of(asked, {key: ROOTS})
        )
    assert text(done) == "Client roots: file:///test/root"


async def test_request_state_comes_back_checked_and_a_tampered_one_is_refused() -> None:
    async with connect() as client:
        asked = await client.call("test_input_required_result_request_state")
        assert list(asked["inputRequests"]) == ["confirm"]
        assert isinstance(asked["requestState"], str)
        done = await client.call(
            "test_input_required_result_request_state",
            retry=retry_of(asked, {"confirm": accept({"ok": True})}),
        )
        assert text(done) == "state-ok: confirmed=true"

        asked = await client.call("test_input_required_result_tampered_state")
        [key] = asked["inputRequests"]
        tampered = await client.answer(
            "tools/call",
            {
                "name": "test_input_required_result_tampered_state",
                "arguments": {},
                "inputResponses": {key: accept({"ok": True})},
                "requestState": asked["requestState"] + "-TAMPERED",
            },
        )
        honest = await client.call(
            "test_input_required_result_tampered_state",
            retry=retry_of(asked, {key: accept({"ok": True})}),
        )
    assert tampered["error"]["code"] == -32602
    assert text(honest) == "Confirmed: action=accept"


async def test_multiple_inputs_are_asked_in_one_round() -> None:
    async with connect() as client:
        asked = await client.call("test_input_required_result_multiple_inputs")
        methods = {key: q["method"] for key, q in asked["inputRequests"].items()}
        assert methods == {
            "user_name": "elicitation/create",
            "greeting": "sampling/createMessage",
            "client_roots": "roots/list",
        }
        answers = {
            "user_name": accept({"name": "Alice"}),
            "greeting": {**SAMPLED, "content": {"type": "text", "text": "Hello there!"}},
            "client_roots": ROOTS,
        }
        done = await client.call(
            "test_input_required_result_multiple_inputs", retry=retry_of(asked, answers)
        )
    assert text(done) == "name=Alice, greeting=Hello there!, roots=1"


async def test_multi_round_asks_one_question_a_round_with_a_new_state_each() -> None:
    async with connect() as client:
        first = await client.call("test_input_required_result_multi_round")
        [(key1, q1)] = first["inputRequests"].items()
        assert q1["params"]["message"] == "Step 1: What is your name?"
        second = await client.call(
            "test_input_required_result_multi_round",
            retry=retry_of(first, {key1: accept({"name": "Alice"})}),
        )
        [(key2, q2)] = second["inputRequests"].items()
        assert q2["params"]["message"] == "Step 2: What is your favorite color?"
        assert second["requestState"] != first["requestState"]
        done = await client.call(
            "test_input_required_result_multi_round",
            retry=retry_of(second, {key2: accept({"color": "blue"})}),
        )
    assert text(done) == 'name={"name": "Alice"}, color={"color": "blue"}'


@pytest.mark.parametrize(
    ("caps", "first"),
    [
        ({"sampling": {}}, "sampling/createMessage"),
        ({"elicitation": {}}, "elicitation/create"),
        ({"roots": {}}, "roots/list"),
    ],
)
async def test_capabilities_asks_only_what_the_client_declared(
    caps: JSONObject, first: str
) -> None:
    async with connect() as client:
        asked = await client.call("test_input_required_result_capabilities", caps=caps)
        nothing = await client.call("test_input_required_result_capabilities", caps={})
    assert [q["method"] for q in asked["inputRequests"].values()] == [first]
    assert text(nothing) == "the client declared nothing to ask"


async def test_the_prompt_asks_for_its_context_first() -> None:
    async with connect() as client:
        asked = await client.result("prompts/get", {"name": "test_input_required_result_prompt"})
        [(key, question)] = asked["inputRequests"].items()
        assert question["params"]["message"] == "What context should the prompt use?"
        done = await client.result(
            "prompts/get",
            {
                "name": "test_input_required_result_prompt",
                **retry_of(asked, {key: accept({"context": "test context"})}),
            },
        )
    assert done["resultType"] == "complete"
    assert done["messages"][0]["content"]["text"] == "Use this context: test context"


# --- the tasks extension ----------------------------------------------------------------------


async def settled(client: Client, task_id: str, *, caps: JSONObject = WITH_TASKS) -> JSONObject:
    """``tasks/get`` until the task is in a terminal state."""
    with trio.fail_after(GUARD):
        while True:
            task: JSONObject = await client.result("tasks/get", {"taskId": task_id}, caps=caps)
            if task["status"] in ("completed", "failed", "cancelled"):
                return task
            await trio.sleep(0.05)  # polling, as a client of the extension does (virtual time)


async def parked(client: Client, task_id: str, keys: int) -> JSONObject:
    """``tasks/get`` until the task waits on at least ``keys`` questions."""
    with trio.fail_after(GUARD):
        while True:
            task: JSONObject = await client.result(
                "tasks/get", {"taskId": task_id}, caps=WITH_TASKS
            )
            if task["status"] == "input_required" and len(task.get("inputRequests", {})) >= keys:
                return task
            await trio.sleep(0.05)


async def test_greet_and_an_undeclaring_client_get_plain_results(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with connect(with_tasks=True) as client:
        greeted = await client.call("greet", {"name": "World"}, caps=WITH_TASKS)
        plain = await client.call("slow_compute", {"seconds": 0, "label": "x"}, caps=EVERYTHING)
        refused = await client.answer(
            "tools/call", {"name": "failing_job", "arguments": {}}, caps=EVERYTHING
        )
    assert text(greeted) == "Hello, World!"
    assert text(plain) == "Computed x after 0 s"
    assert refused["error"]["code"] == -32021
    assert refused["error"]["data"]["requiredCapabilities"] == {"extensions": {TASKS: {}}}


async def test_task_tools_end_completed_with_or_without_is_error_or_failed(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with connect(with_tasks=True) as client:
        created = await client.call(
            "slow_compute", {"seconds": 0.1, "label": "t"}, caps=WITH_TASKS
        )
        assert created["resultType"] == "task"
        done = await settled(client, created["taskId"])
        assert done["status"] == "completed"
        assert done["result"]["content"][0]["text"] == "Computed t after 0.1 s"

        failing = await client.call("failing_job", caps=WITH_TASKS)
        failed_tool = await settled(client, failing["taskId"])
        assert failed_tool["status"] == "completed"
        assert failed_tool["result"]["isError"] is True
        assert failed_tool["result"]["content"][0]["text"] == "The job failed on purpose"

        broken = await client.call("protocol_error_job", caps=WITH_TASKS)
        failed = await settled(client, broken["taskId"])
    assert failed["status"] == "failed"
    assert "result" not in failed
    assert failed["error"]["code"] == -32603
    assert failed["error"]["message"] == "The job hit an internal error on purpose"


async def test_a_cancelled_slow_compute_settles_cancelled(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with connect(with_tasks=True) as client:
        created = await client.call("slow_compute", {"seconds": 60}, caps=WITH_TASKS)
        ack = await client.result("tasks/cancel", {"taskId": created["taskId"]}, caps=WITH_TASKS)
        assert ack["resultType"] == "complete"
        done = await settled(client, created["taskId"])
    assert done["status"] == "cancelled"


async def test_confirm_delete_parks_until_tasks_update_answers(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with connect(with_tasks=True) as client:
        created = await client.call("confirm_delete", {"filename": "a.txt"}, caps=WITH_TASKS)
        waiting = await parked(client, created["taskId"], 1)
        [(key, question)] = waiting["inputRequests"].items()
        assert question["params"]["message"] == "Delete a.txt?"
        await client.result(
            "tasks/update",
            {"taskId": created["taskId"], "inputResponses": {key: accept({"confirm": True})}},
            caps=WITH_TASKS,
        )
        done = await settled(client, created["taskId"])
    assert done["result"]["content"][0]["text"] == "Deleted a.txt"


async def test_multi_input_waits_for_both_answers(autojump_clock: trio.testing.MockClock) -> None:
    async with connect(with_tasks=True) as client:
        created = await client.call("multi_input", caps=WITH_TASKS)
        task_id = created["taskId"]
        waiting = await parked(client, task_id, 2)
        first, second = waiting["inputRequests"]
        await client.result(
            "tasks/update",
            {"taskId": task_id, "inputResponses": {first: accept({"name": "one"})}},
            caps=WITH_TASKS,
        )
        still = await client.result("tasks/get", {"taskId": task_id}, caps=WITH_TASKS)
        assert still["status"] == "input_required"
        assert list(still["inputRequests"]) == [second]
        await client.result(
            "tasks/update",
            {"taskId": task_id, "inputResponses": {second: accept({"name": "two"})}},
            caps=WITH_TASKS,
        )
        done = await settled(client, task_id)
    assert done["status"] == "completed"
    # Which of the two questions got which answer depends on the order they were asked.
    said = done["result"]["content"][0]["text"]
    assert said in (
        'first={"name": "one"}, second={"name": "two"}',
        'first={"name": "two"}, second={"name": "one"}',
    )


async def test_tool_with_task_asks_first_and_becomes_a_task_on_the_retry(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with connect(with_tasks=True) as client:
        asked = await client.call("test_tool_with_task", caps=WITH_TASKS)
        assert asked["resultType"] == "input_required"
        assert "taskId" not in asked
        [key] = asked["inputRequests"]
        created = await client.call(
            "test_tool_with_task",
            caps=WITH_TASKS,
            retry=retry_of(asked, {key: accept({"name": "Alice"})}),
        )
        assert created["resultType"] == "task"
        assert "requestState" not in created
        done = await settled(client, created["taskId"])
    assert done["status"] == "completed"
    assert done["result"]["content"][0]["text"] == "Task finished for Alice"
