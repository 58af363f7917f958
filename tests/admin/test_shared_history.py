"""The history shared by replicas through the store: ``/api/history`` merges the other
replicas' entries with this one's, each naming its replica, with the same filters; a
store out of reach leaves this replica's own and says so; two ``mcpactor serve --store
--admin`` processes each list a call the other served."""

from __future__ import annotations

import contextlib
import functools
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import coredis
import httpx
import pytest
import trio

from mcpactor.admin import create_admin_app
from mcpactor.cli._top import render_history
from mcpactor.client import connect_http
from mcpactor.runtime import METRICS, Observatory
from mcpactor.store import RedisSharedHistory

from ..store.conftest import (  # noqa: F401
    free_port,
    redis,
    redis_port,
    redis_socket,
)
from ..store.test_sessions import ignoring_unclosed_buffers
from .browser import CHROMIUM, signed_in_page
from .served_process import start_with_admin
from .test_replicas_view import AUTH, TOKEN, _serve_with_admin, _stop


def _entry(at: float, request: int, outcome: str = "ok", name: str = "echo") -> dict[str, Any]:
    return {
        "at": at,
        "method": "tools/call",
        "name": name,
        "outcome": outcome,
        "seconds": 0.5,
        "error": "tool" if outcome == "error" else None,
        "detail": "the disk is full" if outcome == "error" else None,
        "session": "other-session",
        "request": request,
        "client": "far client 1.0",
        "principal": None,
        "cancelled_by": None,
        "trace_id": None,
    }


@pytest.fixture
async def observatory() -> AsyncIterator[Observatory]:
    # This replica's own ring, with one call of its own in it.
    observatory = Observatory(replica="here")
    observatory.install()
    history = METRICS.keep_history()
    history.append((50.0, "tools/call", "echo", "ok", 0.001, None, None,
                    ("my-session", 7, "tools/call"), None, None))  # fmt: skip
    yield observatory
    METRICS.drop_history()


async def test_the_history_merges_every_replicas_entries(
    redis: coredis.Redis[bytes],  # noqa: F811
    observatory: Observatory,
) -> None:
    there = RedisSharedHistory(redis, replica="there")
    cancel = {
        "at": 62.0,
        "action": "cancel-request",
        "target": {"session": "other-session", "request": 3},
        "who": "token",
        "from": "10.0.0.9",
        "result": "done",
    }
    await there.write(
        [_entry(40.0, 1), _entry(60.0, 2, "error", "slow"), _entry(63.0, 3, "cancelled")],
        [cancel],
    )
    app = create_admin_app(
        observatory, token=TOKEN, shared_history=RedisSharedHistory(redis, replica="here")
    )
    client = app.test_client()
    answer = await (await client.get("/api/history", headers=AUTH)).get_json()
    assert answer["shared"] == {"self": "here", "size": 1000, "unavailable": False}
    # The newest first, from both replicas, each naming its own.
    rows = [(item["replica"], item["request"], item["outcome"]) for item in answer["items"]]
    assert rows == [
        ("there", 3, "cancelled"),
        ("there", 2, "error"),
        ("here", 7, "ok"),
        ("there", 1, "ok"),
    ]
    assert answer["items"][0]["cancelled_by"] == "the operator (token, from 10.0.0.9)"
    assert answer["items"][1]["detail"] == "the disk is full"
    assert [(entry["replica"], entry["action"]) for entry in answer["audit"]] == [
        ("there", "cancel-request")
    ]
    # The same filters as one replica's.
    failed = await client.get("/api/history?outcome=error", headers=AUTH)
    assert [item["request"] for item in (await failed.get_json())["items"]] == [2]
    slow = await client.get("/api/history?tool=slow", headers=AUTH)
    assert [item["request"] for item in (await slow.get_json())["items"]] == [2]
    found = await client.get("/api/history?find=my-sess", headers=AUTH)
    assert [item["replica"] for item in (await found.get_json())["items"]] == ["here"]
    two = await client.get("/api/history?limit=2", headers=AUTH)
    assert [item["request"] for item in (await two.get_json())["items"]] == [3, 2]
    # This replica's entries are its ring's, not the store's copy of them (no doubles).
    await RedisSharedHistory(redis, replica="here").write([_entry(50.0, 7)])
    again = await (await client.get("/api/history", headers=AUTH)).get_json()
    assert [item["request"] for item in again["items"]].count(7) == 1


async def test_without_a_store_the_history_is_this_process_alone(
    observatory: Observatory,
) -> None:
    client = create_admin_app(observatory, token=TOKEN).test_client()
    answer = await (await client.get("/api/history", headers=AUTH)).get_json()
    assert "shared" not in answer
    assert [set(item) >= {"request"} and "replica" not in item for item in answer["items"]] == [
        True
    ]


async def test_a_store_out_of_reach_leaves_this_replicas_history(
    observatory: Observatory,
) -> None:
    with ignoring_unclosed_buffers():
        store: coredis.Redis[bytes] = coredis.Redis(
            host="127.0.0.1", port=free_port(), connect_timeout=1, stream_timeout=1
        )
        async with store:
            shared = RedisSharedHistory(store, replica="here")
            client = create_admin_app(
                observatory, token=TOKEN, shared_history=shared
            ).test_client()
            with trio.fail_after(10):
                response = await client.get("/api/history", headers=AUTH)
            assert response.status_code == 200
            answer = await response.get_json()
    assert answer["shared"]["unavailable"] is True
    assert [(item["replica"], item["request"]) for item in answer["items"]] == [("here", 7)]


async def _history_lists(
    admin: httpx.AsyncClient, tool: str, replica: str, within: float = 20
) -> Any:
    # The shared part is written once a second: ask until the replica's call is listed.
    with trio.fail_after(within):
        while True:
            answer = await admin.get("api/history", params={"tool": tool}, headers=AUTH)
            assert answer.status_code == 200, answer.text
            history = answer.json()
            if any(item.get("replica") == replica for item in history["items"]):
                return history
            await trio.sleep(0.2)


@contextlib.asynccontextmanager
async def _served_by_the_first(tmp_path: Path, store_port: int) -> AsyncIterator[tuple[str, str]]:
    # Two replicas sharing the store; a failing call served by the first: yields (the
    # first's replica id, the second's admin page).
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    first, first_admin, mcp_url = await _start_replica(store_port, token_file)
    try:
        second, second_admin, _ = await _start_replica(store_port, token_file)
        try:
            async with httpx.AsyncClient(base_url=first_admin, timeout=10) as admin:
                first_id = (await admin.get("api/replicas", headers=AUTH)).json()["self"]
            async with connect_http(
                mcp_url,
                initialize=True,
                protocol_version="2025-11-25",
                client_info={"name": "shared history client", "version": "3.0"},
            ) as client:
                await client.call_tool("time_between", {"start": "2026-01-01", "end": "nope"})
            yield first_id, second_admin
        finally:
            await _stop(second)
    finally:
        await _stop(first)


async def test_a_call_served_by_one_replica_is_in_the_others_history(
    tmp_path: Path,
    redis_port: int,  # noqa: F811
) -> None:
    async with (
        _served_by_the_first(tmp_path, redis_port) as (first_id, second_admin),
        httpx.AsyncClient(base_url=second_admin, timeout=10) as admin,
    ):
        history = await _history_lists(admin, "time_between", first_id)
        (item,) = [item for item in history["items"] if item["replica"] == first_id]
        # Its story, asked of the replica that did not serve it: the one the first shared.
        query = {
            "session": item["session"],
            "request": str(item["request"]),
            "at": str(item["at"]),
            "replica": first_id,
        }
        told = (await admin.get("api/request", params=query, headers=AUTH)).json()
        missing = {**query, "request": "999999"}
        absent = await admin.get("api/request", params=missing, headers=AUTH)
    assert history["shared"]["unavailable"] is False
    assert history["shared"]["self"] != first_id
    assert item["outcome"] == "error"
    assert item["client"] == "shared history client 3.0"
    assert told["state"] == "ended"
    assert told["replica"] == first_id
    assert told["kept"] is True
    assert '"end": "nope"' in told["arguments"]["text"]
    assert told["detail"] == item["detail"]
    assert absent.status_code == 404


def _read_page(admin_url: str, seen: dict[str, Any]) -> None:
    # In a worker thread: sign in and read the history as a person would see it.
    with signed_in_page(admin_url, TOKEN) as (page, _):
        page.goto(admin_url + "?tool=time_between")
        page.locator("#history-table tbody tr").first.wait_for()
        seen["rows"] = page.locator("#history-table tbody tr").all_inner_texts()
        seen["note"] = page.inner_text("#history-note")
        seen["details"] = page.locator("#history-table tbody tr button").count()
        # Another replica's row opens the story it shared, at the first press.
        row = page.locator("#history-table tbody tr", has_text=seen["first"])
        box = row.locator("button").first.bounding_box()
        assert box is not None
        page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        page.mouse.down()
        page.wait_for_timeout(250)  # a person holding the button down
        page.mouse.up()
        page.locator("dialog#story[open]").wait_for()
        seen["story facts"] = page.locator("#story-facts").inner_text()
        seen["story arguments"] = page.locator("#story-arguments").inner_text()


@pytest.mark.skipif(shutil.which(CHROMIUM) is None, reason=f"no Chromium at {CHROMIUM}")
async def test_the_page_lists_another_replicas_call(
    tmp_path: Path,
    redis_port: int,  # noqa: F811
) -> None:
    pytest.importorskip("playwright.sync_api")
    seen: dict[str, Any] = {}
    async with (
        _served_by_the_first(tmp_path, redis_port) as (first_id, second_admin),
        httpx.AsyncClient(base_url=second_admin, timeout=10) as admin,
    ):
        await _history_lists(admin, "time_between", first_id)
        seen["first"] = first_id
        with trio.fail_after(90):
            await trio.to_thread.run_sync(functools.partial(_read_page, second_admin, seen))
    # The store outlives the replicas of the test before: this one's call is the row
    # naming the replica that served it.
    (row,) = [row for row in seen["rows"] if first_id in row]
    assert "tools/call time_between" in row
    assert f"shared history client 3.0 on {first_id}" in row
    assert all("time_between" in row for row in seen["rows"])
    assert "of every replica" in seen["note"]
    assert seen["details"] >= 1, "another replica's row opens the story it shared"
    assert f"Replica{first_id}" in seen["story facts"].replace("\n", "")
    assert "nope" in seen["story arguments"]


async def _start_replica(store_port: int, token_file: Path) -> tuple[trio.Process, str, str]:
    # One replica: (its process, its admin page, its MCP endpoint).
    command = _serve_with_admin(store_port, token_file)
    process, endpoint, page = await start_with_admin(command, 30)
    return process, page, endpoint


def test_top_names_each_entrys_replica_and_an_unavailable_store() -> None:
    history = {"kept": True, "size": 1000, "items": [{**_entry(1.0, 4), "replica": "there"}]}
    shared = {**history, "shared": {"self": "here", "size": 1000, "unavailable": False}}
    text = render_history(shared)
    assert "of every replica" in text
    assert "on there" in text
    shared["shared"] = {"self": "here", "size": 1000, "unavailable": True}
    assert "the shared history is unavailable" in render_history(shared)
    assert "replica" not in render_history({**history, "items": [_entry(1.0, 4)]})
