"""Tool results as clients return them: the result dict, with ``data``, ``text``, ``is_error``.

In memory ``data`` is what the tool returned, of its annotated type; over a real
connection (and through a proxy, which has only the JSON) it is the ``structuredContent``.
"""

from __future__ import annotations

import copy
import dataclasses
import enum
import functools
import pickle
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Final, TypedDict

import attrs
import pytest
import trio

import mcpactor.testing
from mcpactor import CallToolResult, Server, TextContent, ToolError
from mcpactor.client import ToolResult, connect_http, proxy_url
from mcpactor.transports import serve_http

from .conftest import connect

GUARD: Final = 30.0


@dataclasses.dataclass
class Point:
    x: int
    y: int


@attrs.frozen
class Place:
    name: str
    at: Point


class Row(TypedDict):
    title: str
    stars: int


class Sky(enum.Enum):
    SUN = "sun"
    RAIN = "rain"


def shapes_server(name: str = "shapes") -> Server:
    """A tool per kind of return annotation."""
    server = Server(name)

    @server.tool()
    def point() -> Point:
        return Point(1, 2)

    @server.tool()
    def place() -> Place:
        return Place("home", Point(3, 4))

    @server.tool()
    def row() -> Row:
        return {"title": "trio", "stars": 5}

    @server.tool()
    def places() -> list[Place]:
        return [Place("a", Point(0, 0)), Place("b", Point(1, 1))]

    @server.tool()
    def add(a: int, b: int) -> int:
        return a + b

    @server.tool()
    def sky() -> Sky:
        return Sky.RAIN

    @server.tool()
    def pair() -> tuple[int, str]:
        return (1, "one")

    @server.tool()
    def maybe() -> Point | None:
        return None

    @server.tool()
    def hello() -> str:
        return "hello"

    @server.tool()
    def lines() -> list[TextContent]:
        return [TextContent(text="one"), TextContent(text="two")]

    @server.tool()
    def broken() -> Point:
        raise ToolError("no point")

    @server.tool(output_schema={"type": "object"})
    def own_result() -> CallToolResult:
        # Not what any annotation describes: the JSON is the value.
        return CallToolResult(
            content=[TextContent(text="own")], structured_content={"anything": True}
        )

    @server.tool(structured_output=False)
    def unstructured() -> Point:
        return Point(5, 6)

    return server


EXPECTED: Final[dict[str, tuple[Any, Any]]] = {
    # tool: (data in memory, data over a real connection)
    "point": (Point(1, 2), {"x": 1, "y": 2}),
    "place": (Place("home", Point(3, 4)), {"name": "home", "at": {"x": 3, "y": 4}}),
    "row": ({"title": "trio", "stars": 5}, {"title": "trio", "stars": 5}),
    "places": (
        [Place("a", Point(0, 0)), Place("b", Point(1, 1))],
        {"result": [{"name": "a", "at": {"x": 0, "y": 0}}, {"name": "b", "at": {"x": 1, "y": 1}}]},
    ),
    "sky": (Sky.RAIN, {"result": "rain"}),
    "pair": ((1, "one"), {"result": [1, "one"]}),
    "maybe": (None, {"result": None}),
    "hello": ("hello", {"result": "hello"}),
    "own_result": ({"anything": True}, {"anything": True}),
}


# --- in memory: the tool's own types ---------------------------------------------------


@pytest.mark.parametrize("tool", sorted(EXPECTED))
async def test_data_in_memory_is_of_the_tools_annotated_type(tool: str) -> None:
    async with mcpactor.testing.client(shapes_server()) as client:
        result = await client.call_tool(tool)
    assert isinstance(result, ToolResult)
    assert not result.is_error
    expected = EXPECTED[tool][0]
    assert result.data == expected
    assert type(result.data) is type(expected)
    if tool == "places":
        assert all(type(item) is Place and type(item.at) is Point for item in result.data)


async def test_a_wrapped_value_comes_back_unwrapped_with_its_dict_unchanged() -> None:
    async with mcpactor.testing.client(shapes_server()) as client:
        result = await client.call_tool("add", {"a": 1, "b": 2})
    assert result.data == 3
    assert result.text == '{"result":3}'
    # The dict it has always been: equal to the wire object, readable by key.
    assert result["structuredContent"] == {"result": 3}
    assert result == {
        "content": [{"type": "text", "text": '{"result":3}'}],
        "structuredContent": {"result": 3},
    }
    assert isinstance(result, dict)
    assert result.tool == "add"


async def test_text_joins_the_text_blocks_and_data_is_none_without_structure() -> None:
    async with mcpactor.testing.client(shapes_server()) as client:
        lines = await client.call_tool("lines")
        unstructured = await client.call_tool("unstructured")
    assert (lines.text, lines.data) == ("one\ntwo", None)
    assert unstructured.data is None
    assert unstructured.text == '{"x":5,"y":6}'


async def test_an_error_result_says_so_and_keeps_its_text() -> None:
    async with mcpactor.testing.client(shapes_server()) as client:
        result = await client.call_tool("broken")
    assert result.is_error
    assert result.text == "no point"
    assert result.data is None
    assert result["isError"] is True


async def test_a_mounted_servers_tools_come_back_as_their_own_types() -> None:
    app = Server("app")
    inner = Server("inner")
    inner.mount(shapes_server(), "shapes")
    app.mount(inner, "inner")

    @app.tool()
    def point() -> Point:
        return Point(9, 9)

    async with connect(app) as client:
        assert (await client.call_tool("point")).data == Point(9, 9)
        assert (await client.call_tool("inner_shapes_place")).data == Place("home", Point(3, 4))
        assert (await client.call_tool("inner_shapes_add", {"a": 2, "b": 2})).data == 4


async def test_data_is_decoded_once_and_copies_keep_the_json() -> None:
    async with mcpactor.testing.client(shapes_server()) as client:
        result = await client.call_tool("point")
    assert result.data is result.data
    for clone in (copy.copy(result), copy.deepcopy(result), pickle.loads(pickle.dumps(result))):
        assert isinstance(clone, ToolResult)
        assert clone == result
        assert clone.tool == "point"
        assert clone.data == {"x": 1, "y": 2}


# --- over real connections: the JSON ---------------------------------------------------


@asynccontextmanager
async def http_url(server: Server) -> AsyncIterator[str]:
    async with trio.open_nursery() as nursery:
        host, port = await nursery.start(functools.partial(serve_http, server, port=0))
        yield f"http://{host}:{port}/mcp"
        nursery.cancel_scope.cancel()


@pytest.mark.parametrize("revision", ["2025-11-25", "2026-07-28"])
async def test_data_over_http_is_the_structured_json(revision: str) -> None:
    with trio.fail_after(GUARD):
        async with (
            http_url(shapes_server()) as url,
            connect_http(url, initialize=True, protocol_version=revision) as client,
        ):
            for tool, (_, expected) in sorted(EXPECTED.items()):
                result = await client.call_tool(tool)
                assert isinstance(result, ToolResult)
                assert result.data == expected, tool
            broken = await client.call_tool("broken")
    assert (broken.is_error, broken.text) == (True, "no point")


@pytest.mark.parametrize("revision", ["2025-11-25", "2026-07-28"])
async def test_data_over_http_is_unwrapped_once_the_tools_are_listed(revision: str) -> None:
    # The generated schema of a value that is not an object says the object only wraps it.
    with trio.fail_after(GUARD):
        async with (
            http_url(shapes_server()) as url,
            connect_http(url, initialize=True, protocol_version=revision) as client,
        ):
            listed = {tool["name"]: tool for tool in await client.list_tools()}
            for tool, (_, json) in sorted(EXPECTED.items()):
                result = await client.call_tool(tool)
                wrapped = listed[tool]["outputSchema"].get("x-mcpactor-wrap-result") is True
                assert wrapped == (tool in {"places", "sky", "pair", "maybe", "hello"}), tool
                assert result.data == (json["result"] if wrapped else json), tool
                assert result["structuredContent"] == json, tool


async def test_a_proxied_tool_in_memory_gives_its_json() -> None:
    # The proxy has only the remote's JSON; the in-memory client gets that as it is.
    with trio.fail_after(GUARD):
        async with http_url(shapes_server()) as url:
            app = Server("app")
            app.mount(proxy_url(url, name="remote"), "remote")
            async with connect(app) as client:
                result = await client.call_tool("remote_point")
    assert result.data == {"x": 1, "y": 2}


# --- tasks -------------------------------------------------------------------------------


def task_server() -> Server:
    server = Server("tasks")

    @server.tool(task_support="optional")
    async def locate(name: str) -> Place:
        return Place(name, Point(7, 8))

    return server


async def test_a_tasks_result_decodes_as_the_calls_would(monkeypatch: pytest.MonkeyPatch) -> None:
    # The client remembers the tool of the tasks it started, the latest so many of them.
    monkeypatch.setattr("mcpactor.client._results._TASK_TOOLS", 2)
    with trio.fail_after(GUARD):
        async with mcpactor.testing.client(task_server(), protocol_version="2025-11-25") as c:
            tasks = [await c.tasks.call_tool("locate", {"name": n}) for n in "abc"]
            results = [await c.tasks.result(task["taskId"]) for task in tasks]
    assert [(result.tool, result.data) for result in results] == [
        ("", {"name": "a", "at": {"x": 7, "y": 8}}),
        ("locate", Place("b", Point(7, 8))),
        ("locate", Place("c", Point(7, 8))),
    ]
    assert all(isinstance(result, ToolResult) and not result.is_error for result in results)
