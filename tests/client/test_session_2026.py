"""ClientSession at the stateless revision against a scripted server in memory.

What an official server rarely does on purpose (refuse discovery, stay silent, ask for
input forever, end a listen stream) is scripted here message by message; every message
the client sends with an envelope is checked against the 2026-07-28 schema.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio

from mcpactor._exceptions import (
    LocalProtocolError,
    RemoteProtocolError,
    RequestError,
    TransportError,
)
from mcpactor.client import (
    ClientSession,
    HeaderMismatch,
    MissingClientCapability,
    UnsupportedProtocolVersion,
    open_client_session,
)
from mcpactor.protocol import JSONValue

from .client_schema import STATELESS, check_client_message

Script = Callable[[dict[str, Any]], Awaitable[list[dict[str, Any]]]]
GUARD = 10_000.0
DISCOVERED = {
    "resultType": "complete",
    "supportedVersions": ["2025-11-25", STATELESS],
    "capabilities": {"tools": {}},
    "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "scripted", "version": "1"}},
}


def result(message: dict[str, Any], value: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": message["id"], "result": value}


def error(message: dict[str, Any], code: int, data: Any = None) -> dict[str, Any]:
    failure: dict[str, Any] = {"code": code, "message": f"refused with {code}"}
    if data is not None:
        failure["data"] = data
    return {"jsonrpc": "2.0", "id": message["id"], "error": failure}


def initialized(message: dict[str, Any]) -> dict[str, Any]:
    return result(
        message,
        {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "serverInfo": {"name": "legacy", "version": "1"},
        },
    )


class Wire:
    """What the client sent, in order; messages with an envelope are schema-checked."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    def __call__(self, message: JSONValue) -> None:
        assert isinstance(message, dict)
        meta = (message.get("params") or {}).get("_meta") or {}
        if "io.modelcontextprotocol/protocolVersion" in meta or (
            message.get("method") == "notifications/cancelled" and self.stateless()
        ):
            check_client_message(message)
        self.sent.append(message)

    def stateless(self) -> bool:
        return any(
            "io.modelcontextprotocol/protocolVersion" in (m.get("params") or {}).get("_meta", {})
            for m in self.sent
        )

    def methods(self) -> list[str]:
        return [m.get("method", "<response>") for m in self.sent]


@asynccontextmanager
async def scripted(script: Script, **client: Any) -> AsyncIterator[tuple[ClientSession, Wire]]:
    """A client whose every message is answered by ``script``, in order."""
    to_server_send, to_server_receive = trio.open_memory_channel[JSONValue](64)
    to_client_send, to_client_receive = trio.open_memory_channel[Any](64)
    wire = Wire()

    async def serve() -> None:
        async with to_server_receive, to_client_send:
            async for message in to_server_receive:
                for reply in await script(message):
                    await to_client_send.send(reply)

    with trio.fail_after(GUARD):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(serve)
            async with open_client_session(
                to_server_send, to_client_receive, on_client_message=wire, **client
            ) as session:
                yield session, wire
            nursery.cancel_scope.cancel()


async def modern(message: dict[str, Any]) -> list[dict[str, Any]]:
    """A server of the stateless era that answers discovery and an empty tool list."""
    if message.get("method") == "server/discover":
        return [result(message, DISCOVERED)]
    if message.get("method") == "tools/list":
        return [result(message, {"resultType": "complete", "tools": []})]
    return []


# --- choosing the era -------------------------------------------------------------------


async def test_auto_falls_back_to_initialize_on_a_session_servers_error() -> None:
    async def legacy(message: dict[str, Any]) -> list[dict[str, Any]]:
        if message.get("method") == "server/discover":
            return [error(message, -32601)]
        if message.get("method") == "initialize":
            return [initialized(message)]
        return []

    async with scripted(legacy) as (client, wire):
        answer = await client.start()
        assert answer["protocolVersion"] == "2025-11-25"
        assert client.server.protocol_version == "2025-11-25"
        assert not client.server.stateless
        assert client.server.info == {"name": "legacy", "version": "1"}
        assert client.server.discover_result is None
        # Session requests carry no envelope.
        await client.notify("notifications/roots/list_changed")
    assert wire.methods()[:3] == ["server/discover", "initialize", "notifications/initialized"]
    assert "params" not in wire.sent[-1] or "_meta" not in wire.sent[-1]["params"]


async def test_auto_falls_back_when_discovery_goes_unanswered(autojump_clock: Any) -> None:
    async def silent(message: dict[str, Any]) -> list[dict[str, Any]]:
        return [initialized(message)] if message.get("method") == "initialize" else []

    async with scripted(silent) as (client, wire):
        await client.start()
        assert client.server.protocol_version == "2025-11-25"
    # The unanswered probe was given up before the handshake.
    assert wire.methods()[:3] == ["server/discover", "notifications/cancelled", "initialize"]


async def test_a_stateless_servers_version_error_is_not_a_reason_to_fall_back() -> None:
    async def other(message: dict[str, Any]) -> list[dict[str, Any]]:
        data = {"supported": ["2099-01-01"], "requested": STATELESS}
        return [error(message, -32022, data)] if "id" in message else []

    async with scripted(other) as (client, wire):
        with pytest.raises(UnsupportedProtocolVersion) as caught:
            await client.start()
        assert caught.value.supported == ["2099-01-01"]
        with pytest.raises(UnsupportedProtocolVersion):
            await client.start(STATELESS)
    assert "initialize" not in wire.methods()


async def test_a_forced_session_revision_initializes_and_a_stateless_one_discovers() -> None:
    async def both(message: dict[str, Any]) -> list[dict[str, Any]]:
        if message.get("method") == "initialize":
            return [initialized(message)]
        return await modern(message)

    async with scripted(both) as (client, wire):
        await client.start("2025-11-25")
        assert not client.server.stateless
    assert wire.methods()[0] == "initialize"
    async with scripted(both) as (client, wire):
        await client.start(STATELESS)
        assert client.server.stateless
        assert client.server.info == {"name": "scripted", "version": "1"}
    assert wire.methods() == ["server/discover"]


async def test_start_without_discovery_speaks_the_revision_at_once() -> None:
    async with scripted(modern) as (client, wire):
        assert await client.start(STATELESS, discover=False) == {}
        assert client.server.stateless
        assert client.server.protocol_version == STATELESS
        assert wire.sent == []
        assert await client.list_tools() == []
    [listed] = wire.sent
    assert listed["method"] == "tools/list"
    assert listed["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] == STATELESS


async def test_start_without_discovery_refuses_a_session_revision() -> None:
    async with scripted(modern) as (client, wire):
        for version in ("2025-11-25", "auto"):
            with pytest.raises(LocalProtocolError, match="not a revision served request"):
                await client.start(version, discover=False)
        assert not client.server.stateless
    assert wire.sent == []


async def test_discover_refuses_a_session_revision() -> None:
    async with scripted(modern) as (client, wire):
        with pytest.raises(ValueError, match="not a revision without sessions"):
            await client.discover("2025-11-25")
    assert wire.sent == []


# --- rounds ----------------------------------------------------------------------------


async def test_every_round_is_a_new_request_carrying_the_answers_and_the_state() -> None:
    rounds: list[dict[str, Any]] = []

    async def asking(message: dict[str, Any]) -> list[dict[str, Any]]:
        if message.get("method") != "tools/call":
            return await modern(message)
        rounds.append(message)
        if len(rounds) == 1:
            ask = {
                "resultType": "input_required",
                "inputRequests": {
                    "who": {
                        "method": "elicitation/create",
                        "params": {
                            "mode": "form",
                            "message": "Who?",
                            "requestedSchema": {"type": "object", "properties": {}},
                        },
                    },
                    "where": {"method": "roots/list"},
                },
                "requestState": "state-1",
            }
            return [result(message, ask)]
        if len(rounds) == 2:
            # A state alone: retry at once, nothing to ask.
            return [result(message, {"resultType": "input_required", "requestState": "state-2"})]
        done = {"resultType": "complete", "content": [{"type": "text", "text": "ok"}]}
        return [result(message, done)]

    async def on_elicitation(params: dict[str, Any]) -> dict[str, Any]:
        assert params["message"] == "Who?"
        return {"action": "accept", "content": {}}

    roots = [{"uri": "file:///work", "name": "work"}]
    async with scripted(asking, elicitation_handler=on_elicitation, roots=roots) as (client, _):
        await client.start()
        answer = await client.call_tool("t", {"a": 1}, meta={"progressToken": "p"})
        assert answer["content"][0]["text"] == "ok"
        assert client.statistics().requests_pending == {}

    first, second, third = rounds
    assert len({first["id"], second["id"], third["id"]}) == 3
    assert "inputResponses" not in first["params"]
    assert "requestState" not in first["params"]
    assert second["params"]["inputResponses"] == {
        "who": {"action": "accept", "content": {}},
        "where": {"roots": roots},
    }
    assert second["params"]["requestState"] == "state-1"
    assert "inputResponses" not in third["params"]
    assert third["params"]["requestState"] == "state-2"
    for message in rounds:
        assert message["params"]["arguments"] == {"a": 1}
        assert message["params"]["_meta"]["progressToken"] == "p"


async def test_a_server_that_keeps_asking_is_given_up_after_the_bound() -> None:
    calls: list[dict[str, Any]] = []

    async def forever(message: dict[str, Any]) -> list[dict[str, Any]]:
        if message.get("method") != "prompts/get":
            return await modern(message)
        calls.append(message)
        state = {"resultType": "input_required", "requestState": f"s{len(calls)}"}
        return [result(message, state)]

    async with scripted(forever, max_input_rounds=2) as (client, _):
        await client.start()
        with pytest.raises(RemoteProtocolError, match="still asked for input after 2 rounds"):
            await client.get_prompt("p")
    assert [c["params"].get("requestState") for c in calls] == [None, "s1", "s2"]


async def test_a_question_the_client_has_no_handler_for_fails_the_call() -> None:
    calls: list[dict[str, Any]] = []

    async def sampling(message: dict[str, Any]) -> list[dict[str, Any]]:
        if message.get("method") != "resources/read":
            return await modern(message)
        calls.append(message)
        ask = {
            "resultType": "input_required",
            "inputRequests": {
                "s": {
                    "method": "sampling/createMessage",
                    "params": {"messages": [], "maxTokens": 5},
                }
            },
        }
        return [result(message, ask)]

    async with scripted(sampling) as (client, _):
        await client.start()
        with pytest.raises(RequestError, match="sampling/createMessage") as caught:
            await client.read_resource("memo://a")
        assert caught.value.code == -32601
    assert len(calls) == 1


async def test_a_task_result_and_a_missing_capability_reach_the_caller() -> None:
    async def tasks(message: dict[str, Any]) -> list[dict[str, Any]]:
        if message.get("method") != "tools/call":
            return await modern(message)
        if message["params"]["name"] == "slow":
            task = {"taskId": "t-1", "status": "working"}
            return [result(message, {"resultType": "task", "task": task})]
        data: dict[str, Any] = {"requiredCapabilities": {"sampling": {}}}
        return [error(message, -32021, data)]

    async with scripted(tasks) as (client, _):
        await client.start()
        created = await client.call_tool("slow")
        assert created == {"resultType": "task", "task": {"taskId": "t-1", "status": "working"}}
        with pytest.raises(MissingClientCapability) as caught:
            await client.call_tool("needs")
        assert caught.value.required_capabilities == {"sampling": {}}


async def test_a_header_mismatch_is_tried_once_more_after_listing_the_tools() -> None:
    async def mismatching(message: dict[str, Any]) -> list[dict[str, Any]]:
        if message.get("method") in ("tools/call", "resources/read"):
            return [error(message, -32020)]
        return await modern(message)

    async with scripted(mismatching) as (client, wire):
        await client.start()
        with pytest.raises(HeaderMismatch) as caught:
            await client.call_tool("t", {"region": "eu"})
        assert caught.value.code == -32020
        # Not retried for another method.
        with pytest.raises(HeaderMismatch):
            await client.read_resource("a://b")
    assert wire.methods() == [
        "server/discover",
        "tools/call",
        "tools/list",
        "tools/call",
        "resources/read",
    ]


async def test_the_log_level_goes_with_every_later_request() -> None:
    async with scripted(modern) as (client, wire):
        await client.start()
        assert await client.set_logging_level("info") == {}
        assert client.server.log_level == "info"
        assert await client.list_tools() == []
    sent = wire.sent[-1]
    assert sent["method"] == "tools/list"
    assert sent["params"]["_meta"]["io.modelcontextprotocol/logLevel"] == "info"
    assert "logging/setLevel" not in wire.methods()


# --- listen ----------------------------------------------------------------------------


def tagged(method: str, subscription: Any, **params: Any) -> dict[str, Any]:
    meta = {"io.modelcontextprotocol/subscriptionId": subscription}
    return {"jsonrpc": "2.0", "method": method, "params": {"_meta": meta, **params}}


async def test_a_stream_the_server_ends_gracefully_stops_the_iteration() -> None:
    async def ending(message: dict[str, Any]) -> list[dict[str, Any]]:
        if message.get("method") != "subscriptions/listen":
            return await modern(message)
        sid = message["id"]
        honoured = {"toolsListChanged": True}
        return [
            tagged("notifications/subscriptions/acknowledged", sid, notifications=honoured),
            tagged("notifications/tools/list_changed", sid),
            tagged("notifications/tools/list_changed", sid),
            result(message, {"resultType": "complete", "_meta": {}}),
        ]

    async with scripted(ending) as (client, wire):
        await client.start()
        async with client.listen(tools_list_changed=True, resource_subscriptions=["a://b"]) as s:
            assert s.notifications == {"toolsListChanged": True}
            methods = [n.method async for n in s]
            assert s.result == {"resultType": "complete", "_meta": {}}
        assert methods == ["notifications/tools/list_changed"] * 2
        assert client.statistics().requests_pending == {}
    listen = wire.sent[1]
    assert listen["params"]["notifications"] == {
        "toolsListChanged": True,
        "resourceSubscriptions": ["a://b"],
    }
    # Answered: nothing to cancel on the way out.
    assert "notifications/cancelled" not in wire.methods()


async def test_a_refused_stream_raises_and_a_lost_connection_ends_one() -> None:
    async def refusing(message: dict[str, Any]) -> list[dict[str, Any]]:
        if message.get("method") == "subscriptions/listen":
            if message["params"]["notifications"].get("promptsListChanged"):
                return [error(message, -32602)]
            sid = message["id"]
            return [tagged("notifications/subscriptions/acknowledged", sid, notifications={})]
        return await modern(message)

    async with scripted(refusing) as (client, _):
        await client.start()
        with pytest.raises(RequestError) as caught:
            async with client.listen(prompts_list_changed=True):
                raise AssertionError("not acknowledged")
        assert caught.value.code == -32602
        async with client.listen(tools_list_changed=True) as stream:
            assert stream.notifications == {}
            await client.aclose()
            with pytest.raises(TransportError):
                await stream.next()
