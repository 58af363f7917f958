"""The Server as a whole: dispatch, capabilities, identity, pagination, listeners, lifespans."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import orjson
import pytest

from mcpactor import Icon
from mcpactor.protocol import LATEST, REVISIONS
from mcpactor.server import Server
from tests.spec_schema import check

from .conftest import ALL_REVISIONS, RecordingListener, call, call_error

# --- dispatch ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "method", ["initialize", "ping", "tools/delete", "", "sampling/createMessage"]
)
async def test_unknown_method_is_method_not_found(method: str) -> None:
    server = _full_server(1)
    error = await call_error(server, method, {})
    assert error.code == -32601
    assert error.data == {"method": method}


def test_page_size_must_be_positive() -> None:
    with pytest.raises(ValueError, match="page_size must be at least 1, got 0"):
        Server("s", page_size=0)


@pytest.mark.parametrize(
    ("register", "method"),
    [
        (lambda s: s.tool(titel="t"), "tool"),
        (lambda s: s.add_tool(lambda: 1, titel="t"), "add_tool"),
        (lambda s: s.resource("data://x", mimetype="text/plain"), "resource"),
        (lambda s: s.add_resource(lambda: "", "data://x", mimetype="text/plain"), "add_resource"),
        (lambda s: s.prompt(titel="t"), "prompt"),
        (lambda s: s.add_prompt(lambda: "", titel="t"), "add_prompt"),
    ],
)
def test_an_unknown_registration_option_is_a_type_error(
    register: Callable[[Server], Any], method: str
) -> None:
    server = Server("s")
    with pytest.raises(TypeError, match=rf"Server\.{method}\(\) got an unexpected keyword"):
        register(server)
    assert server.capabilities(LATEST) == {"logging": {}}


def test_repr_names_the_server() -> None:
    assert repr(Server("clock", "2.0.0")) == "<Server 'clock' 2.0.0>"


# --- capabilities ----------------------------------------------------------------------------


def _full_server(count: int, *, page_size: int = 100) -> Server:
    server = Server("s", page_size=page_size)
    for i in range(count):
        server.add_tool(lambda: None, name=f"tool{i}")
        server.add_resource(lambda: "", f"memo://r{i}", name=f"r{i}")
        server.add_resource(lambda x: x, f"memo://t{i}/{{x}}", name=f"t{i}")
        server.add_prompt(lambda: "", name=f"prompt{i}")
    return server


@pytest.mark.parametrize("revision", ALL_REVISIONS)
async def test_empty_server_serves_nothing(revision: str) -> None:
    server = Server("s")
    capabilities = server.capabilities(REVISIONS[revision])
    assert capabilities == {"logging": {}}
    check(capabilities, revision, "ServerCapabilities")
    for method in ("tools/list", "resources/list", "resources/templates/list", "prompts/list"):
        error = await call_error(server, method, revision=revision)
        assert error.code == -32601
    for method, params in [
        ("tools/call", {"name": "x"}),
        ("resources/read", {"uri": "memo://x"}),
        ("resources/subscribe", {"uri": "memo://x"}),
        ("prompts/get", {"name": "x"}),
        ("completion/complete", {"ref": {"type": "ref/prompt", "name": "x"}}),
    ]:
        error = await call_error(server, method, params, revision=revision)
        assert error.code == -32601


async def test_a_method_is_served_from_the_registration_that_serves_it() -> None:
    # What a server serves is worked out once per change, not per request: a tool
    # registered (or removed) after a request was refused still changes the answer.
    server = Server("s")
    assert (await call_error(server, "tools/call", {"name": "t"})).code == -32601
    server.add_tool(lambda: "x", name="t")
    assert (await call(server, "tools/call", {"name": "t"}))["content"][0]["text"] == "x"
    server.remove_tool("t")
    assert (await call_error(server, "tools/call", {"name": "t"})).code == -32601
    assert (await call_error(server, "tools/list")).code == -32601


@pytest.mark.parametrize("revision", ALL_REVISIONS)
async def test_tools_only_server_declares_tools_only(revision: str) -> None:
    server = Server("s")
    server.add_tool(lambda: None, name="t")
    capabilities = server.capabilities(REVISIONS[revision])
    assert capabilities == {"logging": {}, "tools": {"listChanged": True}}
    check(capabilities, revision, "ServerCapabilities")
    assert (await call_error(server, "prompts/list", revision=revision)).code == -32601
    assert (await call_error(server, "resources/list", revision=revision)).code == -32601


@pytest.mark.parametrize("revision", ALL_REVISIONS)
def test_static_resources_declare_no_completions(revision: str) -> None:
    server = Server("s")
    server.add_resource(lambda: "", "memo://x")
    capabilities = server.capabilities(REVISIONS[revision])
    assert capabilities == {"logging": {}, "resources": {"subscribe": True, "listChanged": True}}
    check(capabilities, revision, "ServerCapabilities")


@pytest.mark.parametrize("revision", ALL_REVISIONS)
def test_prompts_and_templates_declare_completions_where_it_exists(revision: str) -> None:
    server = _full_server(1)
    capabilities = server.capabilities(REVISIONS[revision])
    expected: dict[str, Any] = {
        "logging": {},
        "tools": {"listChanged": True},
        "resources": {"subscribe": True, "listChanged": True},
        "prompts": {"listChanged": True},
    }
    # The completions capability was added in 2025-03-26.
    if revision != "2024-11-05":
        expected["completions"] = {}
    assert capabilities == expected
    check(capabilities, revision, "ServerCapabilities")


def test_capabilities_follow_registration() -> None:
    server = Server("s")
    latest = REVISIONS[ALL_REVISIONS[-1]]
    server.add_prompt(lambda: "", name="p")
    assert set(server.capabilities(latest)) == {"logging", "prompts", "completions"}
    server.remove_prompt("p")
    assert set(server.capabilities(latest)) == {"logging"}


# --- identity --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("revision", "fields"),
    [
        ("2024-11-05", {"name", "version"}),
        ("2025-03-26", {"name", "version"}),
        ("2025-06-18", {"name", "version", "title"}),
        ("2025-11-25", {"name", "version", "title", "description", "websiteUrl", "icons"}),
    ],
)
def test_info_is_pruned_per_revision(revision: str, fields: set[str]) -> None:
    server = Server(
        "weather",
        "3.1.4",
        title="Weather",
        description="Forecasts and observations.",
        website_url="https://example.com/weather",
        icons=[Icon(src="https://example.com/w.png", mime_type="image/png", theme="dark")],
        instructions="Ask about the weather.",
    )
    info = server.info(REVISIONS[revision])
    assert set(info) == fields
    assert (info["name"], info["version"]) == ("weather", "3.1.4")
    check(info, revision, "Implementation")
    if "icons" in info:
        assert info["icons"] == [
            {"src": "https://example.com/w.png", "mimeType": "image/png", "theme": "dark"}
        ]


def test_info_leaves_out_what_was_not_given() -> None:
    server = Server("bare")
    assert server.info(REVISIONS["2025-11-25"]) == {"name": "bare", "version": "0.1.0"}


# --- pagination --------------------------------------------------------------------------------

_LISTS = [
    ("tools/list", "tools", "name", [f"tool{i}" for i in range(5)]),
    ("resources/list", "resources", "uri", [f"memo://r{i}" for i in range(5)]),
    (
        "resources/templates/list",
        "resourceTemplates",
        "uriTemplate",
        [f"memo://t{i}/{{x}}" for i in range(5)],
    ),
    ("prompts/list", "prompts", "name", [f"prompt{i}" for i in range(5)]),
]


async def _walk(server: Server, method: str, key: str, revision: str) -> list[list[Any]]:
    pages: list[list[Any]] = []
    params: dict[str, Any] = {}
    while True:
        result = await call(server, method, params, revision=revision)
        pages.append(result[key])
        if "nextCursor" not in result:
            return pages
        assert isinstance(result["nextCursor"], str)
        params = {"cursor": result["nextCursor"]}
        assert len(pages) < 10, "the cursor chain does not end"


@pytest.mark.parametrize(("method", "key", "field", "expected"), _LISTS)
async def test_pagination_chains_through_every_item(
    method: str, key: str, field: str, expected: list[str], any_revision: str
) -> None:
    server = _full_server(5, page_size=2)
    pages = await _walk(server, method, key, any_revision)
    assert [len(page) for page in pages] == [2, 2, 1]
    assert [item[field] for page in pages for item in page] == expected


@pytest.mark.parametrize(("method", "key", "field", "expected"), _LISTS)
async def test_pagination_exact_multiple_has_no_empty_last_page(
    method: str, key: str, field: str, expected: list[str]
) -> None:
    server = _full_server(4, page_size=2)
    pages = await _walk(server, method, key, ALL_REVISIONS[-1])
    assert [len(page) for page in pages] == [2, 2]


def _cursor(kind: str, page: Any) -> str:
    return base64.urlsafe_b64encode(orjson.dumps([kind, page])).decode()


@pytest.mark.parametrize(("method", "key", "field", "expected"), _LISTS)
async def test_pagination_invalid_cursor_is_invalid_params(
    method: str, key: str, field: str, expected: list[str]
) -> None:
    server = _full_server(5, page_size=2)
    other_kind = "prompts" if key != "prompts" else "tools"
    for cursor in [
        "not base64 at all!",
        "",
        5,
        ["a"],
        base64.urlsafe_b64encode(b"{}").decode(),
        _cursor(other_kind, 1),  # a cursor of another list
        _cursor(key, -1),
        _cursor(key, "1"),
        _cursor(key, 3),  # past the end
    ]:
        error = await call_error(server, method, {"cursor": cursor})
        assert error.code == -32602, cursor


async def test_pagination_sees_a_tool_added_or_removed() -> None:
    server = _full_server(3, page_size=2)
    first = await call(server, "tools/list")
    assert [t["name"] for t in first["tools"]] == ["tool0", "tool1"]
    server.add_tool(lambda: None, name="late")
    pages = await _walk(server, "tools/list", "tools", ALL_REVISIONS[-1])
    assert [t["name"] for page in pages for t in page] == ["tool0", "tool1", "tool2", "late"]
    server.remove_tool("tool0")
    server.remove_tool("tool1")
    pages = await _walk(server, "tools/list", "tools", ALL_REVISIONS[-1])
    assert [[t["name"] for t in page] for page in pages] == [["tool2", "late"]]


async def test_pagination_sees_resources_and_prompts_change() -> None:
    server = _full_server(1, page_size=2)
    await call(server, "resources/list")
    await call(server, "resources/templates/list")
    await call(server, "prompts/list")
    server.add_resource(lambda: "", "memo://new", name="new")
    server.add_resource(lambda y: y, "memo://new/{y}", name="new_t")
    server.add_prompt(lambda: "", name="new_p")
    resources = await call(server, "resources/list")
    templates = await call(server, "resources/templates/list")
    prompts = await call(server, "prompts/list")
    assert [r["uri"] for r in resources["resources"]] == ["memo://r0", "memo://new"]
    assert [t["name"] for t in templates["resourceTemplates"]] == ["t0", "new_t"]
    assert [p["name"] for p in prompts["prompts"]] == ["prompt0", "new_p"]


async def test_pages_are_per_revision() -> None:
    # The cached page of one revision must not be served to another.
    server = Server("s", page_size=2)
    server.add_tool(lambda: None, name="t", title="Title")
    old = await call(server, "tools/list", revision="2024-11-05")
    new = await call(server, "tools/list", revision="2025-06-18")
    assert "title" not in old["tools"][0]
    assert new["tools"][0]["title"] == "Title"


# --- listeners -------------------------------------------------------------------------------


def test_listeners_hear_list_changes() -> None:
    server = Server("s")
    listener = RecordingListener()
    server.listeners.add(listener)
    server.add_tool(lambda: None, name="t")
    server.add_resource(lambda: "", "memo://x")
    server.add_resource(lambda v: v, "memo://{v}")
    server.add_prompt(lambda: "", name="p")
    server.remove_tool("t")
    server.remove_resource("memo://x")
    server.remove_prompt("p")
    assert listener.changes == [
        "tools",
        "resources",
        "resources",
        "prompts",
        "tools",
        "resources",
        "prompts",
    ]
    server.listeners.discard(listener)
    server.add_tool(lambda: None, name="u")
    assert len(listener.changes) == 7


def test_failed_registration_tells_no_listener() -> None:
    server = Server("s")
    listener = RecordingListener()
    server.listeners.add(listener)
    with pytest.raises(ValueError, match="invalid tool name"):
        server.add_tool(lambda: None, name="bad name")
    assert listener.changes == []


# --- lifespans ---------------------------------------------------------------------------------


def _recording_lifespan(
    name: str, events: list[str], *, fail_on_enter: bool = False
) -> Callable[[Server], Any]:
    @asynccontextmanager
    async def lifespan(server: Server) -> AsyncIterator[None]:
        events.append(f"enter {name} {server.name}")
        if fail_on_enter:
            raise RuntimeError(f"{name} cannot start")
        try:
            yield
        finally:
            events.append(f"exit {name}")

    return lifespan


async def test_lifespans_enter_in_order_and_exit_in_reverse() -> None:
    server = Server("s")
    events: list[str] = []
    for name in ("db", "cache", "http"):
        assert server.lifespan(_recording_lifespan(name, events)) is not None
    async with server.running() as running:
        assert running is server
        events.append("serving")
    assert events == [
        "enter db s",
        "enter cache s",
        "enter http s",
        "serving",
        "exit http",
        "exit cache",
        "exit db",
    ]


async def test_lifespan_failing_to_enter_exits_the_earlier_ones() -> None:
    server = Server("s")
    events: list[str] = []
    server.lifespan(_recording_lifespan("db", events))
    server.lifespan(_recording_lifespan("cache", events, fail_on_enter=True))
    server.lifespan(_recording_lifespan("http", events))
    with pytest.raises(RuntimeError, match="cache cannot start"):
        async with server.running():
            events.append("serving")
    assert events == ["enter db s", "enter cache s", "exit db"]


async def test_lifespans_exit_when_serving_fails() -> None:
    server = Server("s")
    events: list[str] = []
    server.lifespan(_recording_lifespan("db", events))
    server.lifespan(_recording_lifespan("cache", events))
    with pytest.raises(KeyError):
        async with server.running():
            raise KeyError("boom")
    assert events == ["enter db s", "enter cache s", "exit cache", "exit db"]


async def test_running_without_lifespans() -> None:
    server = Server("s")
    async with server.running() as running:
        assert running is server
