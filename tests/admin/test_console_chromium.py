"""The rates and a request's story on the page, in the system's Chromium, pressed as a
person presses (``Input.dispatchMouseEvent``: down, held 100 to 500 ms, up).

A slow call runs while quick calls and a failing sign-in with a password and a client's
trace context end. The rates list the quick tool with its chart; pressing the slow
request's title opens its story at the first press, with its progress, and a task's
id its own; the failed
sign-in's story, opened from the history, hides its password and the field the rule
names, shows the lines logged while it ran and links its trace; and the address of the
open story reopens it. Screenshots go to tests/artifacts/ (the docs' are taken under
load by ``python -m tests.admin.console_screenshots``).
"""

from __future__ import annotations

import functools
import shutil
from typing import Any

import pytest
import trio

from mcpactor.client import connect_http

from .browser import ARTIFACTS, CHROMIUM, signed_in_page
from .harness import TOKEN, open_served
from .test_page_chromium import _call_slow
from .test_page_holds_still import _press

playwright_api = pytest.importorskip(
    "playwright.sync_api", reason="playwright is not installed (the test extra)"
)
pytestmark = pytest.mark.skipif(
    shutil.which(CHROMIUM) is None,
    reason=f"no Chromium at {CHROMIUM} (Debian: apt-get install chromium; CI installs it)",
)

TRACE = "https://traces.example/trace/{trace_id}"
TRACE_ID = "0af7651916cd43dd8448eb211c80319c"
TRACEPARENT = f"00-{TRACE_ID}-b7ad6b7169203331-01"


def _shot(page: Any, name: str, **options: Any) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / name), **options)


def _drive(admin_url: str, seen: dict[str, Any]) -> None:
    with signed_in_page(admin_url, TOKEN) as (page, problems):
        cdp = page.context.new_cdp_session(page)
        # The rates: the quick tool's row, its numbers and its chart.
        echo = page.locator("#rates-tools tbody tr", has_text="tools/call echo")
        echo.wait_for()
        seen["echo rate"] = echo.locator("td").nth(1).inner_text()
        seen["echo p95"] = echo.locator("td").nth(4).inner_text()
        seen["charts"] = page.locator("#rates-tools svg.chart polyline").count()
        seen["client rows"] = page.locator("#rates-clients tbody tr").all_inner_texts()
        _shot(page.locator("#rates"), "admin-rates.png")
        # The window is a filter like the others: in the address.
        page.select_option("select[name=over]", "300")
        page.wait_for_function("() => location.search.includes('over=300')")
        # A running request's story, from its title in the tree, at the first press.
        title = ".node[data-request][data-session] .title.link"
        page.locator(title).first.wait_for()
        _press(cdp, page, title, 0.3)
        page.locator("dialog#story[open]").wait_for()
        seen["running title"] = page.locator("#story-title").inner_text()
        seen["running facts"] = page.locator("#story-facts").inner_text()
        seen["running arguments"] = page.locator("#story-arguments").inner_text()
        _press(cdp, page, "#story-close", 0.15)
        page.locator("dialog#story").wait_for(state="hidden")
        # Closed, the story leaves the address (the dialog's close event says so).
        page.wait_for_function("() => !location.search.includes('story=')")
        seen["closed link"] = page.url
        # A task's story, from its id in the tree.
        task = ".node[data-task] .title.link"
        page.locator(task).first.wait_for()
        _press(cdp, page, task, 0.2)
        page.locator("dialog#story[open]").wait_for()
        seen["task title"] = page.locator("#story-title").inner_text()
        seen["task facts"] = page.locator("#story-facts").inner_text()
        seen["task arguments shown"] = page.locator("#story-request").is_visible()
        _press(cdp, page, "#story-close", 0.1)
        page.locator("dialog#story").wait_for(state="hidden")
        # The failed sign-in's story, from the history.
        failed = page.locator("#history-table tbody tr", has_text="tools/call sign_in")
        failed.wait_for()
        _press(cdp, page, "#history-table tbody tr:has-text('sign_in') button", 0.45)
        page.locator("dialog#story[open]").wait_for()
        page.wait_for_function(
            "() => document.getElementById('story-title').textContent.includes('sign_in')"
        )
        seen["failed facts"] = page.locator("#story-facts").inner_text()
        seen["failed arguments"] = page.locator("#story-arguments").inner_text()
        seen["failed note"] = page.locator("#story-arguments-note").inner_text()
        seen["logs"] = page.locator("#story-logs li").all_inner_texts()
        seen["trace"] = page.locator("#story-trace").get_attribute("href")
        seen["trace shown"] = page.locator("#story-trace").is_visible()
        _shot(page, "admin-story.png")
        # The address names the open story: opening it again reopens the story.
        seen["link"] = page.url
        page.goto("about:blank")
        page.goto(seen["link"])
        page.locator("dialog#story[open]").wait_for()
        page.wait_for_function(
            "() => document.getElementById('story-title').textContent.includes('sign_in')"
        )
        seen["reopened"] = page.locator("#story-facts").inner_text()
        seen["window"] = page.input_value("select[name=over]")
        seen["problems"] = problems


async def test_rates_and_a_request_s_story_on_the_page() -> None:
    seen: dict[str, Any] = {}
    async with (
        open_served(redact={"sign_in": ["note"]}, trace_url=TRACE) as served,
        connect_http(
            served.mcp_url,
            initialize=True,
            protocol_version="2025-11-25",
            client_info={"name": "console client", "version": "4.2"},
        ) as client,
        trio.open_nursery() as nursery,
    ):
        for index in range(20):
            await client.call_tool("echo", {"text": f"hello {index}"})
        arguments = {"user": "ada", "password": "hunter2", "note": "my pin is 1234"}
        result = await client.call_tool("sign_in", arguments, meta={"traceparent": TRACEPARENT})
        assert result["isError"] is True
        task = await client.tasks.call_tool("job", {})
        nursery.start_soon(_call_slow, client, {})
        with trio.fail_after(10):
            await served.started.wait()
        with trio.fail_after(120):
            await trio.to_thread.run_sync(functools.partial(_drive, served.admin_url, seen))
        nursery.cancel_scope.cancel()
    assert float(seen["echo rate"]) > 0
    assert seen["echo p95"].endswith(("µs", "ms"))
    assert seen["charts"] >= 2
    assert any(row.startswith("console client 4.2") for row in seen["client rows"])
    # The running request.
    assert "tools/call slow" in seen["running title"]
    assert "Running for" in seen["running facts"]
    assert "console client 4.2" in seen["running facts"]
    assert "Progress" in seen["running facts"]
    assert '"every": 0.3' in seen["running arguments"]
    assert "story=" not in seen["closed link"]
    # The task.
    assert seen["task title"] == f"task {task['taskId']}"
    assert "working" in seen["task facts"]
    assert "console client 4.2" in seen["task facts"]
    assert not seen["task arguments shown"]
    # The failed one: hidden secrets, its lines, its trace.
    assert "failed (tool error)" in seen["failed facts"]
    assert TRACE_ID in seen["failed facts"]
    assert "hunter2" not in seen["failed arguments"]
    assert "1234" not in seen["failed arguments"]
    assert seen["failed arguments"].count("[redacted]") == 2
    assert '"user": "ada"' in seen["failed arguments"]
    assert "2 hidden" in seen["failed note"]
    assert any("sign-in attempt by ada" in line for line in seen["logs"])
    assert seen["trace"] == f"https://traces.example/trace/{TRACE_ID}"
    assert seen["trace shown"]
    assert "story=" in seen["link"]
    assert "failed (tool error)" in seen["reopened"]
    assert seen["window"] == "300"
    assert seen["problems"] == []
