"""A ProxyServer whose remote answers with anything: the proxy's clients get clear answers.

The remote is played by the test over memory channels, so it can send what no server of
ours would: results of the wrong shape, values nested past MAX_DEPTH, huge error
messages, log messages carrying deep data. Whatever it sends, the proxy's own answers
validate against the schema and its session keeps serving.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import orjson
import pytest
import trio
import trio.testing

from mcpactor import RequestError
from mcpactor.client import ClientSession, ProxyServer, open_client_session
from mcpactor.protocol import LATEST, MAX_DEPTH, JSONValue, ProtocolError, decode
from tests.client.conftest import connect
from tests.fuzz._scenarios import wire
from tests.spec_schema import check

Reply = Callable[[Any], dict[str, Any]]


def nested(depth: int, leaf: Any = 0) -> Any:
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


def _remote_answer(message: dict[str, Any], tool_reply: Reply) -> dict[str, Any] | None:
    method = message.get("method")
    if "id" not in message or method is None:
        return None
    if method == "initialize":
        result: dict[str, Any] = {
            "protocolVersion": LATEST.version,
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "hostile", "version": "1"},
        }
    elif method == "tools/list":
        result = {"tools": [{"name": "t", "inputSchema": {"type": "object"}}]}
    elif method == "tools/call":
        return {"jsonrpc": "2.0", "id": message["id"], **tool_reply(message)}
    else:
        result = {}
    return {"jsonrpc": "2.0", "id": message["id"], "result": result}


def hostile(tool_reply: Reply) -> ProxyServer:
    """A proxy whose remote answers ``tools/call`` with ``tool_reply(request)``."""

    @asynccontextmanager
    async def connect(**client: Any) -> AsyncIterator[ClientSession]:
        to_remote, remote_inbox = trio.open_memory_channel[JSONValue](100)
        remote_outbox, from_remote = trio.open_memory_channel[JSONValue | ProtocolError](100)

        async def play() -> None:
            async for message in remote_inbox:
                answer = _remote_answer(message, tool_reply)
                if answer is not None:
                    if message.get("method") == "tools/call":
                        # A log message first, as a remote may send: deep data in it.
                        log = {"level": "info", "data": nested(MAX_DEPTH - 3)}
                        await remote_outbox.send(
                            {"jsonrpc": "2.0", "method": "notifications/message", "params": log}
                        )
                    # Through the framer, as bytes from a real remote would come.
                    try:
                        item: Any = decode(wire(answer))
                    except ProtocolError as exc:
                        item = exc
                    await remote_outbox.send(item)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(play)
            async with open_client_session(to_remote, from_remote, **client) as session:
                yield session
            nursery.cancel_scope.cancel()

    return ProxyServer(connect, "hostile")


async def call(reply: Reply) -> Any:
    async with connect(hostile(reply)) as client:
        try:
            result: Any = await client.call_tool("t", {})
        except RequestError as exc:
            result = exc
        # The proxy's session goes on serving.
        assert [tool["name"] for tool in await client.list_tools()] == ["t"]
        await client.ping()
        return result


@pytest.mark.parametrize(
    "content",
    [None, "text", [1, 2], [{"text": "no type"}], [{"type": 5}], {"type": "text", "text": "x"}],
    ids=["null", "string", "numbers", "no-type", "type-number", "object"],
)
async def test_a_remote_result_without_content_blocks_is_an_internal_error(
    content: Any, autojump_clock: trio.testing.MockClock
) -> None:
    failure = await call(lambda _: {"result": {"content": content}})
    assert isinstance(failure, RequestError)
    assert failure.code == -32603
    assert "without a list of content blocks" in failure.message
    assert len(failure.message) < 300


async def test_a_remote_result_nested_too_deep_is_a_clear_error(
    autojump_clock: trio.testing.MockClock,
) -> None:
    failure = await call(lambda _: {"result": {"content": [], "x": nested(MAX_DEPTH)}})
    assert isinstance(failure, RequestError)
    assert f"nests deeper than {MAX_DEPTH} levels" in failure.message


async def test_a_remote_error_is_relayed_as_it_came(
    autojump_clock: trio.testing.MockClock,
) -> None:
    data = {"deep": nested(MAX_DEPTH - 5)}
    failure = await call(
        lambda _: {"error": {"code": -32000, "message": "m" * 10_000, "data": data}}
    )
    assert isinstance(failure, RequestError)
    assert (failure.code, failure.message, failure.data) == (-32000, "m" * 10_000, data)


async def test_a_good_remote_result_is_relayed(autojump_clock: trio.testing.MockClock) -> None:
    result = await call(
        lambda _: {"result": {"content": [{"type": "text", "text": "ok"}], "x": [1]}}
    )
    check(result, LATEST.version, "CallToolResult")
    assert result["content"] == [{"type": "text", "text": "ok"}]


def test_the_wire_helper_writes_what_orjson_reads() -> None:
    assert orjson.loads(wire({"a": [nested(300)]})) == {"a": [nested(300)]}
