"""docs/operations.md's Metrics table names what the collector exports, and admin apps
made in code serve /metrics."""

from __future__ import annotations

import re
from pathlib import Path

from prometheus_client.samples import Sample

from mcpactor.admin import create_admin_app
from mcpactor.observability import MetricsCollector
from mcpactor.runtime import Observatory
from mcpactor.runtime._metrics import METRICS, Metrics

PAGE = Path(__file__).parents[2] / "docs" / "operations.md"
ROW = re.compile(r"\| `(mcpactor_\w+)` \| (\w+) \|([^|]*)\|")
TOKEN = "s3cret-admin-token"


def _documented() -> dict[str, tuple[str, frozenset[str]]]:
    text = PAGE.read_text(encoding="utf-8")
    section = text[text.index("## Metrics\n") :]
    section = section[: section.index("\n## ", 1)]
    rows = {}
    for found in ROW.finditer(section):
        labels = frozenset(re.findall(r"`(\w+)`", found.group(3)))
        rows[found.group(1)] = (found.group(2), labels)
    return rows


def _exported() -> dict[str, tuple[str, frozenset[str]]]:
    # One call of every kind, so each labelled family has a sample to show its labels.
    metrics = Metrics()
    metrics.request_ended("tools/call", {"name": "echo"}, "ok", 0.01)
    metrics.request_ended("tools/call", {"name": "boom"}, "error", 0.01, "internal")
    metrics.request_ended("ping", None, "cancelled", 0.01)
    metrics.session_opened()
    metrics.task_created()
    metrics.task_finished("cancelled")
    metrics.stream_opened()
    metrics.received("http", 10)
    metrics.sent("http", 20)
    exported = {}
    for family in MetricsCollector(metrics, in_flight=0).collect():
        labels: set[str] = set()
        for sample in family.samples:
            assert isinstance(sample, Sample)
            labels |= set(sample.labels) - {"le"}
        name = family.name + "_total" if family.type == "counter" else family.name
        exported[name] = (family.type, frozenset(labels))
    return exported


def test_the_metrics_table_is_what_the_collector_exports() -> None:
    documented = _documented()
    assert len(documented) >= 10, "the Metrics table was not found"
    assert documented == _exported()


async def test_an_admin_app_made_in_code_serves_metrics_behind_the_token() -> None:
    observatory = Observatory(replica="test")
    observatory.install()
    client = create_admin_app(observatory, token=TOKEN).test_client()
    assert (await client.get("/metrics")).status_code == 401
    before = METRICS.sessions_opened
    METRICS.session_opened()
    METRICS.session_closed()
    response = await client.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert response.status_code == 200
    assert response.headers["Content-Type"].startswith("text/plain")
    body = (await response.get_data()).decode()
    assert f"mcpactor_sessions_opened_total {float(before + 1)}" in body
