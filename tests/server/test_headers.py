"""Header-mirrored tool parameters (x-mcp-header) and the standard request headers."""

from __future__ import annotations

import base64
from typing import Annotated, Any

import pytest

from mcpactor._exceptions import SchemaError
from mcpactor.protocol import REVISIONS
from mcpactor.protocol._envelope import EnvelopeError
from mcpactor.server import Header, Server
from mcpactor.server._headers import (
    HeaderParam,
    check_param_headers,
    check_standard_headers,
    decode_header_value,
    header_params,
)
from tests.spec_schema import check

MODERN = "2026-07-28"


def b64(text: str) -> str:
    return "=?base64?" + base64.b64encode(text.encode()).decode() + "?="


def mismatch(call: Any, *args: Any) -> EnvelopeError:
    with pytest.raises(EnvelopeError) as info:
        call(*args)
    error = info.value
    assert error.code == -32020
    assert error.http_status == 400
    assert error.message.startswith("Header mismatch: ")
    check({"jsonrpc": "2.0", "id": 1, "error": error.to_error()}, MODERN, "HeaderMismatchError")
    return error


# --- declarations from a signature ---------------------------------------------------------


def test_a_signature_declares_mirrored_parameters() -> None:
    server = Server("s")

    @server.tool
    def execute_sql(
        region: Annotated[str, Header("Region"), "The region"],
        query: str,
        shard: Annotated[int, Header("Shard")] = 0,
        dry_run: Annotated[bool, Header("Dry-Run")] = False,
    ) -> str:
        return query

    entry = server._registry.tools["execute_sql"]
    assert entry.headers == (
        HeaderParam("Dry-Run", ("dry_run",), "boolean"),
        HeaderParam("Region", ("region",), "string"),
        HeaderParam("Shard", ("shard",), "integer"),
    )
    assert entry.headers[1].header == "Mcp-Param-Region"
    tool = entry.wire(REVISIONS[MODERN])
    properties = tool["inputSchema"]["properties"]
    assert properties["region"] == {
        "type": "string",
        "description": "The region",
        "x-mcp-header": "Region",
    }
    assert "x-mcp-header" not in properties["query"]
    check(tool, MODERN, "Tool")


def test_a_tool_without_headers_declares_none() -> None:
    server = Server("s")

    @server.tool
    def plain(a: str) -> str:
        return a

    assert server._registry.tools["plain"].headers == ()


def test_nested_properties_may_be_mirrored_in_a_given_schema() -> None:
    schema = {
        "type": "object",
        "properties": {
            "target": {
                "type": "object",
                "properties": {"zone": {"type": "string", "x-mcp-header": "Zone"}},
            }
        },
    }
    server = Server("s")

    def t(target: dict[str, Any]) -> str:
        return ""

    server.add_tool(t, input_schema=schema)
    assert server._registry.tools["t"].headers == (
        HeaderParam("Zone", ("target", "zone"), "string"),
    )


@pytest.mark.parametrize(
    ("annotation", "match"),
    [
        (Annotated[str, Header("")], "HTTP token"),
        (Annotated[str, Header("Bad Name")], "HTTP token"),
        (Annotated[str, Header("Line\r\nBreak")], "HTTP token"),
        (Annotated[str, Header("Région")], "HTTP token"),
        (Annotated[float, Header("Ratio")], "only string, integer and boolean"),
        (Annotated[list[str], Header("Many")], "only string, integer and boolean"),
        (Annotated[str | None, Header("Maybe")], "only string, integer and boolean"),
        (list[Annotated[str, Header("Inner")]], "through 'properties' alone"),
    ],
)
def test_invalid_declarations_are_refused_at_registration(annotation: Any, match: str) -> None:
    server = Server("s")

    def tool(value: Any) -> str:
        return ""

    # set by hand: the module's annotations are strings (PEP 563)
    tool.__annotations__ = {"value": annotation, "return": str}

    with pytest.raises(SchemaError, match=match):
        server.add_tool(tool, name="t")
    assert "t" not in server._registry.tools


def test_names_are_unique_ignoring_case() -> None:
    server = Server("s")

    def tool(a: Annotated[str, Header("Region")], b: Annotated[str, Header("REGION")]) -> str:
        return ""

    with pytest.raises(SchemaError, match="repeats"):
        server.add_tool(tool)


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "x-mcp-header": "Root"},
        {
            "type": "object",
            "anyOf": [{"properties": {"a": {"type": "string", "x-mcp-header": "A"}}}],
        },
        {"type": "object", "$defs": {"D": {"type": "string", "x-mcp-header": "D"}}},
        {
            "type": "object",
            "properties": {
                "a": {"type": "array", "items": {"type": "string", "x-mcp-header": "A"}}
            },
        },
        {"type": "object", "properties": {"a": {"x-mcp-header": "A"}}},
    ],
)
def test_declarations_off_the_properties_chain_are_refused(schema: dict[str, Any]) -> None:
    with pytest.raises(SchemaError, match="x-mcp-header"):
        header_params(schema, what="tool 't'")


def test_a_property_named_like_the_keyword_is_no_declaration() -> None:
    schema = {"type": "object", "properties": {"x-mcp-header": {"type": "string"}}}
    assert header_params(schema, what="t") == ()


# --- the standard headers -----------------------------------------------------------------


def test_standard_headers_match_the_body() -> None:
    check_standard_headers("tools/list", {}, {"Mcp-Method": "tools/list"})
    check_standard_headers(
        "tools/call", {"name": "book"}, {"mcp-method": "tools/call", "MCP-NAME": "book"}
    )
    check_standard_headers(
        "resources/read",
        {"uri": "file:///a b"},
        {"Mcp-Method": "resources/read", "Mcp-Name": b64("file:///a b")},
    )
    check_standard_headers(
        "prompts/get", {"name": "héllo"}, {"Mcp-Method": "prompts/get", "Mcp-Name": b64("héllo")}
    )


@pytest.mark.parametrize(
    ("method", "params", "headers", "says"),
    [
        ("tools/list", {}, {}, "Mcp-Method header is missing"),
        ("tools/list", {}, {"Mcp-Method": "tools/call"}, "does not match"),
        ("tools/call", {"name": "a"}, {"Mcp-Method": "tools/call"}, "Mcp-Name header is missing"),
        (
            "tools/call",
            {"name": "a"},
            {"Mcp-Method": "tools/call", "Mcp-Name": "b"},
            "does not match",
        ),
        (
            "tools/call",
            {"name": "a"},
            {"Mcp-Method": "tools/call", "Mcp-Name": "=?base64?!!?="},
            "base64",
        ),
        (
            "tools/call",
            {"name": "a"},
            {"Mcp-Method": "tools/call", "Mcp-Name": "a\x01"},
            "visible ASCII",
        ),
    ],
)
def test_standard_header_mismatches(
    method: str, params: dict[str, Any], headers: dict[str, str], says: str
) -> None:
    error = mismatch(check_standard_headers, method, params, headers)
    assert says in error.message


# --- mirrored parameters ------------------------------------------------------------------

DECLARED = (
    HeaderParam("Region", ("region",), "string"),
    HeaderParam("Shard", ("shard",), "integer"),
    HeaderParam("Dry", ("dry",), "boolean"),
    HeaderParam("Zone", ("target", "zone"), "string"),
)


def test_mirrored_parameters_match_the_arguments() -> None:
    arguments = {"region": "us-west1", "shard": 42, "dry": False, "target": {"zone": "b"}}
    headers = {
        "Mcp-Param-Region": "us-west1",
        "mcp-param-shard": "42.0",
        "Mcp-Param-Dry": "false",
        "Mcp-Param-Zone": "b",
    }
    check_param_headers(DECLARED, arguments, headers)
    # absent arguments need no header
    check_param_headers(DECLARED, {"region": "x"}, {"Mcp-Param-Region": "x"})
    # values outside the safe set come base64-encoded
    check_param_headers(DECLARED, {"region": " padded "}, {"Mcp-Param-Region": b64(" padded ")})
    check_param_headers(
        DECLARED, {"region": "=?base64?x?="}, {"Mcp-Param-Region": b64("=?base64?x?=")}
    )


@pytest.mark.parametrize(
    ("arguments", "headers", "says"),
    [
        ({"region": "a"}, {}, "Mcp-Param-Region header is missing"),
        ({"region": "a"}, {"Mcp-Param-Region": "b"}, "does not match"),
        ({}, {"Mcp-Param-Region": "a"}, "argument is absent"),
        ({"shard": 42}, {"Mcp-Param-Shard": "43"}, "does not match"),
        ({"shard": 42}, {"Mcp-Param-Shard": "forty-two"}, "does not match"),
        ({"shard": 2**60}, {"Mcp-Param-Shard": str(2**60)}, "does not match"),
        ({"dry": True}, {"Mcp-Param-Dry": "True"}, "does not match"),
        ({"dry": 1}, {"Mcp-Param-Dry": "true"}, "does not match"),
        ({"region": "é"}, {"Mcp-Param-Region": "é"}, "visible ASCII"),
        ({"region": "a"}, {"Mcp-Param-Region": "=?base64?***?="}, "base64"),
    ],
)
def test_mirrored_parameter_mismatches(
    arguments: dict[str, Any], headers: dict[str, str], says: str
) -> None:
    error = mismatch(check_param_headers, DECLARED, arguments, headers)
    assert says in error.message


def test_decode_header_value() -> None:
    assert decode_header_value("plain value\t") == "plain value\t"
    assert decode_header_value(b64("Hello, 世界")) == "Hello, 世界"
    assert decode_header_value("=?base64?bGluZTEKbGluZTI=?=") == "line1\nline2"
    with pytest.raises(ValueError, match="base64"):
        decode_header_value("=?base64?/w==?=")  # not UTF-8


# --- the tasks extension's methods ----------------------------------------------------------


@pytest.mark.parametrize("method", ["tasks/get", "tasks/update", "tasks/cancel"])
def test_a_task_method_is_named_by_its_task_id(method: str) -> None:
    params = {"taskId": "t-1"}
    check_standard_headers(method, params, {"Mcp-Method": method, "Mcp-Name": "t-1"})
    error = mismatch(
        check_standard_headers, method, params, {"Mcp-Method": method, "Mcp-Name": "t-2"}
    )
    assert "does not match body value" in error.message
    error = mismatch(check_standard_headers, method, params, {"Mcp-Method": method})
    assert "Mcp-Name header is missing" in error.message


def test_whitespace_around_a_header_value_is_not_part_of_it() -> None:
    check_standard_headers(
        "tools/call",
        {"name": "confirm_delete"},
        {"Mcp-Method": " tools/call\t", "Mcp-Name": "  confirm_delete  "},
    )
    error = mismatch(
        check_standard_headers,
        "tools/call",
        {"name": "confirm delete"},
        {"Mcp-Method": "tools/call", "Mcp-Name": "confirm  delete"},
    )
    assert "does not match body value" in error.message
