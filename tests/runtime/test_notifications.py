"""What the session sends on its own: progress, log messages, list and resource changes."""

from __future__ import annotations

from typing import Any

import pytest

from mcpactor import Context, Server
from mcpactor.protocol import LOG_LEVELS
from mcpactor.runtime import SessionOptions

from .conftest import SESSION_REVISIONS, SessionHarness, assert_idle, open_session, tool_text


def progress_server() -> Server:
    server = Server("progress")

    @server.tool()
    async def steps(values: list[float], ctx: Context) -> str:
        """Report each value as progress out of 10."""
        for value in values:
            await ctx.report_progress(value, 10, f"at {value:g}")
        return "done"

    return server


def methods(h: SessionHarness, items: list[Any]) -> list[str]:
    return [item.payload.get("method") for item in items]


# --- progress ---------------------------------------------------------------------


@pytest.mark.parametrize("token", ["job-1", 7, 0])
async def test_progress_echoes_the_token_with_its_json_type(token: str | int) -> None:
    async with open_session(progress_server()) as h:
        await h.initialize()
        request = await h.start_tool("steps", {"values": [1, 5]}, meta={"progressToken": token})
        seen = []
        for _ in range(2):
            item = await h.notification("notifications/progress")
            assert item.related_request_id == request
            params = item.payload["params"]
            assert params["progressToken"] == token
            assert type(params["progressToken"]) is type(token)
            seen.append((params["progress"], params["total"], params["message"]))
        assert seen == [(1, 10, "at 1"), (5, 10, "at 5")]
        assert tool_text(await h.result_of(request)) == "done"


async def test_no_progress_without_a_progress_token() -> None:
    async with open_session(progress_server()) as h:
        await h.initialize()
        assert tool_text(await h.call_tool("steps", {"values": [1, 2, 3]})) == "done"
        await h.expect_nothing()
        # Other _meta fields do not count as asking for progress.
        await h.call_tool("steps", {"values": [1]}, meta={"other": "x"})
        await h.expect_nothing()
        assert "notifications/progress" not in methods(h, h.received)


async def test_progress_that_does_not_increase_is_dropped() -> None:
    async with open_session(progress_server()) as h:
        await h.initialize()
        request = await h.start_tool(
            "steps", {"values": [1, 1, 0.5, 2, 2, 9.5]}, meta={"progressToken": "t"}
        )
        await h.result_of(request)
        sent = [
            item.payload["params"]["progress"]
            for item in h.received
            if item.payload.get("method") == "notifications/progress"
        ]
        assert sent == [1, 2, 9.5]


@pytest.mark.parametrize("revision", SESSION_REVISIONS)
async def test_progress_message_only_at_revisions_that_have_it(revision: str) -> None:
    async with open_session(progress_server()) as h:
        await h.initialize(revision)
        request = await h.start_tool("steps", {"values": [3]}, meta={"progressToken": 1})
        params = (await h.notification("notifications/progress")).payload["params"]
        expected: dict[str, object] = {"progressToken": 1, "progress": 3, "total": 10}
        if revision != "2024-11-05":
            expected["message"] = "at 3"
        assert params == expected
        await h.result_of(request)


# --- logging ----------------------------------------------------------------------


def logging_server() -> Server:
    server = Server("logs")

    @server.tool()
    async def log_all(ctx: Context) -> str:
        """Log one message at every level."""
        for level in LOG_LEVELS:
            await ctx.log(level, {"level": level}, logger="harness")
        return "logged"

    return server


async def logged_levels(h: SessionHarness) -> list[str]:
    request = await h.start_tool("log_all")
    await h.result_of(request)
    await h.pending()
    items = [item for item in h.received if item.payload.get("method") == "notifications/message"]
    assert all(item.related_request_id == request for item in items)
    assert all(item.payload["params"]["logger"] == "harness" for item in items)
    h.received.clear()
    return [item.payload["params"]["level"] for item in items]


async def test_log_messages_are_filtered_by_the_default_level() -> None:
    async with open_session(logging_server()) as h:
        await h.initialize()
        assert await logged_levels(h) == list(LOG_LEVELS[1:])  # everything but debug


async def test_the_default_log_level_comes_from_the_options() -> None:
    async with open_session(logging_server(), SessionOptions(log_level="critical")) as h:
        await h.initialize()
        assert await logged_levels(h) == ["critical", "alert", "emergency"]


async def test_set_level_changes_what_is_logged() -> None:
    async with open_session(logging_server()) as h:
        await h.initialize()
        assert await h.request("logging/setLevel", {"level": "error"}) == {}
        assert await logged_levels(h) == ["error", "critical", "alert", "emergency"]
        assert await h.request("logging/setLevel", {"level": "debug"}) == {}
        assert await logged_levels(h) == list(LOG_LEVELS)
        error = await h.error_of(await h.send_request("logging/setLevel", {"level": "loud"}))
        assert error["code"] == -32602
        assert await logged_levels(h) == list(LOG_LEVELS)  # unchanged


async def test_log_data_is_sent_as_given() -> None:
    server = Server("data")

    @server.tool()
    async def log_it(ctx: Context) -> str:
        """Log structured data without a logger name."""
        await ctx.warning({"nested": [1, "two", None]})
        return "ok"

    async with open_session(server) as h:
        await h.initialize()
        await h.call_tool("log_it")
        item = await h.notification("notifications/message")
        assert item.payload["params"] == {"level": "warning", "data": {"nested": [1, "two", None]}}


# --- list_changed -------------------------------------------------------------------


def growing_server() -> Server:
    server = Server("growing")
    added = 0

    @server.tool()
    async def grow(ctx: Context) -> str:
        """Add two tools and remove one, all at once."""
        nonlocal added
        names = [f"extra_{added}", f"extra_{added + 1}"]
        added += 2

        async def extra() -> str:
            return "extra"

        for name in names:
            ctx.server.add_tool(extra, name=name)
        ctx.server.remove_tool(names[0])
        return names[1]

    return server


async def test_adding_and_removing_tools_sends_one_list_changed_per_burst() -> None:
    async with open_session(growing_server()) as h:
        await h.initialize()
        assert tool_text(await h.call_tool("grow")) == "extra_1"
        assert methods(h, await h.pending()) == ["notifications/tools/list_changed"]
        names = [tool["name"] for tool in (await h.request("tools/list"))["tools"]]
        assert names == ["grow", "extra_1"]
        # Every burst gets its own notification.
        assert tool_text(await h.call_tool("grow")) == "extra_3"
        assert methods(h, await h.pending()) == ["notifications/tools/list_changed"]
        assert_idle(h.actor)


async def test_list_changed_is_not_sent_before_initialized() -> None:
    async with open_session(growing_server()) as h:
        await h.initialize(initialized=False)
        await h.call_tool("grow")
        await h.expect_nothing()
        # The client lists everything after initializing: older changes are old news.
        await h.notify("notifications/initialized")
        await h.expect_nothing()
        await h.call_tool("grow")
        assert methods(h, await h.pending()) == ["notifications/tools/list_changed"]


async def test_list_changed_only_for_lists_the_server_declared() -> None:
    server = growing_server()

    @server.tool()
    async def add_prompt(ctx: Context) -> str:
        """Add the server's first prompt."""

        async def greeting() -> str:
            return "hello"

        ctx.server.add_prompt(greeting)
        return "added"

    async with open_session(server) as h:
        result = await h.initialize()
        assert "prompts" not in result["capabilities"]
        await h.call_tool("add_prompt")
        await h.expect_nothing()


async def test_changes_made_outside_any_request_reach_every_session() -> None:
    server = growing_server()
    async with open_session(server) as one, open_session(server) as two:
        await one.initialize()
        await two.initialize()

        async def later() -> str:
            return "later"

        server.add_tool(later)
        assert methods(one, await one.pending()) == ["notifications/tools/list_changed"]
        assert methods(two, await two.pending()) == ["notifications/tools/list_changed"]


# --- resources/updated ------------------------------------------------------------


def resource_server() -> Server:
    server = Server("resources")

    @server.resource("mem://a")
    async def a() -> str:
        """Resource a."""
        return "a"

    @server.resource("mem://b")
    async def b() -> str:
        """Resource b."""
        return "b"

    @server.tool()
    async def touch(uris: list[str], ctx: Context) -> str:
        """Mark resources as changed."""
        for uri in uris:
            ctx.server.notify_resource_updated(uri)
        return "touched"

    return server


async def updated_uris(h: SessionHarness) -> list[str]:
    return [
        item.payload["params"]["uri"]
        for item in await h.pending()
        if item.payload.get("method") == "notifications/resources/updated"
    ]


async def test_resource_updates_only_for_subscribed_uris_and_not_after_unsubscribe() -> None:
    async with open_session(resource_server()) as h:
        result = await h.initialize()
        assert result["capabilities"]["resources"]["subscribe"] is True
        await h.call_tool("touch", {"uris": ["mem://a"]})
        assert await updated_uris(h) == []

        assert await h.request("resources/subscribe", {"uri": "mem://a"}) == {}
        assert h.actor.statistics().subscriptions == 1
        await h.call_tool("touch", {"uris": ["mem://a", "mem://b", "mem://a"]})
        assert await updated_uris(h) == ["mem://a"]  # once per burst, b not subscribed

        assert await h.request("resources/unsubscribe", {"uri": "mem://a"}) == {}
        assert h.actor.statistics().subscriptions == 0
        await h.call_tool("touch", {"uris": ["mem://a", "mem://b"]})
        assert await updated_uris(h) == []


async def test_resource_updates_go_only_to_the_sessions_that_subscribed() -> None:
    server = resource_server()
    async with open_session(server) as subscriber, open_session(server) as bystander:
        await subscriber.initialize()
        await bystander.initialize()
        await subscriber.request("resources/subscribe", {"uri": "mem://b"})
        server.notify_resource_updated("mem://b")
        assert await updated_uris(subscriber) == ["mem://b"]
        await bystander.expect_nothing()


async def test_subscribing_to_an_unknown_resource_is_an_error() -> None:
    async with open_session(resource_server()) as h:
        await h.initialize()
        error = await h.error_of(
            await h.send_request("resources/subscribe", {"uri": "mem://missing"})
        )
        assert error["code"] == -32002
        assert h.actor.statistics().subscriptions == 0
