"""Server.mount: prefixes, routing by name and URI, collisions, capabilities, list_changed.

Every test talks to the composed server through a real session (in memory), and every
message the server sends is checked against the official schema.
"""

from __future__ import annotations

import logging
from typing import Any, Final

import pytest
import trio

from mcpactor import Completion, Context, PluginError, RequestError, Server
from mcpactor.protocol import LATEST
from tests.client.conftest import checker_of, connect, text_of

# In memory, a test takes milliseconds: a hang fails in seconds, not never.
GUARD: Final = 10.0


# --- servers to mount -------------------------------------------------------------------


def make_clock() -> Server:
    clock = Server("clock", instructions="tells the time")

    @clock.tool()
    def now() -> str:
        """The time."""
        return "12:00"

    @clock.tool()
    async def whoami(ctx: Context) -> str:
        """Which server the handler's Context names."""
        assert ctx.server is not None
        return str(ctx.server.name)

    @clock.prompt()
    def plan(zone: str) -> str:
        """Plan a meeting."""
        return f"plan in {zone}"

    @clock.completion("plan", "zone")
    def zones(value: str, context: dict[str, str]) -> list[str]:
        return [z for z in ("Europe/Oslo", "Europe/Paris", "Asia/Tokyo") if z.startswith(value)]

    @clock.resource("clock://zones")
    def zone_list() -> str:
        return "Europe/Oslo"

    @clock.resource("clock://now/{zone}")
    def now_in(zone: str) -> str:
        return f"12:00 in {zone}"

    @clock.completion("clock://now/{zone}", "zone")
    def template_zones(value: str, context: dict[str, str]) -> Completion:
        return Completion(values=["Asia/Tokyo"], total=1, has_more=False)

    return clock


def make_notes() -> Server:
    notes = Server("notes")

    @notes.tool()
    def now() -> str:
        """A note about now."""
        return "note: now"

    @notes.tool()
    def add(text: str) -> str:
        """Add a note."""
        return f"added {text}"

    @notes.resource("notes://{number}")
    def note(number: int) -> str:
        return f"note {number}"

    return notes


def make_app() -> tuple[Server, Server, Server]:
    app = Server("app")

    @app.tool()
    def hello() -> str:
        """The parent's own tool."""
        return "hello from app"

    clock, notes = make_clock(), make_notes()
    app.mount(clock, "clock")
    app.mount(notes, "notes")
    return app, clock, notes


def names(items: list[Any], key: str = "name") -> list[str]:
    return [item[key] for item in items]


# --- prefixes and routing ----------------------------------------------------------------


async def test_tools_and_prompts_are_listed_under_their_prefix() -> None:
    app, _, _ = make_app()
    async with connect(app) as client:
        assert names(await client.list_tools()) == [
            "hello",
            "clock_now",
            "clock_whoami",
            "notes_now",
            "notes_add",
        ]
        assert names(await client.list_prompts()) == ["clock_plan"]


async def test_a_call_reaches_its_owner_under_the_owners_name() -> None:
    app, _, _ = make_app()
    async with connect(app) as client:
        assert text_of(await client.call_tool("clock_now")) == "12:00"
        assert text_of(await client.call_tool("notes_now")) == "note: now"
        assert text_of(await client.call_tool("notes_add", {"text": "x"})) == "added x"
        assert text_of(await client.call_tool("hello")) == "hello from app"
        # The handler's Context names the server it belongs to.
        assert text_of(await client.call_tool("clock_whoami")) == "clock"
        prompt = await client.get_prompt("clock_plan", {"zone": "UTC"})
        assert prompt["messages"][0]["content"]["text"] == "plan in UTC"


async def test_unknown_and_unprefixed_child_names_are_unknown() -> None:
    app, _, _ = make_app()
    async with connect(app) as client:
        for name in ("now", "clock_missing", "clock_"):
            with pytest.raises(RequestError) as info:
                await client.call_tool(name)
            assert info.value.code == -32602
            assert repr(name) in info.value.message
        with pytest.raises(RequestError, match="unknown prompt: 'plan'"):
            await client.get_prompt("plan", {"zone": "UTC"})


async def test_resources_and_templates_keep_their_uris_and_reach_their_owner() -> None:
    app, _, _ = make_app()
    async with connect(app) as client:
        assert names(await client.list_resources(), "uri") == ["clock://zones"]
        assert names(await client.list_resource_templates(), "uriTemplate") == [
            "clock://now/{zone}",
            "notes://{number}",
        ]
        read = await client.read_resource("clock://now/Asia%2FTokyo")
        assert read["contents"][0]["text"] == "12:00 in Asia/Tokyo"
        read = await client.read_resource("notes://7")
        assert read["contents"] == [
            {"uri": "notes://7", "text": "note 7", "mimeType": "text/plain"}
        ]
        with pytest.raises(RequestError) as info:
            await client.read_resource("nowhere://1")
        assert info.value.code == -32002


async def test_completions_go_to_the_owner_of_the_prompt_or_template() -> None:
    app, _, _ = make_app()
    async with connect(app) as client:
        result = await client.complete(
            {"type": "ref/prompt", "name": "clock_plan"}, {"name": "zone", "value": "Europe/"}
        )
        assert result["completion"]["values"] == ["Europe/Oslo", "Europe/Paris"]
        result = await client.complete(
            {"type": "ref/resource", "uri": "clock://now/{zone}"}, {"name": "zone", "value": "A"}
        )
        assert result["completion"] == {"values": ["Asia/Tokyo"], "total": 1, "hasMore": False}
        with pytest.raises(RequestError, match="unknown prompt: 'plan'"):
            await client.complete(
                {"type": "ref/prompt", "name": "plan"}, {"name": "z", "value": ""}
            )
        with pytest.raises(RequestError, match="unknown resource template"):
            await client.complete(
                {"type": "ref/resource", "uri": "other://{x}"}, {"name": "x", "value": ""}
            )
        with pytest.raises(RequestError, match="unknown reference type 'ref/other'"):
            await client.complete({"type": "ref/other", "uri": "x://"}, {"name": "x", "value": ""})


async def test_subscriptions_go_to_the_owner_and_its_updates_reach_the_client() -> None:
    app, clock, notes = make_app()
    async with connect(app) as client:
        await client.subscribe_resource("notes://3")
        await client.subscribe_resource("clock://zones")
        notes.notify_resource_updated("notes://3")
        with trio.fail_after(GUARD):
            updated = await client.notifications.wait_for("notifications/resources/updated")
        assert updated.params == {"uri": "notes://3"}
        await client.unsubscribe_resource("notes://3")
        notes.notify_resource_updated("notes://3")
        clock.notify_resource_updated("clock://zones")
        with trio.fail_after(GUARD):
            updated = await client.notifications.wait_for("notifications/resources/updated")
        assert updated.params == {"uri": "clock://zones"}
        with pytest.raises(RequestError) as info:
            await client.subscribe_resource("nowhere://1")
        assert info.value.code == -32002
    assert checker_of(client).methods().count("notifications/resources/updated") == 2


async def test_capabilities_are_merged() -> None:
    tools_only = Server("tools")
    tools_only.add_tool(lambda: "x", name="x")
    prompts_only = Server("prompts")
    prompts_only.add_prompt(lambda: "p", name="p")
    app = Server("app")
    assert app.capabilities(LATEST) == {"logging": {}}
    app.mount(tools_only, "t")
    app.mount(prompts_only, "p")
    async with connect(app) as client:
        assert client.server.capabilities == {
            "logging": {},
            "tools": {"listChanged": True},
            "prompts": {"listChanged": True},
            "completions": {},
        }
        # Families nobody serves are still unknown methods.
        with pytest.raises(RequestError) as info:
            await client.list_resources()
        assert info.value.code == -32601


async def test_pages_span_every_child() -> None:
    app = Server("app", page_size=2)
    for index in range(3):
        child = Server(f"c{index}")
        child.add_tool(lambda: "x", name="a")
        child.add_tool(lambda: "x", name="b")
        app.mount(child, f"c{index}")
    async with connect(app) as client:
        assert names(await client.list_tools()) == ["c0_a", "c0_b", "c1_a", "c1_b", "c2_a", "c2_b"]
        page = await client.list_page("tools/list")
        assert len(page["tools"]) == 2
        assert "nextCursor" in page


async def test_nested_composition_routes_through_every_level() -> None:
    inner = Server("inner")
    inner.add_tool(lambda: "deep", name="leaf")
    inner.add_resource(lambda: "r", "inner://r")
    middle = Server("middle")
    middle.mount(inner, "in")
    top = Server("top")
    top.mount(middle, "mid")
    async with connect(top) as client:
        assert names(await client.list_tools()) == ["mid_in_leaf"]
        assert text_of(await client.call_tool("mid_in_leaf")) == "deep"
        read = await client.read_resource("inner://r")
        assert read["contents"][0]["text"] == "r"


# --- collisions ---------------------------------------------------------------------------


def test_a_tool_served_twice_without_prefixes_names_both_owners() -> None:
    app = Server("app")
    app.mount(make_clock(), name="clock")
    with pytest.raises(PluginError) as info:
        app.mount(make_notes(), name="notes")
    message = str(info.value)
    assert "tool 'now' is served twice" in message
    assert "'clock' (its tool 'now')" in message
    assert "'notes' (its tool 'now')" in message
    # Nothing of the refused server was mounted.
    assert [mount.name for mount in app.mounts] == ["clock"]


def test_the_parents_own_names_collide_too() -> None:
    app = Server("app")
    app.add_tool(lambda: "x", name="clock_now")
    with pytest.raises(PluginError, match=r"'app' \(its tool 'clock_now'\) and by 'clock'"):
        app.mount(make_clock(), "clock")


def test_a_prefix_can_collide_with_another_servers_name() -> None:
    unprefixed = Server("a")
    unprefixed.add_tool(lambda: "x", name="b_c")
    prefixed = Server("b")
    prefixed.add_tool(lambda: "x", name="c")
    app = Server("app")
    app.mount(unprefixed, name="a")
    with pytest.raises(
        PluginError, match=r"by 'a' \(its tool 'b_c'\) and by 'b' \(its tool 'c'\)"
    ):
        app.mount(prefixed, "b")


def test_a_resource_uri_served_twice_names_both_owners() -> None:
    first, second = Server("first"), Server("second")
    first.add_resource(lambda: "1", "same://x")
    second.add_resource(lambda: "2", "same://x")
    app = Server("app")
    app.mount(first, "f")
    with pytest.raises(
        PluginError, match="resource 'same://x' is served twice: by 'f' and by 's'"
    ):
        app.mount(second, "s")


def test_a_template_served_twice_names_both_owners() -> None:
    first, second = Server("first"), Server("second")
    first.add_resource(lambda key: key, "same://{key}")
    second.add_resource(lambda key: key, "same://{key}")
    app = Server("app")
    app.mount(first, "f")
    with pytest.raises(PluginError, match=r"template 'same://\{key\}' is served twice"):
        app.mount(second, "s")


def test_prefixed_names_must_stay_valid_tool_names() -> None:
    child = Server("child")
    child.add_tool(lambda: "x", name="t" * 120)
    app = Server("app")
    with pytest.raises(PluginError, match="invalid tool name"):
        app.mount(child, "longprefix")


@pytest.mark.parametrize("prefix", ["", "has space", "a/b", "ü"])
def test_a_bad_prefix_is_refused(prefix: str) -> None:
    with pytest.raises(PluginError, match="invalid prefix"):
        Server("app").mount(Server("child"), prefix)


def test_mounting_twice_or_in_itself_or_under_a_taken_name_is_refused() -> None:
    app, clock = Server("app"), Server("clock")
    app.mount(clock, "clock")
    with pytest.raises(PluginError, match="already mounted as 'clock'"):
        app.mount(clock, "again")
    with pytest.raises(PluginError, match="two servers mounted as 'clock'"):
        app.mount(Server("other"), "clock")
    with pytest.raises(PluginError, match="in itself"):
        app.mount(app, "me")
    with pytest.raises(PluginError, match="max_concurrent of 'x' must be at least 1"):
        app.mount(Server("x"), "x", max_concurrent=0)
    with pytest.raises(TypeError, match="can only mount a Server"):
        app.mount("clock", "c")  # type: ignore[arg-type]


# --- changes at run time -----------------------------------------------------------------


async def test_a_childs_registry_change_reaches_the_client() -> None:
    app, clock, notes = make_app()
    async with connect(app) as client:
        assert "clock_later" not in names(await client.list_tools())
        clock.add_tool(lambda: "later", name="later")
        with trio.fail_after(GUARD):
            await client.notifications.wait_for("notifications/tools/list_changed")
        assert "clock_later" in names(await client.list_tools())
        assert text_of(await client.call_tool("clock_later")) == "later"
        notes.remove_resource("notes://{number}")
        with trio.fail_after(GUARD):
            await client.notifications.wait_for("notifications/resources/list_changed")
        assert names(await client.list_resource_templates(), "uriTemplate") == [
            "clock://now/{zone}"
        ]
        with pytest.raises(RequestError):
            await client.read_resource("notes://1")


async def test_a_collision_that_appears_while_serving_is_logged_and_the_first_keeps_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    first, second = Server("first"), Server("second")
    first.add_tool(lambda: "first", name="shared")
    app = Server("app")
    app.mount(first, name="first")
    app.mount(second, name="second")
    async with connect(app) as client:
        with caplog.at_level(logging.ERROR, logger="mcpactor"):
            second.add_tool(lambda: "second", name="shared")
            with trio.fail_after(GUARD):
                await client.notifications.wait_for("notifications/tools/list_changed")
            assert names(await client.list_tools()) == ["shared"]
        assert text_of(await client.call_tool("shared")) == "first"
    assert any(
        "tool 'shared' is served twice: by 'first'" in record.getMessage()
        and "'second'" in record.getMessage()
        for record in caplog.records
    )


async def test_roots_changes_reach_the_childrens_hooks() -> None:
    app, clock, _ = make_app()
    heard: list[str] = []
    done = trio.Event()

    @clock.on_roots_changed
    async def changed(ctx: Context) -> None:
        assert ctx.server is clock
        roots = await ctx.list_roots()
        heard.extend(str(root.uri) for root in roots)
        done.set()

    async with connect(app, roots=[{"uri": "file:///a"}]) as client:
        await client.set_roots([{"uri": "file:///b"}])
        with trio.fail_after(GUARD):
            await done.wait()
    assert heard == ["file:///b"]


async def test_tasks_of_a_mounted_servers_tools_are_served_by_the_composed_server() -> None:
    jobs = Server("jobs")

    @jobs.tool(task_support="optional")
    async def work(n: int) -> str:
        """A job that may run as a task."""
        return f"did {n}"

    app = Server("app")
    app.mount(jobs, "jobs")
    async with connect(app) as client:
        assert "tasks" in client.server.capabilities
        created = await client.request(
            "tools/call", {"name": "jobs_work", "arguments": {"n": 3}, "task": {"ttl": 60_000}}
        )
        task_id = created["task"]["taskId"]
        with trio.fail_after(GUARD):
            result = await client.request("tasks/result", {"taskId": task_id})
        assert text_of(result) == "did 3"
        status = await client.request("tasks/get", {"taskId": task_id})
        assert status["status"] == "completed"
        listed = await client.request("tasks/list")
        assert [task["taskId"] for task in listed["tasks"]] == [task_id]


async def test_without_tasks_the_composed_server_has_no_tasks_methods() -> None:
    app, _, _ = make_app()
    async with connect(app) as client:
        assert "tasks" not in client.server.capabilities
        with pytest.raises(RequestError) as info:
            await client.request("tasks/list")
        assert info.value.code == -32601
