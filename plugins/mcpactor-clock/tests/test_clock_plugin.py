"""The clock server, driven through an in-memory client and a real session."""

from __future__ import annotations

import importlib.metadata
import json
import logging
import time
import zoneinfo
from collections.abc import AsyncIterator, Iterator
from datetime import datetime
from typing import Any, Final

import mcpactor_clock
import pytest
import trio
import trio.testing

import mcpactor.testing
from mcpactor import RequestError
from mcpactor.client import ClientSession

# Long enough for every legitimate (virtual) wait; a hang fails instead of blocking.
GUARD: Final = 1000.0


@pytest.fixture(autouse=True)
def settings() -> Iterator[mcpactor_clock.ClockConfig]:
    yield mcpactor_clock.configure(max_countdown=3600)
    mcpactor_clock.configure(max_countdown=3600)


@pytest.fixture
async def client() -> AsyncIterator[ClientSession]:
    async with mcpactor.testing.client(mcpactor_clock.server) as session:
        yield session


def text_of(result: dict[str, Any]) -> str:
    [block] = result["content"]
    assert block["type"] == "text"
    text: str = block["text"]
    return text


async def call_ok(client: ClientSession, tool: str, **arguments: Any) -> Any:
    result = await client.call_tool(tool, arguments)
    assert not result.get("isError"), result
    return result["structuredContent"]


async def call_error(client: ClientSession, tool: str, **arguments: Any) -> str:
    result = await client.call_tool(tool, arguments)
    assert result.get("isError") is True, result
    return text_of(result)


def test_the_entry_point_names_the_server() -> None:
    [entry] = [
        ep
        for ep in importlib.metadata.entry_points(group="mcpactor.servers")
        if ep.name == "clock"
    ]
    assert entry.load() is mcpactor_clock.server


async def test_tools_are_listed_with_their_schemas(client: ClientSession) -> None:
    tools = {tool["name"]: tool for tool in await client.list_tools()}
    assert set(tools) == {"now", "convert", "time_between", "countdown"}
    now = tools["now"]
    assert now["inputSchema"]["properties"]["timezone"]["default"] == "UTC"
    assert set(now["outputSchema"]["properties"]) == {"iso", "unix", "timezone"}
    assert tools["countdown"]["inputSchema"]["required"] == ["seconds"]
    assert all(tool["annotations"]["readOnlyHint"] for tool in tools.values())


@pytest.mark.parametrize("revision", mcpactor.testing.SESSION_REVISIONS)
async def test_every_revision_gets_the_time_and_the_countdown(
    revision: str, autojump_clock: trio.testing.MockClock
) -> None:
    updates: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        updates.append(progress)

    async with mcpactor.testing.client(mcpactor_clock.server, protocol_version=revision) as c:
        result = await c.call_tool("now", {"timezone": "Asia/Tokyo"})
        # Revisions before structured content still get the JSON text.
        assert json.loads(text_of(result))["timezone"] == "Asia/Tokyo"
        assert ("structuredContent" in result) is (revision >= "2025-06-18")
        await c.call_tool("countdown", {"seconds": 2}, progress_handler=on_progress)
    assert updates == [1, 2]


# --- now -------------------------------------------------------------------------------


@pytest.mark.parametrize("zone", ["UTC", "Europe/Oslo", "Asia/Kolkata", "America/St_Johns"])
async def test_now_is_the_current_time_in_the_zone(client: ClientSession, zone: str) -> None:
    before = time.time()
    instant = await call_ok(client, "now", timezone=zone)
    after = time.time()
    assert instant["timezone"] == zone
    assert before <= instant["unix"] <= after
    parsed = datetime.fromisoformat(instant["iso"])
    assert parsed.timestamp() == pytest.approx(instant["unix"], abs=1e-6)
    assert parsed.utcoffset() == zoneinfo.ZoneInfo(zone).utcoffset(parsed)


async def test_now_defaults_to_utc(client: ClientSession) -> None:
    instant = await call_ok(client, "now")
    assert instant["timezone"] == "UTC"
    assert instant["iso"].endswith("+00:00")


async def test_an_unknown_zone_says_how_to_find_valid_names(client: ClientSession) -> None:
    message = await call_error(client, "now", timezone="Mars/Olympus_Mons")
    assert "unknown time zone 'Mars/Olympus_Mons'" in message
    assert "clock://timezones" in message
    assert "Europe/Oslo" in message  # an example of a valid name


@pytest.mark.parametrize(
    ("typed", "suggested"),
    [
        ("europe/oslo", "did you mean 'Europe/Oslo'? (names are case-sensitive)"),
        ("Europe/Olso", "did you mean 'Europe/Oslo'"),
    ],
)
async def test_a_misspelt_zone_gets_a_suggestion(
    client: ClientSession, typed: str, suggested: str
) -> None:
    assert suggested in await call_error(client, "now", timezone=typed)


@pytest.mark.parametrize("bad", ["", "../../etc/passwd", "Europe", "/usr/share/zoneinfo/UTC"])
async def test_zone_names_that_are_not_keys_are_refused(client: ClientSession, bad: str) -> None:
    assert f"unknown time zone {bad!r}" in await call_error(client, "now", timezone=bad)


# --- convert -----------------------------------------------------------------------------


async def test_convert_reads_a_naive_time_in_the_source_zone(client: ClientSession) -> None:
    instant = await call_ok(
        client,
        "convert",
        time="2025-01-15T09:00",
        from_zone="Europe/Oslo",
        to_zone="America/New_York",
    )
    assert instant == {
        "iso": "2025-01-15T03:00:00-05:00",
        "unix": datetime.fromisoformat("2025-01-15T08:00:00+00:00").timestamp(),
        "timezone": "America/New_York",
    }


async def test_convert_reads_a_time_with_an_offset_as_written(client: ClientSession) -> None:
    instant = await call_ok(
        client, "convert", time="2025-07-01T12:00Z", from_zone="Asia/Tokyo", to_zone="Europe/Oslo"
    )
    # Summer time in Oslo: UTC+2. The offset won over from_zone.
    assert instant["iso"] == "2025-07-01T14:00:00+02:00"


async def test_convert_refuses_a_time_the_clocks_skip(client: ClientSession) -> None:
    message = await call_error(
        client, "convert", time="2025-03-30T02:30", from_zone="Europe/Oslo", to_zone="UTC"
    )
    assert "2025-03-30T02:30:00 does not exist in Europe/Oslo" in message


async def test_convert_takes_the_first_of_an_ambiguous_time(client: ClientSession) -> None:
    # 02:30 happens twice on 2025-10-26 in Oslo; the first is still summer time (UTC+2).
    instant = await call_ok(
        client, "convert", time="2025-10-26T02:30", from_zone="Europe/Oslo", to_zone="UTC"
    )
    assert instant["iso"] == "2025-10-26T00:30:00+00:00"


async def test_convert_explains_a_time_it_cannot_read(client: ClientSession) -> None:
    message = await call_error(
        client, "convert", time="next tuesday", from_zone="UTC", to_zone="UTC"
    )
    assert "time 'next tuesday' is not an ISO 8601 time" in message


async def test_convert_checks_both_zones(client: ClientSession) -> None:
    message = await call_error(
        client, "convert", time="2025-01-01T00:00", from_zone="UTC", to_zone="Nowhere/Land"
    )
    assert "unknown time zone 'Nowhere/Land'" in message


# --- time_between ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("start", "end", "seconds", "description"),
    [
        ("2025-01-01T00:00", "2025-01-02T02:05", 93900.0, "1 day, 2 hours and 5 minutes"),
        ("2025-01-01T00:00", "2025-01-01T00:00:01.5", 1.5, "1.5 seconds"),
        ("2025-01-01T00:00", "2025-01-01T00:00", 0.0, "0 seconds"),
        ("2025-01-01T10:00", "2025-01-01T09:00", -3600.0, "1 hour (end is before start)"),
        # Offsets count: 12:00+02:00 is 10:00 UTC.
        ("2025-01-01T12:00+02:00", "2025-01-01T10:00Z", 0.0, "0 seconds"),
    ],
)
async def test_time_between(
    client: ClientSession, start: str, end: str, seconds: float, description: str
) -> None:
    duration = await call_ok(client, "time_between", start=start, end=end)
    assert duration == {"seconds": seconds, "description": description}


# --- countdown -----------------------------------------------------------------------------


async def test_countdown_reports_progress_every_second(
    client: ClientSession, autojump_clock: trio.testing.MockClock
) -> None:
    updates: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        updates.append((progress, total, message))

    start = trio.current_time()
    result = await client.call_tool("countdown", {"seconds": 3}, progress_handler=on_progress)
    assert trio.current_time() - start == 3
    assert text_of(result) == "countdown of 3 s finished"
    assert updates == [(1, 3, "2 s left"), (2, 3, "1 s left"), (3, 3, "0 s left")]


async def test_countdown_stops_the_moment_it_is_cancelled(
    client: ClientSession,
    autojump_clock: trio.testing.MockClock,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="mcpactor_clock")
    updates: list[float] = []
    start = trio.current_time()
    with trio.CancelScope() as scope:

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            updates.append(progress)
            if progress == 3:
                scope.cancel()

        await client.call_tool("countdown", {"seconds": 10}, progress_handler=on_progress)
    assert scope.cancelled_caught
    assert updates == [1, 2, 3]

    # The tool's finally tells the client where it stopped, without any more time passing.
    with trio.fail_after(GUARD):
        logged = await client.notifications.wait_for("notifications/message")
    assert logged.params == {
        "level": "info",
        "logger": "clock",
        "data": "countdown stopped after 3 of 10 s",
    }
    assert trio.current_time() - start == 3
    assert "countdown stopped after 3 of 10 s" in caplog.messages
    # No more progress and no response: the request is over.
    await trio.testing.wait_all_tasks_blocked()
    assert client.statistics().requests_pending == {}
    progress = [n for n in client.notifications.received if n.method == "notifications/progress"]
    assert len(progress) == 3
    # The session carries on.
    assert (await call_ok(client, "now"))["timezone"] == "UTC"


async def test_countdown_is_bounded(client: ClientSession) -> None:
    mcpactor_clock.configure(max_countdown=5)
    assert "between 0 and 5, got 6" in await call_error(client, "countdown", seconds=6)
    assert "between 0 and 5, got -1" in await call_error(client, "countdown", seconds=-1)
    assert text_of(await client.call_tool("countdown", {"seconds": 0})) == (
        "countdown of 0 s finished"
    )


def test_configure_reads_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCPACTOR_CLOCK_MAX_COUNTDOWN", "42")
    assert mcpactor_clock.configure().max_countdown == 42
    monkeypatch.setenv("MCPACTOR_CLOCK_MAX_COUNTDOWN", "soon")
    with pytest.raises(ValueError, match="MCPACTOR_CLOCK_MAX_COUNTDOWN must be a whole number"):
        mcpactor_clock.configure()
    with pytest.raises(ValueError, match="at least 0"):
        mcpactor_clock.configure(max_countdown=-1)


# --- resources, prompts, completion ------------------------------------------------------


async def test_the_timezones_resource_lists_every_zone(client: ClientSession) -> None:
    resources = await client.list_resources()
    assert [r["uri"] for r in resources] == ["clock://timezones"]
    [content] = (await client.read_resource("clock://timezones"))["contents"]
    assert content["mimeType"] == "application/json"
    names = json.loads(content["text"])
    assert names == sorted(zoneinfo.available_timezones())
    assert "Europe/Oslo" in names


async def test_the_now_template_reads_the_time_in_a_zone(client: ClientSession) -> None:
    [template] = await client.list_resource_templates()
    assert template["uriTemplate"] == "clock://now/{+timezone}"
    [content] = (await client.read_resource("clock://now/Asia/Tokyo"))["contents"]
    instant = json.loads(content["text"])
    assert instant["timezone"] == "Asia/Tokyo"
    assert instant["iso"].endswith("+09:00")

    with pytest.raises(RequestError) as info:
        await client.read_resource("clock://now/Atlantis")
    assert info.value.code == -32602
    assert "unknown time zone 'Atlantis'" in info.value.message


async def test_timezone_arguments_complete_by_prefix(client: ClientSession) -> None:
    template = {"type": "ref/resource", "uri": "clock://now/{+timezone}"}
    result = await client.complete(template, {"name": "timezone", "value": "Europe/Os"})
    assert result["completion"]["values"] == ["Europe/Oslo"]

    prompt = {"type": "ref/prompt", "name": "plan_meeting"}
    result = await client.complete(prompt, {"name": "to_zone", "value": "america/new"})
    assert result["completion"]["values"] == ["America/New_York"]
    # A city alone finds its zone, after any name that starts with it.
    result = await client.complete(prompt, {"name": "from_zone", "value": "osl"})
    assert result["completion"]["values"] == ["Europe/Oslo"]

    everything = await client.complete(template, {"name": "timezone", "value": ""})
    completion = everything["completion"]
    assert len(completion["values"]) == 100
    assert completion["hasMore"] is True
    assert completion["total"] == len(zoneinfo.available_timezones())


async def test_plan_meeting_prompt(client: ClientSession) -> None:
    result = await client.get_prompt(
        "plan_meeting",
        {"time": "2025-06-01T14:00", "from_zone": "Europe/Oslo", "to_zone": "Asia/Tokyo"},
    )
    [message] = result["messages"]
    assert message["role"] == "user"
    text = message["content"]["text"]
    assert "2025-06-01T14:00 in Europe/Oslo" in text
    assert "convert tool" in text
    assert "Asia/Tokyo" in text


# --- the countdown as a task (2025-11-25) --------------------------------------------------

RELATED: Final = "io.modelcontextprotocol/related-task"


async def test_the_countdown_is_offered_as_a_task(client: ClientSession) -> None:
    assert client.server.capabilities["tasks"]["requests"] == {"tools": {"call": {}}}
    tools = {tool["name"]: tool for tool in await client.list_tools()}
    assert tools["countdown"]["execution"] == {"taskSupport": "optional"}
    # The other tools are quick: they stay plain calls.
    support = [t.get("execution", {}).get("taskSupport", "forbidden") for t in tools.values()]
    assert sorted(support) == ["forbidden", "forbidden", "forbidden", "optional"]


async def test_a_countdown_task_reports_progress_and_ends_with_the_plain_result(
    client: ClientSession, autojump_clock: trio.testing.MockClock
) -> None:
    start = trio.current_time()
    task = await client.tasks.call_tool(
        "countdown", {"seconds": 3}, ttl=60_000, meta={"progressToken": "tick"}
    )
    task_id = task["taskId"]
    # Answered at once; the countdown goes on in the server.
    assert task["status"] == "working"
    assert trio.current_time() == start

    result = await client.tasks.result(task_id)
    assert trio.current_time() - start == 3
    assert text_of(result) == "countdown of 3 s finished"
    assert result["_meta"] == {RELATED: {"taskId": task_id}}
    assert (await client.tasks.get(task_id))["status"] == "completed"
    progress = [
        n.params for n in client.notifications.received if n.method == "notifications/progress"
    ]
    assert [(p["progressToken"], p["progress"], p["total"]) for p in progress if p] == [
        ("tick", 1, 3),
        ("tick", 2, 3),
        ("tick", 3, 3),
    ]


async def test_cancelling_a_countdown_task_stops_it_at_once(
    client: ClientSession, autojump_clock: trio.testing.MockClock
) -> None:
    start = trio.current_time()
    task_id = (await client.tasks.call_tool("countdown", {"seconds": 10}))["taskId"]
    await trio.sleep(3.5)
    cancelled = await client.tasks.cancel(task_id)
    assert cancelled["status"] == "cancelled"

    with trio.fail_after(GUARD):
        logged = await client.notifications.wait_for("notifications/message")
    assert logged.params is not None
    assert logged.params["data"] == "countdown stopped after 3 of 10 s"
    assert logged.params["_meta"] == {RELATED: {"taskId": task_id}}
    assert trio.current_time() - start == 3.5
    with pytest.raises(RequestError) as info:
        await client.tasks.result(task_id)
    assert info.value.data == {"taskId": task_id, "status": "cancelled"}
    # The session carries on.
    assert (await call_ok(client, "now"))["timezone"] == "UTC"
