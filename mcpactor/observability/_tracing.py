# OpenTelemetry spans for requests and tasks.
#
# ``enable_tracing`` sets the runtime's tracer switch (``METRICS.tracer``); from then on
# every request actor opens a span "mcp {method} {name}" when it starts and ends it with
# the request's outcome. The span is made current in the actor's task, so what the
# handler does (its own spans, the tasks it creates — trio copies the spawning task's
# context into a new task) nests under it. A client's W3C trace context comes from
# ``params._meta`` (``traceparent``, ``tracestate``, ``baggage``: the keys 2026-07-28
# reserves for it), read through the configured propagator, so the request's span is a
# child of the client's. Without one, the span's parent is whatever is current in the
# actor's task: for a task actor, the request that created it.
#
# opentelemetry-api is imported by ``enable_tracing`` only; without it nothing here runs.
# Everything put on a span came off the wire, so it is bounded first.

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from ..protocol import describe
from ..runtime import CANCELLED, ERROR, METRICS, RequestTrace

if TYPE_CHECKING:
    from opentelemetry.context import Context as OtelContext
    from opentelemetry.trace import Span, Tracer, TracerProvider

__all__ = ["OtelTracer", "disable_tracing", "enable_tracing"]

# Methods whose ``params.name`` names the tool (or prompt) served.
_TOOL: Final = "tools/call"
_PROMPT: Final = "prompts/get"
#: the longest method, name or id put in a span's name or attributes
_LONGEST: Final = 128
#: the longest trace context header value taken from ``_meta`` (W3C allows 512 members
#: of tracestate; a traceparent is 55 characters)
_LONGEST_CONTEXT: Final = 8192
_CONTEXT_KEYS: Final = ("traceparent", "tracestate", "baggage")


def _clip(value: object) -> str:
    if type(value) is str:
        return value if len(value) <= _LONGEST else value[: _LONGEST - 1] + "…"
    return describe(value, length=_LONGEST)


class _Trace:
    __slots__ = ("_span", "_token")

    def __init__(self, span: Span, token: object) -> None:
        self._span = span
        self._token = token

    def end(self, outcome: str, error: str | None) -> None:
        from opentelemetry import context
        from opentelemetry.trace import Status, StatusCode

        span = self._span
        span.set_attribute("mcpactor.outcome", outcome)
        if outcome == ERROR:
            span.set_attribute("error.type", error or "error")
            span.set_status(Status(StatusCode.ERROR, error))
        elif outcome == CANCELLED:
            span.set_attribute("error.type", "cancelled")
        span.end()
        # The context is put back in the task that made it current (the actor's own).
        context.detach(self._token)  # type: ignore[arg-type]


class OtelTracer:
    """Opens an OpenTelemetry span per request and per task (``METRICS.tracer``)."""

    def __init__(self, tracer_provider: TracerProvider | None = None) -> None:
        from opentelemetry import propagate, trace

        from .._version import __version__

        self._tracer: Tracer = trace.get_tracer(
            "mcpactor", __version__, tracer_provider=tracer_provider
        )
        self._propagate = propagate

    def _parent(self, params: Mapping[str, Any] | None) -> OtelContext | None:
        # The client's trace context from ``_meta``, or None (the current context).
        meta = params.get("_meta") if params is not None else None
        if type(meta) is not dict:
            return None
        carrier = {}
        for key in _CONTEXT_KEYS:
            value = meta.get(key)
            if type(value) is str and len(value) <= _LONGEST_CONTEXT:
                carrier[key] = value
        if not carrier:
            return None
        return self._propagate.extract(carrier)

    def start(
        self,
        method: str,
        params: Mapping[str, Any] | None,
        request_id: object,
        session_id: str | None,
        version: str | None,
    ) -> RequestTrace:
        """Start the span of one request and make it current in the calling task."""
        from opentelemetry import context, trace

        method_name = _clip(method)
        attributes: dict[str, str] = {
            "mcp.method.name": method_name,
            "jsonrpc.request.id": _clip(request_id),
        }
        title = f"mcp {method_name}"
        if params is not None and method in (_TOOL, _PROMPT):
            name = params.get("name")
            if name is not None:
                name = _clip(name)
                title = f"{title} {name}"
                attributes["mcp.tool.name" if method == _TOOL else "mcp.prompt.name"] = name
        if session_id is not None:
            attributes["mcp.session.id"] = _clip(session_id)
        if version is not None:
            attributes["mcp.protocol.version"] = version
        span = self._tracer.start_span(
            title,
            context=self._parent(params),
            kind=trace.SpanKind.SERVER,
            attributes=attributes,
        )
        token = context.attach(trace.set_span_in_context(span))
        return _Trace(span, token)

    def start_task(self, task_id: str) -> RequestTrace:
        """Start the span of one task actor: a child of what is current (its request)."""
        from opentelemetry import context, trace

        span = self._tracer.start_span(
            "mcp task",
            kind=trace.SpanKind.INTERNAL,
            attributes={"mcp.task.id": _clip(task_id)},
        )
        token = context.attach(trace.set_span_in_context(span))
        return _Trace(span, token)

    def current_trace_id(self) -> str | None:
        """The trace id of the span current in the calling task (32 hex digits), if any."""
        from opentelemetry import trace

        context = trace.get_current_span().get_span_context()
        return format(context.trace_id, "032x") if context.is_valid else None


def enable_tracing(tracer_provider: TracerProvider | None = None) -> OtelTracer:
    """Trace every request from now on (``opentelemetry-api`` must be installed).

    Spans go to ``tracer_provider``, or to the global one (set up an SDK and an
    exporter for them to go anywhere).
    """
    tracer = OtelTracer(tracer_provider)
    METRICS.tracer = tracer
    return tracer


def disable_tracing() -> None:
    """Stop tracing requests."""
    METRICS.tracer = None
