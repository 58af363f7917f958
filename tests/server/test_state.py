"""What a lifespan yields: ``server.state`` while it runs, ``ctx.state`` in its handlers.

The state belongs to the server, per running: every session, revision and task of it sees
the one object, and a mounted server's handlers see their own server's.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Final

import attrs
import pytest
import trio

import mcpactor.testing
from mcpactor import Context, RequestError, Server
from mcpactor.client import connect_http
from mcpactor.transports import serve_http
from tests.client.conftest import connect

# In memory a test takes milliseconds; over loopback HTTP, a little more.
GUARD: Final = 30.0


@attrs.define
class Counter:
    """A lifespan's state: who opened it, and how many calls it has counted."""

    owner: str
    calls: int = 0
    closed: bool = False


def counting_server(name: str, events: list[str] | None = None) -> Server[Counter]:
    """A server whose lifespan yields a Counter that its ``count`` tool increments."""

    @asynccontextmanager
    async def open_counter(server: Server) -> AsyncIterator[Counter]:
        counter = Counter(name)
        if events is not None:
            events.append(f"open {name}")
        try:
            yield counter
        finally:
            counter.closed = True
            if events is not None:
                events.append(f"close {name}")

    server = Server(name, lifespan=open_counter)

    @server.tool()
    async def count(ctx: Context[Counter]) -> str:
        """Count this call in the server's state."""
        ctx.state.calls += 1
        return f"{ctx.state.owner} {ctx.state.calls}"

    return server


def _text(result: Any) -> str:
    assert not result.is_error, result
    return str(result.text)


# --- one server ----------------------------------------------------------------------


async def test_handlers_read_what_the_lifespan_yielded() -> None:
    server = counting_server("notes")
    async with mcpactor.testing.client(server) as client:
        assert _text(await client.call_tool("count")) == "notes 1"
        assert _text(await client.call_tool("count")) == "notes 2"
        assert server.state == Counter("notes", calls=2)
        state = server.state
    assert state.closed


async def test_every_session_shares_the_state_of_one_running() -> None:
    server = counting_server("notes")
    async with server.running():
        # Two sessions of one running server: connect_memory without its own lifespans.
        async with (
            mcpactor.client.connect_memory(server, initialize=True, lifespan=False) as first,
            mcpactor.client.connect_memory(server, initialize=True, lifespan=False) as second,
        ):
            assert _text(await first.call_tool("count")) == "notes 1"
            assert _text(await second.call_tool("count")) == "notes 2"
        assert server.state.calls == 2


async def test_the_state_is_there_only_while_the_server_runs() -> None:
    server = counting_server("notes")
    with pytest.raises(RuntimeError, match=r"<Server 'notes' 0.1.0> is not running"):
        _ = server.state
    async with server.running() as running:
        assert running is server
        assert server.state.owner == "notes"
    with pytest.raises(RuntimeError, match="is not running"):
        _ = server.state


async def test_a_handler_of_a_server_not_running_its_lifespan_gets_an_error_result() -> None:
    server = counting_server("notes")
    async with mcpactor.client.connect_memory(server, initialize=True, lifespan=False) as client:
        result = await client.call_tool("count")
    assert result.is_error
    assert "is not running, so its lifespan has yielded no state" in result.text


async def test_a_server_without_a_lifespan_has_none() -> None:
    server = Server("plain")

    @server.tool()
    def state(ctx: Context) -> str:
        return repr(ctx.state)

    assert server.state is None
    async with mcpactor.testing.client(server) as client:
        assert _text(await client.call_tool("state")) == "None"


async def test_lifespans_added_later_see_the_state_to_open_and_to_close() -> None:
    events: list[str] = []
    server = counting_server("notes", events)

    @server.lifespan
    @asynccontextmanager
    async def warm(server: Server[Counter]) -> AsyncIterator[None]:
        events.append(f"warm {server.state.owner}")
        yield
        events.append(f"cool {server.state.owner} closed={server.state.closed}")

    async with server.running():
        pass
    assert events == ["open notes", "warm notes", "cool notes closed=False", "close notes"]


async def test_a_lifespan_failing_after_the_state_leaves_nothing_behind() -> None:
    server = counting_server("notes")

    @server.lifespan
    @asynccontextmanager
    async def broken(_: Server) -> AsyncIterator[None]:
        raise OSError("no cache")
        yield  # pragma: no cover

    with pytest.raises(OSError, match="no cache"):
        async with server.running():
            pass  # pragma: no cover
    with pytest.raises(RuntimeError, match="is not running"):
        _ = server.state


async def test_a_server_running_twice_at_once_shows_the_latest_running() -> None:
    # Two in-memory clients at once each enter the lifespan; when the second leaves, the
    # first's state is the server's again.
    server = counting_server("notes")
    async with server.running():
        first = server.state
        async with server.running():
            second = server.state
            assert second is not first
        assert server.state is first
        assert not first.closed
        assert second.closed


# --- every kind of handler, and tasks ---------------------------------------------------


async def test_resources_prompts_and_completers_see_the_state_too() -> None:
    server = counting_server("notes")

    @server.resource("notes://{name}")
    def note(name: str, ctx: Context[Counter]) -> str:
        return f"{name} of {ctx.state.owner}"

    @server.prompt()
    def summarise(topic: str, ctx: Context[Counter]) -> str:
        return f"{topic} for {ctx.state.owner}"

    @server.completion("notes://{name}", "name")
    def names(value: str, arguments: dict[str, str], ctx: Context[Counter]) -> list[str]:
        return [ctx.state.owner]

    async with mcpactor.testing.client(server) as client:
        read = await client.read_resource("notes://a")
        prompt = await client.get_prompt("summarise", {"topic": "t"})
        completion = await client.complete(
            {"type": "ref/resource", "uri": "notes://{name}"}, {"name": "name", "value": ""}
        )
    assert read["contents"][0]["text"] == "a of notes"
    assert prompt["messages"][0]["content"]["text"] == "t for notes"
    assert completion["completion"]["values"] == ["notes"]


async def test_a_task_sees_the_state_of_the_server_that_started_it() -> None:
    server = counting_server("notes")

    @server.tool(task_support="optional")
    async def slow_count(ctx: Context[Counter]) -> int:
        ctx.state.calls += 10
        return ctx.state.calls

    with trio.fail_after(GUARD):
        async with mcpactor.testing.client(server, protocol_version="2025-11-25") as client:
            task = await client.tasks.call_tool("slow_count")
            result = await client.tasks.result(task["taskId"])
            assert result.data == 10
            assert server.state.calls == 10


# --- mounted servers ---------------------------------------------------------------------


async def test_each_mounted_server_sees_its_own_lifespans_state() -> None:
    events: list[str] = []
    app = counting_server("app", events)
    notes = counting_server("notes", events)
    deep = counting_server("deep", events)
    notes.mount(deep, "deep")
    app.mount(notes, "notes")
    async with connect(app) as client:
        assert _text(await client.call_tool("count")) == "app 1"
        assert _text(await client.call_tool("notes_count")) == "notes 1"
        assert _text(await client.call_tool("notes_deep_count")) == "deep 1"
        assert _text(await client.call_tool("notes_deep_count")) == "deep 2"
        assert (app.state.calls, notes.state.calls, deep.state.calls) == (1, 1, 2)
    assert events == [
        "open app",
        "open notes",
        "open deep",
        "close deep",
        "close notes",
        "close app",
    ]


async def test_a_mounted_server_whose_state_fails_to_open_fails_alone() -> None:
    @asynccontextmanager
    async def unreachable(_: Server) -> AsyncIterator[Counter]:
        raise ConnectionRefusedError("database down")
        yield Counter("never")  # pragma: no cover

    broken = Server("broken", lifespan=unreachable)
    broken.add_tool(lambda: "never", name="ping")
    app = counting_server("app")
    app.mount(broken, "broken")
    async with connect(app) as client:
        assert _text(await client.call_tool("count")) == "app 1"
        with pytest.raises(RequestError, match="server 'broken' has failed"):
            await client.call_tool("broken_ping")
    assert app.mounts[0].state == "failed"


# --- both eras over HTTP -------------------------------------------------------------------


@asynccontextmanager
async def http_url(server: Server) -> AsyncIterator[str]:
    """``serve_http`` on an ephemeral port (lifespans entered by it); its MCP URL."""
    async with trio.open_nursery() as nursery:
        host, port = await nursery.start(functools.partial(serve_http, server, port=0))
        yield f"http://{host}:{port}/mcp"
        nursery.cancel_scope.cancel()


async def test_sessions_and_stateless_requests_share_one_state_over_http() -> None:
    app = counting_server("app")
    app.mount(counting_server("notes"), "notes")
    with trio.fail_after(GUARD):
        async with http_url(app) as url:
            async with connect_http(url, initialize=True, protocol_version="2025-11-25") as s:
                assert _text(await s.call_tool("count")) == "app 1"
                assert _text(await s.call_tool("notes_count")) == "notes 1"
            async with connect_http(url, initialize=True, protocol_version="2026-07-28") as c:
                assert c.server.stateless
                assert _text(await c.call_tool("count")) == "app 2"
                assert _text(await c.call_tool("notes_count")) == "notes 2"
