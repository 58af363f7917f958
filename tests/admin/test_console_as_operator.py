"""The operations console as an operator uses it, against ``mcpactor serve --admin`` in a
process of its own, in the system's Chromium, pressed with the pointer (``page.mouse``:
down, held 100 to 500 ms, up, a pause between presses).

Sixteen clients load the server with quick calls back to back, as the bench does; beside
them a slow call reports progress, a call fails and a task runs. Every press lands on the
first try: the slow request's Cancel opens the confirmation, which cancels it (its client
hears so); the failed request's Details open its story. The cancelled and the failed
request stay findable in the history with their error; a search by the failing request's
session and by the task's id finds them; the page's address reopens the same view (the
search, the filters and the open story).
"""

from __future__ import annotations

import functools
import shutil
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio

from mcpactor import RequestError
from mcpactor.client import ClientSession, connect_http

from .browser import CHROMIUM, press, signed_in_page
from .harness import TOKEN
from .served_process import start_with_admin

playwright_api = pytest.importorskip(
    "playwright.sync_api", reason="playwright is not installed (the test extra)"
)
pytestmark = pytest.mark.skipif(
    shutil.which(CHROMIUM) is None,
    reason=f"no Chromium at {CHROMIUM} (Debian: apt-get install chromium; CI installs it)",
)

SERVER = Path(__file__).with_name("operator_server.py")
AUTH = {"Authorization": f"Bearer {TOKEN}"}
#: the bench's concurrency
CLIENTS = 16
#: how long each press is held, in seconds
HOLDS = (0.1, 0.5, 0.3, 0.2, 0.4, 0.25, 0.15, 0.45)


async def _serve(token_file: Path) -> tuple[trio.Process, str, str]:
    # `mcpactor serve --admin` on free ports: (its process, its MCP endpoint, its page).
    command = [
        sys.executable,
        "-m",
        "mcpactor",
        "serve",
        "--http",
        "127.0.0.1:0",
        "--json-response",
        "--admin",
        "127.0.0.1:0",
        "--admin-token-file",
        str(token_file),
        f"{SERVER}:server",
    ]
    process, endpoint, page = await start_with_admin(command, 30)
    return process, endpoint, page


async def _load(url: str, number: int, calls: list[int]) -> None:
    # One bench connection: a session calling the quick tool back to back until cancelled.
    info = {"name": f"load client {number:02d}", "version": "1.0"}
    async with connect_http(url, initialize=True, client_info=info) as client:
        while True:
            await client.call_tool("echo", {"text": "ping"})
            calls[number] += 1


async def _slow(client: ClientSession, outcome: dict[str, Any]) -> None:
    try:
        outcome["result"] = await client.call_tool("slow", {"every": 0.2})
    except RequestError as exc:
        outcome["error"] = exc.message


def _landed(page: Any, selector: str) -> bool:
    # Whether what a press should open is open (it opens at once or not at all).
    try:
        page.locator(selector).wait_for(timeout=2000)
    except playwright_api.TimeoutError:
        return False
    return True


def _find(page: Any, text: str) -> None:
    # Typed into the search box as a person types, key by key.
    box = page.locator("input[name=find]")
    box.fill("")
    box.press_sequentially(text, delay=20)
    page.wait_for_function(
        "(text) => location.search.includes(encodeURIComponent(text))", arg=text
    )


def _operate(admin_url: str, ids: dict[str, str], seen: dict[str, Any]) -> None:
    with signed_in_page(admin_url, TOKEN, height=900) as (page, problems):
        holds = iter(HOLDS)
        landed: list[bool] = []
        # Cancel the slow request from the tree while the load redraws it.
        cancel = ".node[data-request][data-session]:has-text('slow') button"
        page.locator(cancel).first.wait_for()
        press(page, cancel, next(holds))
        landed.append(_landed(page, "dialog#confirm[open]"))
        seen["confirm"] = page.locator("#confirm-text").inner_text()
        page.wait_for_timeout(300)  # reading the dialog
        press(page, "#confirm-ok", next(holds))
        page.locator("dialog#confirm").wait_for(state="hidden")
        # The failed request, found by its session's id; its story from its row.
        _find(page, ids["failed session"])
        row = "#history-table tbody tr:has-text('tools/call fail')"
        page.locator(row).first.wait_for()
        seen["failed rows"] = page.locator("#history-table tbody tr").all_inner_texts()
        page.wait_for_timeout(200)
        press(page, f"{row} button", next(holds))
        landed.append(_landed(page, "dialog#story[open]"))
        page.wait_for_function(
            "() => document.getElementById('story-title').textContent.includes('tools/call fail')"
        )
        seen["failed story"] = page.locator("#story-facts").inner_text()
        # The address keeps the search and the open story: it reopens the same view.
        seen["link"] = page.url
        page.goto("about:blank")
        page.goto(seen["link"])
        landed.append(_landed(page, "dialog#story[open]"))
        page.wait_for_function(
            "() => document.getElementById('story-title').textContent.includes('tools/call fail')"
        )
        seen["reopened story"] = page.locator("#story-facts").inner_text()
        seen["reopened find"] = page.input_value("input[name=find]")
        page.wait_for_timeout(200)
        press(page, "#story-close", next(holds))
        page.locator("dialog#story").wait_for(state="hidden")
        # The cancelled request, found by its session's id, with who cancelled it.
        _find(page, ids["slow session"])
        cancelled = "#history-table tbody tr:has-text('cancelled')"
        page.locator(cancelled).first.wait_for()
        seen["cancelled rows"] = page.locator(cancelled).all_inner_texts()
        page.wait_for_timeout(200)
        press(page, f"{cancelled} button", next(holds))
        landed.append(_landed(page, "dialog#story[open]"))
        seen["cancelled story"] = page.locator("#story-facts").inner_text()
        press(page, "#story-close", next(holds))
        page.locator("dialog#story").wait_for(state="hidden")
        # The task, found by its id in the tree.
        _find(page, ids["task"])
        task = ".node[data-task] .title.link"
        page.locator(task).first.wait_for()
        page.wait_for_timeout(200)
        press(page, task, next(holds))
        landed.append(_landed(page, "dialog#story[open]"))
        seen["task story"] = page.locator("#story-title").inner_text()
        seen["landed"] = landed
        seen["problems"] = problems


async def _session_of(admin: httpx.AsyncClient, client_name: str) -> str:
    tree = (await admin.get("api/tree", params={"find": client_name}, headers=AUTH)).json()
    (session,) = [s["id"] for s in tree["sessions"]["items"] if s["client"] == client_name]
    return str(session)


async def test_an_operator_under_load_finds_cancels_and_reopens(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    process, mcp_url, admin_url = await _serve(token_file)
    seen: dict[str, Any] = {}
    outcome: dict[str, Any] = {}
    calls = [0] * CLIENTS
    try:
        async with (
            httpx.AsyncClient(base_url=admin_url, timeout=10) as admin,
            connect_http(
                mcp_url, initialize=True, client_info={"name": "slow client", "version": "1"}
            ) as slow,
            connect_http(
                mcp_url, initialize=True, client_info={"name": "failing client", "version": "1"}
            ) as failing,
            connect_http(
                mcp_url, initialize=True, client_info={"name": "task client", "version": "1"}
            ) as tasks,
            trio.open_nursery() as nursery,
        ):
            for number in range(CLIENTS):
                nursery.start_soon(_load, mcp_url, number, calls)
            failed = await failing.call_tool("fail", {"why": "the disk is full"})
            assert failed["isError"] is True
            task = await tasks.tasks.call_tool("job")
            async with trio.open_nursery() as slow_calls:
                slow_calls.start_soon(_slow, slow, outcome)
                ids = {
                    "failed session": await _session_of(admin, "failing client 1"),
                    "slow session": await _session_of(admin, "slow client 1"),
                    "task": str(task["taskId"]),
                }
                with trio.fail_after(150):
                    await trio.to_thread.run_sync(
                        functools.partial(_operate, admin_url, ids, seen)
                    )
            nursery.cancel_scope.cancel()
    finally:
        if process.returncode is None:
            process.terminate()
        with trio.fail_after(30):
            await process.wait()
        assert process.stderr is not None
        await process.stderr.aclose()
    assert min(calls) > 0, "every load client was served while the page was used"
    assert seen["landed"] == [True] * len(seen["landed"]), "every press landed at once"
    assert len(seen["landed"]) == 5
    # The confirmation names the request's session, client and tool.
    assert "slow" in seen["confirm"]
    assert "slow client 1" in seen["confirm"]
    assert "error" in outcome, "the slow call's client heard it was cancelled"
    # The failed request, found by its session, keeps its error.
    assert any("failed" in row and "tools/call fail" in row for row in seen["failed rows"])
    assert "the disk is full" in seen["failed story"]
    assert seen["reopened story"] == seen["failed story"]
    assert seen["reopened find"] == ids["failed session"]
    # The cancelled one keeps who cancelled it.
    assert any("cancelled" in row for row in seen["cancelled rows"])
    assert "token" in seen["cancelled story"] or "admin" in seen["cancelled story"]
    assert ids["task"] in seen["task story"]
    assert seen["problems"] == []
