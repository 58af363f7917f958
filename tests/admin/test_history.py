"""The history of what ended: requests with their outcome, and the operators' actions.

A client's quick call, a failing call and a slow call the operator cancels all stay
findable in ``/api/history`` after they ended, with their session, client, outcome and
(for the cancelled one) who cancelled it; the audit trail lists the action.
"""

from __future__ import annotations

import contextlib
import functools
import shutil
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import trio

from mcpactor.client import ClientSession, connect_http
from mcpactor.runtime import METRICS, History

from .browser import ARTIFACTS, CHROMIUM, signed_in_page
from .harness import TOKEN, Served, open_served
from .test_actions import _call_slow

AUTH = {"Authorization": f"Bearer {TOKEN}"}


async def _history(admin: httpx.AsyncClient, **params: str) -> dict[str, Any]:
    response = await admin.get("api/history", params=params, headers=AUTH)
    assert response.status_code == 200
    return response.json()  # type: ignore[no-any-return]


async def _end_three(
    served: Served, admin: httpx.AsyncClient, client: ClientSession
) -> tuple[str, Any]:
    # An echo, a failing call and a slow call the operator cancels: (session, its id).
    outcome: dict[str, Any] = {}
    tree = (await admin.get("api/tree", headers=AUTH)).json()
    items = tree["sessions"]["items"]
    (session,) = [s["id"] for s in items if s["client"] == "history client 2.0"]
    await client.call_tool("echo", {"text": "hello"})
    failed = await client.call_tool("fail", {"why": "the disk is full"})
    assert failed["isError"] is True
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_call_slow, client, outcome)
        with trio.fail_after(10):
            await served.started.wait()
        tree = await admin.get("api/tree", params={"tool": "slow"}, headers=AUTH)
        (request,) = tree.json()["sessions"]["items"][0]["requests"]
        response = await admin.post(
            "api/actions/cancel-request",
            json={"session": session, "request": request["id"]},
            headers=AUTH,
        )
        assert response.json()["done"] is True
    assert "error" in outcome
    return session, request["id"]


@contextlib.asynccontextmanager
async def _served() -> AsyncIterator[tuple[Served, httpx.AsyncClient, ClientSession]]:
    async with (
        open_served() as served,
        httpx.AsyncClient(base_url=served.admin_url, timeout=10) as admin,
        connect_http(
            served.mcp_url,
            initialize=True,
            protocol_version="2025-11-25",
            client_info={"name": "history client", "version": "2.0"},
        ) as client,
    ):
        yield served, admin, client


async def test_ended_requests_and_the_operators_cancel_stay_in_the_history() -> None:
    async with _served() as (served, admin, client):
        session, request_id = await _end_three(served, admin, client)
        request = {"id": request_id}
        mine = await _history(admin, find=session.lower())
        assert mine["kept"] is True
        by_name = {item["name"]: item for item in mine["items"] if item["method"] == "tools/call"}
        assert by_name["echo"]["outcome"] == "ok"
        assert by_name["fail"]["outcome"] == "error"
        assert by_name["fail"]["error"] == "tool"
        slow = by_name["slow"]
        assert slow["outcome"] == "cancelled"
        assert slow["request"] == request["id"]
        assert slow["cancelled_by"] == "the operator (admin token, from 127.0.0.1)"
        assert slow["seconds"] > 0
        for item in by_name.values():
            assert item["session"] == session
            assert item["client"] == "history client 2.0"
        # The filters: by outcome, by tool, by client.
        cancelled = await _history(admin, find=session.lower(), outcome="cancelled")
        assert [item["name"] for item in cancelled["items"]] == ["slow"]
        echoes = await _history(admin, find=session.lower(), tool="ECHO")
        assert [item["name"] for item in echoes["items"]] == ["echo"]
        assert not (await _history(admin, find=session.lower(), client="nobody"))["items"]
        # The audit trail: the action, what it acted on, who and from where.
        (action,) = [a for a in mine["audit"] if a["action"] == "cancel-request"]
        assert action["target"] == {"session": session, "request": request["id"]}
        assert action["who"] == "admin token"
        assert action["from"] == "127.0.0.1"
        assert action["result"] == "done"


def test_the_ring_keeps_the_latest_and_reads_them_newest_first() -> None:
    history = History(3)
    for number in range(5):
        context = ("s1", number, "tools/call")
        history.append(
            (1.0 + number, "tools/call", f"t{number}", "ok", 0.1, None, None, context, None, None)
        )
    assert len(history) == 3
    history.learn([("s1", "client 1", "alice")])
    items = history.items()
    assert [item["request"] for item in items] == [4, 3, 2]
    assert items[0]["client"] == "client 1"
    assert items[0]["principal"] == "alice"
    assert [item["request"] for item in history.items(limit=1)] == [4]
    assert [item["name"] for item in history.items(find="t3")] == ["t3"]


def test_a_timeout_is_told_apart_from_other_errors() -> None:
    history = History(2)
    detail = "tool 'slow' timed out after 1 s"
    history.append((1.0, "tools/call", "slow", "error", 1.0, "request", detail, None, None, None))
    (item,) = history.items(outcome="timed out")
    assert item["detail"] == detail


def test_the_history_is_kept_while_someone_asks_for_it() -> None:
    before = METRICS.log_context
    kept = METRICS.keep_history()
    assert METRICS.keep_history() is kept
    assert METRICS.log_context is True
    METRICS.drop_history()
    assert METRICS.history is kept
    METRICS.drop_history()
    assert METRICS.history is None
    assert METRICS.log_context is before
    with pytest.raises(ValueError, match="at least one"):
        History(0)


def _open_link(admin_url: str, link: str, seen: dict[str, Any]) -> None:
    # In a worker thread: sign in, then open the link as a person pasting it would.
    with signed_in_page(admin_url, TOKEN) as (page, _):
        page.locator("#tree .node").first.wait_for()
        page.goto(admin_url + link)
        row = page.locator("#history-table tbody tr").first
        row.wait_for()
        seen["rows"] = page.locator("#history-table tbody tr").all_inner_texts()
        seen["find"] = page.input_value("input[name=find]")
        seen["outcome"] = page.input_value("select[name=outcome]")
        seen["audit"] = page.locator("#audit-table tbody tr").all_inner_texts()
        seen["picked"] = page.locator(".node.picked").get_attribute("data-session-id")
        # Choosing another outcome keeps the filters in the address.
        page.select_option("select[name=outcome]", "")
        page.wait_for_function("() => !location.search.includes('outcome')")
        page.wait_for_function(
            "() => document.querySelectorAll('#history-table tbody tr').length >= 3"
        )
        seen["url"] = page.url
        page.screenshot(path=str(ARTIFACTS / "admin-history.png"), full_page=True)


@pytest.mark.skipif(shutil.which(CHROMIUM) is None, reason=f"no Chromium at {CHROMIUM}")
async def test_a_link_reopens_the_history_with_its_filters() -> None:
    pytest.importorskip("playwright.sync_api")
    seen: dict[str, Any] = {}
    async with _served() as (served, admin, client):
        session, _ = await _end_three(served, admin, client)
        link = f"?find={session}&outcome=cancelled&pick=session:{session}"
        with trio.fail_after(90):
            await trio.to_thread.run_sync(
                functools.partial(_open_link, served.admin_url, link, seen)
            )
    (row,) = seen["rows"]
    assert "tools/call slow" in row
    assert "cancelled by the operator" in row
    assert session in row
    assert seen["find"] == session
    assert seen["outcome"] == "cancelled"
    assert any("cancel-request" in entry and session in entry for entry in seen["audit"])
    assert f"find={session}" in seen["url"]
    # The picked row is marked, and stays in the address.
    assert seen["picked"] == session
    assert "pick=session" in seen["url"]


async def test_a_cancelled_task_stays_in_the_history() -> None:
    async with _served() as (_, admin, client):
        task = await client.tasks.call_tool("job", {})
        task_id = task["taskId"]
        response = await admin.post(
            "api/actions/cancel-task", json={"task": task_id}, headers=AUTH
        )
        assert response.json()["done"] is True
        (item,) = (await _history(admin, find=task_id.lower()))["items"]
        assert item["method"] == "task"
        assert item["name"] == task_id
        assert item["outcome"] == "cancelled"
        assert item["seconds"] >= 0


def test_a_session_that_ended_unwatched_is_named_by_its_initialize() -> None:
    history = History(4)
    info = {"name": "short-lived", "version": "1.2"}
    context = ("s2", 0, "initialize")
    history.append((1.0, "initialize", info, "ok", 0.001, None, None, context, None, None))
    history.append(
        (2.0, "tools/list", "", "ok", 0.001, None, None, ("s2", 1, "tools/list"), None, None)
    )
    listed, initialized = history.items()
    assert listed["client"] == "short-lived 1.2"
    assert initialized["name"] is None
    assert [item["method"] for item in history.items(client="short")] == [
        "tools/list",
        "initialize",
    ]
