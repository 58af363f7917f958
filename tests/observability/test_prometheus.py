"""The Prometheus view: the text parses, and its values are the calls that were made."""

from __future__ import annotations

import pytest
import trio
import trio.testing
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

from mcpactor.observability import render_metrics
from mcpactor.runtime._metrics import BUCKETS, Metrics
from mcpactor.server import Server
from tests.runtime.conftest import open_session, tool_text


def _samples(text: bytes) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    found: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    for family in text_string_to_metric_families(text.decode()):
        for sample in family.samples:
            assert isinstance(sample, Sample)
            found[sample.name, tuple(sorted(sample.labels.items()))] = sample.value
    return found


def test_every_counter_is_in_the_text_with_its_labels() -> None:
    metrics = Metrics()
    metrics.request_ended("tools/call", {"name": "echo"}, "ok", 0.002)
    metrics.request_ended("tools/call", {"name": "echo"}, "ok", 0.7)
    metrics.request_ended("tools/call", {"name": "boom"}, "error", 0.0, "internal")
    metrics.request_ended("ping", None, "cancelled", 400.0)
    metrics.session_opened()
    metrics.session_opened()
    metrics.session_closed()
    metrics.task_created()
    metrics.task_created()
    metrics.task_finished("completed")
    metrics.stream_opened()
    metrics.received("stdio", 120)
    metrics.sent("stdio", 300)
    text = render_metrics(metrics)
    families = {f.name: f for f in text_string_to_metric_families(text.decode())}
    assert families["mcpactor_requests"].type == "counter"
    assert families["mcpactor_request_duration_seconds"].type == "histogram"
    assert families["mcpactor_sessions_active"].type == "gauge"
    samples = _samples(text)

    def value(metric: str, /, **labels: str) -> float:
        return samples[metric, tuple(sorted(labels.items()))]

    assert value("mcpactor_requests_total", method="tools/call", name="echo", outcome="ok") == 2
    assert value("mcpactor_requests_total", method="tools/call", name="boom", outcome="error") == 1
    assert value("mcpactor_requests_total", method="ping", name="", outcome="cancelled") == 1
    assert value("mcpactor_request_errors_total", method="tools/call", kind="internal") == 1
    assert value("mcpactor_cancellations_total", what="request") == 1
    # Buckets are cumulative; +Inf holds all, and the sum is the seconds spent.
    assert value("mcpactor_request_duration_seconds_bucket", method="tools/call", le="0.001") == 1
    assert value("mcpactor_request_duration_seconds_bucket", method="tools/call", le="0.0025") == 2
    assert value("mcpactor_request_duration_seconds_bucket", method="tools/call", le="1.0") == 3
    assert value("mcpactor_request_duration_seconds_bucket", method="ping", le="300.0") == 0
    assert value("mcpactor_request_duration_seconds_bucket", method="ping", le="+Inf") == 1
    assert value("mcpactor_request_duration_seconds_count", method="tools/call") == 3
    assert value("mcpactor_request_duration_seconds_sum", method="tools/call") == pytest.approx(
        0.702
    )
    assert len([key for key in samples if key[0].endswith("_bucket")]) == 2 * (len(BUCKETS) + 1)
    assert value("mcpactor_sessions_opened_total") == 2
    assert value("mcpactor_sessions_closed_total") == 1
    assert value("mcpactor_sessions_active") == 1
    assert value("mcpactor_tasks_created_total") == 2
    assert value("mcpactor_tasks_finished_total", status="completed") == 1
    assert value("mcpactor_tasks_active") == 1
    assert value("mcpactor_streams_opened_total") == 1
    assert value("mcpactor_received_bytes_total", transport="stdio") == 120
    assert value("mcpactor_sent_bytes_total", transport="stdio") == 300


def test_label_values_from_the_wire_are_escaped() -> None:
    metrics = Metrics()
    metrics.request_ended("tools/call", {"name": 'a"b\\c\nd'}, "ok", 0.0)
    samples = _samples(render_metrics(metrics))
    key = (
        "mcpactor_requests_total",
        (("method", "tools/call"), ("name", 'a"b\\c\nd'), ("outcome", "ok")),
    )
    assert samples[key] == 1


async def test_a_scrape_counts_the_calls_a_session_made(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server = Server("scraped")

    @server.tool()
    async def scraped_echo(text: str) -> str:
        """Echo, after a second."""
        await trio.sleep(1)
        return text

    def calls(samples: dict[tuple[str, tuple[tuple[str, str], ...]], float]) -> float:
        # Counted under the tool's name, or as "other" once the process has seen the
        # names the label cap keeps (MAX_NAMES): a whole test run calls many tools.
        total = 0.0
        for name in ("scraped_echo", "other"):
            labels = (("method", "tools/call"), ("name", name), ("outcome", "ok"))
            total += samples.get(("mcpactor_requests_total", labels), 0.0)
        return total

    before = _samples(render_metrics())
    async with open_session(server) as h:
        await h.initialize()
        for index in range(3):
            assert tool_text(await h.call_tool("scraped_echo", {"text": str(index)})) == str(index)
    after = _samples(render_metrics())
    assert calls(after) - calls(before) == 3
    opened = ("mcpactor_sessions_opened_total", ())
    assert after[opened] - before[opened] == 1


async def test_the_admin_listener_serves_metrics_behind_its_token() -> None:
    pytest.importorskip("quart_trio")
    from mcpactor.admin import create_admin_app
    from mcpactor.admin._metrics import install_metrics_route
    from mcpactor.runtime import Observatory

    install_metrics_route()
    app = create_admin_app(Observatory(replica="metrics"), token="metrics-token")
    client = app.test_client()
    refused = await client.get("/metrics")
    assert refused.status_code == 401
    response = await client.get("/metrics", headers={"Authorization": "Bearer metrics-token"})
    assert response.status_code == 200
    assert response.headers["Content-Type"].startswith("text/plain")
    names = {f.name for f in text_string_to_metric_families((await response.get_data()).decode())}
    assert {"mcpactor_requests", "mcpactor_sessions_active"} <= names
