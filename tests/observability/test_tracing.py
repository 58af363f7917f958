"""OpenTelemetry spans per request: names, attributes, the client's trace context, the tree."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import trio
import trio.testing
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from mcpactor import ToolError
from mcpactor.observability import disable_tracing, enable_tracing
from mcpactor.protocol import Request
from mcpactor.runtime import StatelessHost, StatelessOptions
from mcpactor.server import Server
from tests.runtime.conftest import open_session, tool_text
from tests.runtime.test_tasks import TASKS, create_task, status_of

TRACE_ID = "0af7651916cd43dd8448eb211c80319c"
PARENT_ID = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{PARENT_ID}-01"


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    enable_tracing(provider)
    try:
        yield exporter
    finally:
        disable_tracing()
        provider.shutdown()


def _server(provider_tracer: list[trace.Tracer] | None = None) -> Server:
    server = Server("traced")

    @server.tool()
    async def echo(text: str) -> str:
        """Echo, inside a span of the tool's own when it has a tracer."""
        if provider_tracer:
            with provider_tracer[0].start_as_current_span("inside echo"):
                await trio.lowlevel.checkpoint()
        return text

    @server.tool()
    async def refuse() -> str:
        """Fail as a tool."""
        raise ToolError("no")

    @server.tool()
    async def forever() -> str:
        """Wait until cancelled."""
        await trio.sleep_forever()
        return "never"

    @server.tool(task_support="optional")
    async def job() -> str:
        """Run as a task."""
        await trio.sleep(1)
        return "done"

    return server


def _named(spans: InMemorySpanExporter, name: str) -> ReadableSpan:
    found = [span for span in spans.get_finished_spans() if span.name == name]
    assert len(found) == 1, [span.name for span in spans.get_finished_spans()]
    return found[0]


async def test_a_request_span_continues_the_clients_trace(spans: InMemorySpanExporter) -> None:
    async with open_session(_server()) as h:
        await h.initialize("2025-11-25")
        called = await h.start_tool(
            "echo", {"text": "hi"}, meta={"traceparent": TRACEPARENT, "tracestate": "vendor=1"}
        )
        assert tool_text(await h.result_of(called)) == "hi"
    span = _named(spans, "mcp tools/call echo")
    assert span.kind is SpanKind.SERVER
    assert span.context is not None
    assert format(span.context.trace_id, "032x") == TRACE_ID
    assert span.parent is not None
    assert format(span.parent.span_id, "016x") == PARENT_ID
    assert span.parent.is_remote
    assert dict(span.attributes or {}) == {
        "mcp.method.name": "tools/call",
        "jsonrpc.request.id": str(called),
        "mcp.tool.name": "echo",
        "mcp.protocol.version": "2025-11-25",
        "mcpactor.outcome": "ok",
    }
    assert span.status.status_code is StatusCode.UNSET
    # Without a trace context of the client's, a request's span starts a trace.
    async with open_session(_server()) as h:
        await h.initialize()
        await h.request("tools/list")
    assert _named(spans, "mcp tools/list").parent is None


async def test_what_the_handler_traces_nests_under_its_request(
    spans: InMemorySpanExporter,
) -> None:
    # The handler's own spans use the global API: the request's span is current.
    tracer: list[trace.Tracer] = [trace.get_tracer("handler")]
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    tracer[0] = provider.get_tracer("handler")
    async with open_session(_server(tracer)) as h:
        await h.initialize()
        assert tool_text(await h.call_tool("echo", {"text": "x"})) == "x"
    request = _named(spans, "mcp tools/call echo")
    inner = _named(spans, "inside echo")
    assert request.context is not None
    assert inner.parent is not None
    assert inner.parent.span_id == request.context.span_id
    assert inner.context is not None
    assert inner.context.trace_id == request.context.trace_id


async def test_errors_and_cancellations_are_the_spans_outcome(
    spans: InMemorySpanExporter,
) -> None:
    async with open_session(_server()) as h:
        await h.initialize()
        assert (await h.call_tool("refuse"))["isError"] is True
        doomed = await h.start_tool("forever")
        await trio.testing.wait_all_tasks_blocked()
        await h.cancel(doomed)
        await trio.testing.wait_all_tasks_blocked()
    refused = _named(spans, "mcp tools/call refuse")
    assert refused.status.status_code is StatusCode.ERROR
    assert (refused.attributes or {})["mcpactor.outcome"] == "error"
    assert (refused.attributes or {})["error.type"] == "tool"
    cancelled = _named(spans, "mcp tools/call forever")
    assert (cancelled.attributes or {})["mcpactor.outcome"] == "cancelled"


async def test_a_tasks_span_is_a_child_of_the_request_that_created_it(
    spans: InMemorySpanExporter, autojump_clock: trio.testing.MockClock
) -> None:
    async with open_session(_server()) as h:
        await h.initialize("2025-11-25", {"tasks": TASKS})
        task = await create_task(h, "job", meta={"traceparent": TRACEPARENT})
        assert (await status_of(h, task["taskId"]))["status"] == "completed"
    request = _named(spans, "mcp tools/call job")
    task_span = _named(spans, "mcp task")
    assert request.context is not None
    assert task_span.parent is not None
    assert task_span.parent.span_id == request.context.span_id
    assert task_span.context is not None
    assert format(task_span.context.trace_id, "032x") == TRACE_ID
    assert (task_span.attributes or {})["mcp.task.id"] == task["taskId"]
    assert (task_span.attributes or {})["mcpactor.outcome"] == "ok"


@pytest.mark.parametrize(
    "meta",
    [
        {"traceparent": "not a traceparent"},
        {"traceparent": 42, "tracestate": ["x"]},
        {"traceparent": "00-" + "f" * 100_000},
        {"baggage": "k=" + "v" * 100_000},
    ],
)
async def test_a_bad_trace_context_starts_a_trace_of_its_own(
    spans: InMemorySpanExporter, meta: dict[str, object]
) -> None:
    async with open_session(_server()) as h:
        await h.initialize()
        called = await h.start_tool("echo", {"text": "ok"}, meta=meta)
        assert tool_text(await h.result_of(called)) == "ok"
    assert _named(spans, "mcp tools/call echo").parent is None


async def test_names_and_ids_from_the_wire_are_clipped(spans: InMemorySpanExporter) -> None:
    async with open_session(_server()) as h:
        await h.initialize()
        await h.send_request("tools/call", {"name": "n" * 10_000}, request_id="i" * 10_000)
        await h.error_of("i" * 10_000)
    (span,) = [s for s in spans.get_finished_spans() if s.name.startswith("mcp tools/call")]
    assert len(span.name) < 300
    attributes = span.attributes or {}
    assert len(str(attributes["jsonrpc.request.id"])) <= 128
    assert len(str(attributes["mcp.tool.name"])) <= 128


async def test_a_stateless_request_has_its_span(spans: InMemorySpanExporter) -> None:
    host = StatelessHost(_server(), options=StatelessOptions(keepalive=None))
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "traceparent": TRACEPARENT,
    }
    request = Request(7, "tools/call", {"name": "echo", "arguments": {"text": "s"}, "_meta": meta})

    async def emit(message: object) -> None:
        raise AssertionError(f"nothing is emitted: {message!r}")

    answer = await host.serve(request, emit)
    await host.aclose()
    assert "result" in answer, answer
    span = _named(spans, "mcp tools/call echo")
    assert span.parent is not None
    assert format(span.parent.span_id, "016x") == PARENT_ID
    attributes = span.attributes or {}
    assert attributes["mcp.protocol.version"] == "2026-07-28"
    assert "mcp.session.id" not in attributes


async def test_the_history_keeps_a_traced_request_s_trace_id(
    spans: InMemorySpanExporter,
) -> None:
    from mcpactor.client import connect_memory
    from mcpactor.runtime import METRICS

    history = METRICS.keep_history()
    try:
        async with connect_memory(_server(), initialize=True) as client:
            await client.call_tool("echo", {"text": "traced"})
        (item,) = [item for item in history.items() if item["name"] == "echo"]
    finally:
        METRICS.drop_history()
    (span,) = [span for span in spans.get_finished_spans() if span.name == "mcp tools/call echo"]
    assert span.context is not None
    assert item["trace_id"] == format(span.context.trace_id, "032x")
