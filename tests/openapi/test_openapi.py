"""from_openapi in one process: documents read, schemas converted, requests placed.

Calls go to a real HTTP server on loopback (tests/openapi/_api.py) through a client in
memory; the official client and ``mcpactor serve`` are test_serve_openapi.py's.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from mcpactor import Server
from mcpactor.client import connect_memory
from mcpactor.openapi import OpenAPIError, Route, from_openapi
from mcpactor.openapi._calls import request_parts
from mcpactor.openapi._document import Document
from mcpactor.openapi._operations import operations
from tests.openapi._api import serving

PETS: dict[str, Any] = {
    "openapi": "3.0.3",
    "info": {"title": "Pets", "version": "2.0"},
    "servers": [{"url": "https://pets.example.com/v2"}],
    "paths": {
        "/pets": {
            "get": {
                "operationId": "listPets",
                "tags": ["read"],
                "summary": "List pets",
                "responses": {"200": {"description": "ok"}},
            },
            "post": {
                "operationId": "addPet",
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/json": {"schema": {"$ref": "#/components/schemas/Pet"}}
                    },
                },
                "responses": {"201": {"$ref": "#/components/responses/Pet"}},
            },
        },
        "/pets/{id}": {
            "parameters": [
                {"name": "id", "in": "path", "required": True, "schema": {"type": "integer"}}
            ],
            "get": {
                "operationId": "getPet",
                "responses": {"200": {"$ref": "#/components/responses/Pet"}},
            },
            "delete": {"responses": {"204": {"description": "gone"}}},
        },
        "/big": {"get": {"operationId": "big", "responses": {"200": {"description": "ok"}}}},
        "/slow": {"get": {"operationId": "slow", "responses": {"200": {"description": "ok"}}}},
    },
    "components": {
        "responses": {
            "Pet": {
                "description": "a pet",
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Pet"}}},
            }
        },
        "schemas": {
            "Pet": {
                "type": "object",
                "required": ["name"],
                "properties": {
                    "name": {"type": "string"},
                    "age": {
                        "type": "integer",
                        "nullable": True,
                        "minimum": 0,
                        "exclusiveMinimum": True,
                    },
                    "parent": {"$ref": "#/components/schemas/Pet"},
                    "kind": {"type": "string", "enum": ["cat", "dog"], "nullable": True},
                    "tag": {"allOf": [{"$ref": "#/components/schemas/Tag"}], "nullable": True},
                },
            },
            "Tag": {"type": "object", "properties": {"label": {"type": "string"}}},
        },
    },
}


def test_schemas_are_2020_12_with_refs_inlined_and_cycles_in_defs() -> None:
    server = from_openapi(PETS)
    tools = server._registry.tools
    assert set(tools) == {"listPets", "addPet", "getPet", "delete_pets_id", "big", "slow"}
    add = tools["addPet"].definition
    schema = add["inputSchema"]
    jsonschema.Draft202012Validator.check_schema(schema)
    pet = schema["properties"]["body"]
    assert schema["required"] == ["body"]
    assert pet["properties"]["age"] == {"type": ["integer", "null"], "exclusiveMinimum": 0}
    assert pet["properties"]["kind"]["enum"] == ["cat", "dog", None]
    assert pet["properties"]["tag"]["anyOf"][1] == {"type": "null"}
    # The cycle: Pet.parent is a Pet, defined once under $defs at the schema's root.
    assert pet["properties"]["parent"] == {"$ref": "#/$defs/Pet"}
    assert schema["$defs"]["Pet"]["properties"]["parent"] == {"$ref": "#/$defs/Pet"}
    validator = jsonschema.Draft202012Validator(schema)
    assert validator.is_valid(
        {"body": {"name": "a", "parent": {"name": "b", "parent": {"name": "c"}}}}
    )
    assert not validator.is_valid({"body": {"name": "a", "parent": {"name": "b", "parent": {}}}})
    assert not validator.is_valid({"body": {"name": "a", "age": 0}})
    assert add["outputSchema"]["type"] == "object"
    # Path-level parameters, and the name a method and path give an operation without an id.
    assert tools["delete_pets_id"].definition["inputSchema"]["required"] == ["id"]
    assert tools["listPets"].definition["description"] == "List pets"


def test_references_that_cannot_be_followed_are_refused_clearly() -> None:
    external = json.loads(json.dumps(PETS))
    external["paths"]["/pets"]["post"]["requestBody"]["content"]["application/json"]["schema"] = {
        "$ref": "common.yaml#/Pet"
    }
    with pytest.raises(OpenAPIError, match=r"POST /pets requestBody.*another document"):
        from_openapi(external)
    looping = json.loads(json.dumps(PETS))
    looping["components"]["responses"]["Pet"] = {"$ref": "#/components/responses/Pet"}
    with pytest.raises(OpenAPIError, match="references loop"):
        from_openapi(looping)
    with pytest.raises(OpenAPIError, match=r"Swagger 2\.0"):
        from_openapi({"swagger": "2.0", "paths": {}})
    with pytest.raises(OpenAPIError, match="cannot read"):
        from_openapi("no/such/document.yaml")


@pytest.mark.parametrize(
    ("spec", "value", "expected"),
    [
        ({"in": "query"}, ["a", "b c"], "/x?p=a&p=b%20c"),
        ({"in": "query", "explode": False}, ["a", "b"], "/x?p=a,b"),
        ({"in": "query", "style": "spaceDelimited", "explode": False}, ["a", "b"], "/x?p=a%20b"),
        ({"in": "query", "style": "pipeDelimited", "explode": False}, ["a", "b"], "/x?p=a|b"),
        ({"in": "query", "style": "deepObject"}, {"k": "v w"}, "/x?p%5Bk%5D=v%20w"),
        ({"in": "query"}, {"k": 1, "m": True}, "/x?k=1&m=true"),
        ({"in": "query"}, "a&b=c", "/x?p=a%26b%3Dc"),
        ({"in": "path"}, "a/b", "/x/a%2Fb"),
        ({"in": "path"}, [1, 2], "/x/1,2"),
        ({"in": "path", "style": "label"}, "v", "/x/.v"),
        ({"in": "path", "style": "matrix"}, "v", "/x/;p=v"),
        ({"in": "path", "allowReserved": True}, "a/b", "/x/a/b"),
    ],
)
def test_parameters_are_placed_by_their_style(
    spec: dict[str, Any], value: Any, expected: str
) -> None:
    path = "/x/{p}" if spec["in"] == "path" else "/x"
    document = {
        "openapi": "3.1.0",
        "info": {"title": "t", "version": "1"},
        "paths": {
            path: {
                "get": {
                    "operationId": "op",
                    "parameters": [{"name": "p", "required": True, **spec}],
                }
            }
        },
    }
    (operation,) = operations(Document(document), {})
    target, _, _ = request_parts(operation, {"p": value})
    assert target == expected


def test_headers_cookies_and_bodies() -> None:
    document = {
        "openapi": "3.1.0",
        "info": {"title": "t", "version": "1"},
        "paths": {
            "/f": {
                "post": {
                    "operationId": "op",
                    "parameters": [
                        {"name": "X-Ids", "in": "header", "schema": {"type": "array"}},
                        {"name": "session", "in": "cookie"},
                        {"name": "body", "in": "query"},
                    ],
                    "requestBody": {
                        "content": {
                            "application/x-www-form-urlencoded": {"schema": {"type": "object"}}
                        }
                    },
                }
            }
        },
    }
    (operation,) = operations(Document(document), {})
    # A parameter took the name 'body': the request body is 'body__request'.
    assert set(operation.input_schema["properties"]) == {
        "X-Ids",
        "session",
        "body",
        "body__request",
    }
    target, headers, body = request_parts(
        operation,
        {
            "X-Ids": [1, 2],
            "session": "a b",
            "body": "q",
            "body__request": {"n": "v w", "ok": True},
        },
    )
    assert target == "/f?body=q"
    assert ("X-Ids", "1,2") in headers
    assert ("cookie", "session=a%20b") in headers
    assert ("content-type", "application/x-www-form-urlencoded") in headers
    assert body == b"n=v+w&ok=true"


def test_webhooks_are_not_operations_and_path_level_parameters_are_shared() -> None:
    document = {
        "openapi": "3.1.0",
        "info": {"title": "t", "version": "1"},
        "paths": {
            "/items/{id}": {
                "parameters": [
                    {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}},
                    {"name": "v", "in": "query", "schema": {"type": "integer"}},
                ],
                "get": {"operationId": "getItem"},
                "delete": {
                    "operationId": "deleteItem",
                    "parameters": [{"name": "v", "in": "query", "schema": {"type": "string"}}],
                },
            }
        },
        "webhooks": {"itemCreated": {"post": {"operationId": "itemCreated"}}},
    }
    found = {op.name: op for op in operations(Document(document), {})}
    # A webhook is what the API calls, not an operation to call.
    assert set(found) == {"getItem", "deleteItem"}
    assert found["getItem"].input_schema["properties"]["v"]["type"] == "integer"
    # The operation's own parameter replaces the path item's of the same name and place.
    assert found["deleteItem"].input_schema["properties"]["v"]["type"] == "string"
    assert found["deleteItem"].input_schema["required"] == ["id"]


def _write(tmp_path: Path, document: dict[str, Any]) -> Path:
    path = tmp_path / "pets.json"
    path.write_text(json.dumps(document))
    return path


async def test_route_maps_names_and_resources(tmp_path: Path) -> None:
    with serving(_write(tmp_path, PETS), "/v2") as api:
        server = from_openapi(
            PETS,
            base_url=api.base_url,
            names={"getPet": "fetch_pet", "DELETE /pets/{id}": "remove_pet"},
            route_map=[
                Route("exclude", pattern="^/(big|slow)$"),
                Route("resource", methods=["GET"], tags=["read"]),
                Route("resource", operation_ids=["getPet"]),
            ],
        )
        async with connect_memory(server, initialize=True) as client:
            tools = {tool["name"] for tool in await client.list_tools()}
            assert tools == {"addPet", "remove_pet"}
            (resource,) = await client.list_resources()
            assert resource["uri"] == f"{api.base_url}/pets"
            (template,) = await client.list_resource_templates()
            assert template["uriTemplate"] == f"{api.base_url}/pets/{{id}}"
            read = await client.read_resource(f"{api.base_url}/pets/12")
            assert json.loads(read["contents"][0]["text"]) == {"name": "x"}
            assert (api.requests[-1].method, api.requests[-1].path) == ("GET", "/v2/pets/12")


async def test_bounds_and_deadlines(tmp_path: Path) -> None:
    document = json.loads(json.dumps(PETS))
    with serving(_write(tmp_path, document), "/v2") as api:
        server = from_openapi(document, base_url=api.base_url, timeout=1.0, max_response_bytes=10)
        async with connect_memory(server, initialize=True) as client:
            result = await client.call_tool("getPet", {"id": 3})
            assert result.is_error
            assert "HTTP 200 with 13 bytes, more than the 10" in result.text
            result = await client.call_tool("slow", {})
            assert result.is_error
            assert "GET " in result.text
            assert "timed out after 1 s" in result.text
            assert api.released.is_set() or api.held.is_set()


async def test_mounted_next_to_a_local_server(tmp_path: Path) -> None:
    with serving(_write(tmp_path, PETS), "/v2") as api:
        parent = Server("parent")

        @parent.tool
        def hello() -> str:
            """Say hello."""
            return "hello"

        parent.mount(from_openapi(PETS, base_url=api.base_url), "pets")
        async with connect_memory(parent, initialize=True) as client:
            names = {tool["name"] for tool in await client.list_tools()}
            assert {"hello", "pets_getPet", "pets_addPet"} <= names
            result = await client.call_tool("pets_addPet", {"body": {"name": "Rex"}})
            assert not result.is_error, result
            assert result["structuredContent"] == {"name": "x"}
            assert api.requests[-1].json() == {"name": "Rex"}
            assert api.requests[-1].headers["content-type"] == "application/json"


EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "openapi_server.py"


async def test_the_example_calls_its_api() -> None:
    # examples/openapi_server.py as a user runs it, against a loopback API of its document.
    import os
    import sys

    from mcpactor.client import connect_stdio

    with serving(EXAMPLE.parent / "openapi" / "library.yaml", "/api") as api:
        env = {**os.environ, "LIBRARY_URL": api.base_url, "LIBRARY_TOKEN": "t0ken"}
        command = [sys.executable, "-m", "mcpactor", "serve", str(EXAMPLE)]
        async with connect_stdio(command, env=env, initialize=True) as client:
            tools = {tool["name"] for tool in await client.list_tools()}
            assert tools == {"searchBooks", "addBook"}
            (template,) = await client.list_resource_templates()
            assert template["uriTemplate"] == f"{api.base_url}/books/{{isbn}}"

            result = await client.call_tool(
                "searchBooks", {"q": "algorithms", "genres": ["cs", "math"]}
            )
            assert not result.is_error, result
            assert result["structuredContent"] == {"books": []}
            seen = api.requests[-1]
            assert (seen.method, seen.path) == ("GET", "/api/books")
            assert seen.query == [("q", "algorithms"), ("genres", "cs"), ("genres", "math")]
            assert seen.headers["authorization"] == "Bearer t0ken"

            book = {
                "isbn": "978-0262033848",
                "title": "Introduction to Algorithms",
                "subtitle": None,
            }
            result = await client.call_tool("addBook", {"body": book})
            assert not result.is_error, result
            assert api.requests[-1].json() == book

            read = await client.read_resource(f"{api.base_url}/books/978-0262033848")
            assert json.loads(read["contents"][0]["text"])["title"] == "Introduction to Algorithms"
            assert api.requests[-1].path == "/api/books/978-0262033848"


@pytest.mark.parametrize(
    ("table", "message"),
    [
        (
            {"plugin": "clock", "base_url": "http://x"},
            "base_url: only applies to a server with 'openapi'",
        ),
        (
            {"target": "m:s", "headers": {"a": "b"}},
            "headers: only applies to a server with 'url' or 'openapi'",
        ),
        (
            {"openapi": "a.yaml", "url": "http://x/mcp"},
            "give one of plugin, target, command, url, openapi",
        ),
        (
            {"openapi": "a.yaml", "route_map": [{"kind": "hide"}]},
            r"route_map\[0\].kind: expected one of",
        ),
        ({"openapi": "a.yaml", "route_map": [{"tag": "x"}]}, r"route_map\[0\].tag: unknown key"),
        (
            {"openapi": "a.yaml", "max_response_bytes": 0},
            "max_response_bytes: expected a positive",
        ),
    ],
)
def test_the_configuration_table_is_checked(table: dict[str, Any], message: str) -> None:
    from mcpactor.config import ConfigError, parse_config

    with pytest.raises(ConfigError, match=message):
        parse_config({"servers": {"api": table}}, source=Path("/srv/mcpactor.toml"))


def test_the_configuration_table_is_read() -> None:
    from mcpactor.config import parse_config

    config = parse_config(
        {
            "servers": {
                "api": {
                    "openapi": "docs/api.yaml",
                    "base_url": "http://127.0.0.1:9/v1",
                    "headers": {"X-Key": "k"},
                    "route_map": [{"kind": "exclude", "tags": ["admin"], "methods": ["DELETE"]}],
                    "names": {"getPet": "pet"},
                    "request_timeout": 5,
                }
            }
        },
        source=Path("/srv/mcpactor.toml"),
    )
    (server,) = config.servers
    assert server.openapi is not None
    assert server.openapi.document == "/srv/docs/api.yaml"
    assert server.openapi.base_url == "http://127.0.0.1:9/v1"
    assert server.openapi.request_timeout == 5.0
    assert server.headers == {"X-Key": "k"}
    assert server.openapi.route_map == (
        {"kind": "exclude", "tags": ["admin"], "methods": ["DELETE"]},
    )


async def test_principal_headers_are_opt_in_and_computed_per_call(tmp_path: Path) -> None:
    from mcpactor.auth import Principal
    from mcpactor.openapi._calls import Caller

    with serving(_write(tmp_path, PETS), "/v2") as api:
        (operation,) = [op for op in operations(Document(PETS), {}) if op.name == "getPet"]
        from mcpactor.client import HttpPool

        async with HttpPool() as pool:
            caller = Caller(
                pool=pool,
                base_url=api.base_url,
                headers={"X-Who": "configured"},
                timeout=5.0,
                max_response_bytes=1000,
                principal_headers=lambda p: {"X-Who": p.subject} if p is not None else {},
            )
            answer = await caller.call(operation, {"id": 1}, Principal(subject="alice"))
            assert answer.status == 200
            assert api.requests[-1].headers["x-who"] == "alice"
            await caller.call(operation, {"id": 1}, None)
            assert api.requests[-1].headers["x-who"] == "configured"
            assert api.requests[-1].headers["accept"] == "application/json, */*;q=0.5"


async def test_a_document_fetched_from_a_url_with_a_relative_server(tmp_path: Path) -> None:
    import functools
    import http.server
    import threading

    document = json.loads(json.dumps(PETS))
    document["servers"] = [{"url": "/v2"}]
    (tmp_path / "openapi.json").write_text(json.dumps(document))
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path))
    files = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=files.serve_forever, daemon=True)
    thread.start()
    try:
        origin = f"http://127.0.0.1:{files.server_address[1]}"
        server = from_openapi(
            f"{origin}/openapi.json", route_map=[Route("resource", operation_ids=["listPets"])]
        )
        async with connect_memory(server, initialize=True) as client:
            (resource,) = await client.list_resources()
            # The relative server URL, resolved against the document's own.
            assert resource["uri"] == f"{origin}/v2/pets"
        with pytest.raises(OpenAPIError, match="cannot fetch"):
            from_openapi(f"{origin}/missing.json")
    finally:
        files.shutdown()
        files.server_close()
        thread.join()


async def test_a_header_argument_cannot_split_the_request(tmp_path: Path) -> None:
    document = json.loads(json.dumps(PETS))
    document["paths"]["/pets"]["get"]["parameters"] = [
        {"name": "X-Note", "in": "header", "schema": {"type": "string"}}
    ]
    with serving(_write(tmp_path, document), "/v2") as api:
        server = from_openapi(document, base_url=api.base_url)
        async with connect_memory(server, initialize=True) as client:
            result = await client.call_tool("listPets", {"X-Note": "a\r\nX-Evil: 1"})
            assert result.is_error
            assert "line break" in result.text
            assert api.requests == []
