"""Extensions' custom methods: dispatched, validated, cancelled, and their notifications."""

from __future__ import annotations

from typing import Any

import pytest
import trio

import mcpactor.testing
from mcpactor import (
    CustomMethod,
    CustomNotification,
    Extension,
    ExtensionError,
    RequestError,
    SchemaError,
    Server,
)
from mcpactor.protocol import JSONValue
from mcpactor.server import Context
from mcpactor.server._stateless import serve_stateless

from .test_stateless import envelope_context

GUARD = 10.0

QUERY = {
    "type": "object",
    "properties": {"query": {"type": "string", "maxLength": 50}},
    "required": ["query"],
    "additionalProperties": False,
}
HITS = {
    "type": "object",
    "properties": {"hits": {"type": "array", "items": {"type": "string"}}},
    "required": ["hits"],
}


class Catalogue:
    """A search extension whose handlers record what they saw."""

    def __init__(self) -> None:
        self.selected: list[dict[str, Any]] = []
        self.selected_event = trio.Event()
        self.started = trio.Event()
        self.cancelled = False
        self.contexts: list[Context] = []

    async def search(self, params: dict[str, Any], ctx: Context) -> dict[str, Any]:
        self.contexts.append(ctx)
        query = params["query"]
        if query == "broken":
            return {"hits": "not a list"}
        if query == "slow":
            self.started.set()
            try:
                await trio.sleep_forever()
            finally:
                self.cancelled = True
        if query == "tell":
            await ctx.notify("com.example/progress", {"found": 2})
        return {"hits": [f"{query}-1", f"{query}-2"]}

    async def on_selected(self, params: dict[str, Any], ctx: Context) -> None:
        self.selected.append(params)
        self.contexts.append(ctx)
        self.selected_event.set()

    def extension(self) -> Extension:
        return Extension(
            "com.example/search",
            settings={"ranking": True},
            methods=[CustomMethod("com.example/search", self.search, QUERY, HITS)],
            notifications=[
                CustomNotification(
                    "com.example/selected",
                    {"type": "object", "required": ["hit"]},
                    handler=self.on_selected,
                ),
                CustomNotification(
                    "com.example/progress",
                    {"type": "object", "properties": {"found": {"type": "integer"}}},
                ),
            ],
        )


def make(catalogue: Catalogue) -> Server:
    server = Server("search", extensions=[catalogue.extension()])

    @server.tool
    def hello() -> str:
        return "hi"

    return server


async def test_a_custom_request_is_served_in_a_session() -> None:
    catalogue = Catalogue()
    async with mcpactor.testing.client(make(catalogue)) as client:
        result = await client.request("com.example/search", {"query": "x"})
    assert result == {"hits": ["x-1", "x-2"]}
    ctx = catalogue.contexts[0]
    assert ctx.protocol_version == "2025-11-25"
    assert ctx.server is not None
    assert ctx.server.name == "search"


@pytest.mark.parametrize(
    ("params", "where"),
    [
        ({}, "'query' is a required property"),
        ({"query": 7}, "/query"),
        ({"query": "x" * 10_000}, "/query"),
        ({"query": "x", "extra": 1}, "Additional properties"),
    ],
)
async def test_params_that_break_the_schema_are_refused_with_32602(
    params: dict[str, Any], where: str
) -> None:
    catalogue = Catalogue()
    async with mcpactor.testing.client(make(catalogue)) as client:
        with pytest.raises(RequestError) as info:
            await client.request("com.example/search", params)
    assert info.value.code == -32602
    assert where in info.value.message
    # Bounded: the message never repeats a huge value in full.
    assert len(info.value.message) < 2_000
    assert catalogue.contexts == []


async def test_meta_is_no_param_of_the_schema() -> None:
    catalogue = Catalogue()
    async with mcpactor.testing.client(make(catalogue)) as client:
        result = await client.request(
            "com.example/search", {"query": "m", "_meta": {"com.example/trace": "t1"}}
        )
    assert result["hits"] == ["m-1", "m-2"]
    assert catalogue.contexts[0].meta["com.example/trace"] == "t1"


async def test_a_result_that_breaks_its_schema_is_an_internal_error() -> None:
    catalogue = Catalogue()
    async with mcpactor.testing.client(make(catalogue)) as client:
        with pytest.raises(RequestError) as info:
            await client.request("com.example/search", {"query": "broken"})
        assert info.value.code == -32603
        assert "breaks its result schema" in info.value.message
        # The session goes on.
        assert (await client.request("com.example/search", {"query": "ok"}))["hits"]


async def test_an_unknown_method_is_still_32601() -> None:
    async with mcpactor.testing.client(make(Catalogue())) as client:
        with pytest.raises(RequestError) as info:
            await client.request("com.example/nothing", {})
    assert info.value.code == -32601


async def test_a_custom_request_is_cancelled_like_a_core_one() -> None:
    catalogue = Catalogue()
    async with mcpactor.testing.client(make(catalogue)) as client:
        with trio.fail_after(GUARD):
            async with trio.open_nursery() as nursery:

                async def ask() -> None:
                    await client.request("com.example/search", {"query": "slow"})

                nursery.start_soon(ask)
                await catalogue.started.wait()
                nursery.cancel_scope.cancel()
            # The client said notifications/cancelled before this request, in order: by
            # its answer the handler's scope was cancelled.
            await client.request("com.example/search", {"query": "ok"})
            await trio.testing.wait_all_tasks_blocked()
    assert catalogue.cancelled


async def test_a_client_notification_reaches_its_handler() -> None:
    catalogue = Catalogue()
    async with mcpactor.testing.client(make(catalogue)) as client:
        await client.notify("com.example/selected", {"hit": "x-1"})
        with trio.fail_after(GUARD):
            await catalogue.selected_event.wait()
    assert catalogue.selected == [{"hit": "x-1"}]
    assert catalogue.contexts[0].request_id is None


async def test_a_notification_breaking_its_schema_is_dropped() -> None:
    catalogue = Catalogue()
    async with mcpactor.testing.client(make(catalogue)) as client:
        await client.notify("com.example/selected", {"nohit": 1})
        await client.notify("com.example/selected", {"hit": "second"})
        with trio.fail_after(GUARD):
            await catalogue.selected_event.wait()
    assert catalogue.selected == [{"hit": "second"}]


async def test_a_handler_sends_its_extensions_notification() -> None:
    seen: list[JSONValue] = []

    def hear(message: JSONValue, stream: str | None) -> None:
        seen.append(message)

    async with mcpactor.testing.client(make(Catalogue()), on_server_message=hear) as client:
        await client.request("com.example/search", {"query": "tell"})
    sent = [m for m in seen if isinstance(m, dict) and m.get("method") == "com.example/progress"]
    assert sent == [{"jsonrpc": "2.0", "method": "com.example/progress", "params": {"found": 2}}]


async def test_a_handler_may_send_only_declared_notifications_that_match() -> None:
    server = make(Catalogue())
    ctx = envelope_context(server)
    with pytest.raises(ExtensionError, match="not a notification of an extension"):
        await ctx.notify("com.example/undeclared", {})
    with pytest.raises(SchemaError, match="does not match its params schema"):
        await ctx.notify("com.example/progress", {"found": "two"})
    await ctx.notify("com.example/progress", {"found": 2})
    assert ctx._peer.notifications == [("com.example/progress", {"found": 2}, 1)]  # type: ignore[attr-defined]


async def test_a_mounted_servers_custom_method_is_served_by_the_parent() -> None:
    catalogue = Catalogue()
    parent = Server("parent")
    parent.mount(make(catalogue), "s")
    async with mcpactor.testing.client(parent) as client:
        assert (await client.request("com.example/search", {"query": "p"}))["hits"] == [
            "p-1",
            "p-2",
        ]
        await client.notify("com.example/selected", {"hit": "p-1"})
        with trio.fail_after(GUARD):
            await catalogue.selected_event.wait()
    # Its handlers see their own server.
    assert all(c.server is not parent for c in catalogue.contexts)


async def test_a_custom_request_is_served_at_2026_07_28() -> None:
    catalogue = Catalogue()
    server = make(catalogue)
    ctx = envelope_context(server, {"extensions": {"com.example/search": {}}})
    result = await serve_stateless(server, "com.example/search", {"query": "s"}, ctx)
    assert result["hits"] == ["s-1", "s-2"]
    assert result["resultType"] == "complete"
    assert "io.modelcontextprotocol/serverInfo" in result["_meta"]
    assert catalogue.contexts[0].client_capabilities["extensions"] == {"com.example/search": {}}
    with pytest.raises(RequestError) as info:
        await serve_stateless(server, "com.example/search", {"query": 1}, ctx)
    assert info.value.code == -32602
    # A core method of another revision stays unknown.
    with pytest.raises(RequestError) as info:
        await serve_stateless(server, "ping", {}, ctx)
    assert info.value.code == -32601


async def test_a_custom_request_is_counted_under_its_method() -> None:
    from mcpactor.runtime import METRICS

    def counted(outcome: str) -> int:
        return METRICS.requests().get(("com.example/search", "", outcome), 0)

    ok, error = counted("ok"), counted("error")
    async with mcpactor.testing.client(make(Catalogue())) as client:
        await client.request("com.example/search", {"query": "x"})
        with pytest.raises(RequestError):
            await client.request("com.example/search", {"query": 1})
    assert (counted("ok"), counted("error")) == (ok + 1, error + 1)
