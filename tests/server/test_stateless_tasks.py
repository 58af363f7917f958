"""serve_stateless and the tasks extension's TaskHost: what it asks the host, and when."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from mcpactor import Server
from mcpactor.protocol import SERVER_INFO, JSONObject, Request, RequestId
from mcpactor.protocol._envelope import EnvelopeError, read_envelope
from mcpactor.protocol._ext_tasks import EXTENSION, Update, acknowledgement
from mcpactor.server import Context, TaskHost
from mcpactor.server._stateless import serve_stateless, tool_task_support

from .conftest import FakePeer

MODERN = "2026-07-28"
TASK: JSONObject = {
    "resultType": "task",
    "taskId": "t-1",
    "status": "working",
    "createdAt": "2026-07-28T00:00:00.000Z",
    "lastUpdatedAt": "2026-07-28T00:00:00.000Z",
    "ttlMs": 1000,
}


class FakeHost:
    """A TaskHost that records what it was asked and runs nothing."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.works: list[Callable[[Context], Awaitable[JSONObject]]] = []

    async def create(
        self,
        work: Callable[[Context], Awaitable[JSONObject]],
        ctx: Context,
        *,
        principal: str | None = None,
    ) -> JSONObject:
        self.calls.append(("create", ctx.request_id, principal))
        self.works.append(work)
        return dict(TASK)

    async def get(
        self, task_id: str, *, principal: str | None = None, request_id: RequestId | None = None
    ) -> JSONObject:
        self.calls.append(("get", task_id, principal, request_id))
        return {"resultType": "complete", **{k: v for k, v in TASK.items() if k != "resultType"}}

    async def update(
        self, update: Update, *, principal: str | None = None, request_id: RequestId | None = None
    ) -> JSONObject:
        self.calls.append(("update", update.task_id, dict(update.responses), principal))
        return acknowledgement()

    async def cancel(
        self, task_id: str, *, principal: str | None = None, request_id: RequestId | None = None
    ) -> JSONObject:
        self.calls.append(("cancel", task_id, principal, request_id))
        return acknowledgement()

    def known(self, task_id: str, *, principal: str | None = None) -> bool:
        return task_id == "t-1"


def make_server() -> Server:
    server = Server("jobs")

    @server.tool(task_support="optional")
    async def job(n: int) -> str:
        return f"job {n}"

    @server.tool
    async def plain() -> str:
        return "plain"

    return server


def context(method: str, params: JSONObject, *, declares: bool = True) -> Context:
    capabilities: JSONObject = {"extensions": {EXTENSION: {}}} if declares else {}
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    }
    envelope = read_envelope(Request(9, method, {**params, "_meta": meta}))
    return Context(peer=FakePeer(), request_id=9, negotiated=envelope, meta=meta)


async def serve(method: str, params: JSONObject, host: FakeHost, **kw: Any) -> JSONObject:
    declares = kw.pop("declares", True)
    server = kw.pop("server", None) or make_server()
    ctx = context(method, params, declares=declares)
    return await serve_stateless(server, method, params, ctx, tasks=host, **kw)


def test_the_fake_is_a_task_host() -> None:
    host: TaskHost = FakeHost()
    assert host.known("t-1")


def test_a_tools_task_support_is_read_from_the_catalog() -> None:
    server = make_server()
    assert tool_task_support(server, {"name": "job"}) == "optional"
    assert tool_task_support(server, {"name": "plain"}) == "forbidden"
    assert tool_task_support(server, {"name": "missing"}) == "forbidden"
    assert tool_task_support(server, None) == "forbidden"


async def test_a_task_call_asks_the_host_and_shapes_its_answer() -> None:
    host = FakeHost()
    result = await serve("tools/call", {"name": "job", "arguments": {"n": 2}}, host, principal="p")
    assert host.calls == [("create", 9, "p")]
    assert result["resultType"] == "task"
    assert result["_meta"][SERVER_INFO]["name"] == "jobs"
    # The work the host runs is the plain call, shaped as its answer would have been.
    [work] = host.works
    answered = await work(context("tools/call", {"name": "job", "arguments": {"n": 2}}))
    assert answered["content"] == [{"type": "text", "text": "job 2"}]
    assert answered["resultType"] == "complete"
    assert answered["_meta"][SERVER_INFO]["name"] == "jobs"


async def test_a_plain_tool_never_reaches_the_host() -> None:
    host = FakeHost()
    result = await serve("tools/call", {"name": "plain"}, host)
    assert host.calls == []
    assert result["resultType"] == "complete"


@pytest.mark.parametrize(
    ("method", "params", "call"),
    [
        ("tasks/get", {"taskId": "t-1"}, ("get", "t-1", "p", 9)),
        ("tasks/cancel", {"taskId": "t-1"}, ("cancel", "t-1", "p", 9)),
        (
            "tasks/update",
            {"taskId": "t-1", "inputResponses": {"k": {"action": "cancel"}}},
            ("update", "t-1", {"k": {"action": "cancel"}}, "p"),
        ),
    ],
)
async def test_the_task_methods_ask_the_host_for_the_principal(
    method: str, params: JSONObject, call: tuple[Any, ...]
) -> None:
    host = FakeHost()
    result = await serve(method, params, host, principal="p")
    assert host.calls == [call]
    assert result["resultType"] == "complete"
    assert result["_meta"][SERVER_INFO]["name"] == "jobs"


async def test_an_undeclaring_request_is_refused_before_its_params_are_read() -> None:
    host = FakeHost()
    with pytest.raises(EnvelopeError) as info:
        await serve("tasks/get", {}, host, declares=False)
    assert info.value.code == -32021
    with pytest.raises(EnvelopeError) as info:
        await serve("tasks/get", {}, host)
    assert info.value.code == -32602
    assert host.calls == []
