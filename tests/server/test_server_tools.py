"""Tools: registration, ``tools/list`` per revision, ``tools/call`` and its results."""

from __future__ import annotations

import base64
import threading
from typing import Any, TypedDict

import attrs
import orjson
import pytest

from mcpactor import (
    Audio,
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    Context,
    EmbeddedResource,
    Icon,
    Image,
    ImageContent,
    RequestError,
    ResourceLink,
    SchemaError,
    TextContent,
    TextResourceContents,
    ToolAnnotations,
    ToolError,
)
from mcpactor.server import Server
from mcpactor.server._schema import describe_function

from .conftest import ALL_REVISIONS, PNG, WAV, FakePeer, call, call_error, make_context

# --- registration --------------------------------------------------------------------


async def test_tool_bare_decorator_registers_under_function_name() -> None:
    server = Server("s")

    @server.tool
    def echo(text: str) -> str:
        """Echo the text back.

        Everything after the first paragraph stays out of the description.
        """
        return text

    # The decorator hands back the function itself, still callable.
    assert echo("x") == "x"
    result = await call(server, "tools/list")
    [tool] = result["tools"]
    assert tool["name"] == "echo"
    assert tool["description"] == "Echo the text back."


async def test_tool_empty_call_decorator_and_positional_name() -> None:
    server = Server("s")

    @server.tool()
    async def first() -> None:
        pass

    @server.tool("second_name")
    async def second() -> None:
        pass

    result = await call(server, "tools/list")
    assert [t["name"] for t in result["tools"]] == ["first", "second_name"]
    assert all("description" not in t for t in result["tools"])


def _fully_described_server() -> Server:
    server = Server("s")

    @server.tool(
        name="deploy",
        title="Deploy a service",
        description="Roll out a new version.",
        annotations=ToolAnnotations(destructive_hint=True, open_world_hint=False),
        icons=[Icon(src="https://example.com/deploy.png", mime_type="image/png", sizes=["48x48"])],
        meta={"example.com/owner": "ops"},
    )
    def anything(service: str) -> str:
        """This docstring loses to the explicit description."""
        return service

    return server


async def test_tool_definition_at_latest_has_every_field() -> None:
    result = await call(_fully_described_server(), "tools/list", revision="2025-11-25")
    assert result["tools"] == [
        {
            "name": "deploy",
            "title": "Deploy a service",
            "description": "Roll out a new version.",
            "inputSchema": {
                "type": "object",
                "properties": {"service": {"type": "string"}},
                "required": ["service"],
                "additionalProperties": False,
            },
            "outputSchema": {
                "type": "object",
                "properties": {"result": {"type": "string"}},
                "required": ["result"],
                "x-mcpactor-wrap-result": True,
            },
            "annotations": {"destructiveHint": True, "openWorldHint": False},
            "icons": [
                {
                    "src": "https://example.com/deploy.png",
                    "mimeType": "image/png",
                    "sizes": ["48x48"],
                }
            ],
            "_meta": {"example.com/owner": "ops"},
        }
    ]


@pytest.mark.parametrize(
    ("revision", "fields"),
    [
        ("2024-11-05", {"name", "description", "inputSchema"}),
        ("2025-03-26", {"name", "description", "inputSchema", "annotations"}),
        (
            "2025-06-18",
            {
                "name",
                "title",
                "description",
                "inputSchema",
                "outputSchema",
                "annotations",
                "_meta",
            },
        ),
        (
            "2025-11-25",
            {
                "name",
                "title",
                "description",
                "inputSchema",
                "outputSchema",
                "annotations",
                "icons",
                "_meta",
            },
        ),
    ],
)
async def test_tool_definition_pruned_to_the_revision(revision: str, fields: set[str]) -> None:
    # The official schemas allow extra properties, so the pruning is asserted by name.
    result = await call(_fully_described_server(), "tools/list", revision=revision)
    [tool] = result["tools"]
    assert set(tool) == fields


@attrs.frozen
class Window:
    start: int
    end: int | None = None


@attrs.frozen
class Point:
    x: int
    y: int


async def test_tool_input_schema_from_hints_is_sent_verbatim() -> None:
    def search(query: str, limit: int = 10, window: Window | None = None) -> list[str]:
        return []

    server = Server("s")
    server.add_tool(search)
    expected = describe_function(search, context_types=(Context,))
    result = await call(server, "tools/list")
    assert result["tools"][0]["inputSchema"] == expected.input_schema
    assert result["tools"][0]["outputSchema"] == expected.output_schema


#: A 2020-12 schema using the features most likely to be "normalised" by accident.
USER_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "point": {
            "type": "object",
            "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
            "required": ["x", "y"],
            "additionalProperties": False,
        }
    },
    "properties": {
        "start": {"$ref": "#/$defs/point"},
        "end": {"$ref": "#/$defs/point"},
        "label": {"type": "string", "minLength": 1},
    },
    "required": ["start", "end"],
    "additionalProperties": False,
}


async def test_tool_given_input_schema_is_returned_byte_for_byte() -> None:
    server = Server("s")
    received: list[dict[str, Any]] = []

    # The hints say less than the schema; the schema is what is sent and enforced.
    @server.tool(input_schema=USER_SCHEMA)
    def distance(
        ctx: Context, start: dict[str, Any], end: dict[str, Any], label: str = "-"
    ) -> None:
        received.append({"start": start, "end": end, "label": label})

    for revision in ALL_REVISIONS:
        result = await call(server, "tools/list", revision=revision)
        sent = result["tools"][0]["inputSchema"]
        assert orjson.dumps(sent) == orjson.dumps(USER_SCHEMA)


async def test_tool_given_input_schema_validates_and_passes_arguments_as_sent() -> None:
    server = Server("s")
    received: list[dict[str, Any]] = []

    # The hints say less than the schema; the schema is what is sent and enforced.
    @server.tool(input_schema=USER_SCHEMA)
    def distance(
        ctx: Context, start: dict[str, Any], end: dict[str, Any], label: str = "-"
    ) -> None:
        received.append({"start": start, "end": end, "label": label})

    arguments = {"start": {"x": 0, "y": 0}, "end": {"x": 3, "y": 4}}
    await call(server, "tools/call", {"name": "distance", "arguments": arguments})
    assert received == [{**arguments, "label": "-"}]

    # The $ref into $defs is followed when validating.
    result = await call(
        server,
        "tools/call",
        {"name": "distance", "arguments": {"start": {"x": 0}, "end": {"x": 1, "y": 1}}},
    )
    assert result["isError"] is True
    assert "/start: 'y' is a required property" in result["content"][0]["text"]
    assert len(received) == 1


async def test_tool_given_input_schema_keeps_return_annotation_output() -> None:
    # Regression: with a hand-written inputSchema the return value skipped its
    # conversion, so every call of such a tool failed its own outputSchema.
    server = Server("s")
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}

    @server.tool(input_schema=schema)
    def count(n: int) -> int:
        return n

    @server.tool(input_schema=schema)
    def point(n: int) -> Point:
        return Point(x=n, y=-n)

    result = await call(server, "tools/call", {"name": "count", "arguments": {"n": 2}})
    assert result == {
        "content": [{"type": "text", "text": '{"result":2}'}],
        "structuredContent": {"result": 2},
    }
    result = await call(server, "tools/call", {"name": "point", "arguments": {"n": 2}})
    assert result["structuredContent"] == {"x": 2, "y": -2}
    assert "isError" not in result


async def test_tool_draft7_schema_is_validated_with_draft7_rules() -> None:
    server = Server("s")
    schema = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        # In draft 7 "items" as an array is tuple validation (2020-12 calls it prefixItems).
        "properties": {
            "pair": {"type": "array", "items": [{"type": "string"}, {"type": "integer"}]}
        },
    }

    @server.tool(input_schema=schema)
    def pair(pair: list[Any]) -> None:
        pass

    ok = await call(server, "tools/call", {"name": "pair", "arguments": {"pair": ["a", 1]}})
    assert "isError" not in ok
    bad = await call(server, "tools/call", {"name": "pair", "arguments": {"pair": [1, "a"]}})
    assert bad["isError"] is True


@pytest.mark.parametrize(
    "dialect",
    ["http://json-schema.org/draft-03/schema#", "https://example.com/my-dialect", 7],
)
def test_tool_unsupported_schema_dialect_fails_at_registration(dialect: Any) -> None:
    server = Server("s")
    with pytest.raises(SchemaError, match="unsupported JSON Schema dialect"):
        server.add_tool(
            lambda: None, name="t", input_schema={"$schema": dialect, "type": "object"}
        )
    assert server.capabilities(make_context().negotiated.revision) == {"logging": {}}


def test_tool_invalid_schema_fails_at_registration() -> None:
    server = Server("s")
    with pytest.raises(SchemaError, match="invalid schema"):
        server.add_tool(lambda: None, name="t", input_schema={"type": "object", "properties": 5})


@pytest.mark.parametrize("key", ["input_schema", "output_schema"])
def test_tool_schema_root_must_be_an_object(key: str) -> None:
    # Both schemas are "type": "object" at the root in every revision that has them.
    server = Server("s")
    with pytest.raises(SchemaError, match="must have type 'object', got 'array'"):
        server.add_tool(lambda: None, name="t", **{key: {"type": "array"}})


@pytest.mark.parametrize("name", ["", "has space", "slash/ed", "ünïcode", "x" * 129, "semi;colon"])
def test_tool_invalid_name_is_refused(name: str) -> None:
    server = Server("s")
    with pytest.raises(SchemaError, match="invalid tool name"):
        server.add_tool(lambda: None, name=name)


@pytest.mark.parametrize("name", ["a", "A-Z_0.9", "x" * 128, "admin.tools.list"])
def test_tool_valid_names_are_accepted(name: str) -> None:
    server = Server("s")
    server.add_tool(lambda: None, name=name)


def test_tool_duplicate_name_is_refused() -> None:
    server = Server("s")

    @server.tool
    def same() -> None:
        pass

    with pytest.raises(SchemaError, match="'same' is already registered"):

        @server.tool(name="same")
        def other() -> None:
            pass


async def test_tool_remove_then_add_again() -> None:
    server = Server("s")
    server.add_tool(lambda: "one", name="t")
    server.remove_tool("t")
    server.add_tool(lambda: "two", name="t")
    result = await call(server, "tools/call", {"name": "t"})
    assert result["content"] == [{"type": "text", "text": "two"}]
    with pytest.raises(KeyError):
        server.remove_tool("missing")


# --- calls: arguments ----------------------------------------------------------------


def _adder() -> Server:
    server = Server("s")

    @server.tool
    def add(a: int, b: int = 1) -> int:
        return a + b

    return server


@pytest.mark.parametrize("params", [{"name": "add"}, {"name": "add", "arguments": None}])
async def test_call_missing_arguments_are_an_empty_object(params: dict[str, Any]) -> None:
    server = Server("s")
    calls: list[str] = []
    server.add_tool(lambda: calls.append("called"), name="add")
    await call(server, "tools/call", params)
    assert calls == ["called"]


@pytest.mark.parametrize("arguments", [[1, 2], "a=1", 3, True])
async def test_call_arguments_not_an_object_is_invalid_params(arguments: Any) -> None:
    for revision in ALL_REVISIONS:
        error = await call_error(
            _adder(), "tools/call", {"name": "add", "arguments": arguments}, revision=revision
        )
        assert error.code == -32602
        assert "'arguments' must be an object" in error.message


async def test_call_optional_argument_uses_handler_default() -> None:
    result = await call(_adder(), "tools/call", {"name": "add", "arguments": {"a": 41}})
    assert result["structuredContent"] == {"result": 42}


@pytest.mark.parametrize("revision", ["2024-11-05", "2025-03-26", "2025-06-18"])
async def test_call_invalid_arguments_are_invalid_params_before_2025_11_25(
    revision: str,
) -> None:
    error = await call_error(
        _adder(),
        "tools/call",
        {"name": "add", "arguments": {"a": "one", "c": 3}},
        revision=revision,
    )
    assert error.code == -32602
    assert error.data == {
        "tool": "add",
        "errors": [
            {"path": "/", "message": "Additional properties are not allowed ('c' was unexpected)"},
            {"path": "/a", "message": "'one' is not of type 'integer'"},
        ],
    }


async def test_call_invalid_arguments_are_a_tool_error_at_2025_11_25() -> None:
    # SEP-1303: the model sees the validation error and can correct itself.
    result = await call(
        _adder(), "tools/call", {"name": "add", "arguments": {"b": "two"}}, revision="2025-11-25"
    )
    assert result["isError"] is True
    [block] = result["content"]
    assert block["type"] == "text"
    assert "invalid arguments for tool 'add'" in block["text"]
    assert "/: 'a' is a required property" in block["text"]
    assert "/b: 'two' is not of type 'integer'" in block["text"]


@pytest.mark.parametrize("name", ["missing", None, 5])
async def test_call_unknown_tool_is_invalid_params(name: Any, any_revision: str) -> None:
    params = {"arguments": {}} if name is None else {"name": name, "arguments": {}}
    error = await call_error(_adder(), "tools/call", params, revision=any_revision)
    assert error.code == -32602
    assert error.message == f"unknown tool: {name!r}"
    assert error.data == {"name": name}


# --- calls: handlers ---------------------------------------------------------------------


async def test_call_sync_handler_runs_in_a_worker_thread() -> None:
    server = Server("s")
    trio_thread = threading.get_ident()
    seen: list[int] = []

    @server.tool
    def where() -> None:
        seen.append(threading.get_ident())

    peer = FakePeer()
    await call(server, "tools/call", {"name": "where"}, peer=peer)
    assert peer.thread_calls == 1
    assert seen != [trio_thread]
    assert len(seen) == 1


async def test_call_async_handler_runs_in_the_trio_thread() -> None:
    server = Server("s")
    seen: list[int] = []

    @server.tool
    async def where() -> None:
        seen.append(threading.get_ident())

    peer = FakePeer()
    await call(server, "tools/call", {"name": "where"}, peer=peer)
    assert peer.thread_calls == 0
    assert seen == [threading.get_ident()]


async def test_call_async_callable_object_is_awaited() -> None:
    class Counter:
        def __init__(self) -> None:
            self.count = 0

        async def __call__(self, step: int) -> str:
            self.count += step
            return str(self.count)

    counter = Counter()
    server = Server("s")
    server.add_tool(counter, name="count", structured_output=False)
    peer = FakePeer()
    result = await call(
        server, "tools/call", {"name": "count", "arguments": {"step": 2}}, peer=peer
    )
    assert result == {"content": [{"type": "text", "text": "2"}]}
    assert peer.thread_calls == 0


@pytest.mark.parametrize("sync", [True, False])
async def test_call_handler_receives_its_context(sync: bool) -> None:
    server = Server("s")
    seen: list[Context] = []

    def record(word: str, context: Context) -> str:
        seen.append(context)
        return word

    async def record_async(word: str, context: Context) -> str:
        return record(word, context)

    server.add_tool(record if sync else record_async, name="record")
    ctx = make_context("2025-06-18", meta={"progressToken": "tok"}, server=server)
    await call(
        server,
        "tools/call",
        {"name": "record", "arguments": {"word": "hi"}},
        revision="2025-06-18",
        ctx=ctx,
    )
    assert seen == [ctx]
    assert seen[0].progress_token == "tok"
    # The context is not an argument: the schema does not mention it.
    listed = await call(server, "tools/list")
    assert listed["tools"][0]["inputSchema"]["properties"] == {"word": {"type": "string"}}


@pytest.mark.parametrize("sync", [True, False])
async def test_call_tool_error_becomes_is_error_with_its_message(sync: bool) -> None:
    def fail() -> None:
        raise ToolError("the disk is full: 0 bytes left")

    async def fail_async() -> None:
        fail()

    server = Server("s")
    server.add_tool(fail if sync else fail_async, name="fail")
    for revision in ALL_REVISIONS:
        result = await call(server, "tools/call", {"name": "fail"}, revision=revision)
        assert result == {
            "content": [{"type": "text", "text": "the disk is full: 0 bytes left"}],
            "isError": True,
        }


@pytest.mark.parametrize("sync", [True, False])
async def test_call_other_exception_becomes_is_error_naming_its_type(
    sync: bool, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(n: int) -> int:
        return {"a": 1}[str(n)]

    async def broken_async(n: int) -> int:
        return broken(n)

    server = Server("s")
    server.add_tool(broken if sync else broken_async, name="broken")
    result = await call(server, "tools/call", {"name": "broken", "arguments": {"n": 7}})
    assert result == {
        "content": [{"type": "text", "text": "tool 'broken' failed: KeyError: '7'"}],
        "isError": True,
    }
    # The server's operator gets the traceback.
    assert any(record.exc_info for record in caplog.records)


@pytest.mark.parametrize("sync", [True, False])
async def test_call_request_error_propagates(sync: bool) -> None:
    def refuse() -> None:
        raise RequestError(-32042, "needs a URL elicitation", {"elicitations": []})

    async def refuse_async() -> None:
        refuse()

    server = Server("s")
    server.add_tool(refuse if sync else refuse_async, name="refuse")
    error = await call_error(server, "tools/call", {"name": "refuse"})
    assert (error.code, error.message, error.data) == (
        -32042,
        "needs a URL elicitation",
        {"elicitations": []},
    )


# --- results --------------------------------------------------------------------------

_TEXT_RES = TextResourceContents(uri="memo://1", text="hello", mime_type="text/plain")
_BLOB_RES = BlobResourceContents(uri="memo://2", blob="AAE=", mime_type="application/x-raw")


@pytest.mark.parametrize(
    ("value", "content"),
    [
        ("plain text", [{"type": "text", "text": "plain text"}]),
        ("", [{"type": "text", "text": ""}]),
        (None, []),
        (
            PNG,
            [{"type": "image", "data": base64.b64encode(PNG).decode(), "mimeType": "image/png"}],
        ),
        (
            WAV,
            [{"type": "audio", "data": base64.b64encode(WAV).decode(), "mimeType": "audio/wav"}],
        ),
        (
            b"\x00\x01raw",
            [
                {
                    "type": "resource",
                    "resource": {
                        "uri": "data:application/octet-stream",
                        "blob": base64.b64encode(b"\x00\x01raw").decode(),
                        "mimeType": "application/octet-stream",
                    },
                }
            ],
        ),
        (
            ImageContent(data="AAAA", mime_type="image/gif"),
            [{"type": "image", "data": "AAAA", "mimeType": "image/gif"}],
        ),
        (
            AudioContent(data="AAAA", mime_type="audio/ogg"),
            [{"type": "audio", "data": "AAAA", "mimeType": "audio/ogg"}],
        ),
        (
            EmbeddedResource(resource=_TEXT_RES),
            [
                {
                    "type": "resource",
                    "resource": {"uri": "memo://1", "text": "hello", "mimeType": "text/plain"},
                }
            ],
        ),
        (
            _BLOB_RES,
            [
                {
                    "type": "resource",
                    "resource": {
                        "uri": "memo://2",
                        "blob": "AAE=",
                        "mimeType": "application/x-raw",
                    },
                }
            ],
        ),
        (
            ResourceLink(uri="file:///etc/motd", name="motd", mime_type="text/plain"),
            [
                {
                    "type": "resource_link",
                    "uri": "file:///etc/motd",
                    "name": "motd",
                    "mimeType": "text/plain",
                }
            ],
        ),
        (
            ["first", TextContent(text="second", meta={"k": "v"}), PNG],
            [
                {"type": "text", "text": "first"},
                {"type": "text", "text": "second", "_meta": {"k": "v"}},
                {"type": "image", "data": base64.b64encode(PNG).decode(), "mimeType": "image/png"},
            ],
        ),
        (
            Image(PNG),
            [{"type": "image", "data": base64.b64encode(PNG).decode(), "mimeType": "image/png"}],
        ),
        (
            Image(b"not sniffable", mime_type="image/svg+xml"),
            [
                {
                    "type": "image",
                    "data": base64.b64encode(b"not sniffable").decode(),
                    "mimeType": "image/svg+xml",
                }
            ],
        ),
        (
            Audio(WAV),
            [{"type": "audio", "data": base64.b64encode(WAV).decode(), "mimeType": "audio/wav"}],
        ),
    ],
)
async def test_call_result_content_from_return_value(value: Any, content: list[Any]) -> None:
    server = Server("s")
    # No return annotation: no output schema, so the value is shown as content only.
    server.add_tool(lambda: value, name="t")
    result = await call(server, "tools/call", {"name": "t"}, revision="2025-11-25")
    assert result == {"content": content}


async def test_call_result_call_tool_result_is_sent_as_given() -> None:
    server = Server("s")

    @server.tool
    def full() -> CallToolResult:
        return CallToolResult(
            content=[TextContent(text="partial")],
            structured_content={"done": 3},
            is_error=True,
            meta={"example.com/trace": "abc"},
        )

    listed = await call(server, "tools/list")
    assert "outputSchema" not in listed["tools"][0]
    result = await call(server, "tools/call", {"name": "full"})
    assert result == {
        "content": [{"type": "text", "text": "partial"}],
        "structuredContent": {"done": 3},
        "isError": True,
        "_meta": {"example.com/trace": "abc"},
    }


# --- structured output ---------------------------------------------------------------


@attrs.frozen
class Weather:
    """Current conditions."""

    city: str
    celsius: float


class Totals(TypedDict):
    count: int
    names: list[str]


def _structured_server() -> Server:
    server = Server("s")

    @server.tool
    def weather() -> Weather:
        return Weather(city="Oslo", celsius=-3.5)

    @server.tool
    def totals() -> Totals:
        return {"count": 2, "names": ["a", "b"]}

    @server.tool
    def mapping() -> dict[str, int]:
        return {"x": 1}

    @server.tool
    def number() -> float:
        return 2.5

    @server.tool
    def word() -> str:
        return "plain"

    @server.tool
    def flag() -> bool | None:
        return None

    return server


@pytest.mark.parametrize(
    ("tool", "wrapped", "structured", "text"),
    [
        ("weather", False, {"city": "Oslo", "celsius": -3.5}, '{"city":"Oslo","celsius":-3.5}'),
        ("totals", False, {"count": 2, "names": ["a", "b"]}, '{"count":2,"names":["a","b"]}'),
        ("mapping", False, {"x": 1}, '{"x":1}'),
        ("number", True, {"result": 2.5}, '{"result":2.5}'),
        # A string is its own text fallback.
        ("word", True, {"result": "plain"}, "plain"),
        ("flag", True, {"result": None}, '{"result":null}'),
    ],
)
async def test_call_structured_output(
    tool: str, wrapped: bool, structured: Any, text: str
) -> None:
    server = _structured_server()
    listed = await call(server, "tools/list", revision="2025-06-18")
    [definition] = [t for t in listed["tools"] if t["name"] == tool]
    # The generator is tested on its own; here: its schema is what is sent, and results
    # match it (every result is validated against it by the server).
    fn = server._registry.tools[tool].fn
    generated = describe_function(fn, context_types=(Context,)).output_schema
    assert generated is not None
    assert definition["outputSchema"] == generated
    assert definition["outputSchema"]["type"] == "object"
    if wrapped:
        assert definition["outputSchema"]["required"] == ["result"]
        assert set(definition["outputSchema"]["properties"]) == {"result"}
    result = await call(server, "tools/call", {"name": tool}, revision="2025-06-18")
    assert result == {"content": [{"type": "text", "text": text}], "structuredContent": structured}


@pytest.mark.parametrize("revision", ["2024-11-05", "2025-03-26"])
async def test_call_structured_content_dropped_before_2025_06_18(revision: str) -> None:
    server = _structured_server()
    listed = await call(server, "tools/list", revision=revision)
    assert all("outputSchema" not in tool for tool in listed["tools"])
    result = await call(server, "tools/call", {"name": "weather"}, revision=revision)
    # The text fallback carries the same data.
    assert result == {"content": [{"type": "text", "text": '{"city":"Oslo","celsius":-3.5}'}]}

    server.add_tool(lambda: CallToolResult(content=[], structured_content={"a": 1}), name="full")
    result = await call(server, "tools/call", {"name": "full"}, revision=revision)
    assert result == {"content": []}


async def test_call_structured_output_not_matching_schema_is_an_error(
    any_revision: str, caplog: pytest.LogCaptureFixture
) -> None:
    server = Server("s")

    @server.tool
    def count() -> int:
        return "three"  # type: ignore[return-value]

    result = await call(server, "tools/call", {"name": "count"}, revision=any_revision)
    assert result["isError"] is True
    assert "structuredContent" not in result
    assert result["content"] == [
        {
            "type": "text",
            "text": "tool 'count' returned output that does not match its outputSchema: "
            "/result: 'three' is not of type 'integer'",
        }
    ]
    assert "breaks its outputSchema" in caplog.text


async def test_call_explicit_output_schema_is_sent_and_enforced() -> None:
    server = Server("s")
    schema = {
        "type": "object",
        "properties": {"rows": {"type": "integer", "minimum": 0}},
        "required": ["rows"],
    }

    @server.tool(output_schema=schema)
    def rows(n: int) -> dict[str, Any]:
        return {"rows": n}

    listed = await call(server, "tools/list")
    assert listed["tools"][0]["outputSchema"] == schema
    ok = await call(server, "tools/call", {"name": "rows", "arguments": {"n": 3}})
    assert ok["structuredContent"] == {"rows": 3}
    bad = await call(server, "tools/call", {"name": "rows", "arguments": {"n": -1}})
    assert bad["isError"] is True
    assert "/rows: -1 is less than the minimum of 0" in bad["content"][0]["text"]


async def test_call_structured_output_false_sends_text_only() -> None:
    server = Server("s")

    @server.tool(structured_output=False)
    def weather() -> Weather:
        return Weather(city="Oslo", celsius=1.0)

    listed = await call(server, "tools/list")
    assert "outputSchema" not in listed["tools"][0]
    result = await call(server, "tools/call", {"name": "weather"})
    assert result == {"content": [{"type": "text", "text": '{"city":"Oslo","celsius":1.0}'}]}


@pytest.mark.parametrize(
    "annotation", [ImageContent, list[TextContent], CallToolResult, bytes, None, Any]
)
def test_tool_content_return_annotations_get_no_output_schema(annotation: Any) -> None:
    def handler() -> None:
        pass

    handler.__annotations__["return"] = annotation
    server = Server("s")
    server.add_tool(handler, name="t")
    assert "outputSchema" not in server._registry.tools["t"].definition


# --- content a revision cannot carry ---------------------------------------------------

_AUDIO = AudioContent(data="UklGRg==", mime_type="audio/wav")
_LINK = ResourceLink(uri="file:///report.pdf", name="report")


@pytest.mark.parametrize(
    ("revision", "content"),
    [
        (
            "2024-11-05",
            [
                {"type": "text", "text": "before"},
                {
                    "type": "text",
                    "text": "[audio/wav audio: this client's protocol revision 2024-11-05 "
                    "cannot carry audio content]",
                },
                {"type": "text", "text": "resource: file:///report.pdf (report)"},
            ],
        ),
        (
            "2025-03-26",
            [
                {"type": "text", "text": "before"},
                {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"},
                {"type": "text", "text": "resource: file:///report.pdf (report)"},
            ],
        ),
        (
            "2025-06-18",
            [
                {"type": "text", "text": "before"},
                {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"},
                {"type": "resource_link", "uri": "file:///report.pdf", "name": "report"},
            ],
        ),
        (
            "2025-11-25",
            [
                {"type": "text", "text": "before"},
                {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"},
                {"type": "resource_link", "uri": "file:///report.pdf", "name": "report"},
            ],
        ),
    ],
)
async def test_call_content_adapted_to_revision(revision: str, content: list[Any]) -> None:
    server = Server("s")
    server.add_tool(lambda: ["before", _AUDIO, _LINK], name="mixed")
    server.add_tool(
        lambda: CallToolResult(content=[TextContent(text="before"), _AUDIO, _LINK]), name="full"
    )
    for name in ("mixed", "full"):
        result = await call(server, "tools/call", {"name": name}, revision=revision)
        assert result == {"content": content}


async def test_a_call_whose_arguments_and_output_pass_never_asks_jsonschema(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The compiled checks say yes to both; jsonschema is for values they cannot settle.
    from mcpactor.server._validation import SchemaValidator

    def refuse(self: SchemaValidator, value: Any) -> Any:
        raise AssertionError("jsonschema was asked about a value the fast check accepts")

    monkeypatch.setattr(SchemaValidator, "errors", refuse)
    server = Server("s")

    @server.tool()
    async def echo(text: str) -> str:
        """Return text unchanged."""
        return text

    for _ in range(2):  # the first call compiles the checks, the second uses them
        result = await call(server, "tools/call", {"name": "echo", "arguments": {"text": "hi"}})
        assert result == {
            "content": [{"type": "text", "text": "hi"}],
            "structuredContent": {"result": "hi"},
        }


async def test_large_arguments_the_fast_check_cannot_settle_are_validated_off_the_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A set is "uniqueItems", which only jsonschema judges: over a few MiB that takes
    # seconds, and the loop serving every other session must go on meanwhile.
    import trio

    from mcpactor.server._registered import SLOW_VALIDATION_BYTES
    from mcpactor.server._registry import validation_errors

    in_threads: list[str] = []
    run_sync = trio.to_thread.run_sync

    async def watched(fn: Any, *args: Any, **options: Any) -> Any:
        if fn is validation_errors:
            in_threads.append("validation_errors")
        return await run_sync(fn, *args, **options)

    monkeypatch.setattr(trio.to_thread, "run_sync", watched)
    server = Server("s")

    @server.tool()
    def count(tags: set[str]) -> int:
        """Count distinct tags."""
        return len(tags)

    tags = [f"tag{number}" for number in range(60_000)]
    assert len(orjson.dumps({"tags": tags})) > SLOW_VALIDATION_BYTES
    result = await call(server, "tools/call", {"name": "count", "arguments": {"tags": tags}})
    assert result["structuredContent"] == {"result": 60_000}
    assert in_threads == ["validation_errors"]
    # A violation is still found in a large value, and small arguments stay on the loop.
    refused = await call(
        server, "tools/call", {"name": "count", "arguments": {"tags": [*tags, "tag0"]}}
    )
    assert refused["isError"] is True
    assert refused["content"][0]["text"].startswith("invalid arguments for tool 'count': /tags:")
    small = await call(server, "tools/call", {"name": "count", "arguments": {"tags": ["a"]}})
    assert small["structuredContent"] == {"result": 1}
    assert in_threads == ["validation_errors", "validation_errors"]
