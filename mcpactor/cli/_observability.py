"""``mcpactor serve``'s observability options: JSON logs, OpenTelemetry spans, /metrics.

The counters are always kept (they cost a dict lookup per request); ``/metrics`` serves
them on the admin listener (``--admin``). ``--otel`` traces each request through
OpenTelemetry's API, to whatever SDK and exporter the process was given
(``opentelemetry-instrument mcpactor serve …``). ``--log-format json`` writes JSON lines.
"""

from __future__ import annotations

import argparse
import logging
from typing import Any

__all__ = ["add_observability_arguments", "configure_observability"]

_log = logging.getLogger("mcpactor")


def add_observability_arguments(serve: argparse.ArgumentParser) -> None:
    """Add ``--log-format`` and ``--otel`` to the ``serve`` parser."""
    serve.add_argument(
        "--log-format",
        choices=("text", "json"),
        default=None,
        help="how stderr logs are written: text (the default) or json, one object a line "
        "with the session and request ids where known",
    )
    serve.add_argument(
        "--otel",
        action="store_true",
        default=None,
        help="an OpenTelemetry span per request and task, continuing the client's "
        "traceparent (needs the otel extra; spans go to the configured SDK, e.g. under "
        "opentelemetry-instrument)",
    )


def configure_observability(args: argparse.Namespace, config: Any = None) -> None:
    """Apply the options (the command line first, then the config file's keys)."""
    log_format = getattr(args, "log_format", None)
    if log_format is None and config is not None:
        log_format = getattr(config, "log_format", None)
    if log_format == "json":
        from ..observability import use_json_logs

        use_json_logs()
    otel = getattr(args, "otel", None)
    if otel is None and config is not None:
        otel = getattr(config, "otel", False)
    if otel:
        _enable_tracing()
    # /metrics needs nothing here: every admin app the admin package makes serves it.


def _enable_tracing() -> None:
    from ..observability import enable_tracing
    from ._extras import OTEL_API, require

    require("otel", "--otel (OpenTelemetry spans)", modules=OTEL_API)

    enable_tracing()
    _log.info("tracing requests: spans go to the tracer provider set up for the process")
