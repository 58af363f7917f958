"""StatelessHost.serve as a request actor: its scope, its ``done`` hook, and a pipe's use of it."""

from __future__ import annotations

from typing import Any

import trio
import trio.testing

from mcpactor import CallToolResult, Context, Server
from mcpactor.protocol import JSONObject, Request, RequestId
from mcpactor.runtime import StatelessHost, StatelessOptions
from mcpactor.transports._pipe import PipeSink
from mcpactor.transports._stdio_input import PipeRouter

ENVELOPE: dict[str, Any] = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}


def make_server(started: trio.Event, cancelled: trio.Event) -> Server:
    server = Server("serve-actor", "1.0.0")

    @server.tool()
    async def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    @server.tool()
    async def hold(ctx: Context) -> str:
        """Report progress, then wait to be cancelled."""
        started.set()
        try:
            await ctx.report_progress(1, 2)
            await trio.sleep_forever()
        except trio.Cancelled:
            cancelled.set()
            raise
        return "never"

    return server


def call(request_id: RequestId, name: str, arguments: JSONObject, **meta: Any) -> Request:
    params: JSONObject = {"name": name, "arguments": arguments, "_meta": {**ENVELOPE, **meta}}
    return Request(request_id, "tools/call", params)


async def nothing(message: JSONObject) -> None:
    pass


class Ends:
    """A ``done`` hook that records what it hears, and may make serve wait."""

    def __init__(self) -> None:
        self.heard: list[tuple[RequestId, JSONObject | None]] = []
        self.room: trio.Event | None = None

    def __call__(self, request_id: RequestId, answer: JSONObject | None) -> Any:
        self.heard.append((request_id, answer))
        return self.room.wait() if self.room is not None else None


def host_of(server: Server) -> StatelessHost:
    return StatelessHost(server, options=StatelessOptions(keepalive=None))


async def test_cancelling_the_scope_ends_the_request_with_no_answer() -> None:
    started, cancelled = trio.Event(), trio.Event()
    host = host_of(make_server(started, cancelled))
    scope = trio.CancelScope()
    ends = Ends()
    answers: list[JSONObject | None] = []

    async def serve() -> None:
        answers.append(await host.serve(call(1, "hold", {}), nothing, scope=scope, done=ends))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(serve)
        await started.wait()
        assert host.statistics().requests_in_flight == 1
        scope.cancel()
    assert cancelled.is_set()
    assert answers == [None]
    assert ends.heard == [(1, None)]
    assert host.statistics().requests_in_flight == 0
    assert not host.flights


async def test_done_hears_the_answer_and_serve_waits_for_its_room() -> None:
    host = host_of(make_server(trio.Event(), trio.Event()))
    ends = Ends()
    ends.room = trio.Event()
    answers: list[JSONObject | None] = []

    async def serve() -> None:
        answers.append(await host.serve(call(2, "add", {"a": 2, "b": 3}), nothing, done=ends))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(serve)
        await trio.testing.wait_all_tasks_blocked()
        # Answered, and waiting for room for the answer: serve has not returned.
        ((request_id, answer),) = ends.heard
        assert request_id == 2
        assert answer is not None
        assert answer["result"]["structuredContent"] == {"result": 5}
        assert answer["result"]["resultType"] == "complete"
        assert answers == []
        ends.room.set()
    assert answers == [answer]


async def test_a_refused_request_reaches_done_too() -> None:
    host = host_of(make_server(trio.Event(), trio.Event()))
    ends = Ends()
    refused = call(
        3, "add", {"a": 1, "b": 1}, **{"io.modelcontextprotocol/protocolVersion": "1999-01-01"}
    )
    answer = await host.serve(refused, nothing, done=ends)
    assert answer is not None
    assert answer["error"]["code"] == -32022
    assert ends.heard == [(3, answer)]
    assert host.statistics().requests_in_flight == 0


async def test_a_result_with_its_own_meta_keeps_it_beside_the_server_info() -> None:
    server = Server("own-meta", "1.0.0")

    @server.tool()
    async def tagged() -> Any:
        """Return a result with a _meta of its own."""
        return CallToolResult(content=[], meta={"x.example/tag": 1})

    host = host_of(server)
    answer = await host.serve(call(4, "tagged", {}), nothing)
    assert answer is not None
    meta = answer["result"]["_meta"]
    assert meta["x.example/tag"] == 1
    assert meta["io.modelcontextprotocol/serverInfo"]["name"] == "own-meta"
    assert answer["result"]["resultType"] == "complete"


async def test_a_pipe_that_closes_under_a_notification_cancels_its_request() -> None:
    started, cancelled = trio.Event(), trio.Event()
    host = host_of(make_server(started, cancelled))
    sink = PipeSink(trio.testing.memory_stream_one_way_pair()[0])
    # Nobody reads the pipe any more: the progress notification finds it closed.
    sink.close()
    with trio.fail_after(10):
        await _serve_on_a_closed_pipe(host, sink)
    # The requests ended as cancelled ones do, and nothing escaped the nursery.
    assert started.is_set()
    assert cancelled.is_set()
    assert host.statistics().requests_in_flight == 0


async def _serve_on_a_closed_pipe(host: StatelessHost, sink: PipeSink) -> None:
    async with trio.open_nursery() as nursery:
        router = PipeRouter(host, sink, nursery)
        # A progress token, so that the tool's progress is a notification to send.
        message = call(5, "hold", {}, progressToken="p").to_json()
        assert router(message)
        # One that sends nothing would wait for ever: it ends with the pipe too.
        assert router(call(6, "hold", {}).to_json())
        assert router.in_flight == 2
    assert router.in_flight == 0


async def test_an_envelope_is_read_again_whenever_it_differs_from_the_last_one() -> None:
    started, cancelled = trio.Event(), trio.Event()
    server = make_server(started, cancelled)
    seen: list[str] = []

    @server.tool()
    async def rewrite(ctx: Context) -> str:
        """Change the request's own _meta, as a handler may."""
        assert ctx.meta is not None
        ctx.meta["io.modelcontextprotocol/protocolVersion"] = "2025-11-25"
        seen.append(ctx.negotiated.revision.version)
        return "rewritten"

    host = host_of(server)
    first = await host.serve(call(1, "rewrite", {}), nothing)
    assert first is not None
    assert first["result"]["resultType"] == "complete"
    # The handler's change is not what the next request is compared with: an envelope
    # naming a session revision is refused, though it equals the changed _meta.
    refused = await host.serve(
        call(
            2, "add", {"a": 1, "b": 2}, **{"io.modelcontextprotocol/protocolVersion": "2025-11-25"}
        ),
        nothing,
    )
    assert refused is not None
    assert refused["error"]["code"] == -32022
    # The same envelope as the first is served again; a malformed one after it is not.
    again = await host.serve(call(3, "add", {"a": 1, "b": 2}), nothing)
    assert again is not None
    assert again["result"]["structuredContent"] == {"result": 3}
    bad = await host.serve(
        call(4, "add", {"a": 1, "b": 2}, **{"io.modelcontextprotocol/clientCapabilities": []}),
        nothing,
    )
    assert bad is not None
    assert bad["error"]["code"] == -32602
    assert seen == ["2026-07-28"]


async def test_every_plain_result_gets_a_meta_of_its_own() -> None:
    host = host_of(make_server(trio.Event(), trio.Event()))
    # Equal, but not one shared object a later change to one answer would reach.
    plain = await host.serve(call(2, "add", {"a": 2, "b": 2}), nothing)
    other = await host.serve(call(3, "add", {"a": 2, "b": 3}), nothing)
    assert plain is not None
    assert other is not None
    assert plain["result"]["_meta"] == other["result"]["_meta"]
    assert plain["result"]["_meta"] is not other["result"]["_meta"]
