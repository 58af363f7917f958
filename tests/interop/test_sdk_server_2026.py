"""Our client at the stateless revision against the official Python SDK's server.

``sdk_server_2026.py`` (an SDK ``MCPServer``) runs over stdio (a process per test) and
over Streamable HTTP (one process for the module). Every message our client sends is
checked against the 2026-07-28 schema as it leaves, and the SDK validates what it
receives: over HTTP it refuses a request whose ``Mcp-*`` headers do not match its body.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio

from mcpactor.client import (
    ClientSession,
    MissingClientCapability,
    connect_http,
    connect_stdio,
)
from mcpactor.protocol import JSONObject
from tests.client.client_schema import STATELESS, ClientMessages
from tests.spec_schema import check, check_server_message

SERVER = Path(__file__).resolve().parent / "sdk_server_2026.py"
TIMEOUT = 20.0
BOOKING = {"guests": 4, "terrace": True}

Connect = Callable[..., AbstractAsyncContextManager[ClientSession]]


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    process = subprocess.Popen(
        [sys.executable, str(SERVER), "--http"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert process.stderr is not None
        # The server says where it listens once it does: no polling, no sleeping.
        for line in process.stderr:
            if line.startswith(b"serving http://"):
                url = line.split()[1].decode()
                break
        else:
            raise AssertionError(f"the SDK server exited with {process.wait()} before listening")
        yield url
    finally:
        process.terminate()
        process.wait(timeout=TIMEOUT)
        if process.stderr is not None:
            process.stderr.close()


@pytest.fixture(params=["stdio", "http"])
def transport(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def connect(transport: str, request: pytest.FixtureRequest) -> Connect:
    """Open a client of the SDK server over the transport, checking all it sends."""

    @asynccontextmanager
    async def connect(
        *, sent: ClientMessages | None = None, protocol_version: str = "auto", **client: Any
    ) -> AsyncIterator[ClientSession]:
        client.setdefault("on_client_message", sent if sent is not None else ClientMessages())
        client.setdefault("request_timeout", TIMEOUT)
        client.setdefault("on_server_message", _check_server)
        if transport == "stdio":
            opened = connect_stdio(
                [sys.executable, str(SERVER)],
                initialize=True,
                protocol_version=protocol_version,
                **client,
            )
        else:
            url = request.getfixturevalue("http_url")
            opened = connect_http(
                url, initialize=True, protocol_version=protocol_version, **client
            )
        with trio.fail_after(TIMEOUT):
            async with opened as session:
                yield session

    return connect


# What the shared checker does not know yet of the stateless revision.
_STATELESS_RESULTS = {
    "server/discover": "DiscoverResult",
    "subscriptions/listen": "SubscriptionsListenResult",
}
_STATELESS_NOTIFICATIONS = {
    "notifications/subscriptions/acknowledged": "SubscriptionsAcknowledgedNotification",
}


def _check_server(message: Any, request_method: str | None) -> None:
    """Check what the SDK sends against the 2026-07-28 schema too."""
    result = message.get("result") if isinstance(message, dict) else None
    if isinstance(message, dict) and "error" in message:
        check(message, STATELESS, "JSONRPCErrorResponse")
    elif isinstance(result, dict) and (
        result.get("resultType") == "input_required" or request_method in _STATELESS_RESULTS
    ):
        check(message, STATELESS, "JSONRPCResponse")
        if result.get("resultType") == "input_required":
            check(result, STATELESS, "InputRequiredResult")
        else:
            check(result, STATELESS, _STATELESS_RESULTS[str(request_method)])
    elif isinstance(message, dict) and message.get("method") in _STATELESS_NOTIFICATIONS:
        check(message, STATELESS, _STATELESS_NOTIFICATIONS[message["method"]])
    else:
        check_server_message(message, STATELESS, request_method=request_method)


def text_of(result: JSONObject) -> str:
    assert result["resultType"] == "complete", result
    [block] = result["content"]
    assert block["type"] == "text"
    return str(block["text"])


async def accept_booking(params: JSONObject) -> JSONObject:
    return {"action": "accept", "content": BOOKING}


@pytest.mark.parametrize("protocol_version", ["auto", STATELESS])
async def test_discover_chooses_the_stateless_revision(
    connect: Connect, protocol_version: str
) -> None:
    sent = ClientMessages()
    async with connect(sent=sent, protocol_version=protocol_version) as client:
        assert client.server.stateless
        assert client.server.protocol_version == STATELESS
        assert client.server.initialize_result is None
        assert client.server.info is not None
        assert client.server.info["name"] == "sdk-2026"
        assert client.server.capabilities["tools"] == {"listChanged": True}
        assert client.server.discover_result is not None
        assert STATELESS in client.server.discover_result["supportedVersions"]
    assert sent.methods() == ["server/discover"]


async def test_tools_are_listed_and_called_with_mirrored_headers(connect: Connect) -> None:
    async with connect() as client:
        tools = {tool["name"]: tool for tool in await client.list_tools()}
        assert {"echo", "regional", "book", "add_tool"} <= set(tools)
        region = tools["regional"]["inputSchema"]["properties"]["region"]
        assert region["x-mcp-header"] == "Region"

        assert text_of(await client.call_tool("echo", {"text": "hi"})) == "hi"
        # Over HTTP the SDK refuses this call unless Mcp-Param-Region matches the body;
        # a value that is no plain ASCII travels base64-wrapped.
        assert text_of(await client.call_tool("regional", {"region": "eu", "query": "q"})) == (
            "eu: q"
        )
        result = await client.call_tool("regional", {"region": " Zürich ", "query": "q"})
        assert text_of(result) == " Zürich : q"


async def test_a_header_mismatch_is_retried_once_the_tools_are_listed(http_url: str) -> None:
    sent = ClientMessages()
    with trio.fail_after(TIMEOUT):
        async with connect_http(
            http_url, initialize=True, protocol_version="auto", on_client_message=sent
        ) as client:
            # Without tools/list the client cannot know the tool mirrors a parameter:
            # the SDK refuses the call (-32020), and the client lists and tries again.
            result = await client.call_tool("regional", {"region": "eu", "query": "q"})
            assert text_of(result) == "eu: q"
    assert sent.methods()[:4] == ["server/discover", "tools/call", "tools/list", "tools/call"]


async def test_resources_are_read_and_prompts_got(connect: Connect) -> None:
    async with connect() as client:
        resources = await client.list_resources()
        assert [r["uri"] for r in resources] == ["memo://greeting"]
        read = await client.read_resource("memo://greeting")
        assert read["resultType"] == "complete"
        assert read["contents"][0]["text"] == "hello from the SDK"

        prompts = await client.list_prompts()
        assert [p["name"] for p in prompts] == ["summarize"]
        prompt = await client.get_prompt("summarize", {"topic": "tides"})
        assert prompt["resultType"] == "complete"
        assert prompt["messages"][0]["content"]["text"] == "Summarize tides."


async def test_an_elicitation_is_answered_across_an_input_required_round(
    connect: Connect,
) -> None:
    asked: list[JSONObject] = []

    async def on_elicitation(params: JSONObject) -> JSONObject:
        asked.append(params)
        return await accept_booking(params)

    sent = ClientMessages()
    async with connect(sent=sent, elicitation_handler=on_elicitation) as client:
        result = await client.call_tool("book", {"table": "t7"})
        assert text_of(result) == "t7: 4 guests, terrace=True"

    [question] = asked
    assert question["mode"] == "form"
    assert question["requestedSchema"]["required"] == ["guests", "terrace"]
    first, retry = [m for m in sent.sent if m["method"] == "tools/call"]
    assert first["id"] != retry["id"]
    assert "inputResponses" not in first["params"]
    assert retry["params"]["arguments"] == first["params"]["arguments"] == {"table": "t7"}
    [(key, answer)] = retry["params"]["inputResponses"].items()
    assert answer == {"action": "accept", "content": BOOKING}
    assert isinstance(retry["params"]["requestState"], str)
    assert key
    # The handler's capability was declared on every request.
    for message in sent.sent:
        capabilities = message["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]
        assert "elicitation" in capabilities


async def test_a_client_without_elicitation_is_told_what_it_lacks(connect: Connect) -> None:
    async with connect() as client:
        with pytest.raises(MissingClientCapability) as caught:
            await client.call_tool("book", {"table": "t1"})
        assert "elicitation" in caught.value.required_capabilities


async def test_a_listen_stream_delivers_list_changes_until_it_is_left(
    connect: Connect, transport: str
) -> None:
    sent = ClientMessages()
    async with connect(sent=sent) as client:
        async with client.listen(tools_list_changed=True, prompts_list_changed=True) as stream:
            assert stream.acknowledged
            assert stream.notifications.get("toolsListChanged") is True
            await client.call_tool("add_tool", {"name": f"added_{transport}"})
            changed = await stream.next()
            assert changed.method == "notifications/tools/list_changed"
            assert changed.params is not None
            meta = changed.params["_meta"]
            assert meta["io.modelcontextprotocol/subscriptionId"] == stream.id
        assert client.statistics().requests_pending == {}
        # The connection goes on after the stream ended.
        names = {tool["name"] for tool in await client.list_tools()}
        assert f"added_{transport}" in names
    # The session says it stopped listening; on stdio that notice is what ends the
    # stream, over HTTP the transport closes the response instead of sending it.
    cancels = [m for m in sent.sent if m["method"] == "notifications/cancelled"]
    assert [c["params"]["requestId"] for c in cancels] == [stream.id]
