"""A request's story (``/api/request``): running or ended, its arguments bounded and
redacted, its log lines, its trace link; and the rates over HTTP (``/api/rates``)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import httpx
import trio

from mcpactor.admin._story import (
    LOG_LINES,
    MAX_ARGUMENTS,
    REDACTED,
    RequestLogs,
    bounded,
    redacted,
    trace_link,
)
from mcpactor.client import ClientSession, connect_http
from mcpactor.runtime import METRICS

from .harness import TOKEN, Served, open_served

AUTH = {"Authorization": f"Bearer {TOKEN}"}
TRACE = "https://traces.example/trace/{trace_id}"
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
TRACEPARENT = f"00-{TRACE_ID}-00f067aa0ba902b7-01"


@contextlib.asynccontextmanager
async def _served(
    **admin: Any,
) -> AsyncIterator[tuple[Served, httpx.AsyncClient, ClientSession]]:
    async with (
        open_served(**admin) as served,
        httpx.AsyncClient(base_url=served.admin_url, timeout=10) as http,
        connect_http(
            served.mcp_url,
            initialize=True,
            protocol_version="2025-11-25",
            client_info={"name": "story client", "version": "1.0"},
        ) as client,
    ):
        yield served, http, client


async def _get(http: httpx.AsyncClient, path: str, **params: Any) -> dict[str, Any]:
    response = await http.get(path, params=params, headers=AUTH)
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


async def test_a_failed_request_s_story_is_redacted_with_its_logs_and_trace() -> None:
    rules = {"sign_in": ["note"]}
    async with _served(redact=rules, trace_url=TRACE) as (_, http, client):
        arguments = {"user": "ada", "password": "hunter2", "note": "private", "data": "x" * 5000}
        result = await client.call_tool("sign_in", arguments, meta={"traceparent": TRACEPARENT})
        assert result["isError"] is True
        history = await _get(http, "api/history", tool="sign_in")
        (item,) = history["items"]
        story = await _get(
            http,
            "api/request",
            session=item["session"],
            request=str(item["request"]),
            at=str(item["at"]),
        )
    assert story["state"] == "ended"
    assert story["outcome"] == "error"
    assert story["client"] == "story client 1.0"
    assert story["name"] == "sign_in"
    assert story["kept"] is True
    shown = story["arguments"]
    # The rule's field and the secret-looking key are hidden; the rest is shown, cut.
    assert "hunter2" not in shown["text"]
    assert "private" not in shown["text"]
    assert shown["text"].count(REDACTED) == 2
    assert shown["redacted"] == 2
    assert '"user": "ada"' in shown["text"]
    assert shown["cut"] is True
    assert len(shown["text"]) < 2000
    # The lines logged while it ran (the tool's, then the server's of its failure), and
    # the link of the client's trace.
    messages = [(line["level"], line["message"]) for line in story["logs"]]
    assert messages == [
        ("WARNING", "sign-in attempt by ada"),
        ("ERROR", "tool 'sign_in' failed (ValueError: wrong password)"),
    ]
    assert story["trace_id"] == TRACE_ID
    assert story["trace_url"] == f"https://traces.example/trace/{TRACE_ID}"


async def test_a_running_request_s_story_and_no_trace_link_unless_configured() -> None:
    async with _served() as (served, http, client):
        outcome: dict[str, Any] = {}

        async def progress(value: float, total: float | None, message: str | None) -> None:
            await trio.lowlevel.checkpoint()

        async def slow() -> None:
            with contextlib.suppress(Exception):
                outcome["result"] = await client.call_tool(
                    "slow",
                    {"every": 0.05},
                    meta={"traceparent": TRACEPARENT},
                    progress_handler=progress,
                )

        async with trio.open_nursery() as nursery:
            nursery.start_soon(slow)
            with trio.fail_after(10):
                await served.started.wait()
            tree = await _get(http, "api/tree", tool="slow")
            (session,) = tree["sessions"]["items"]
            (request,) = session["requests"]
            story = await _get(
                http, "api/request", session=session["id"], request=str(request["id"])
            )
            nursery.cancel_scope.cancel()
    assert story["state"] == "running"
    assert story["session"] == session["id"]
    assert story["request"] == request["id"]
    assert story["client"] == "story client 1.0"
    assert story["revision"] == "2025-11-25"
    assert story["progress"] >= 1
    assert story["message"].startswith("step ")
    assert '"every": 0.05' in story["arguments"]["text"]
    assert story["trace_id"] == TRACE_ID
    assert story["trace_url"] is None


async def test_an_unknown_request_is_a_404() -> None:
    async with _served() as (_, http, _client):
        response = await http.get(
            "api/request", params={"session": "nope", "request": "1"}, headers=AUTH
        )
    assert response.status_code == 404


async def test_the_rates_over_http() -> None:
    async with _served() as (_, http, client):
        for _ in range(5):
            await client.call_tool("echo", {"text": "hi"})
        await client.call_tool("fail", {"why": "no"})
        rates = await _get(http, "api/rates", window="60")
        echoes = await _get(http, "api/rates", tool="ECHO", client="story")
    tools = {row["name"]: row for row in rates["tools"]}
    assert tools["echo"]["requests"] == 5
    assert tools["fail"]["errors"] == 1
    assert tools["echo"]["p95"] is not None
    (client_row,) = [row for row in rates["clients"] if row["client"] == "story client 1.0"]
    assert client_row["requests"] >= 6
    assert [row["name"] for row in echoes["tools"]] == ["echo"]
    assert [row["client"] for row in echoes["clients"]] == ["story client 1.0"]


def test_arguments_are_bounded_before_they_are_formatted() -> None:
    deep: Any = "bottom"
    for _ in range(50):
        deep = {"down": deep}
    value, cut = bounded({"deep": deep, "wide": list(range(10_000)), "long": "y" * 10**6})
    assert cut is True
    assert len(value["wide"]) == 51
    assert len(value["long"]) <= 1000
    text = repr(value)
    assert len(text) < MAX_ARGUMENTS
    assert "bottom" not in text


def test_secret_looking_keys_are_redacted_at_any_depth() -> None:
    value = {
        "user": "ada",
        "max_tokens": 100,
        "tokenizer": "bpe",
        "apiKey": "k2",
        "X-Client-Secret": "s",
        "api_key": "k",
        "nested": {"Authorization": "Bearer x", "ok": 1, "list": [{"token": "t"}]},
        "plain": {"field": "shown", "hidden": "by rule"},
    }
    shown, count = redacted(value, ["plain.hidden"])
    assert shown["user"] == "ada"
    assert shown["api_key"] == REDACTED
    assert shown["apiKey"] == REDACTED
    assert shown["X-Client-Secret"] == REDACTED
    assert shown["max_tokens"] == 100
    assert shown["tokenizer"] == "bpe"
    assert shown["nested"]["Authorization"] == REDACTED
    assert shown["nested"]["list"][0]["token"] == REDACTED
    assert shown["nested"]["ok"] == 1
    assert shown["plain"] == {"field": "shown", "hidden": REDACTED}
    assert count == 6


def test_a_trace_link_needs_a_template_and_a_trace_id() -> None:
    assert trace_link(TRACE, TRACE_ID) == f"https://traces.example/trace/{TRACE_ID}"
    assert trace_link(None, TRACE_ID) is None
    assert trace_link(TRACE, None) is None
    assert trace_link(TRACE, 'not-hex"><script>') is None


def test_log_lines_are_bounded_per_request_and_in_requests() -> None:
    import logging

    from mcpactor.runtime import LOG_CONTEXT

    logs = RequestLogs()
    logger = logging.getLogger("test.story.bounded")
    logger.propagate = False
    logger.addHandler(logs)
    logger.setLevel(logging.INFO)
    try:
        token = LOG_CONTEXT.set(("s", 1, "tools/call"))
        for index in range(LOG_LINES * 2):
            logger.info("line %d %s", index, "z" * 5000)
        LOG_CONTEXT.reset(token)
        logger.info("outside any request")
    finally:
        logger.removeHandler(logs)
    lines = logs.lines("s", "1")
    assert len(lines) == LOG_LINES
    assert lines[0]["message"].startswith("line 0 ")
    assert all(len(line["message"]) <= 1000 for line in lines)
    assert logs.lines(None, "1") == []


async def test_the_story_and_the_rates_need_the_credential() -> None:
    async with _served() as (_, http, _client):
        for path in ("api/request?session=x&request=1", "api/rates"):
            response = await http.get(path)
            assert response.status_code == 401, path


async def test_a_task_s_story_while_it_runs_and_once_it_ended() -> None:
    async with _served() as (_, http, client):
        task = await client.tasks.call_tool("job", {})
        task_id = task["taskId"]
        running = await _get(http, "api/request", task=task_id)
        cancel = await http.post("api/actions/cancel-task", json={"task": task_id}, headers=AUTH)
        assert cancel.json()["done"] is True
        ended = await _get(http, "api/request", task=task_id)
        missing = await http.get("api/request", params={"task": "no-such-task"}, headers=AUTH)
    assert running["kind"] == "task"
    assert running["state"] == "running"
    assert running["status"] == "working"
    assert running["client"] == "story client 1.0"
    assert running["ttl_left"] is None or running["ttl_left"] > 0
    assert ended["state"] == "ended"
    assert ended["status"] == "cancelled"
    assert ended["outcome"] == "cancelled"
    assert ended["seconds"] >= 0
    assert missing.status_code == 404


async def test_a_session_s_client_is_learned_when_its_first_request_ends() -> None:
    async with (
        open_served() as served,
        httpx.AsyncClient(base_url=served.admin_url, timeout=10) as http,
    ):
        async with connect_http(
            served.mcp_url,
            initialize=True,
            protocol_version="2025-11-25",
            client_info={"name": "brief client", "version": "9"},
        ) as client:
            await client.call_tool("echo", {"text": "once"})
            # Known before anyone reads the history or the rates (which would teach
            # them the live sessions): a session that is gone by then keeps its name.
            rates, history = METRICS.rates, METRICS.history
            assert rates is not None
            assert history is not None
            assert list(rates.clients.values()) == ["brief client 9"]
            assert [who for who, _ in history._known.values()] == ["brief client 9"]
        items = (await _get(http, "api/history", tool="echo"))["items"]
        read = await _get(http, "api/rates")
    assert [item["client"] for item in items] == ["brief client 9"]
    assert [row["client"] for row in read["clients"]] == ["brief client 9"]
