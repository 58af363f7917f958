"""Server→client requests (sampling, elicitation, roots) and the roots-changed hooks."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from mcpactor import Context, RequestError, Server
from mcpactor.protocol import JSONObject
from mcpactor.runtime import SessionOptions

from .conftest import SessionHarness, assert_idle, open_session, tool_text

SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


def asking_server() -> Server:
    server = Server("asking")

    @server.tool()
    async def ask_model(prompt: str, ctx: Context, timeout: float | None = None) -> str:
        """Ask the client's model."""
        result = await ctx.sample(prompt, max_tokens=50, timeout=timeout)
        assert result.content.type == "text"
        return f"{result.model}: {result.content.text}"

    @server.tool()
    async def ask_user(ctx: Context) -> str:
        """Ask the user for a name with a form."""
        answer = await ctx.elicit("Who are you?", SCHEMA)
        return f"{answer.action} {answer.content}"

    @server.tool()
    async def send_user(ctx: Context) -> str:
        """Send the user to a page."""
        answer = await ctx.elicit_url("Sign in, please", "https://example.com/login", "el-1")
        return answer.action

    @server.tool()
    async def roots(ctx: Context) -> list[str]:
        """List the client's root URIs."""
        return [root.uri for root in await ctx.list_roots()]

    @server.tool()
    async def ask_model_politely(ctx: Context) -> str:
        """Ask the model and report a refusal instead of failing."""
        try:
            await ctx.sample("hi", max_tokens=5)
        except RequestError as exc:
            return f"{exc.code} {exc.message} {exc.data}"
        return "answered"  # pragma: no cover

    return server


SAMPLED = {
    "role": "assistant",
    "content": {"type": "text", "text": "hello there"},
    "model": "test-model",
    "stopReason": "endTurn",
}


async def test_sampling_round_trip() -> None:
    async with open_session(asking_server()) as h:
        await h.initialize(capabilities={"sampling": {}})
        call = await h.start_tool("ask_model", {"prompt": "Say hello"})
        asked = await h.server_request("sampling/createMessage")
        assert asked["params"] == {
            "messages": [{"role": "user", "content": {"type": "text", "text": "Say hello"}}],
            "maxTokens": 50,
        }
        assert h.received[-1].related_request_id == call
        assert h.actor.statistics().client_requests_pending == 1
        await h.answer(asked, SAMPLED)
        assert tool_text(await h.result_of(call)) == "test-model: hello there"
        await trio.testing.wait_all_tasks_blocked()
        assert_idle(h.actor)


@pytest.mark.parametrize("revision", ["2025-06-18", "2025-11-25"])
async def test_form_elicitation_round_trip(revision: str) -> None:
    async with open_session(asking_server()) as h:
        await h.initialize(revision, {"elicitation": {}})
        call = await h.start_tool("ask_user")
        asked = await h.server_request("elicitation/create")
        expected = {"message": "Who are you?", "requestedSchema": SCHEMA}
        if revision == "2025-11-25":
            expected["mode"] = "form"
        assert asked["params"] == expected
        await h.answer(asked, {"action": "accept", "content": {"name": "Ada"}})
        assert tool_text(await h.result_of(call)) == "accept {'name': 'Ada'}"


async def test_url_elicitation_round_trip() -> None:
    async with open_session(asking_server()) as h:
        await h.initialize("2025-11-25", {"elicitation": {"url": {}}})
        call = await h.start_tool("send_user")
        asked = await h.server_request("elicitation/create")
        assert asked["params"] == {
            "mode": "url",
            "message": "Sign in, please",
            "url": "https://example.com/login",
            "elicitationId": "el-1",
        }
        await h.answer(asked, {"action": "accept"})
        assert tool_text(await h.result_of(call)) == "accept"


async def test_list_roots_round_trip() -> None:
    async with open_session(asking_server()) as h:
        await h.initialize(capabilities={"roots": {"listChanged": True}})
        call = await h.start_tool("roots")
        asked = await h.server_request("roots/list")
        roots = [{"uri": "file:///work", "name": "work"}, {"uri": "file:///tmp"}]
        await h.answer(asked, {"roots": roots})
        result = await h.result_of(call)
        assert result["structuredContent"] == {"result": ["file:///work", "file:///tmp"]}


@pytest.mark.parametrize(
    ("tool", "capability", "revision"),
    [
        ("ask_model", "'sampling'", "2025-11-25"),
        ("ask_user", "'elicitation'", "2025-06-18"),
        ("roots", "'roots'", "2024-11-05"),
        ("send_user", "URL-mode elicitation", "2025-11-25"),
    ],
)
async def test_requests_the_client_did_not_declare_are_refused(
    tool: str, capability: str, revision: str
) -> None:
    # The client declared form-mode elicitation only: URL mode is still missing.
    capabilities: JSONObject = {"elicitation": {}} if tool == "send_user" else {}
    async with open_session(asking_server()) as h:
        await h.initialize(revision, capabilities)
        result = await h.call_tool(tool, {"prompt": "x"} if tool == "ask_model" else {})
        assert result["isError"] is True
        text = tool_text(result)
        assert capability in text, text
        assert "declare" in text, text
        await h.expect_nothing()  # nothing went to the client
        assert_idle(h.actor)


async def test_server_requests_wait_for_initialized() -> None:
    async with open_session(asking_server()) as h:
        await h.initialize(capabilities={"sampling": {}}, initialized=False)
        result = await h.call_tool("ask_model", {"prompt": "x"})
        assert result["isError"] is True
        assert "awaiting initialized" in tool_text(result)
        await h.expect_nothing()


async def test_a_client_error_becomes_a_request_error_in_the_handler() -> None:
    async with open_session(asking_server()) as h:
        await h.initialize(capabilities={"sampling": {}})
        call = await h.start_tool("ask_model_politely")
        asked = await h.server_request("sampling/createMessage")
        await h.answer_error(asked, -1, "User rejected sampling", {"why": "no"})
        assert tool_text(await h.result_of(call)) == "-1 User rejected sampling {'why': 'no'}"
        # Uncaught, the client's error answers the tool call as a JSON-RPC error.
        call = await h.start_tool("ask_model", {"prompt": "x"})
        await h.answer_error(await h.server_request("sampling/createMessage"), -1, "Nope")
        assert await h.error_of(call) == {"code": -1, "message": "Nope"}
        await trio.testing.wait_all_tasks_blocked()
        assert_idle(h.actor)


async def expect_timeout(h: SessionHarness, call: int | str, seconds: float) -> None:
    start = trio.current_time()
    asked = await h.server_request("sampling/createMessage")
    cancelled = await h.notification("notifications/cancelled")
    assert trio.current_time() - start == seconds
    assert cancelled.payload["params"]["requestId"] == asked["id"]
    assert tool_text(await h.result_of(call)) == (
        f"-32001 the client did not answer 'sampling/createMessage' within {seconds} s "
        f"{{'method': 'sampling/createMessage', 'timeout': {seconds!r}}}"
    )
    assert trio.current_time() - start == seconds
    # A late answer is ignored.
    await h.answer(asked, SAMPLED)
    await h.expect_nothing()
    assert_idle(h.actor)


async def test_an_unanswered_request_times_out_after_the_configured_time(
    autojump_clock: trio.testing.MockClock,
) -> None:
    options = SessionOptions(client_request_timeout=10)
    async with open_session(asking_server(), options) as h:
        await h.initialize(capabilities={"sampling": {}})
        await expect_timeout(h, await h.start_tool("ask_model_politely"), 10)


async def test_the_default_client_request_timeout_is_five_minutes(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_session(asking_server()) as h:
        await h.initialize(capabilities={"sampling": {}})
        await expect_timeout(h, await h.start_tool("ask_model_politely"), 300.0)


async def test_a_per_call_timeout_overrides_the_session_timeout(
    autojump_clock: trio.testing.MockClock,
) -> None:
    options = SessionOptions(client_request_timeout=10)
    async with open_session(asking_server(), options) as h:
        await h.initialize(capabilities={"sampling": {}})
        start = trio.current_time()
        call = await h.start_tool("ask_model", {"prompt": "x", "timeout": 2.5})
        asked = await h.server_request("sampling/createMessage")
        cancelled = await h.notification("notifications/cancelled")
        assert cancelled.payload["params"]["requestId"] == asked["id"]
        error = await h.error_of(call)
        assert error["code"] == -32001
        assert trio.current_time() - start == 2.5


async def test_no_timeout_waits_as_long_as_the_client_takes(
    autojump_clock: trio.testing.MockClock,
) -> None:
    options = SessionOptions(client_request_timeout=None)
    async with open_session(asking_server(), options) as h:
        await h.initialize(capabilities={"sampling": {}})
        call = await h.start_tool("ask_model", {"prompt": "x"})
        asked = await h.server_request("sampling/createMessage")
        await trio.sleep(3600)
        await h.expect_nothing()
        await h.answer(asked, SAMPLED)
        assert tool_text(await h.result_of(call)) == "test-model: hello there"


async def test_cancelling_a_tool_cancels_its_request_to_the_client() -> None:
    async with open_session(asking_server()) as h:
        await h.initialize(capabilities={"sampling": {}})
        call = await h.start_tool("ask_model", {"prompt": "x"})
        asked = await h.server_request("sampling/createMessage")
        await h.cancel(call, "user pressed stop")
        cancelled = await h.notification("notifications/cancelled")
        assert cancelled.payload["params"]["requestId"] == asked["id"]
        await h.expect_nothing()  # and no response to the cancelled call
        assert_idle(h.actor)
        # The answer that comes anyway is ignored; the session goes on.
        await h.answer(asked, SAMPLED)
        await h.expect_nothing()
        await h.request("ping")


async def test_answers_are_matched_to_their_requests_by_id() -> None:
    async with open_session(asking_server()) as h:
        await h.initialize(capabilities={"sampling": {}})
        first = await h.start_tool("ask_model", {"prompt": "first"})
        first_asked = await h.server_request("sampling/createMessage")
        second = await h.start_tool("ask_model", {"prompt": "second"})
        second_asked = await h.server_request("sampling/createMessage")
        assert first_asked["id"] != second_asked["id"]
        await h.answer(second_asked, {**SAMPLED, "model": "second-model"})
        assert tool_text(await h.result_of(second)) == "second-model: hello there"
        await h.answer(first_asked, {**SAMPLED, "model": "first-model"})
        assert tool_text(await h.result_of(first)) == "first-model: hello there"


# --- roots/list_changed hooks -----------------------------------------------------


async def test_roots_list_changed_runs_the_hooks() -> None:
    server = Server("rooted")
    seen: list[list[str]] = []
    hook_ran = trio.Event()

    @server.on_roots_changed
    async def failing(ctx: Context) -> None:
        raise RuntimeError("a broken hook is only logged")

    @server.on_roots_changed
    async def refresh(ctx: Context) -> None:
        seen.append([root.uri for root in await ctx.list_roots()])
        hook_ran.set()

    @server.tool()
    async def noop() -> str:
        """Do nothing."""
        return "ok"

    async with open_session(server) as h:
        # Before initialize the notification means nothing.
        await h.notify("notifications/roots/list_changed")
        await h.expect_nothing()
        await h.initialize(capabilities={"roots": {"listChanged": True}})
        await h.notify("notifications/roots/list_changed")
        asked = await h.server_request("roots/list")
        assert h.received[-1].related_request_id is None
        await h.answer(asked, {"roots": [{"uri": "file:///project"}]})
        with trio.fail_after(1):
            await hook_ran.wait()
        assert seen == [["file:///project"]]
        assert tool_text(await h.call_tool("noop")) == "ok"
        await trio.testing.wait_all_tasks_blocked()
        assert_idle(h.actor)
