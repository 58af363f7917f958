"""The tasks extension's shapes, checked against its schema and the revision's."""

from __future__ import annotations

import functools
import hashlib
import itertools
import re
from typing import Any

import jsonschema.validators
import orjson
import pytest

from mcpactor._exceptions import INVALID_PARAMS, LocalProtocolError, RemoteProtocolError
from mcpactor.protocol import REVISIONS, Negotiated
from mcpactor.protocol._bounded import CLIP_LENGTH
from mcpactor.protocol._envelope import (
    MISSING_CLIENT_CAPABILITY,
    SUBSCRIPTION_ID,
    EnvelopeError,
)
from mcpactor.protocol._ext_tasks import (
    AUGMENTABLE,
    EXTENSION,
    INITIAL,
    LISTEN_FILTER_KEY,
    MAX_LISTEN_TASK_IDS,
    MAX_TASK_ID_LENGTH,
    METHODS,
    NAMED_BY,
    REMOVED_METHODS,
    REQUIRED_CAPABILITIES,
    STATUS_NOTIFICATION,
    TASK,
    TERMINAL,
    TRANSITIONS,
    Snapshot,
    TaskStatus,
    TaskSupport,
    acknowledgement,
    apply_update,
    check_transition,
    client_declares,
    create_task_result,
    detailed_task,
    get_task_result,
    honoured_task_ids,
    read_listen_task_ids,
    read_task_id,
    read_update,
    require_declared,
    runs_as_task,
    server_capability,
    task_not_found,
    task_notification_params,
)
from mcpactor.protocol._jsonrpc import error_response
from mcpactor.protocol._mrtr import MAX_INPUT_KEY_LENGTH, MAX_INPUT_REQUESTS, elicitation_request
from tests.spec_schema import SPEC_DIR, check

MODERN = "2026-07-28"
EXT_DIR = SPEC_DIR / "ext-tasks"
STATUSES: tuple[TaskStatus, ...] = (
    "working",
    "input_required",
    "completed",
    "failed",
    "cancelled",
)
TASK_ID = "786512e2-9e0d-44bd-8f29-789f320fe840"
ASK_NAME = elicitation_request(
    "Please enter your name.",
    {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
)
TOOL_RESULT = {"content": [{"type": "text", "text": "Hello, Luca!"}], "isError": False}
RPC_ERROR = {"code": -32603, "message": "API rate limit exceeded"}


@functools.cache
def _ext_document() -> dict[str, Any]:
    return orjson.loads((EXT_DIR / "schema.json").read_bytes())  # type: ignore[no-any-return]


def ext_check(value: Any, definition: str) -> None:
    """Raise AssertionError naming the violations of the extension's ``definition``."""
    document = _ext_document()
    assert definition in document["$defs"], definition
    schema = {**document, "$ref": f"#/$defs/{definition}"}
    validator = jsonschema.validators.validator_for(schema)(schema)
    errors = list(validator.iter_errors(value))
    assert not errors, f"not a valid {definition}: {[e.message for e in errors[:5]]}\n{value!r}"


def ext_valid(value: Any, definition: str) -> bool:
    try:
        ext_check(value, definition)
    except AssertionError:
        return False
    return True


def negotiated(*, declares: bool = True, **more: Any) -> Negotiated:
    capabilities: dict[str, Any] = {"elicitation": {"form": {}}, **more}
    if declares:
        capabilities["extensions"] = {EXTENSION: {}}
    return Negotiated(REVISIONS[MODERN], capabilities)


def snapshot(status: TaskStatus = "working", **fields: Any) -> Snapshot:
    payloads: dict[str, dict[str, Any]] = {
        "input_required": {"input_requests": {"name": ASK_NAME}},
        "completed": {"result": TOOL_RESULT},
        "failed": {"error": RPC_ERROR},
    }
    payload = payloads.get(status, {})
    values: dict[str, Any] = {
        "task_id": TASK_ID,
        "status": status,
        "created_at": "2025-11-25T10:30:00Z",
        "last_updated_at": "2025-11-25T10:50:00Z",
        "ttl_ms": 3_600_000,
        "poll_interval_ms": 5000,
        **payload,
        **fields,
    }
    return Snapshot(**values)


def request(method: str, params: dict[str, Any], request_id: int = 3) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


# --- the copied schema ---------------------------------------------------------------


def test_the_schema_is_the_recorded_upstream_file() -> None:
    readme = (EXT_DIR / "README.md").read_text()
    recorded = re.search(
        r"`schema\.json` \| `schema/draft/schema\.json` \| `([0-9a-f]{64})`", readme
    )
    assert recorded is not None
    digest = hashlib.sha256((EXT_DIR / "schema.json").read_bytes()).hexdigest()
    assert digest == recorded.group(1)


def test_the_schema_tells_shapes_apart() -> None:
    # The validators used below must be able to fail: a CreateTaskResult is not a
    # GetTaskResult, and a completed task without its result is no DetailedTask.
    created = create_task_result(snapshot())
    assert not ext_valid(created, "GetTaskResult")
    incomplete = {k: v for k, v in detailed_task(snapshot("completed")).items() if k != "result"}
    assert not ext_valid(incomplete, "CompletedTask")


# --- declaring the extension ---------------------------------------------------------


def test_the_server_lists_the_extension_in_its_capabilities() -> None:
    capabilities = {"extensions": server_capability()}
    check(capabilities, MODERN, "ServerCapabilities")
    ext_check(capabilities["extensions"][EXTENSION], "TasksExtensionCapability")
    assert "tasks" not in capabilities  # the session era's slot is not used


@pytest.mark.parametrize(
    ("extensions", "declared"),
    [
        ({EXTENSION: {}}, True),
        ({}, False),
        ({"io.example/other": {}}, False),
        ({EXTENSION: None}, False),
        ({EXTENSION: False}, False),
        (None, False),
    ],
)
def test_a_client_declares_the_extension_per_request(extensions: Any, declared: bool) -> None:
    capabilities = {} if extensions is None else {"extensions": extensions}
    assert client_declares(Negotiated(REVISIONS[MODERN], capabilities)) is declared


def test_the_request_envelope_example_of_the_spec_declares_it() -> None:
    meta: dict[str, Any] = {
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {EXTENSION: {}}}
    }
    check(meta["io.modelcontextprotocol/clientCapabilities"], MODERN, "ClientCapabilities")
    capabilities = meta["io.modelcontextprotocol/clientCapabilities"]
    assert client_declares(Negotiated(REVISIONS[MODERN], capabilities))


def missing_capability_response(exc: EnvelopeError) -> dict[str, Any]:
    return error_response(7, exc).to_json()


def test_an_undeclaring_request_is_refused_with_the_missing_capability_error() -> None:
    with pytest.raises(EnvelopeError) as caught:
        require_declared(negotiated(declares=False), request_id=7)
    exc = caught.value
    assert exc.code == MISSING_CLIENT_CAPABILITY == -32021
    assert exc.http_status == 400
    assert exc.data == {"requiredCapabilities": {"extensions": {EXTENSION: {}}}}
    assert exc.data["requiredCapabilities"] == REQUIRED_CAPABILITIES
    check(missing_capability_response(exc), MODERN, "MissingRequiredClientCapabilityError")
    require_declared(negotiated())  # a declaring request passes


# --- which requests run as tasks -----------------------------------------------------

DECISIONS: list[tuple[str, TaskSupport, bool, bool | None]] = [
    # method, the tool's task support, client declares, runs as a task (None: -32021)
    ("tools/call", "forbidden", True, False),
    ("tools/call", "forbidden", False, False),
    ("tools/call", "optional", True, True),
    ("tools/call", "optional", False, False),
    ("tools/call", "required", True, True),
    ("tools/call", "required", False, None),
    ("prompts/get", "required", True, False),
    ("resources/read", "optional", True, False),
]


@pytest.mark.parametrize(("method", "support", "declares", "expected"), DECISIONS)
def test_the_server_decides_which_requests_run_as_tasks(
    method: str, support: TaskSupport, declares: bool, expected: bool | None
) -> None:
    served = negotiated(declares=declares)
    if expected is None:
        with pytest.raises(EnvelopeError) as caught:
            runs_as_task(method, support, served, request_id=7)
        assert caught.value.code == MISSING_CLIENT_CAPABILITY
        assert caught.value.data == {"requiredCapabilities": REQUIRED_CAPABILITIES}
        check(
            missing_capability_response(caught.value),
            MODERN,
            "MissingRequiredClientCapabilityError",
        )
    else:
        assert runs_as_task(method, support, served, request_id=7) is expected


def test_only_tools_call_is_augmented() -> None:
    assert frozenset({"tools/call"}) == AUGMENTABLE


# --- the status table ----------------------------------------------------------------

# The spec's state diagram, edge by edge: [*] --> working; working --> input_required;
# working --> terminal; input_required --> working; input_required --> terminal.
SPEC_EDGES = {
    ("working", "input_required"),
    ("input_required", "working"),
    *((source, end) for source in ("working", "input_required") for end in TERMINAL),
}


def test_the_status_table_is_the_spec_diagram() -> None:
    assert INITIAL == "working"
    assert frozenset({"completed", "failed", "cancelled"}) == TERMINAL
    assert set(TRANSITIONS) == set(STATUSES)
    edges = {(old, new) for old, targets in TRANSITIONS.items() for new in targets}
    assert edges == SPEC_EDGES
    for status in TERMINAL:
        assert TRANSITIONS[status] == frozenset()


@pytest.mark.parametrize(("old", "new"), list(itertools.product(STATUSES, STATUSES)))
def test_check_transition_follows_the_table(old: TaskStatus, new: TaskStatus) -> None:
    if (old, new) in SPEC_EDGES:
        check_transition(old, new)
    else:
        with pytest.raises(LocalProtocolError, match="cannot go from"):
            check_transition(old, new)


def test_every_status_is_one_the_schema_knows() -> None:
    for status in STATUSES:
        ext_check(status, "TaskStatus")
    assert not ext_valid("submitted", "TaskStatus")


# --- CreateTaskResult ----------------------------------------------------------------


@pytest.mark.parametrize("status", STATUSES)
def test_create_task_result_is_flat_and_valid(status: TaskStatus) -> None:
    result = create_task_result(
        snapshot(status, status_message="The operation is now in progress.")
    )
    ext_check(result, "CreateTaskResult")
    check(result, MODERN, "Result")
    assert result["resultType"] == TASK == "task"
    assert result["taskId"] == TASK_ID
    assert result["status"] == status
    assert result["ttlMs"] == 3_600_000
    assert result["pollIntervalMs"] == 5000
    assert result["statusMessage"] == "The operation is now in progress."
    # What the conformance suite looks for: no wrapper, no payload, no v1 names.
    for absent in (
        "task",
        "result",
        "error",
        "inputRequests",
        "requestState",
        "ttl",
        "pollInterval",
    ):
        assert absent not in result


def test_create_task_result_may_have_unlimited_ttl_and_no_poll_interval() -> None:
    result = create_task_result(snapshot(ttl_ms=None, poll_interval_ms=None))
    ext_check(result, "CreateTaskResult")
    assert result["ttlMs"] is None
    assert "pollIntervalMs" not in result


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "60000"])
@pytest.mark.parametrize("field", ["ttl_ms", "poll_interval_ms"])
def test_durations_are_positive_whole_milliseconds(field: str, bad: Any) -> None:
    with pytest.raises(LocalProtocolError, match=field):
        snapshot(**{field: bad})


# --- tasks/get -----------------------------------------------------------------------

VARIANTS = {
    "working": "WorkingTask",
    "input_required": "InputRequiredTask",
    "completed": "CompletedTask",
    "failed": "FailedTask",
    "cancelled": "CancelledTask",
}
PAYLOADS = {"input_required": "inputRequests", "completed": "result", "failed": "error"}


@pytest.mark.parametrize("status", STATUSES)
def test_get_task_result_inlines_what_the_status_carries(status: TaskStatus) -> None:
    # Every payload is given; only the status's own is sent.
    task = snapshot(status, result=TOOL_RESULT, error=RPC_ERROR, input_requests={"name": ASK_NAME})
    result = get_task_result(task)
    ext_check(result, "GetTaskResult")
    check(result, MODERN, "Result")
    assert result["resultType"] == "complete"
    detailed = {k: v for k, v in result.items() if k != "resultType"}
    ext_check(detailed, VARIANTS[status])
    ext_check(detailed, "DetailedTask")
    sent = {key for key in PAYLOADS.values() if key in result}
    assert sent == ({PAYLOADS[status]} if status in PAYLOADS else set())
    assert "requestState" not in result


def test_the_inlined_payloads_are_the_ones_given() -> None:
    assert get_task_result(snapshot("completed"))["result"] == TOOL_RESULT
    assert get_task_result(snapshot("failed"))["error"] == RPC_ERROR
    assert get_task_result(snapshot("input_required"))["inputRequests"] == {"name": ASK_NAME}


def test_a_tool_error_is_a_completed_task() -> None:
    failed_tool = {"content": [{"type": "text", "text": "invalid input"}], "isError": True}
    result = get_task_result(snapshot("completed", result=failed_tool))
    ext_check(result, "GetTaskResult")
    assert result["status"] == "completed"
    assert result["result"]["isError"] is True


@pytest.mark.parametrize(
    ("status", "fields", "match"),
    [
        ("completed", {"result": None}, "no result"),
        ("failed", {"error": None}, "JSON-RPC error"),
        ("failed", {"error": {"message": "no code"}}, "JSON-RPC error"),
        ("failed", {"error": {"code": "x", "message": "m"}}, "JSON-RPC error"),
        ("failed", {"error": {"code": -32603}}, "JSON-RPC error"),
        ("input_required", {"input_requests": None}, "no input requests"),
        ("input_required", {"input_requests": {}}, "no input requests"),
    ],
)
def test_a_status_without_its_payload_is_refused(
    status: TaskStatus, fields: dict[str, Any], match: str
) -> None:
    with pytest.raises(LocalProtocolError, match=match):
        get_task_result(snapshot(status, **fields))


def test_the_inlined_result_drops_the_related_task_meta() -> None:
    result: dict[str, Any] = {
        **TOOL_RESULT,
        "_meta": {"io.modelcontextprotocol/related-task": {"taskId": TASK_ID}, "k": 1},
    }
    inlined = get_task_result(snapshot("completed", result=result))["result"]
    assert inlined["_meta"] == {"k": 1}
    only_related = {**TOOL_RESULT, "_meta": {"io.modelcontextprotocol/related-task": {}}}
    assert "_meta" not in get_task_result(snapshot("completed", result=only_related))["result"]
    assert result["_meta"]["io.modelcontextprotocol/related-task"] == {"taskId": TASK_ID}


def test_the_spec_example_of_an_input_required_task_is_what_we_build() -> None:
    built = get_task_result(snapshot("input_required"))
    assert built == {
        "resultType": "complete",
        "taskId": TASK_ID,
        "status": "input_required",
        "createdAt": "2025-11-25T10:30:00Z",
        "lastUpdatedAt": "2025-11-25T10:50:00Z",
        "ttlMs": 3600000,
        "pollIntervalMs": 5000,
        "inputRequests": {
            "name": {
                "method": "elicitation/create",
                "params": {
                    "mode": "form",
                    "message": "Please enter your name.",
                    "requestedSchema": {
                        "type": "object",
                        "properties": {"name": {"type": "string"}},
                        "required": ["name"],
                    },
                },
            }
        },
    }


# --- tasks/update and tasks/cancel ---------------------------------------------------


def test_the_acknowledgement_is_empty_and_complete() -> None:
    ack = acknowledgement()
    ext_check(ack, "UpdateTaskResult")
    ext_check(ack, "CancelTaskResult")
    check(ack, MODERN, "Result")
    assert ack == {"resultType": "complete"}
    assert not ext_valid({"resultType": "task"}, "CancelTaskResult")


@pytest.mark.parametrize("method", ["tasks/get", "tasks/cancel"])
def test_a_task_request_is_read_for_its_id(method: str) -> None:
    message = request(method, {"taskId": TASK_ID})
    definition = {"tasks/get": "GetTaskRequest", "tasks/cancel": "CancelTaskRequest"}[method]
    ext_check(message, definition)
    assert read_task_id(message["params"], request_id=3) == TASK_ID


def test_an_update_is_read_for_its_id_and_answers() -> None:
    answers = {"name": {"action": "accept", "content": {"input": "Luca"}}}
    message = request("tasks/update", {"taskId": TASK_ID, "inputResponses": answers})
    ext_check(message, "UpdateTaskRequest")
    update = read_update(message["params"], request_id=3)
    assert update.task_id == TASK_ID
    assert update.responses == answers


def test_an_update_with_answers_nobody_asked_for_is_still_read() -> None:
    # The suite's probe: an unknown key with a non-result body must be acknowledged.
    update = read_update({"taskId": TASK_ID, "inputResponses": {"unknown-key": {"ignored": True}}})
    assert update.responses == {"unknown-key": {"ignored": True}}
    assert apply_update({"name": ASK_NAME}, update.responses).ignored == ("unknown-key",)


LONG = "x" * 100_000


@pytest.mark.parametrize(
    "params",
    [
        None,
        {},
        {"taskId": None},
        {"taskId": 12345},
        {"taskId": ""},
        {"taskId": ["a"]},
        {"taskId": "x" * (MAX_TASK_ID_LENGTH + 1)},
        {"taskId": LONG},
    ],
)
def test_a_malformed_task_id_is_refused(params: Any) -> None:
    with pytest.raises(EnvelopeError) as caught:
        read_task_id(params, request_id=9)
    assert caught.value.code == INVALID_PARAMS
    assert caught.value.http_status == 400
    assert len(str(caught.value)) < CLIP_LENGTH
    with pytest.raises(EnvelopeError):
        read_update(params, request_id=9)


def test_a_task_id_of_the_longest_length_is_read() -> None:
    longest = "t" * MAX_TASK_ID_LENGTH
    assert read_task_id({"taskId": longest}) == longest


@pytest.mark.parametrize(
    "responses",
    [
        None,
        "name",
        ["name"],
        {"name": "Luca"},
        {"name": None},
        {f"k{i}": {} for i in range(MAX_INPUT_REQUESTS + 1)},
        {"k" * (MAX_INPUT_KEY_LENGTH + 1): {}},
    ],
)
def test_malformed_input_responses_are_refused(responses: Any) -> None:
    params: dict[str, Any] = {"taskId": TASK_ID}
    if responses is not None:
        params["inputResponses"] = responses
    with pytest.raises(EnvelopeError) as caught:
        read_update(params, request_id=9)
    assert caught.value.code == INVALID_PARAMS
    assert len(str(caught.value)) < CLIP_LENGTH


def test_a_partial_update_keeps_the_task_waiting_for_the_rest() -> None:
    outstanding = {"first": ASK_NAME, "second": ASK_NAME}
    answer = {"action": "accept", "content": {"name": "partial-1"}}
    outcome = apply_update(outstanding, {"first": answer, "stale": answer})
    assert outcome.accepted == {"first": answer}
    assert outcome.ignored == ("stale",)
    assert outcome.remaining == {"second": ASK_NAME}
    assert outcome.status == "input_required"
    # The next tasks/get shows only the key still unanswered.
    parked = get_task_result(snapshot("input_required", input_requests=outcome.remaining))
    assert set(parked["inputRequests"]) == {"second"}
    ext_check(parked, "GetTaskResult")
    final = apply_update(outcome.remaining, {"second": answer, "first": answer})
    assert final.accepted == {"second": answer}
    assert final.ignored == ("first",)  # already answered: ignored
    assert final.remaining == {}
    assert final.status == "working"
    check_transition("input_required", final.status)


def test_an_update_with_no_answer_changes_nothing() -> None:
    outcome = apply_update({"name": ASK_NAME}, {})
    assert outcome.accepted == {}
    assert outcome.remaining == {"name": ASK_NAME}
    assert outcome.status == "input_required"


# --- errors --------------------------------------------------------------------------


def test_an_unknown_task_is_invalid_params() -> None:
    exc = task_not_found("tasks-conformance-nonexistent-12345", request_id=70)
    assert isinstance(exc, RemoteProtocolError)
    assert exc.code == INVALID_PARAMS == -32602
    assert exc.data == {"taskId": "tasks-conformance-nonexistent-12345"}
    response = error_response(70, exc).to_json()
    check(response, MODERN, "JSONRPCErrorResponse")
    check(response["error"], MODERN, "InvalidParamsError")
    assert response["error"]["message"].startswith("Failed to retrieve task: Task not found")


def test_an_unknown_task_error_stays_small_for_a_huge_id() -> None:
    exc = task_not_found(LONG)
    assert len(str(exc)) < CLIP_LENGTH
    assert len(exc.data["taskId"]) <= CLIP_LENGTH


def test_the_tasks_methods_are_named_by_their_task_id() -> None:
    assert METHODS == ("tasks/get", "tasks/update", "tasks/cancel")
    assert dict(NAMED_BY) == dict.fromkeys(METHODS, "taskId")
    assert set(REMOVED_METHODS) == {"tasks/result", "tasks/list"}
    assert not set(REMOVED_METHODS) & set(METHODS)


# --- notifications/tasks and the listen filter ---------------------------------------


@pytest.mark.parametrize("status", STATUSES)
def test_a_status_notification_is_what_tasks_get_would_answer(status: TaskStatus) -> None:
    task = snapshot(status)
    params = task_notification_params(task, subscription_id=12)
    message = {"jsonrpc": "2.0", "method": STATUS_NOTIFICATION, "params": params}
    ext_check(message, "TaskStatusNotification")
    ext_check(params, "TaskStatusNotificationParams")
    check(message, MODERN, "JSONRPCNotification")
    check(params, MODERN, "NotificationParams")
    assert STATUS_NOTIFICATION == "notifications/tasks"
    assert params["_meta"] == {SUBSCRIPTION_ID: 12}
    body = {k: v for k, v in params.items() if k != "_meta"}
    answer = {k: v for k, v in get_task_result(task).items() if k != "resultType"}
    assert body == answer


def test_a_listen_filter_names_task_ids() -> None:
    notifications = {LISTEN_FILTER_KEY: [TASK_ID, "other", TASK_ID], "toolsListChanged": True}
    ext_check(
        {LISTEN_FILTER_KEY: notifications[LISTEN_FILTER_KEY]}, "TaskSubscriptionNotifications"
    )
    check(notifications, MODERN, "SubscriptionFilter")
    assert read_listen_task_ids(notifications, negotiated(), request_id=12) == (TASK_ID, "other")
    assert read_listen_task_ids({"toolsListChanged": True}, negotiated(declares=False)) is None


def test_the_acknowledgement_names_the_task_ids_honoured() -> None:
    honoured = honoured_task_ids([TASK_ID, "unknown"], {TASK_ID}.__contains__)
    assert honoured == [TASK_ID]
    params = {"notifications": {LISTEN_FILTER_KEY: honoured}}
    check(params, MODERN, "SubscriptionsAcknowledgedNotificationParams")
    ext_check(params["notifications"], "TaskSubscriptionAcknowledgedNotifications")


def test_a_listen_filter_naming_tasks_needs_the_extension() -> None:
    with pytest.raises(EnvelopeError) as caught:
        read_listen_task_ids({LISTEN_FILTER_KEY: [TASK_ID]}, negotiated(declares=False))
    assert caught.value.code == MISSING_CLIENT_CAPABILITY
    assert caught.value.data == {"requiredCapabilities": REQUIRED_CAPABILITIES}


@pytest.mark.parametrize(
    "ids",
    [
        TASK_ID,
        {"id": TASK_ID},
        [TASK_ID, 5],
        [""],
        [LONG],
        [f"t{i}" for i in range(MAX_LISTEN_TASK_IDS + 1)],
    ],
)
def test_a_malformed_listen_filter_is_refused(ids: Any) -> None:
    with pytest.raises(EnvelopeError) as caught:
        read_listen_task_ids({LISTEN_FILTER_KEY: ids}, negotiated(), request_id=12)
    assert caught.value.code == INVALID_PARAMS
    assert len(str(caught.value)) < CLIP_LENGTH
