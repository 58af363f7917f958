"""Metrics, traces and structured logs of a running server.

``render_metrics`` (Prometheus text, needs ``prometheus-client``: the ``admin`` extra),
``enable_tracing`` (OpenTelemetry spans per request, needs the ``otel`` extra) and
``use_json_logs`` / ``use_text_logs`` (their formatters bound and, for text, escape what
came off the wire). Each imports its library only when it is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..runtime import METRICS as METRICS
from ..runtime import Metrics as Metrics
from ._logs import JsonFormatter as JsonFormatter
from ._logs import TextFormatter as TextFormatter
from ._logs import escape_text as escape_text
from ._logs import json_handler as json_handler
from ._logs import use_json_logs as use_json_logs
from ._logs import use_text_logs as use_text_logs

if TYPE_CHECKING:
    from ._prometheus import CONTENT_TYPE as CONTENT_TYPE
    from ._prometheus import MetricsCollector as MetricsCollector
    from ._prometheus import render_metrics as render_metrics
    from ._tracing import OtelTracer as OtelTracer
    from ._tracing import disable_tracing as disable_tracing
    from ._tracing import enable_tracing as enable_tracing

__all__ = [
    "CONTENT_TYPE",
    "METRICS",
    "JsonFormatter",
    "Metrics",
    "MetricsCollector",
    "OtelTracer",
    "TextFormatter",
    "disable_tracing",
    "enable_tracing",
    "escape_text",
    "json_handler",
    "render_metrics",
    "use_json_logs",
    "use_text_logs",
]

# Names whose module needs an optional library, imported on first use.
_LAZY = {
    "CONTENT_TYPE": "._prometheus",
    "MetricsCollector": "._prometheus",
    "render_metrics": "._prometheus",
    "OtelTracer": "._tracing",
    "disable_tracing": "._tracing",
    "enable_tracing": "._tracing",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module, __name__), name)
