"""The history of what ended: requests with their outcome, and the operators' actions.

A client's quick call, a failing call and a slow call the operator cancels all stay
findable in ``/api/history`` after they ended, with their session, client, outcome and
(for the cancelled one) who cancelled it; the audit trail lists the action.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest
import trio

from mcpactor.client import connect_http
from mcpactor.runtime import METRICS, History

from .harness import TOKEN, open_served
from .test_actions import _call_slow

AUTH = {"Authorization": f"Bearer {TOKEN}"}


async def _history(admin: httpx.AsyncClient, **params: str) -> dict[str, Any]:
    response = await admin.get("api/history", params=params, headers=AUTH)
    assert response.status_code == 200
    return response.json()  # type: ignore[no-any-return]


async def test_ended_requests_and_the_operators_cancel_stay_in_the_history() -> None:
    outcome: dict[str, Any] = {}
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
        tree = (await admin.get("api/tree", headers=AUTH)).json()
        (session,) = [
            s["id"] for s in tree["sessions"]["items"] if s["client"] == "history client 2.0"
        ]
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
        history.append((1.0 + number, "tools/call", f"t{number}", "ok", 0.1, None, None, context))
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
    history.append((1.0, "tools/call", "slow", "error", 1.0, "request", detail, None))
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
