"""The admin page of a server under load, in a real headless Chromium: the screenshot of
the docs, and a slow request cancelled from the page while the load goes on.

The load is the bench's: 16 clients, each on its own session, calling a quick tool back
to back; beside them a client calling a slow tool (which reports progress) and one with a
task running. The page is opened, signed in, and photographed once the slow request is on
it; then the slow request is cancelled from the page, pressed with the pointer as a person
presses (``browser.press``: down, held, up), and its client must see that.

The screenshot goes to tests/artifacts/admin-under-load.png; with
MCPACTOR_UPDATE_DOCS_IMAGES=1 it also replaces docs/images/admin-under-load.png.
"""

from __future__ import annotations

import functools
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
import trio

from mcpactor import RequestError
from mcpactor.client import ClientSession, connect_http

from .browser import ARTIFACTS, CHROMIUM, press, signed_in_page
from .harness import TOKEN, Served, open_served

DOCS_IMAGE = Path(__file__).resolve().parents[2] / "docs" / "images" / "admin-under-load.png"
#: the bench's concurrency
CLIENTS = 16
#: a bound on each load client's calls, besides the test's deadline
MAX_CALLS = 200_000

playwright_api = pytest.importorskip(
    "playwright.sync_api", reason="playwright is not installed (the test extra)"
)
pytestmark = pytest.mark.skipif(
    shutil.which(CHROMIUM) is None,
    reason=f"no Chromium at {CHROMIUM} (Debian: apt-get install chromium; CI installs it)",
)


async def _load(url: str, number: int, calls: list[int], stop: trio.Event) -> None:
    # One bench connection: a session calling the quick tool back to back until told.
    info = {"name": f"load client {number:02d}", "version": "1.0"}
    async with connect_http(url, initialize=True, client_info=info) as client:
        for _ in range(MAX_CALLS):
            if stop.is_set():
                return
            result = await client.call_tool("echo", {"text": "ping"})
            assert result["content"] == [{"type": "text", "text": "ping"}], result
            calls[number] += 1


async def _call_slow(client: ClientSession, outcome: dict[str, Any]) -> None:
    try:
        outcome["result"] = await client.call_tool("slow", {"every": 0.3})
    except RequestError as exc:
        outcome["error"] = exc


def _drive(admin_url: str, seen: dict[str, Any], shots: list[Path]) -> None:
    # In a worker thread: Playwright's sync API against the server in the trio run.
    with signed_in_page(admin_url, TOKEN, timeout_ms=20_000) as (page, _):
        slow = page.locator(
            ".node[data-request][data-session]",
            has=page.locator(".title", has_text="tools/call slow"),
        ).first
        slow.wait_for()
        # Wait for a snapshot that has the whole load in it: every load session.
        page.wait_for_function(
            """(clients) => document.querySelectorAll(
                '.node[data-session-id]').length >= clients""",
            arg=CLIENTS,
        )
        seen["sessions"] = page.locator(".node[data-session-id]").count()
        for path in shots:
            page.screenshot(path=str(path), full_page=False)
        press(page, slow.locator("button", has_text="Cancel"), 0.3)
        page.locator("dialog#confirm").wait_for(state="visible")
        press(page, "#confirm-ok", 0.2)
        slow.wait_for(state="detached")
        seen["toast"] = page.locator("#toast").inner_text()


async def _count(served: Served, what: str) -> int:
    counts: dict[str, int] = served.observatory.snapshot(limit=1)["counts"]
    return counts[what]


async def test_the_page_under_load_and_a_cancel_from_it() -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    shots = [ARTIFACTS / "admin-under-load.png"]
    if os.environ.get("MCPACTOR_UPDATE_DOCS_IMAGES") == "1":
        DOCS_IMAGE.parent.mkdir(exist_ok=True)
        shots.append(DOCS_IMAGE)
    outcome: dict[str, Any] = {}
    seen: dict[str, Any] = {}
    calls = [0] * CLIENTS
    stop = trio.Event()
    async with (
        open_served() as served,
        connect_http(
            served.mcp_url,
            initialize=True,
            protocol_version="2025-11-25",
            client_info={"name": "slow client", "version": "1.0"},
        ) as slow_client,
        connect_http(
            served.mcp_url,
            initialize=True,
            protocol_version="2025-11-25",
            client_info={"name": "task client", "version": "1.0"},
        ) as task_client,
        trio.open_nursery() as nursery,
    ):
        baseline = await _count(served, "tasks_running")
        task = await task_client.tasks.call_tool("job", {})
        nursery.start_soon(_call_slow, slow_client, outcome)
        for number in range(CLIENTS):
            nursery.start_soon(_load, served.mcp_url, number, calls, stop)
        with trio.fail_after(10):
            await served.started.wait()
        with trio.fail_after(120):
            await trio.to_thread.run_sync(functools.partial(_drive, served.admin_url, seen, shots))
        during = list(calls)
        # The load went on while the page was open and the request was cancelled.
        assert all(count > 0 for count in during), during
        assert await _count(served, "tasks_running") == baseline + 1
        await task_client.tasks.cancel(task["taskId"])
        stop.set()
    # The slow call's client saw the cancellation, as the answer to its call.
    assert "result" not in outcome
    assert "cancelled by the server's operator" in outcome["error"].message
    assert "Done" in seen["toast"]
    assert seen["sessions"] >= CLIENTS + 2
    for path in shots:
        assert path.stat().st_size > 20_000
