"""The middleware chain's edges, in memory in both eras: ends while the handler runs,
errors either way, notices from a handler's own tasks, and the built-in layers."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator

import pytest
import trio
import trio.testing

import mcpactor.testing
from mcpactor import CacheHint, Context, RequestError, Server
from mcpactor.client import ClientSession, connect_http
from mcpactor.middleware import (
    RATE_LIMITED,
    Call,
    LogMessage,
    Message,
    Next,
    Progress,
    RateLimit,
    ResponseCache,
    Result,
    ToolFilter,
    timing,
)

from ..transports._http_server import socket_client

VERSIONS = ["2025-11-25", "2026-07-28"]
STATELESS = "2026-07-28"


@contextlib.asynccontextmanager
async def opened(server: Server, version: str, **args: object) -> AsyncIterator[ClientSession]:
    """A client of ``server``: in memory in a session, over HTTP on a socket at 2026-07-28."""
    if version != STATELESS:
        async with mcpactor.testing.client(server, protocol_version=version, **args) as client:  # type: ignore[arg-type]
            yield client
        return
    async with socket_client(server) as http:
        url = f"http://{http.host}:{http.port}/mcp"
        async with connect_http(url, initialize=True, protocol_version=version, **args) as client:  # type: ignore[arg-type]
            yield client


@pytest.fixture(params=VERSIONS)
def version(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


def counting_server() -> tuple[Server, list[str]]:
    server = Server("chain", "1.0.0")
    events: list[str] = []

    @server.tool()
    async def count(steps: int, ctx: Context) -> str:
        """Report progress ``steps`` times."""
        try:
            for step in range(1, steps + 1):
                await ctx.report_progress(step, steps)
        except BaseException as exc:
            events.append(f"handler ended by {type(exc).__name__}")
            raise
        events.append("handler done")
        return f"counted {steps}"

    @server.tool()
    async def fan(ctx: Context) -> str:
        """Report progress from three tasks at once, each inside a deadline of its own."""

        async def report(value: int) -> None:
            with trio.fail_after(60):
                await ctx.report_progress(value, 3)

        async with trio.open_nursery() as nursery:
            for value in (1, 2, 3):
                nursery.start_soon(report, value)
        return "fanned"

    @server.tool()
    async def refuse() -> str:
        """Refuse with a RequestError."""
        raise RequestError(-32050, "the handler refused", {"by": "handler"})

    @server.tool()
    async def add(a: int, b: int) -> str:
        """Add two numbers."""
        events.append("add")
        return str(a + b)

    @server.tool()
    async def secret() -> str:
        """A tool a filter hides."""
        return "secret"

    return server, events


async def test_a_layer_that_answers_on_a_notice_cancels_the_handler(version: str) -> None:
    server, events = counting_server()

    @server.middleware.use
    async def first_progress_only(call: Call, call_next: Next) -> AsyncIterator[Message]:
        async for message in call_next(call):
            yield message
            if isinstance(message, Progress):
                yield Result({"content": [{"type": "text", "text": "enough"}]})
                return

    got: list[float] = []

    async def progress(value: float, total: float | None, message: str | None) -> None:
        got.append(value)

    async with opened(server, version) as client:
        result = await client.call_tool("count", {"steps": 5}, progress_handler=progress)
        assert result.text == "enough"
        assert got == [1]
        assert events == ["handler ended by ChainAnswered"]
        # The session serves on.
        assert (await client.call_tool("add", {"a": 1, "b": 2})).text == "3"


async def test_a_layer_that_raises_on_a_notice_refuses_and_cancels_the_handler(
    version: str,
) -> None:
    server, events = counting_server()

    @server.middleware.use
    async def no_progress(call: Call, call_next: Next) -> AsyncIterator[Message]:
        async for message in call_next(call):
            if isinstance(message, Progress):
                raise RequestError(-32051, "no progress allowed")
            yield message

    async def progress(value: float, total: float | None, message: str | None) -> None:
        pass

    async with opened(server, version) as client:
        with pytest.raises(RequestError) as refused:
            await client.call_tool("count", {"steps": 3}, progress_handler=progress)
        assert refused.value.code == -32051
        assert events == ["handler ended by ChainAnswered"]


async def test_a_handler_error_reaches_the_layers_as_an_exception(version: str) -> None:
    server, _ = counting_server()

    @server.middleware.use
    async def reworded(call: Call, call_next: Next) -> AsyncIterator[Message]:
        try:
            async for message in call_next(call):
                yield message
        except RequestError as exc:
            raise RequestError(exc.code, f"reworded: {exc.message}", exc.data) from None

    async with opened(server, version) as client:
        with pytest.raises(RequestError) as refused:
            await client.call_tool("refuse")
        assert refused.value.code == -32050
        assert refused.value.message == "reworded: the handler refused"
        assert refused.value.data == {"by": "handler"}


async def test_notices_from_a_handlers_own_tasks_all_pass(version: str) -> None:
    server, _ = counting_server()
    passed: list[object] = []

    @server.middleware.use
    async def watch(call: Call, call_next: Next) -> AsyncIterator[Message]:
        async for message in call_next(call):
            if isinstance(message, Progress):
                passed.append(message.params["progress"])
            yield message

    got: list[float] = []

    async def progress(value: float, total: float | None, message: str | None) -> None:
        got.append(value)

    async with opened(server, version) as client:
        result = await client.call_tool("fan", progress_handler=progress)
    assert result.text == "fanned"
    # Reports that do not increase are dropped by the Context; the rest pass, in order.
    assert got
    assert got == passed


async def test_a_layer_that_yields_no_message_is_an_internal_error(version: str) -> None:
    server, _ = counting_server()

    @server.middleware.use
    async def wrong(call: Call, call_next: Next) -> AsyncIterator[Message]:
        async for message in call_next(call):
            yield "not a message" if call.method == "tools/call" else message  # type: ignore[misc]

    async with opened(server, version) as client:
        with pytest.raises(RequestError) as failed:
            await client.call_tool("add", {"a": 1, "b": 2})
        assert failed.value.code == -32603


def test_the_chain_keeps_registration_order() -> None:
    server = Server("order")

    async def a(call: Call, call_next: Next) -> AsyncIterator[Message]:
        async for message in call_next(call):
            yield message

    async def b(call: Call, call_next: Next) -> AsyncIterator[Message]:
        async for message in call_next(call):
            yield message

    assert server.middleware.use(a) is a
    server.middleware.use(b)
    assert list(server.middleware) == [a, b]
    assert len(server.middleware) == 2
    with pytest.raises(TypeError):
        server.middleware.use("not callable")  # type: ignore[arg-type]


# --- the built-in layers ---------------------------------------------------------------


async def test_timing_logs_method_outcome_and_duration(
    version: str, caplog: pytest.LogCaptureFixture
) -> None:
    server, _ = counting_server()
    server.middleware.use(timing())
    caplog.set_level(logging.INFO, logger="mcpactor.middleware")
    async with opened(server, version) as client:
        await client.call_tool("add", {"a": 1, "b": 2})
        with pytest.raises(RequestError):
            await client.call_tool("refuse")
    lines = [record.getMessage() for record in caplog.records]
    assert any(line.startswith("request 'tools/call' 'add': ok in ") for line in lines), lines
    assert any(line.startswith("request 'tools/call' 'refuse': error -32050 in") for line in lines)


async def test_rate_limit_refuses_with_retry_after_then_refills(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server, _ = counting_server()
    limit = RateLimit(rate=2.0, burst=2, methods={"tools/call"})
    server.middleware.use(limit)
    async with mcpactor.testing.client(server) as client:
        await client.call_tool("add", {"a": 1, "b": 1})
        await client.call_tool("add", {"a": 1, "b": 1})
        with pytest.raises(RequestError) as refused:
            await client.call_tool("add", {"a": 1, "b": 1})
        assert refused.value.code == RATE_LIMITED
        retry = refused.value.data["retryAfter"]
        assert 0 < retry <= 0.5
        assert "retry after" in refused.value.message
        # Other methods are not counted.
        await client.list_tools()
        await trio.sleep(retry)
        assert (await client.call_tool("add", {"a": 1, "b": 1})).text == "2"


async def test_rate_limit_keeps_a_bucket_per_caller(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server, _ = counting_server()
    server.middleware.use(RateLimit(rate=1.0, burst=1, methods={"tools/call"}))
    first = mcpactor.testing.client(server, client_info={"name": "one", "version": "1"})
    second = mcpactor.testing.client(server, client_info={"name": "two", "version": "1"})
    async with first as one, second as two:
        await one.call_tool("add", {"a": 1, "b": 1})
        await two.call_tool("add", {"a": 1, "b": 1})
        with pytest.raises(RequestError):
            await one.call_tool("add", {"a": 1, "b": 1})


async def test_tool_filter_hides_and_refuses_like_an_unknown_tool(version: str) -> None:
    server, _ = counting_server()
    server.middleware.use(ToolFilter(deny={"secret"}))
    async with opened(server, version) as client:
        names = {tool["name"] for tool in await client.list_tools()}
        assert "secret" not in names
        assert "add" in names
        with pytest.raises(RequestError) as denied:
            await client.call_tool("secret")
        with pytest.raises(RequestError) as unknown:
            await client.call_tool("nosuch")
    assert denied.value.code == unknown.value.code
    assert denied.value.message == unknown.value.message.replace("nosuch", "secret")
    assert denied.value.data == {"name": "secret"}


async def test_tool_filter_allow_list() -> None:
    server, _ = counting_server()
    server.middleware.use(ToolFilter(allow={"add"}))
    async with mcpactor.testing.client(server) as client:
        assert [tool["name"] for tool in await client.list_tools()] == ["add"]
        assert (await client.call_tool("add", {"a": 2, "b": 2})).text == "4"


def reading_server(hint: CacheHint) -> tuple[Server, list[int]]:
    server = Server("cached", "1.0.0")
    reads: list[int] = []

    @server.resource("mem://clock", cache=hint)
    async def clock() -> str:
        reads.append(1)
        return f"read {len(reads)}"

    return server, reads


@pytest.mark.parametrize("scope", ["private", "public"])
async def test_response_cache_honours_the_ttl_hint(
    scope: str, mock_clock: trio.testing.MockClock
) -> None:
    server, reads = reading_server(CacheHint(ttl_ms=1000, scope=scope))  # type: ignore[arg-type]
    cache = ResponseCache()
    server.middleware.use(cache)
    async with opened(server, STATELESS) as client:
        first = await client.read_resource("mem://clock")
        again = await client.read_resource("mem://clock")
        assert again["contents"] == first["contents"]
        assert again["ttlMs"] <= first["ttlMs"]
        assert len(reads) == 1
        mock_clock.jump(1.5)
        later = await client.read_resource("mem://clock")
        assert later["contents"][0]["text"] == "read 2"
    assert cache.hits == 1


async def test_response_cache_keeps_nothing_without_hints() -> None:
    server, reads = reading_server(CacheHint(ttl_ms=0))
    server.middleware.use(ResponseCache())
    async with opened(server, STATELESS) as client:
        await client.read_resource("mem://clock")
        await client.read_resource("mem://clock")
    assert len(reads) == 2
    # A session revision has no cache hints at all.
    server, reads = reading_server(CacheHint(ttl_ms=60_000))
    server.middleware.use(ResponseCache())
    async with mcpactor.testing.client(server, protocol_version="2025-11-25") as client:
        await client.read_resource("mem://clock")
        await client.read_resource("mem://clock")
    assert len(reads) == 2


async def test_a_log_message_passes_through_the_chain_rewritten(version: str) -> None:
    server = Server("logs", "1.0.0")

    @server.tool()
    async def chatty(ctx: Context) -> str:
        """Log a message, then answer."""
        await ctx.info("secret 1234")
        return "done"

    @server.middleware.use
    async def redact(call: Call, call_next: Next) -> AsyncIterator[Message]:
        async for message in call_next(call):
            if isinstance(message, LogMessage):
                message.params = {**message.params, "data": "secret ****"}
            yield message

    async with opened(server, version) as client:
        await client.set_logging_level("info")
        assert (await client.call_tool("chatty")).text == "done"
        logged = [
            n.params["data"]
            for n in client.notifications.received
            if n.method == "notifications/message" and n.params is not None
        ]
    assert logged == ["secret ****"]


async def test_an_input_required_answer_is_a_message_of_its_own() -> None:
    server = Server("asks", "1.0.0")
    seen: list[str] = []
    form = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}

    @server.tool()
    async def greet(ctx: Context) -> str:
        """Ask the user's name, then greet them."""
        answer = await ctx.elicit("Your name?", form)
        return f"hello {(answer.content or {}).get('name')}"

    @server.middleware.use
    async def watch(call: Call, call_next: Next) -> AsyncIterator[Message]:
        async for message in call_next(call):
            if call.method == "tools/call":
                seen.append(type(message).__name__)
            yield message

    async def answer(params: dict[str, object]) -> dict[str, object]:
        return {"action": "accept", "content": {"name": "Ada"}}

    async with opened(server, STATELESS, elicitation_handler=answer) as client:
        assert (await client.call_tool("greet")).text == "hello Ada"
    assert seen == ["InputRequiredResult", "Result"]


async def test_response_cache_keeps_no_request_over_its_key_bound(
    mock_clock: trio.testing.MockClock,
) -> None:
    server, reads = reading_server(CacheHint(ttl_ms=60_000))
    cache = ResponseCache(max_key_bytes=8)
    server.middleware.use(cache)
    async with opened(server, STATELESS) as client:
        await client.read_resource("mem://clock")
        await client.read_resource("mem://clock")
    assert len(reads) == 2
    assert len(cache) == 0


async def test_a_call_kept_past_its_request_cannot_be_served_again(version: str) -> None:
    server, _ = counting_server()
    kept: list[tuple[Call, Next]] = []

    @server.middleware.use
    async def keeper(call: Call, call_next: Next) -> AsyncIterator[Message]:
        if call.method != "tools/call":
            async for message in call_next(call):
                yield message
            return
        if kept:
            # A later request tries to go on with the first one's call.
            old_call, old_next = kept[0]
            async for message in old_next(old_call):
                yield message
            return
        kept.append((call, call_next))
        async for message in call_next(call):
            yield message

    async with opened(server, version) as client:
        assert (await client.call_tool("add", {"a": 1, "b": 2})).text == "3"
        with pytest.raises(RequestError) as failed:
            await client.call_tool("add", {"a": 2, "b": 2})
        assert failed.value.code == -32603
        assert "call_next() after its request ended" in failed.value.message
        # What the kept call says is still there to read.
        assert kept[0][0].method == "tools/call"
        assert kept[0][0].params is not None
        assert kept[0][0].params["arguments"] == {"a": 1, "b": 2}
