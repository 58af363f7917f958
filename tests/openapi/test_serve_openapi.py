"""Two public OpenAPI documents served by ``mcpactor serve``, called by the official client.

The Swagger Petstore 3 document (OpenAPI 3.0, YAML, a relative server URL) is served as
the target ``openapi:petstore.yaml``; Apideck's Webhook API (OpenAPI 3.0.3: component
``$ref``s inside component ``$ref``s, ``oneOf`` request bodies, path, query, deepObject
and header parameters) from an ``mcpactor.toml`` table. Each answers from a real HTTP
server on loopback (tests/openapi/_api.py) that records what reached it: method, path,
query, headers and body.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import jsonschema
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from tests.openapi._api import Api, operations, serving

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "openapi"
PETSTORE = DATA / "petstore.yaml"
WEBHOOKS = DATA / "apideck-webhook.yml"
TIMEOUT = 30.0

pytest.importorskip("yaml", reason="YAML documents need PyYAML (the openapi extra)")


@asynccontextmanager
async def sdk_session(arguments: Sequence[str], cwd: Path) -> AsyncIterator[ClientSession]:
    """``mcpactor serve ARGUMENTS`` over stdio, with an initialized SDK session."""
    parameters = StdioServerParameters(
        command=sys.executable,
        args=["-m", "mcpactor", "serve", *arguments],
        cwd=cwd,
        env=dict(os.environ),
    )
    async with (
        stdio_client(parameters, errlog=sys.stderr) as (read, write),
        ClientSession(read, write) as session,
    ):
        with anyio.fail_after(TIMEOUT):
            await session.initialize()
        yield session


def last(api: Api) -> Any:
    assert api.requests, "the API received nothing"
    return api.requests[-1]


async def listed_and_valid(session: ClientSession, document: dict[str, Any]) -> dict[str, Any]:
    """Every operation listed once, every schema valid JSON Schema 2020-12."""
    tools = {tool.name: tool for tool in (await session.list_tools()).tools}
    expected = {op["operationId"] for _, _, op in operations(document)}
    assert set(tools) == expected
    for tool in tools.values():
        jsonschema.Draft202012Validator.check_schema(tool.input_schema)
        assert tool.input_schema["type"] == "object"
        if tool.output_schema is not None:
            jsonschema.Draft202012Validator.check_schema(tool.output_schema)
    return tools


async def cancelled_call(session: ClientSession, api: Api, tool: str, arguments: Any) -> None:
    """Cancel a call while the API holds it: the API sees its client go away."""
    async with anyio.create_task_group() as group:
        group.start_soon(session.call_tool, tool, arguments)
        with anyio.fail_after(TIMEOUT):
            await anyio.to_thread.run_sync(api.held.wait)
        group.cancel_scope.cancel()
    with anyio.fail_after(TIMEOUT):
        assert await anyio.to_thread.run_sync(api.released.wait, TIMEOUT)


def test_petstore_through_serve() -> None:
    with serving(PETSTORE, "/api/v3") as api:
        arguments = [
            f"openapi:{PETSTORE}",
            "--openapi-base-url",
            api.base_url,
            "--openapi-header",
            "api_key=configured-key",
        ]

        async def main() -> None:
            async with sdk_session(arguments, ROOT) as session:
                tools = await listed_and_valid(session, api.document)
                assert (
                    tools["getPetById"].description == "Find pet by ID.\n\nReturns a single pet."
                )
                assert tools["getPetById"].input_schema["required"] == ["petId"]

                result = await session.call_tool("getPetById", {"petId": 7})
                assert not result.is_error, result
                assert result.structured_content is not None
                assert result.structured_content["name"] == "doggie"
                seen = last(api)
                assert (seen.method, seen.path, seen.query) == ("GET", "/api/v3/pet/7", [])
                assert seen.headers["api_key"] == "configured-key"

                await session.call_tool("findPetsByTags", {"tags": ["a b", "c&d"]})
                seen = last(api)
                assert (seen.method, seen.path) == ("GET", "/api/v3/pet/findByTags")
                assert seen.query == [("tags", "a b"), ("tags", "c&d")]

                await session.call_tool("getUserByName", {"username": "a/b c?"})
                assert last(api).path == "/api/v3/user/a%2Fb%20c%3F"

                await session.call_tool(
                    "updatePetWithForm", {"petId": 3, "name": "Rex", "status": "sold"}
                )
                seen = last(api)
                assert (seen.method, seen.path) == ("POST", "/api/v3/pet/3")
                assert seen.query == [("name", "Rex"), ("status", "sold")]

                # A header parameter: the argument's value, not the configured one.
                result = await session.call_tool("deletePet", {"petId": 5, "api_key": "mine"})
                assert not result.is_error, result
                seen = last(api)
                assert (seen.method, seen.path) == ("DELETE", "/api/v3/pet/5")
                assert seen.headers["api_key"] == "mine"

                pet = {"name": "doggie", "photoUrls": ["p"], "status": "available", "tags": []}
                result = await session.call_tool("addPet", {"body": pet})
                assert not result.is_error, result
                seen = last(api)
                assert (seen.method, seen.path) == ("POST", "/api/v3/pet")
                assert seen.headers["content-type"] == "application/json"
                assert seen.json() == pet

                order = {"petId": 7, "quantity": 2, "status": "placed", "complete": False}
                await session.call_tool("placeOrder", {"body": order})
                assert last(api).json() == order

                # What the API answered with an error, said as a tool error.
                result = await session.call_tool("getPetById", {"petId": 404})
                assert result.is_error
                text = result.content[0].text  # type: ignore[union-attr]
                assert "GET /pet/{petId}" in text
                assert "HTTP 404" in text
                assert "Pet not found" in text

                # Arguments the schema refuses never reach the API.
                count = len(api.requests)
                result = await session.call_tool("getPetById", {"petId": "seven"})
                assert result.is_error
                assert len(api.requests) == count

                await cancelled_call(session, api, "findPetsByTags", {"tags": ["slow"]})
                # The session goes on serving after the cancelled call.
                result = await session.call_tool("getInventory", {})
                assert not result.is_error, result

        anyio.run(main, backend="asyncio")


CONFIG = """
[servers.webhooks]
openapi = "{document}"
base_url = "{base_url}"
headers = {{ Authorization = "Bearer webhook-token" }}
prefix = false
request_timeout = 20
"""


def test_apideck_webhook_api_from_the_configuration_file(tmp_path: Path) -> None:
    with serving(WEBHOOKS) as api:
        (tmp_path / "mcpactor.toml").write_text(
            CONFIG.format(document=WEBHOOKS, base_url=api.base_url)
        )

        async def main() -> None:
            async with sdk_session(["--config", "mcpactor.toml"], tmp_path) as session:
                tools = await listed_and_valid(session, api.document)
                # A request body that is one of two referenced schemas.
                execute = tools["webhooksExecute"].input_schema
                assert [o["type"] for o in execute["properties"]["body"]["oneOf"]] == [
                    "object",
                    "array",
                ]
                assert execute["required"] == ["id", "serviceId", "body"]
                # Component refs inside component refs: the body's schema, then its fields'.
                add = tools["webhooksAdd"].input_schema
                body = add["properties"]["body"]
                assert "crm" in body["properties"]["unified_api"]["enum"]
                assert "*" in body["properties"]["events"]["items"]["enum"]
                assert add["required"] == ["x-apideck-app-id", "body"]
                assert "$ref" not in json.dumps(add)

                app = {"x-apideck-app-id": "app-7"}
                result = await session.call_tool(
                    "webhooksAll", {**app, "cursor": "c-2", "limit": 5}
                )
                assert not result.is_error, result
                assert result.structured_content is not None
                assert isinstance(result.structured_content["data"], list)
                seen = last(api)
                assert (seen.method, seen.path) == ("GET", "/webhook/webhooks")
                assert seen.query == [("cursor", "c-2"), ("limit", "5")]
                # A header parameter, and the configured header beside it.
                assert seen.headers["x-apideck-app-id"] == "app-7"
                assert seen.headers["authorization"] == "Bearer webhook-token"

                webhook = {
                    "delivery_url": "https://example.com/hook",
                    "status": "enabled",
                    "events": ["vault.connection.created"],
                    "unified_api": "crm",
                }
                result = await session.call_tool("webhooksAdd", {**app, "body": webhook})
                assert not result.is_error, result
                seen = last(api)
                assert (seen.method, seen.path, seen.json()) == (
                    "POST",
                    "/webhook/webhooks",
                    webhook,
                )
                assert seen.headers["content-type"] == "application/json"

                await session.call_tool(
                    "webhooksUpdate", {**app, "id": "wh 1", "body": {"status": "disabled"}}
                )
                seen = last(api)
                assert (seen.method, seen.path) == ("PATCH", "/webhook/webhooks/wh%201")
                assert seen.json() == {"status": "disabled"}

                # Each branch of the oneOf body reaches the API as it was given.
                events = [{"type": "created"}, {"type": "updated"}]
                result = await session.call_tool(
                    "webhooksShortExecute",
                    {
                        "id": "tok",
                        "serviceId": "factorialhr",
                        "l_id": "look",
                        "e": "A::B",
                        "body": events,
                    },
                )
                assert not result.is_error, result
                seen = last(api)
                assert (seen.method, seen.path) == ("POST", "/webhook/webhooks/tok/x/factorialhr")
                assert seen.query == [("l_id", "look"), ("e", "A::B")]
                assert seen.json() == events
                await session.call_tool(
                    "webhooksExecute", {"id": "tok", "serviceId": "s", "body": {"one": 1}}
                )
                assert last(api).json() == {"one": 1}

                # A deepObject query parameter.
                await session.call_tool(
                    "eventLogsAll", {**app, "filter": {"exclude_apis": "vault,proxy"}}
                )
                seen = last(api)
                assert (seen.method, seen.path) == ("GET", "/webhook/logs")
                assert seen.query == [("filter[exclude_apis]", "vault,proxy")]

                result = await session.call_tool("webhooksDelete", {**app, "id": "wh-1"})
                assert not result.is_error, result
                assert (last(api).method, last(api).path) == ("DELETE", "/webhook/webhooks/wh-1")

                result = await session.call_tool("webhooksOne", {**app, "id": "404"})
                assert result.is_error
                text = result.content[0].text  # type: ignore[union-attr]
                assert "GET /webhook/webhooks/{id}" in text
                assert "HTTP 404" in text

                # A required header parameter left out never reaches the API.
                count = len(api.requests)
                result = await session.call_tool("webhooksOne", {"id": "wh-1"})
                assert result.is_error
                assert len(api.requests) == count

                await cancelled_call(session, api, "webhooksOne", {**app, "id": "slow"})

        anyio.run(main, backend="asyncio")


def test_a_document_without_an_absolute_server_url_says_so(tmp_path: Path) -> None:
    document = {
        "openapi": "3.0.3",
        "info": {"title": "relative", "version": "1"},
        "servers": [{"url": "/v1"}],
        "paths": {"/ping": {"get": {"operationId": "ping", "responses": {"204": {}}}}},
    }
    (tmp_path / "relative.json").write_text(json.dumps(document))
    done = subprocess.run(
        [sys.executable, "-m", "mcpactor", "serve", "openapi:relative.json"],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        stdin=subprocess.DEVNULL,
        cwd=tmp_path,
        check=False,
    )
    assert done.returncode != 0
    assert "--openapi-base-url" in done.stderr or "base_url" in done.stderr
    assert "Traceback" not in done.stderr
