"""The client against real Servers in memory: every message round-trips through JSON."""

from __future__ import annotations

import json
from typing import Any

import pytest
import trio
import trio.testing

from mcpactor import (
    Completion,
    Context,
    CreateMessageResult,
    ElicitResult,
    RequestError,
    Root,
    Server,
    SessionOptions,
    TextContent,
    ToolError,
    TransportClosed,
)
from mcpactor.client import ClientStatistics, RequestCancelled, connect_memory
from mcpactor.protocol import CallToolResult, Notification

from .conftest import GUARD, SESSION_REVISIONS, checker_of, connect, text_of


def tool_server() -> Server:
    server = Server("tools", version="2.0.0", instructions="Be nice.")

    @server.tool()
    async def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    @server.tool()
    async def fail() -> str:
        """Always fails."""
        raise ToolError("it broke")

    @server.tool()
    async def whoami(ctx: Context) -> dict[str, Any]:
        """What the request carried."""
        return {
            "capabilities": ctx.client_capabilities,
            "info": ctx.client_info,
            "meta": dict(ctx.meta),
            "version": ctx.protocol_version,
        }

    return server


# --- lifecycle -----------------------------------------------------------------------


@pytest.mark.parametrize("revision", SESSION_REVISIONS)
async def test_initialize_negotiates_each_revision(
    revision: str, autojump_clock: trio.testing.MockClock
) -> None:
    async with connect(tool_server(), protocol_version=revision, initialize=False) as client:
        assert client.server.protocol_version is None
        assert client.server.capabilities == {}
        result = await client.initialize(revision)
        assert result["protocolVersion"] == revision
        assert client.server.protocol_version == revision
        assert client.server.info is not None
        assert client.server.info["name"] == "tools"
        assert "tools" in client.server.capabilities
        assert result["instructions"] == "Be nice."
        answer = await client.call_tool("whoami")
        seen = answer.get("structuredContent") or json.loads(text_of(answer))
        assert seen["version"] == revision
        assert seen["info"] == {"name": "mcpactor", "version": client.client_info["version"]}
        assert checker_of(client).answered() == ["initialize", "tools/call"]


@pytest.mark.parametrize("revision", SESSION_REVISIONS)
async def test_every_method_at_each_revision_is_valid_on_the_wire(
    revision: str, autojump_clock: trio.testing.MockClock
) -> None:
    server = prompt_server()

    @server.tool()
    async def add(a: int, b: int, ctx: Context) -> int:
        """Add, with progress and a log message."""
        await ctx.report_progress(1, 2, "half way")
        await ctx.info("adding")
        return a + b

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        pass

    async with connect(server, protocol_version=revision) as client:
        assert client.server.protocol_version == revision
        assert await client.ping() == {}
        assert await client.set_logging_level("debug") == {}
        assert [t["name"] for t in await client.list_tools()] == ["add"]
        result = await client.call_tool("add", {"a": 1, "b": 2}, progress_handler=on_progress)
        assert "3" in text_of(result)
        assert await client.list_resources() == []
        assert len(await client.list_resource_templates()) == 1
        assert (await client.read_resource("file:///users/ada"))["contents"][0]["text"] == "ada"
        assert await client.subscribe_resource("file:///users/ada") == {}
        assert await client.unsubscribe_resource("file:///users/ada") == {}
        assert [p["name"] for p in await client.list_prompts()] == ["greet"]
        assert (await client.get_prompt("greet", {"name": "x"}))["messages"]
        ref = {"type": "ref/prompt", "name": "greet"}
        completion = await client.complete(ref, {"name": "name", "value": "g"})
        assert completion["completion"]["values"] == ["grace"]
        methods = checker_of(client).methods()
        assert "notifications/progress" in methods
        assert "notifications/message" in methods


async def test_initialize_sends_initialized_so_the_server_may_notify(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server = tool_server()
    async with connect(server) as client:
        # list_changed is only sent once the server saw notifications/initialized.
        server.add_tool(lambda: "new", name="late", description="Added late.")
        with trio.fail_after(GUARD):
            note = await client.notifications.wait_for("notifications/tools/list_changed")
        assert note == Notification("notifications/tools/list_changed", {})


async def test_unknown_revision_gets_the_servers_latest(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with connect(tool_server(), initialize=False) as client:
        result = await client.initialize("1999-01-01")
        assert result["protocolVersion"] == "2025-11-25"


async def test_client_info_and_extra_capabilities_are_sent(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with connect(
        tool_server(), initialize=False, client_info={"name": "probe", "version": "9"}
    ) as client:
        await client.initialize(capabilities={"experimental": {"x": {}}})
        seen = (await client.call_tool("whoami"))["structuredContent"]
        assert seen["info"] == {"name": "probe", "version": "9"}
        assert seen["capabilities"] == {"experimental": {"x": {}}}


async def test_ping_and_logging_level(autojump_clock: trio.testing.MockClock) -> None:
    server = Server("logs")

    @server.tool()
    async def chatty(ctx: Context) -> str:
        """Log at two levels."""
        await ctx.debug("quiet")
        await ctx.error("loud")
        return "done"

    async with connect(server) as client:
        assert await client.ping() == {}
        await client.call_tool("chatty")
        levels = [n.params["level"] for n in client.notifications.received if n.params]
        assert levels == ["error"]
        assert await client.set_logging_level("debug") == {}
        client.notifications.clear()
        await client.call_tool("chatty")
        levels = [n.params["level"] for n in client.notifications.received if n.params]
        assert levels == ["debug", "error"]
        with pytest.raises(RequestError) as info:
            await client.set_logging_level("loudest")
        assert info.value.code == -32602


async def test_leaving_the_block_closes_the_client(autojump_clock: trio.testing.MockClock) -> None:
    async with connect(tool_server()) as client:
        pass
    with pytest.raises(TransportClosed):
        await client.ping()
    with pytest.raises(TransportClosed):
        await client.notifications.wait_for("notifications/message")


async def test_an_error_leaving_the_block_is_not_wrapped_in_a_group(
    autojump_clock: trio.testing.MockClock,
) -> None:
    with pytest.raises(RequestError) as info:
        async with connect(tool_server()) as client:
            await client.call_tool("no-such-tool")
    assert info.value.code == -32602


async def test_the_server_lifespan_runs_around_the_session(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server = Server("lifespan")
    events: list[str] = []

    @server.lifespan
    def lifespan(server: Server) -> Any:
        from contextlib import asynccontextmanager

        @asynccontextmanager
        async def manager() -> Any:
            events.append("enter")
            yield
            events.append("exit")

        return manager()

    @server.tool()
    async def noop() -> str:
        """Nothing."""
        events.append("call")
        return ""

    async with connect(server) as client:
        await client.call_tool("noop")
    async with connect(server, lifespan=False) as client:
        await client.call_tool("noop")
    assert events == ["enter", "call", "exit", "call"]


async def test_a_message_that_is_not_json_is_dropped_with_a_warning(
    autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture
) -> None:
    # As over stdio: a notification JSON cannot carry is not sent, and the session goes
    # on; a response JSON cannot carry becomes an error response for its request.
    server = Server("bad")

    @server.tool()
    async def leak(ctx: Context) -> str:
        """Log something JSON cannot carry."""
        await ctx.info({"value": object()})
        return "sent"

    @server.tool(structured_output=False)
    async def unwritable() -> Any:
        """Answer with something JSON cannot carry."""
        return CallToolResult(content=[], structured_content={"value": {1, 2}})

    async with connect_memory(server, initialize=True) as client:
        assert (await client.call_tool("leak"))["content"][0]["text"] == "sent"
        assert "dropped a message that cannot be written as JSON" in caplog.text
        with pytest.raises(RequestError) as info:
            await client.call_tool("unwritable")
        assert info.value.code == -32603
        assert "could not be written as JSON" in info.value.message
        await client.ping()


# --- tools ---------------------------------------------------------------------------


async def test_call_tool_returns_the_result_as_sent(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with connect(tool_server()) as client:
        result = await client.call_tool("add", {"a": 2, "b": 3})
        assert result["structuredContent"] == {"result": 5}
        failed = await client.call_tool("fail")
        assert failed["isError"] is True
        assert text_of(failed) == "it broke"
        tools = await client.list_tools()
        assert [tool["name"] for tool in tools] == ["add", "fail", "whoami"]


async def test_call_tool_meta_reaches_the_handler(autojump_clock: trio.testing.MockClock) -> None:
    async with connect(tool_server()) as client:
        result = await client.call_tool("whoami", meta={"trace": "abc"})
        assert result["structuredContent"]["meta"] == {"trace": "abc"}


async def test_progress_goes_to_the_calls_handler_in_order(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server = Server("progress")

    @server.tool()
    async def count(n: int, ctx: Context) -> str:
        """Count to n, reporting each step."""
        for i in range(1, n + 1):
            await ctx.report_progress(i, n, f"step {i}")
        return "counted"

    updates: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        updates.append((progress, total, message))

    async with connect(server) as client:
        result = await client.call_tool("count", {"n": 3}, progress_handler=on_progress)
        assert text_of(result) == "counted"
        assert updates == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]
        # Progress is logged like every notification, under the call's token.
        tokens = {n.params["progressToken"] for n in client.notifications.received if n.params}
        assert len(tokens) == 1
        # Without a handler the client asks for no progress, and none comes.
        client.notifications.clear()
        await client.call_tool("count", {"n": 2})
        assert client.notifications.received == []


async def test_a_failing_progress_handler_fails_its_call_only(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server = Server("progress")
    cancelled = trio.Event()

    @server.tool()
    async def report(ctx: Context) -> str:
        """Report, then wait."""
        try:
            await ctx.report_progress(1)
            await trio.sleep_forever()
        finally:
            cancelled.set()
        return "unreachable"  # pragma: no cover

    async def broken(progress: float, total: float | None, message: str | None) -> None:
        raise ValueError("handler broke")

    async with connect(server) as client:
        with pytest.raises(ValueError, match="handler broke"):
            await client.call_tool("report", progress_handler=broken)
        # The client told the server, which cancelled the handler.
        with trio.fail_after(GUARD):
            await cancelled.wait()
        assert await client.ping() == {}
        assert client.statistics().requests_pending == {}


def blocking_server() -> tuple[Server, trio.Event, list[str]]:
    server = Server("blocking")
    entered = trio.Event()
    finished: list[str] = []

    @server.tool()
    async def block(label: str = "") -> str:
        """Wait until cancelled."""
        entered.set()
        try:
            await trio.sleep_forever()
        finally:
            finished.append(label)
        return "unreachable"  # pragma: no cover

    @server.tool()
    async def quick() -> str:
        """Answer at once."""
        return "quick"

    return server, entered, finished


async def test_cancelling_the_callers_scope_cancels_the_request(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server, _, finished = blocking_server()
    async with connect(server) as client:
        with trio.move_on_after(5) as scope:
            await client.call_tool("block", {"label": "first"})
        assert scope.cancelled_caught
        with trio.fail_after(GUARD):
            while not finished:
                await trio.testing.wait_all_tasks_blocked()
        assert finished == ["first"]
        assert client.statistics().requests_pending == {}
        # The session is intact.
        assert text_of(await client.call_tool("quick")) == "quick"


async def test_a_timeout_raises_and_cancels_the_request(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server, _, finished = blocking_server()
    async with connect(server, request_timeout=30) as client:
        start = trio.current_time()
        with pytest.raises(trio.TooSlowError):
            await client.call_tool("block", {"label": "slow"}, timeout=2)
        assert trio.current_time() - start == 2
        await trio.testing.wait_all_tasks_blocked()
        assert finished == ["slow"]
        # The client-wide default applies when the call gives none.
        start = trio.current_time()
        with pytest.raises(trio.TooSlowError):
            await client.call_tool("block", {"label": "default"})
        assert trio.current_time() - start == 30


async def test_cancel_by_request_id(autojump_clock: trio.testing.MockClock) -> None:
    server, entered, finished = blocking_server()
    async with connect(server) as client, trio.open_nursery() as nursery:
        outcome: list[BaseException] = []

        async def call() -> None:
            try:
                await client.call_tool("block", {"label": "by id"})
            except RequestCancelled as exc:
                outcome.append(exc)

        nursery.start_soon(call)
        with trio.fail_after(GUARD):
            await entered.wait()
        [(request_id, method)] = client.statistics().requests_pending.items()
        assert method == "tools/call"
        assert await client.cancel(request_id, "enough") is True
        assert await client.cancel(request_id, "again") is False
        await trio.testing.wait_all_tasks_blocked()
        assert finished == ["by id"]
        [error] = outcome
        assert isinstance(error, RequestCancelled)
        assert error.request_id == request_id
        assert error.reason == "enough"


async def test_requests_overlap(autojump_clock: trio.testing.MockClock) -> None:
    server = Server("slow")

    @server.tool()
    async def nap(seconds: float) -> float:
        """Sleep."""
        await trio.sleep(seconds)
        return seconds

    async with connect(server) as client:
        results: list[float] = []

        async def call(seconds: float) -> None:
            result = await client.call_tool("nap", {"seconds": seconds})
            results.append(result["structuredContent"]["result"])

        start = trio.current_time()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(call, 2)
            nursery.start_soon(call, 1)
        assert results == [1, 2]
        assert trio.current_time() - start == 2


# --- resources -----------------------------------------------------------------------


def resource_server() -> Server:
    server = Server("files")

    @server.resource("file:///readme", mime_type="text/markdown")
    def readme() -> str:
        """The readme."""
        return "# hello"

    @server.resource("file:///users/{name}")
    def user(name: str) -> dict[str, str]:
        """A user."""
        return {"name": name}

    return server


async def test_resources_list_read_and_templates(autojump_clock: trio.testing.MockClock) -> None:
    async with connect(resource_server()) as client:
        [resource] = await client.list_resources()
        assert resource["uri"] == "file:///readme"
        [template] = await client.list_resource_templates()
        assert template["uriTemplate"] == "file:///users/{name}"
        read = await client.read_resource("file:///readme")
        assert read["contents"] == [
            {"uri": "file:///readme", "mimeType": "text/markdown", "text": "# hello"}
        ]
        user = await client.read_resource("file:///users/ada")
        assert '"ada"' in user["contents"][0]["text"]
        with pytest.raises(RequestError) as info:
            await client.read_resource("file:///nowhere")
        assert info.value.code == -32002
        assert info.value.data == {"uri": "file:///nowhere"}


async def test_subscriptions_deliver_updates_until_unsubscribed(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server = resource_server()
    async with connect(server) as client:
        assert await client.subscribe_resource("file:///readme") == {}
        server.notify_resource_updated("file:///readme")
        with trio.fail_after(GUARD):
            note = await client.notifications.wait_for(
                "notifications/resources/updated",
                lambda n: (n.params or {}).get("uri") == "file:///readme",
            )
        assert note.params == {"uri": "file:///readme"}
        assert await client.unsubscribe_resource("file:///readme") == {}
        server.notify_resource_updated("file:///readme")
        await trio.testing.wait_all_tasks_blocked()
        updates = [n for n in client.notifications.received if n.method == note.method]
        assert len(updates) == 1


# --- prompts and completion ----------------------------------------------------------


def prompt_server() -> Server:
    server = Server("prompts")

    @server.prompt()
    def greet(name: str, style: str = "plain") -> str:
        """Greet someone."""
        return f"Hello {name} ({style})"

    @server.resource("file:///users/{name}")
    def user(name: str) -> str:
        """A user."""
        return name

    @server.completion("greet", "name")
    def names(value: str, context: dict[str, str]) -> list[str]:
        return [n for n in ("ada", "alan", "grace") if n.startswith(value)]

    @server.completion("file:///users/{name}", "name")
    def users(value: str, context: dict[str, str]) -> Completion:
        return Completion(values=["ada"], total=7, has_more=True)

    return server


async def test_prompts_list_and_get(autojump_clock: trio.testing.MockClock) -> None:
    async with connect(prompt_server()) as client:
        [prompt] = await client.list_prompts()
        assert prompt["name"] == "greet"
        assert {a["name"]: a["required"] for a in prompt["arguments"]} == {
            "name": True,
            "style": False,
        }
        result = await client.get_prompt("greet", {"name": "Ada"})
        [message] = result["messages"]
        assert message["role"] == "user"
        assert message["content"]["text"] == "Hello Ada (plain)"
        with pytest.raises(RequestError) as info:
            await client.get_prompt("greet")
        assert info.value.code == -32602


async def test_completion_of_prompt_and_template_arguments(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with connect(prompt_server()) as client:
        result = await client.complete(
            {"type": "ref/prompt", "name": "greet"}, {"name": "name", "value": "a"}
        )
        assert result["completion"]["values"] == ["ada", "alan"]
        result = await client.complete(
            {"type": "ref/resource", "uri": "file:///users/{name}"},
            {"name": "name", "value": ""},
            context={"other": "x"},
        )
        assert result["completion"] == {"values": ["ada"], "total": 7, "hasMore": True}


# --- pagination ----------------------------------------------------------------------


def big_server() -> Server:
    server = Server("big", page_size=2)
    for i in range(5):
        server.add_tool(lambda: "", name=f"tool{i}", description="A tool.")
        server.add_resource(lambda: "", f"file:///r{i}", name=f"r{i}", description="R.")
        server.add_prompt(lambda: "", name=f"prompt{i}", description="A prompt.")
    for i in range(3):
        server.add_resource(
            lambda x: x, f"file:///t{i}/{{x}}", name=f"t{i}", description="A template."
        )
    return server


async def test_lists_follow_next_cursor_across_pages(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with connect(big_server()) as client:
        assert [t["name"] for t in await client.list_tools()] == [f"tool{i}" for i in range(5)]
        assert [r["uri"] for r in await client.list_resources()] == [
            f"file:///r{i}" for i in range(5)
        ]
        assert [t["name"] for t in await client.list_resource_templates()] == [
            "t0",
            "t1",
            "t2",
        ]
        assert [p["name"] for p in await client.list_prompts()] == [f"prompt{i}" for i in range(5)]
        answered = checker_of(client).answered()
        assert answered.count("tools/list") == 3
        assert answered.count("resources/list") == 3
        assert answered.count("resources/templates/list") == 2
        assert answered.count("prompts/list") == 3


async def test_one_page_at_a_time(autojump_clock: trio.testing.MockClock) -> None:
    async with connect(big_server()) as client:
        first = await client.list_page("tools/list")
        assert [t["name"] for t in first["tools"]] == ["tool0", "tool1"]
        second = await client.list_page("tools/list", first["nextCursor"])
        assert [t["name"] for t in second["tools"]] == ["tool2", "tool3"]
        last = await client.list_page("tools/list", second["nextCursor"])
        assert [t["name"] for t in last["tools"]] == ["tool4"]
        assert "nextCursor" not in last
        with pytest.raises(RequestError) as info:
            await client.list_page("tools/list", "not-a-cursor")
        assert info.value.code == -32602


# --- requests from the server --------------------------------------------------------


def asking_server() -> Server:
    server = Server("asks")

    @server.tool()
    async def haiku(topic: str, ctx: Context) -> str:
        """Ask the client's model."""
        result = await ctx.sample(f"a haiku about {topic}", max_tokens=50)
        assert isinstance(result.content, TextContent)
        return f"{result.model}: {result.content.text}"

    @server.tool()
    async def ask_name(ctx: Context) -> str:
        """Ask the user."""
        answer = await ctx.elicit(
            "Your name?", {"type": "object", "properties": {"name": {"type": "string"}}}
        )
        return f"{answer.action} {answer.content}"

    @server.tool()
    async def roots(ctx: Context) -> list[str]:
        """The client's roots."""
        return [root.uri for root in await ctx.list_roots()]

    return server


async def test_sampling_is_answered_by_the_handler(autojump_clock: trio.testing.MockClock) -> None:
    seen: list[dict[str, Any]] = []

    async def sample(params: dict[str, Any]) -> CreateMessageResult:
        seen.append(params)
        return CreateMessageResult(
            role="assistant", content=TextContent(text="leaves fall"), model="test-model"
        )

    async with connect(asking_server(), sampling_handler=sample) as client:
        assert client.handlers.capabilities()["sampling"] == {}
        result = await client.call_tool("haiku", {"topic": "autumn"})
        assert text_of(result) == "test-model: leaves fall"
        [params] = seen
        assert params["maxTokens"] == 50
        assert params["messages"][0]["content"]["text"] == "a haiku about autumn"
        assert "sampling/createMessage" in checker_of(client).methods()


async def test_sampling_handler_may_answer_with_a_dict(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def sample(params: dict[str, Any]) -> dict[str, Any]:
        return {"role": "assistant", "content": {"type": "text", "text": "ok"}, "model": "m"}

    async with connect(asking_server(), sampling_handler=sample) as client:
        assert text_of(await client.call_tool("haiku", {"topic": "x"})) == "m: ok"


@pytest.mark.parametrize("revision", ["2025-06-18", "2025-11-25"])
async def test_elicitation_is_answered_by_the_handler(
    revision: str, autojump_clock: trio.testing.MockClock
) -> None:
    async def elicit(params: dict[str, Any]) -> ElicitResult:
        assert params["message"] == "Your name?"
        return ElicitResult(action="accept", content={"name": "Ada"})

    async with connect(
        asking_server(), protocol_version=revision, elicitation_handler=elicit
    ) as client:
        result = await client.call_tool("ask_name")
        assert text_of(result) == "accept {'name': 'Ada'}"


async def test_elicitation_is_not_declared_where_the_revision_has_none(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def elicit(params: dict[str, Any]) -> ElicitResult:
        raise AssertionError("never asked")  # pragma: no cover

    async with connect(
        tool_server(), protocol_version="2025-03-26", elicitation_handler=elicit
    ) as client:
        seen = json.loads(text_of(await client.call_tool("whoami")))
        assert seen["capabilities"] == {}


async def test_roots_from_a_list_and_from_callables(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with connect(
        asking_server(), roots=[Root(uri="file:///a", name="a"), {"uri": "file:///b"}]
    ) as client:
        assert client.handlers.capabilities()["roots"] == {"listChanged": True}
        result = await client.call_tool("roots")
        assert result["structuredContent"] == {"result": ["file:///a", "file:///b"]}

    async def async_roots() -> list[Root]:
        return [Root(uri="file:///async")]

    async with connect(asking_server(), roots=async_roots) as client:
        result = await client.call_tool("roots")
        assert result["structuredContent"] == {"result": ["file:///async"]}
        await client.set_roots(lambda: [{"uri": "file:///sync"}])
        result = await client.call_tool("roots")
        assert result["structuredContent"] == {"result": ["file:///sync"]}


async def test_set_roots_tells_the_server(autojump_clock: trio.testing.MockClock) -> None:
    server = Server("roots")
    seen: list[list[str]] = []
    heard = trio.Event()

    @server.tool()
    async def noop() -> str:
        """Nothing."""
        return ""

    @server.on_roots_changed
    async def changed(ctx: Context) -> None:
        seen.append([root.uri for root in await ctx.list_roots()])
        heard.set()

    async with connect(server, roots=[{"uri": "file:///old"}]) as client:
        await client.set_roots([{"uri": "file:///new"}])
        with trio.fail_after(GUARD):
            await heard.wait()
        assert seen == [["file:///new"]]


async def test_missing_capability_gives_the_tool_a_clear_error(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with connect(asking_server()) as client:
        assert client.handlers.capabilities() == {}
        for name, arguments, capability in [
            ("haiku", {"topic": "x"}, "sampling"),
            ("ask_name", {}, "elicitation"),
            ("roots", {}, "roots"),
        ]:
            result = await client.call_tool(name, arguments)
            assert result["isError"] is True
            assert "CapabilityError" in text_of(result)
            assert capability in text_of(result)
        assert "sampling/createMessage" not in checker_of(client).methods()


async def test_handler_errors_reach_the_server_as_json_rpc_errors(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server = Server("errors")

    @server.tool()
    async def haiku(ctx: Context) -> str:
        """Ask, and report what came back."""
        try:
            await ctx.sample("hi", max_tokens=5)
        except RequestError as exc:
            return f"{exc.code} {exc.message}"
        return "no error"  # pragma: no cover

    async def refuse(params: dict[str, Any]) -> dict[str, Any]:
        raise RequestError(-1, "user rejected sampling")

    async def crash(params: dict[str, Any]) -> dict[str, Any]:
        raise KeyError("oops")

    async def wrong(params: dict[str, Any]) -> Any:
        return ["not", "a", "result"]

    async with connect(server, sampling_handler=refuse) as client:
        assert text_of(await client.call_tool("haiku")) == "-1 user rejected sampling"
        client.handlers.sampling = crash
        text = text_of(await client.call_tool("haiku"))
        assert text.startswith("-32603 ")
        assert "KeyError" in text
        client.handlers.sampling = wrong
        text = text_of(await client.call_tool("haiku"))
        assert text.startswith("-32603 ")
        assert "must be a dict" in text


async def test_server_giving_up_cancels_the_handler(
    autojump_clock: trio.testing.MockClock,
) -> None:
    handler_cancelled = trio.Event()

    async def never(params: dict[str, Any]) -> dict[str, Any]:
        try:
            await trio.sleep_forever()
        finally:
            handler_cancelled.set()
        raise AssertionError("unreachable")  # pragma: no cover

    options = SessionOptions(client_request_timeout=10)
    async with connect(asking_server(), options=options, sampling_handler=never) as client:
        start = trio.current_time()
        with pytest.raises(RequestError) as info:
            await client.call_tool("haiku", {"topic": "x"})
        assert trio.current_time() - start == 10
        assert info.value.code == -32001
        with trio.fail_after(GUARD):
            await handler_cancelled.wait()
        await trio.testing.wait_all_tasks_blocked()
        assert client.statistics().requests_serving == 0
        cancelled = await client.notifications.wait_for("notifications/cancelled")
        assert cancelled.params is not None
        assert "no answer within 10" in cancelled.params["reason"]


# --- notifications -------------------------------------------------------------------


async def test_waiting_for_a_notification_misses_nothing_and_repeats_nothing(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server = Server("notes")

    @server.tool()
    async def say(words: list[str], ctx: Context) -> str:
        """Log each word."""
        for word in words:
            await ctx.info(word)
        return "said"

    async with connect(server) as client:
        await client.call_tool("say", {"words": ["one", "two", "three"]})
        # All three arrived before anyone waited.
        first = await client.notifications.wait_for("notifications/message")
        assert first.params is not None
        assert first.params["data"] == "one"
        third = await client.notifications.wait_for(
            "notifications/message", lambda n: (n.params or {}).get("data") == "three"
        )
        assert third.params is not None
        assert third.params["data"] == "three"
        second = await client.notifications.wait_for("notifications/message")
        assert second.params is not None
        assert second.params["data"] == "two"
        # One that has not arrived yet is waited for.
        async with trio.open_nursery() as nursery:
            got: list[Notification] = []

            async def wait() -> None:
                got.append(await client.notifications.wait_for("notifications/message"))

            nursery.start_soon(wait)
            await trio.testing.wait_all_tasks_blocked()
            assert got == []
            await client.call_tool("say", {"words": ["four"]})
        assert got[0].params == {"level": "info", "data": "four"}
        assert len(client.notifications.received) == 4


async def test_the_notification_log_is_bounded(autojump_clock: trio.testing.MockClock) -> None:
    server = Server("notes")

    @server.tool()
    async def say(n: int, ctx: Context) -> str:
        """Log n times."""
        for i in range(n):
            await ctx.info(i)
        return "said"

    async with connect(server, max_notifications=3) as client:
        await client.call_tool("say", {"n": 10})
        assert [n.params["data"] for n in client.notifications.received if n.params] == [7, 8, 9]
        assert client.statistics().notifications_logged == 3


def live_tasks() -> set[trio.lowlevel.Task]:
    found: set[trio.lowlevel.Task] = set()
    todo = [trio.lowlevel.current_root_task()]
    while todo:
        task = todo.pop()
        if task is not None:
            found.add(task)
            for nursery in task.child_nurseries:
                todo.extend(nursery.child_tasks)
    return found


async def test_nothing_outlives_the_connection(autojump_clock: trio.testing.MockClock) -> None:
    server, _, _ = blocking_server()
    before = live_tasks()
    async with connect(server) as client:
        with trio.move_on_after(1):
            await client.call_tool("block")
        await trio.testing.wait_all_tasks_blocked()
        # Only the reader is left in the client's nursery.
        assert client._reader.nursery is not None
        assert [t.name.rpartition(".")[2] for t in client._reader.nursery.child_tasks] == ["_read"]
        assert client.statistics() == ClientStatistics({}, 0, 0)
        assert len(live_tasks()) > len(before)
    assert live_tasks() == before
