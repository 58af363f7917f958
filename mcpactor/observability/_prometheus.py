# The Prometheus view of the process's counters (``mcpactor.runtime._metrics``).
#
# Nothing is kept in prometheus-client objects: a custom Collector reads the plain
# counters when a scrape asks, so a request costs the same whether anyone scrapes or not.
# prometheus-client is imported here only, which only the admin listener imports.

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.registry import Collector

from ..runtime import BUCKETS, METRICS, Metrics

__all__ = ["CONTENT_TYPE", "MetricsCollector", "render_metrics"]

#: the media type of ``render_metrics``'s text
CONTENT_TYPE = CONTENT_TYPE_LATEST


class MetricsCollector(Collector):
    """Reads a ``Metrics`` (the process's, by default) at scrape time."""

    def __init__(self, metrics: Metrics = METRICS, *, in_flight: int | None = None) -> None:
        self.metrics = metrics
        #: requests running now (counted by whoever sees them: the admin's live tree)
        self.in_flight = in_flight

    def describe(self) -> list[Metric]:
        """Nothing up front: registering must not walk the counters."""
        return []

    def collect(self) -> Iterator[Metric]:
        """Yield every metric family, computed from the counters now."""
        m = self.metrics
        yield from _request_families(m)
        if self.in_flight is not None:
            yield GaugeMetricFamily(
                "mcpactor_requests_in_flight",
                "Requests being served now (of sessions, and stateless ones)",
                value=self.in_flight,
            )
        yield from _session_families(m)
        yield from _task_families(m)
        yield from _transport_families(m)


def _request_families(m: Metrics) -> Iterator[Metric]:
    # Requests ended: by outcome, their latency, their errors and cancellations.
    requests = CounterMetricFamily(
        "mcpactor_requests",
        "Requests ended, by method, tool or prompt name, and outcome",
        labels=("method", "name", "outcome"),
    )
    for (method, name, outcome), count in sorted(m.requests().items()):
        requests.add_metric((method, name, outcome), count)
    yield requests
    latency = HistogramMetricFamily(
        "mcpactor_request_duration_seconds",
        "Seconds from a request's start to its answer (or cancellation), by method",
        labels=("method",),
    )
    bounds = [*(repr(bound) for bound in BUCKETS), "+Inf"]
    for method, (counts, total) in sorted(m.latency().items()):
        cumulative: list[tuple[str, float]] = []
        running = 0
        for bound, count in zip(bounds, counts, strict=True):
            running += count
            cumulative.append((bound, running))
        latency.add_metric((method,), cumulative, total)
    yield latency
    errors = CounterMetricFamily(
        "mcpactor_request_errors",
        "Requests answered with an error, by method and kind (request, internal, tool)",
        labels=("method", "kind"),
    )
    for (method, kind), count in sorted(m.errors.items()):
        errors.add_metric((method, kind), count)
    yield errors
    cancellations = CounterMetricFamily(
        "mcpactor_cancellations",
        "Requests and tasks cancelled before they were answered",
        labels=("what",),
    )
    for what, count in sorted(m.cancellations.items()):
        cancellations.add_metric((what,), count)
    yield cancellations


def _session_families(m: Metrics) -> Iterator[Metric]:
    yield CounterMetricFamily(
        "mcpactor_sessions_opened", "Sessions started", value=m.sessions_opened
    )
    yield CounterMetricFamily(
        "mcpactor_sessions_closed", "Sessions ended", value=m.sessions_closed
    )
    yield GaugeMetricFamily(
        "mcpactor_sessions_active",
        "Sessions started and not ended (awake or asleep)",
        value=m.sessions_opened - m.sessions_closed,
    )


def _task_families(m: Metrics) -> Iterator[Metric]:
    yield CounterMetricFamily(
        "mcpactor_tasks_created",
        "Tasks created (task-augmented requests)",
        value=m.tasks_created,
    )
    finished = CounterMetricFamily(
        "mcpactor_tasks_finished",
        "Tasks that reached a terminal status, by status",
        labels=("status",),
    )
    done = 0
    for status, count in sorted(m.tasks_finished.items()):
        finished.add_metric((status,), count)
        done += count
    yield finished
    yield GaugeMetricFamily(
        "mcpactor_tasks_active",
        "Tasks created and not yet terminal (working or input_required)",
        value=m.tasks_created - done,
    )


def _transport_families(m: Metrics) -> Iterator[Metric]:
    # What the transports carried: response streams opened, bytes each way.
    yield CounterMetricFamily(
        "mcpactor_streams_opened",
        "HTTP response streams opened (one per POST carrying requests, and the GET's)",
        value=m.streams_opened,
    )
    for name, doc, table in (
        ("mcpactor_received_bytes", "Bytes of messages received, by transport", m.bytes_in),
        ("mcpactor_sent_bytes", "Bytes of messages sent, by transport", m.bytes_out),
    ):
        family = CounterMetricFamily(name, doc, labels=("transport",))
        for transport, count in sorted(table.items()):
            family.add_metric((transport,), count)
        yield family


def render_metrics(metrics: Metrics = METRICS, *, in_flight: int | None = None) -> bytes:
    """Return ``metrics`` in the Prometheus text format (``CONTENT_TYPE``).

    ``in_flight``, when given, is the ``mcpactor_requests_in_flight`` gauge.
    """
    # A registry per scrape: a scrape is rare, and this one holds nothing but the reader.
    registry = CollectorRegistry(auto_describe=False)
    registry.register(MetricsCollector(metrics, in_flight=in_flight))
    return generate_latest(registry)
