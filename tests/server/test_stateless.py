"""Serving stateless (2026-07-28) requests: discovery, result shapes, cache hints, order."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from mcpactor import RequestError
from mcpactor._exceptions import LocalProtocolError
from mcpactor.protocol import REVISIONS, SERVER_INFO, Request
from mcpactor.protocol._envelope import ALL_VERSIONS, read_envelope
from mcpactor.server import CacheHint, Context, Server
from mcpactor.server._caching import combine
from mcpactor.server._stateless import (
    cache_hint,
    complete_result,
    discover_result,
    serve_stateless,
)
from tests.spec_schema import RESULT_TYPES, check

from .conftest import FakePeer, make_context

MODERN = "2026-07-28"
RESULTS = {**RESULT_TYPES, "server/discover": "DiscoverResult"}


def envelope_context(server: Server, capabilities: dict[str, Any] | None = None) -> Context:
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": capabilities or {},
        "io.modelcontextprotocol/clientInfo": {"name": "client", "version": "1"},
    }
    envelope = read_envelope(Request(1, "tools/list", {"_meta": meta}))
    return Context(peer=FakePeer(), request_id=1, negotiated=envelope, meta=meta, server=server)


async def serve(server: Server, method: str, params: dict[str, Any] | None = None) -> Any:
    """Serve one stateless request; its result checked against the 2026-07-28 schema."""
    result = await serve_stateless(server, method, params, envelope_context(server))
    assert orjson.loads(orjson.dumps(result)) == result
    check({"jsonrpc": "2.0", "id": 1, "result": result}, MODERN, "JSONRPCResultResponse")
    check(result, MODERN, RESULTS[method])
    return result


async def serve_error(server: Server, method: str, params: dict[str, Any] | None = None) -> Any:
    with pytest.raises(RequestError) as info:
        await serve_stateless(server, method, params, envelope_context(server))
    error = info.value
    check({"jsonrpc": "2.0", "id": 1, "error": error.to_error()}, MODERN, "JSONRPCErrorResponse")
    return error


def make_server(**kwargs: Any) -> Server:
    server = Server(
        "weather", "2.0.0", title="Weather", instructions="Ask about weather.", **kwargs
    )

    @server.tool
    def forecast(city: str) -> str:
        """Tomorrow's weather."""
        return f"sunny in {city}"

    @server.tool
    def alerts(region: str) -> str:
        """Current alerts."""
        return "none"

    @server.tool(name="by_coordinates")
    def coordinates(lat: float, lon: float) -> str:
        return "cloudy"

    @server.resource("file:///readme", mime_type="text/plain")
    def readme() -> str:
        return "hello"

    @server.resource("weather://{city}/today", cache=CacheHint(5_000, "public"))
    def today(city: str) -> str:
        return city

    @server.prompt
    def ask(city: str) -> str:
        return f"What about {city}?"

    return server


# --- server/discover ----------------------------------------------------------------------


async def test_discover_names_versions_capabilities_and_identity() -> None:
    server = make_server(cache=CacheHint(60_000, "public"))
    result = await serve(server, "server/discover")
    assert result["resultType"] == "complete"
    assert result["supportedVersions"] == list(ALL_VERSIONS)
    assert result["supportedVersions"][0] == MODERN
    assert set(result["capabilities"]) >= {"tools", "resources", "prompts"}
    assert "tasks" not in result["capabilities"]
    assert result["instructions"] == "Ask about weather."
    assert (result["ttlMs"], result["cacheScope"]) == (60_000, "public")
    assert result["_meta"][SERVER_INFO] == {
        "name": "weather",
        "version": "2.0.0",
        "title": "Weather",
    }


def test_discover_may_offer_fewer_versions() -> None:
    server = Server("s")
    result = discover_result(server, REVISIONS[MODERN], supported=(MODERN,))
    assert result["supportedVersions"] == [MODERN]
    assert "instructions" not in result
    # the default hint: immediately stale, private
    assert (result["ttlMs"], result["cacheScope"]) == (0, "private")
    check(result, MODERN, "DiscoverResult")


# --- result shapes ------------------------------------------------------------------------


async def test_tools_list_is_by_name_with_hints_and_server_info() -> None:
    server = make_server()
    result = await serve(server, "tools/list")
    assert [tool["name"] for tool in result["tools"]] == ["alerts", "by_coordinates", "forecast"]
    assert result["resultType"] == "complete"
    assert (result["ttlMs"], result["cacheScope"]) == (0, "private")
    assert result["_meta"][SERVER_INFO]["name"] == "weather"
    assert all("execution" not in tool for tool in result["tools"])


async def test_session_revisions_keep_registration_order_and_shape() -> None:
    server = make_server()
    result = await server.handle_request("tools/list", {}, make_context("2025-11-25"))
    assert [tool["name"] for tool in result["tools"]] == ["forecast", "alerts", "by_coordinates"]
    assert not {"resultType", "ttlMs", "cacheScope", "_meta"} & set(result)


async def test_every_page_of_a_list_has_the_lists_scope() -> None:
    server = make_server(page_size=2)

    @server.tool(cache=CacheHint(1_000, "private"))
    def zz() -> str:
        return ""

    first = await serve(server, "tools/list")
    second = await serve(server, "tools/list", {"cursor": first["nextCursor"]})
    assert [t["name"] for t in first["tools"] + second["tools"]] == sorted(
        ["forecast", "alerts", "by_coordinates", "zz"]
    )
    assert first["cacheScope"] == second["cacheScope"] == "private"
    assert first["ttlMs"] == second["ttlMs"]


async def test_a_list_is_as_fresh_as_its_stalest_entry() -> None:
    server = Server("s", cache=CacheHint(60_000, "public"))

    @server.tool(cache=CacheHint(10_000, "public"))
    def a() -> str:
        return ""

    @server.tool
    def b() -> str:
        return ""

    result = await serve(server, "tools/list")
    assert (result["ttlMs"], result["cacheScope"]) == (10_000, "public")

    @server.tool(cache=CacheHint(90_000, "private"))
    def c() -> str:
        return ""

    result = await serve(server, "tools/list")
    assert (result["ttlMs"], result["cacheScope"]) == (10_000, "private")


async def test_a_resource_read_has_its_own_hint_or_the_servers() -> None:
    server = make_server(cache=CacheHint(30_000, "public"))
    plain = await serve(server, "resources/read", {"uri": "file:///readme"})
    assert (plain["ttlMs"], plain["cacheScope"]) == (30_000, "public")
    templated = await serve(server, "resources/read", {"uri": "weather://oslo/today"})
    assert (templated["ttlMs"], templated["cacheScope"]) == (5_000, "public")
    assert templated["contents"][0]["text"] == "oslo"
    listed = await serve(server, "resources/templates/list")
    assert (listed["ttlMs"], listed["cacheScope"]) == (5_000, "public")
    resources = await serve(server, "resources/list")
    assert (resources["ttlMs"], resources["cacheScope"]) == (30_000, "public")
    prompts = await serve(server, "prompts/list")
    assert (prompts["ttlMs"], prompts["cacheScope"]) == (30_000, "public")


async def test_a_missing_resource_is_invalid_params() -> None:
    error = await serve_error(make_server(), "resources/read", {"uri": "file:///nope"})
    assert error.code == -32602
    assert error.data == {"uri": "file:///nope"}


async def test_a_tool_call_is_complete_without_hints() -> None:
    server = make_server()
    result = await serve(server, "tools/call", {"name": "forecast", "arguments": {"city": "Oslo"}})
    assert result["resultType"] == "complete"
    assert result["content"] == [{"type": "text", "text": "sunny in Oslo"}]
    assert "ttlMs" not in result
    assert result["_meta"][SERVER_INFO]["version"] == "2.0.0"


async def test_invalid_arguments_are_a_tool_error_result() -> None:
    result = await serve(make_server(), "tools/call", {"name": "forecast", "arguments": {}})
    assert result["isError"] is True
    assert result["resultType"] == "complete"


async def test_prompts_and_completion_are_shaped() -> None:
    server = make_server()
    prompt = await serve(server, "prompts/get", {"name": "ask", "arguments": {"city": "Oslo"}})
    assert prompt["resultType"] == "complete"
    assert "ttlMs" not in prompt
    completion = await serve(
        server,
        "completion/complete",
        {"ref": {"type": "ref/prompt", "name": "ask"}, "argument": {"name": "city", "value": ""}},
    )
    assert completion["resultType"] == "complete"


@pytest.mark.parametrize(
    "method",
    [
        "ping",
        "initialize",
        "logging/setLevel",
        "resources/subscribe",
        "resources/unsubscribe",
        "tasks/get",
        "tasks/list",
        "no/such",
    ],
)
async def test_methods_the_revision_lacks_are_not_found(method: str) -> None:
    error = await serve_error(make_server(), method, {"uri": "file:///readme"})
    assert error.code == -32601
    check(error.to_error(), MODERN, "MethodNotFoundError")


async def test_only_stateless_contexts_are_served() -> None:
    with pytest.raises(LocalProtocolError):
        await serve_stateless(make_server(), "tools/list", {}, make_context("2025-11-25"))


# --- the shaping function and the hints ---------------------------------------------------


def test_complete_result_leaves_session_results_alone() -> None:
    result = {"tools": []}
    for version in ("2024-11-05", "2025-11-25"):
        shaped = complete_result(
            result, method="tools/list", revision=REVISIONS[version], server_info={}, hint=None
        )
        assert shaped is result


def test_complete_result_keeps_an_interim_result_and_merges_meta() -> None:
    info = {"name": "s", "version": "1"}
    interim = {"resultType": "input_required", "requestState": "x", "_meta": {"k": 1}}
    shaped = complete_result(
        interim, method="resources/read", revision=REVISIONS[MODERN], server_info=info, hint=None
    )
    assert shaped == {**interim, "_meta": {"k": 1, SERVER_INFO: info}}
    assert interim["_meta"] == {"k": 1}  # not modified in place
    check(shaped, MODERN, "InputRequiredResult")


def test_cache_hint_of_an_unknown_uri_is_the_servers() -> None:
    server = make_server(cache=CacheHint(7, "public"))
    assert cache_hint(server, "resources/read", {"uri": "nope://"}) == CacheHint(7, "public")
    assert cache_hint(server, "resources/read", None) == CacheHint(7, "public")
    assert cache_hint(server, "server/discover", {}) == CacheHint(7, "public")


def test_combine() -> None:
    default = CacheHint(100, "public")
    assert combine(default, []) == default
    assert combine(default, [None, None]) == default
    assert combine(default, [CacheHint(500, "public"), None]) == CacheHint(100, "public")
    assert combine(CacheHint(0), [CacheHint(500, "public")]) == CacheHint(500, "public")
    assert combine(default, [CacheHint(500, "private")]) == CacheHint(500, "private")


@pytest.mark.parametrize(
    "kwargs", [{"ttl_ms": -1}, {"ttl_ms": 1.5}, {"ttl_ms": True}, {"scope": "shared"}]
)
def test_cache_hints_are_checked(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=r"ttl_ms|scope"):
        CacheHint(**kwargs)


def test_a_cache_option_must_be_a_cache_hint() -> None:
    from mcpactor._exceptions import SchemaError

    server = Server("s")
    with pytest.raises(SchemaError, match="CacheHint"):
        server.add_tool(lambda: "", name="t", cache=60)  # type: ignore[arg-type]
    with pytest.raises(SchemaError, match="CacheHint"):
        server.add_resource(lambda: "", "file:///x", cache={"ttl": 1})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="CacheHint"):
        Server("s", cache=60)  # type: ignore[arg-type]


# --- per-request log level -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("level", "sent"),
    [(None, []), ("warning", ["warning", "error"]), ("debug", ["debug", "warning", "error"])],
)
async def test_log_messages_follow_the_requests_own_level(
    level: str | None, sent: list[str]
) -> None:
    server = Server("s")

    @server.tool
    async def noisy(ctx: Context) -> str:
        await ctx.debug("d")
        await ctx.warning("w")
        await ctx.error("e")
        return "ok"

    meta: dict[str, Any] = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    if level is not None:
        meta["io.modelcontextprotocol/logLevel"] = level
    params = {"_meta": meta, "name": "noisy", "arguments": {}}
    envelope = read_envelope(Request(1, "tools/call", params))
    # the peer would send everything: the request's level decides, not the peer's
    peer = FakePeer(log_level="debug")
    ctx = Context(peer=peer, request_id=1, negotiated=envelope, meta=meta, server=server)
    await serve_stateless(server, "tools/call", params, ctx)
    levels = [message["level"] for _, message, _ in peer.notifications]
    assert levels == sent
    for _, message, request_id in peer.notifications:
        assert request_id == 1
        check(
            {"jsonrpc": "2.0", "method": "notifications/message", "params": message},
            MODERN,
            "LoggingMessageNotification",
        )
