"""The sans-io half of tasks: status machine, wire form, tool-level gate, cursors."""

from __future__ import annotations

import itertools

import pytest

from mcpactor import LocalProtocolError, RequestError, Server
from mcpactor.protocol import REVISIONS
from mcpactor.server._tasks import (
    TERMINAL,
    TRANSITIONS,
    TaskMetadata,
    TaskState,
    decode_cursor,
    encode_cursor,
    failure_message,
    isoformat,
    requested_task,
    with_related_task,
)
from tests.spec_schema import check

from .conftest import ALL_REVISIONS, call, call_error

STATUSES = ("working", "input_required", "completed", "failed", "cancelled")
# The lifecycle of the spec, written out pair by pair rather than derived from the table.
ALLOWED = {
    ("working", "input_required"),
    ("working", "completed"),
    ("working", "failed"),
    ("working", "cancelled"),
    ("input_required", "working"),
    ("input_required", "completed"),
    ("input_required", "failed"),
    ("input_required", "cancelled"),
}


def state_in(status: str) -> TaskState:
    state = TaskState(task_id="t1", created_at=100.0, ttl_ms=60_000, poll_interval_ms=500)
    path = {"working": [], "input_required": ["input_required"]}.get(status, [status])
    for step in path:
        state.move(step, None, 100.0)  # type: ignore[arg-type]
    assert state.status == status
    return state


@pytest.mark.parametrize(("source", "target"), list(itertools.product(STATUSES, STATUSES)))
def test_the_status_machine_allows_exactly_the_spec_lifecycle(source: str, target: str) -> None:
    state = state_in(source)
    if (source, target) in ALLOWED:
        state.move(target, "why", 101.5)  # type: ignore[arg-type]
        assert (state.status, state.status_message, state.updated_at) == (target, "why", 101.5)
    else:
        with pytest.raises(LocalProtocolError, match=f"cannot go from '{source}' to '{target}'"):
            state.move(target, "why", 101.5)  # type: ignore[arg-type]
        assert state.status == source


def test_terminal_statuses_are_exactly_those_with_no_way_out() -> None:
    assert {s for s, targets in TRANSITIONS.items() if not targets} == TERMINAL
    assert sorted(TERMINAL) == ["cancelled", "completed", "failed"]
    assert state_in("failed").terminal
    assert not state_in("input_required").terminal


def test_a_tasks_wire_form_is_a_valid_task() -> None:
    state = TaskState(task_id="abc", created_at=10.0, ttl_ms=None)
    wire = state.wire(lambda t: isoformat(1_764_066_600 + t))
    assert wire == {
        "taskId": "abc",
        "status": "working",
        "createdAt": "2025-11-25T10:30:10.000Z",
        "lastUpdatedAt": "2025-11-25T10:30:10.000Z",
        "ttl": None,
    }
    check(wire, "2025-11-25", "Task")
    state = state_in("completed")
    wire = state.wire(isoformat)
    assert wire["pollInterval"] == 500
    assert wire["ttl"] == 60_000
    check(wire, "2025-11-25", "GetTaskResult")
    assert state.expires_at == 160.0
    assert TaskState(task_id="x", created_at=1.0, ttl_ms=None).expires_at is None


def test_isoformat_is_utc_with_milliseconds() -> None:
    assert isoformat(0) == "1970-01-01T00:00:00.000Z"
    assert isoformat(1.2345) == "1970-01-01T00:00:01.234Z"


SUPPORTS = ("forbidden", "optional", "required")
LATEST = REVISIONS["2025-11-25"]


@pytest.mark.parametrize("support", SUPPORTS)
@pytest.mark.parametrize("with_task", [False, True])
def test_the_tool_level_gate(support: str, with_task: bool) -> None:
    params = {"name": "t", "task": {"ttl": 5}} if with_task else {"name": "t"}
    expect_error = (support == "required" and not with_task) or (
        support == "forbidden" and with_task
    )
    if expect_error:
        with pytest.raises(RequestError) as info:
            requested_task(params, tool="t", support=support, revision=LATEST, offered=True)  # type: ignore[arg-type]
        assert info.value.code == -32601
        assert info.value.data == {"tool": "t", "taskSupport": support}
        return
    task = requested_task(params, tool="t", support=support, revision=LATEST, offered=True)  # type: ignore[arg-type]
    assert task == (TaskMetadata(ttl_ms=5) if with_task else None)


@pytest.mark.parametrize("revision", ALL_REVISIONS)
@pytest.mark.parametrize("offered", [False, True])
def test_without_the_capability_task_metadata_is_ignored(revision: str, offered: bool) -> None:
    if REVISIONS[revision].tasks and offered:
        return  # the gate applies; covered above
    for support in SUPPORTS:
        for params in ({"name": "t"}, {"name": "t", "task": {"ttl": 5}}, {"task": "junk"}):
            assert (
                requested_task(
                    params,
                    tool="t",
                    support=support,  # type: ignore[arg-type]
                    revision=REVISIONS[revision],
                    offered=offered,
                )
                is None
            )


@pytest.mark.parametrize("task", [[], "x", {"ttl": -1}, {"ttl": 2.5}, {"ttl": True}])
def test_a_malformed_task_is_invalid_params(task: object) -> None:
    with pytest.raises(RequestError) as info:
        requested_task(
            {"name": "t", "task": task},
            tool="t",
            support="optional",
            revision=LATEST,
            offered=True,
        )
    assert info.value.code == -32602


def test_cursors_are_opaque_round_trips_and_anything_else_is_refused() -> None:
    for after in (0, 1, 99_999):
        assert decode_cursor(encode_cursor(after)) == after
    for cursor in (None, 3, "", "!!", "WyJ0b29scyIsMV0=", encode_cursor(1)[:-2], "W10="):
        with pytest.raises(RequestError) as info:
            decode_cursor(cursor)
        assert info.value.code == -32602


def test_related_task_meta_is_added_without_touching_the_original() -> None:
    original = {"content": [], "_meta": {"other": 1}}
    tied = with_related_task(original, "t9")
    assert tied["_meta"] == {"other": 1, "io.modelcontextprotocol/related-task": {"taskId": "t9"}}
    assert original == {"content": [], "_meta": {"other": 1}}
    assert with_related_task({}, "t9") == {
        "_meta": {"io.modelcontextprotocol/related-task": {"taskId": "t9"}}
    }


def test_failure_message_is_the_first_text_of_an_error_result() -> None:
    text = {"type": "text", "text": "boom"}
    assert failure_message({"content": [{"type": "image"}, text], "isError": True}) == "boom"
    assert failure_message({"content": [], "isError": True}) == "the tool reported an error"


# --- through the Server ---------------------------------------------------------------


def jobs() -> Server:
    server = Server("jobs")

    @server.tool(task_support="optional")
    async def maybe() -> str:
        """Optionally a task."""
        return "maybe"

    @server.tool(task_support="required")
    async def always() -> str:
        """Always a task."""
        return "always"

    @server.tool()
    async def never() -> str:
        """Never a task."""
        return "never"

    return server


async def test_execution_is_listed_only_where_the_revision_has_it(any_revision: str) -> None:
    server = jobs()
    tools = {
        t["name"]: t for t in (await call(server, "tools/list", revision=any_revision))["tools"]
    }
    if any_revision == "2025-11-25":
        assert tools["maybe"]["execution"] == {"taskSupport": "optional"}
        assert tools["always"]["execution"] == {"taskSupport": "required"}
    else:
        assert "execution" not in tools["maybe"]
    assert "execution" not in tools["never"]
    assert ("tasks" in server.capabilities(REVISIONS[any_revision])) is (
        any_revision == "2025-11-25"
    )


async def test_the_tasks_capability_follows_the_registry() -> None:
    server = Server("grows")

    @server.tool()
    async def plain() -> str:
        """Not a task."""
        return "plain"

    assert "tasks" not in server.capabilities(LATEST)
    for method, params in (("tasks/get", {"taskId": "x"}), ("tasks/list", None)):
        error = await call_error(server, method, params)
        assert error.code == -32601

    @server.tool(task_support="optional")
    async def job() -> str:
        """A task."""
        return "job"

    assert server.capabilities(LATEST)["tasks"] == {
        "list": {},
        "cancel": {},
        "requests": {"tools": {"call": {}}},
    }
    server.remove_tool("job")
    assert "tasks" not in server.capabilities(LATEST)


async def test_the_gate_answers_before_any_task_is_made() -> None:
    server = jobs()
    required = await call_error(server, "tools/call", {"name": "always"})
    assert required.code == -32601
    forbidden = await call_error(server, "tools/call", {"name": "never", "task": {}})
    assert forbidden.code == -32601
    # An optional tool called plainly runs as usual.
    result = await call(server, "tools/call", {"name": "maybe"})
    assert result["content"] == [{"type": "text", "text": "maybe"}]
