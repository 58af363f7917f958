"""The admin page in a real headless Chromium (the system's, driven by Playwright).

A client calls a slow tool that reports progress; the page shows the request, its
progress moves, and cancelling it from the page (with the confirmation), pressed with the
pointer as a person presses (``browser.press``: down, held, up), answers the client with
the cancellation. Screenshots go to tests/artifacts/.
"""

from __future__ import annotations

import functools
import shutil
from typing import Any

import pytest
import trio

from mcpactor import RequestError
from mcpactor.client import ClientSession, connect_http

from .browser import ARTIFACTS, CHROMIUM, press, signed_in_page
from .harness import TOKEN, open_served

playwright_api = pytest.importorskip(
    "playwright.sync_api", reason="playwright is not installed (the test extra)"
)
pytestmark = pytest.mark.skipif(
    shutil.which(CHROMIUM) is None,
    reason=f"no Chromium at {CHROMIUM} (Debian: apt-get install chromium; CI installs it)",
)


async def _call_slow(client: ClientSession, outcome: dict[str, Any]) -> None:
    async def progress(value: float, total: float | None, message: str | None) -> None:
        outcome.setdefault("progress", []).append(value)
        await trio.lowlevel.checkpoint()

    try:
        outcome["result"] = await client.call_tool(
            "slow", {"every": 0.3}, progress_handler=progress
        )
    except RequestError as exc:
        outcome["error"] = exc


def _drive(admin_url: str, seen: dict[str, Any]) -> None:
    # In a worker thread: Playwright's sync API, against the server in the trio run.
    ARTIFACTS.mkdir(exist_ok=True)
    with signed_in_page(admin_url, TOKEN, height=760) as (page, _):
        row = page.locator(".node[data-request][data-session]").first
        row.wait_for()
        seen["title"] = row.locator(".title").inner_text()
        first = float(row.locator(".progress-text").get_attribute("data-progress") or "0")
        # The progress moves on its own, over SSE.
        page.wait_for_function(
            """(first) => {
                const text = document.querySelector(
                    '.node[data-request][data-session] .progress-text');
                return text && Number(text.dataset.progress) > first + 1;
            }""",
            arg=first,
        )
        seen["progress"] = (
            first,
            float(row.locator(".progress-text").get_attribute("data-progress") or "0"),
        )
        page.screenshot(path=str(ARTIFACTS / "admin-tree.png"))
        press(page, row.locator("button", has_text="Cancel"), 0.25)
        page.locator("dialog#confirm").wait_for(state="visible")
        seen["confirm"] = page.locator("#confirm-text").inner_text()
        page.screenshot(path=str(ARTIFACTS / "admin-confirm.png"))
        press(page, "#confirm-ok", 0.4)
        page.locator(".node[data-request][data-session]").wait_for(state="detached")
        seen["toast"] = page.locator("#toast").inner_text()
        page.screenshot(path=str(ARTIFACTS / "admin-after-cancel.png"))


async def _busy_neighbours(url: str, *, task_status: trio.TaskStatus[None]) -> None:
    # What else the page shows: an idle session, one with a task, a stateless call.
    async with (
        connect_http(url, initialize=True, client_info={"name": "idle client", "version": "2"}),
        connect_http(
            url,
            initialize=True,
            protocol_version="2025-11-25",
            client_info={"name": "task client", "version": "0.9"},
        ) as tasks,
        connect_http(url, initialize=True, protocol_version="2026-07-28") as stateless,
        trio.open_nursery() as nursery,
    ):
        await tasks.tasks.call_tool("job", {})
        nursery.start_soon(_call_slow, stateless, {})
        task_status.started()
        await trio.sleep_forever()


async def test_the_page_shows_a_request_its_progress_and_cancels_it() -> None:
    outcome: dict[str, Any] = {}
    seen: dict[str, Any] = {}
    async with (
        open_served() as served,
        connect_http(
            served.mcp_url,
            initialize=True,
            protocol_version="2025-11-25",
            client_info={"name": "test client", "version": "1.0"},
        ) as client,
        trio.open_nursery() as nursery,
    ):
        nursery.start_soon(_call_slow, client, outcome)
        with trio.fail_after(10):
            await served.started.wait()
            await nursery.start(_busy_neighbours, served.mcp_url)
        with trio.fail_after(90):
            await trio.to_thread.run_sync(functools.partial(_drive, served.admin_url, seen))
        nursery.cancel_scope.cancel()
    assert seen["title"] == "tools/call slow"
    before, after = seen["progress"]
    assert after > before
    assert "its client is answered with an error" in seen["confirm"]
    assert "Done" in seen["toast"]
    # The client saw the cancellation, as an answer to its call.
    assert "cancelled by the server's operator" in outcome["error"].message
    assert (ARTIFACTS / "admin-tree.png").stat().st_size > 10_000
