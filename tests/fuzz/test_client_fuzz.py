"""Arbitrary JSON from a server, in every position: our ClientSession lives on.

The test plays the server on the client's channels, passing what it sends through the
framer as a byte stream would. With one of the client's calls in flight it sends the
hostile message, then answers the call: the call gets exactly that answer, the client
still pings, and what the client sent back (answers to the server's requests) is a valid
client message of the revision.
"""

from __future__ import annotations

from typing import Any

import trio
import trio.testing
from hypothesis import given

from mcpactor import RequestError
from mcpactor.client import open_client_session
from mcpactor.protocol import JSONValue, ProtocolError, RemoteProtocolError, decode
from tests.spec_schema import check

from ._hostile import FUZZ, client_answers, hostile_messages
from ._scenarios import GUARD, REVISION, run, wire


def _framed(message: Any) -> Any:
    try:
        return decode(wire(message))
    except RemoteProtocolError as exc:
        return exc


async def _sampling(params: Any) -> Any:
    return {"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"}


async def _client_meets(message: Any) -> None:
    to_server, server_inbox = trio.open_memory_channel[JSONValue](100)
    server_outbox, to_client = trio.open_memory_channel[JSONValue | ProtocolError](100)
    answer = {"content": [{"type": "text", "text": "the answer"}]}
    async with (
        open_client_session(to_server, to_client, sampling_handler=_sampling) as client,
        trio.open_nursery() as nursery,
    ):
        results: list[Any] = []
        answered = trio.Event()

        async def call() -> None:
            results.append(await client.call_tool("t", {}))
            answered.set()

        nursery.start_soon(call)
        with trio.fail_after(GUARD):
            request = await server_inbox.receive()
        await server_outbox.send(_framed(message))
        await server_outbox.send({"jsonrpc": "2.0", "id": request["id"], "result": answer})
        with trio.fail_after(GUARD):
            await answered.wait()
        assert results == [answer]
        nursery.start_soon(client.ping)
        while True:
            with trio.fail_after(GUARD):
                sent = await server_inbox.receive()
            if sent.get("method") == "ping":
                await server_outbox.send({"jsonrpc": "2.0", "id": sent["id"], "result": {}})
                break
            # The client's answer to a request of the hostile server.
            definition = "JSONRPCResponse" if "result" in sent else "JSONRPCErrorResponse"
            check(sent, REVISION, definition)
        await trio.testing.wait_all_tasks_blocked()


@FUZZ
@given(hostile_messages())
def test_any_value_from_a_server_leaves_the_client_working(case: tuple[str, Any]) -> None:
    _, message = case
    run(_client_meets, message)


@FUZZ
@given(client_answers())
def test_any_answer_from_a_server_to_a_call_is_a_clear_outcome(body: dict[str, Any]) -> None:
    async def scenario() -> None:
        to_server, server_inbox = trio.open_memory_channel[JSONValue](100)
        server_outbox, to_client = trio.open_memory_channel[JSONValue | ProtocolError](100)
        async with (
            open_client_session(to_server, to_client) as client,
            trio.open_nursery() as nursery,
        ):
            outcome: list[Any] = []
            settled = trio.Event()

            async def call() -> None:
                try:
                    # Not a usable response at all: the call's timeout settles it.
                    outcome.append(await client.call_tool("t", {}, timeout=5))
                except (RequestError, RemoteProtocolError, trio.TooSlowError) as exc:
                    outcome.append(exc)
                settled.set()

            nursery.start_soon(call)
            with trio.fail_after(GUARD):
                request = await server_inbox.receive()
            await server_outbox.send(_framed({"jsonrpc": "2.0", "id": request["id"], **body}))
            with trio.fail_after(GUARD):
                await settled.wait()
            result = outcome[0]
            if type(result) is dict:
                assert result == body.get("result")
            elif isinstance(result, RequestError):
                assert "error" in body or "result" in body
            # The client goes on: its next call is answered.
            nursery.start_soon(client.ping)
            with trio.fail_after(GUARD):
                ping = await server_inbox.receive()
                while ping.get("method") != "ping":
                    ping = await server_inbox.receive()
            await server_outbox.send({"jsonrpc": "2.0", "id": ping["id"], "result": {}})

    run(scenario)
