"""Arbitrary JSON in every position of a message, over Streamable HTTP: the session lives.

The same scenarios as over stdio, through the in-process ASGI app: a request held in
flight on its own POST, the hostile message POSTed, a ping, the held request released.
Every answer (a JSON body, an SSE event or the body of a refusal) validates against the
revision's schema.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Final

from hypothesis import given

from mcpactor.runtime import SessionOptions
from tests.spec_schema import check_server_message
from tests.transports._http_client import McpClient, Response, read_reply, start_post
from tests.transports._http_server import asgi_client

from ._hostile import (
    FUZZ,
    Probe,
    client_answers,
    fuzz_server,
    hostile_messages,
    is_request_with_id,
)
from ._scenarios import CAPABILITIES, REVISION, run, wire

HELD = {"jsonrpc": "2.0", "id": "held", "method": "tools/call", "params": {"name": "hold"}}
#: shorter than the test client's own guard (10 s, virtual here)
OPTIONS: Final = SessionOptions(client_request_timeout=5)


@asynccontextmanager
async def http_session(probe: Probe) -> AsyncIterator[McpClient]:
    async with asgi_client(fuzz_server(probe), session_options=OPTIONS) as (_, http):
        client = McpClient(http)
        await client.initialize(REVISION, capabilities=CAPABILITIES)
        yield client


async def post_raw(client: McpClient, message: Any) -> Response:
    return await client.http.request("POST", client.path, client.headers(), wire(message))


async def check_answer(response: Response, message: Any) -> Any:
    """Check what the server answered a POST; return the reply message, if one came."""
    method = message.get("method") if type(message) is dict else None
    if response.status == 202:
        assert await response.body() == b""
        assert not is_request_with_id(message)
        return None
    if response.status == 200:
        reply = await read_reply(response)
        check_server_message(
            reply, REVISION, request_method=method if type(method) is str else None
        )
        return reply
    # A refusal before the session: an HTTP error whose body is a JSON-RPC error.
    assert 400 <= response.status < 500, response.status
    reply = await response.json()
    check_server_message(reply, REVISION)
    assert "error" in reply
    return reply


async def ping_works(client: McpClient) -> None:
    assert (await client.call("ping"))["result"] == {}


async def _hostile_message(message: Any) -> None:
    probe = Probe()
    async with http_session(probe) as client:
        held = start_post(client, HELD)
        await probe.started.wait()
        reply = await check_answer(await post_raw(client, message), message)
        if is_request_with_id(message) and reply is not None and "id" in reply:
            assert reply["id"] == message["id"]
        await ping_works(client)
        probe.release.set()
        answer = await read_reply(await held.wait())
        check_server_message(answer, REVISION, request_method="tools/call")
        assert answer["result"]["content"][0]["text"] == "released"


@FUZZ
@given(hostile_messages())
def test_any_value_in_any_position_leaves_the_http_session_serving(case: tuple[str, Any]) -> None:
    _, message = case
    run(_hostile_message, message)


async def _hostile_answer(what: str, answer: dict[str, Any]) -> None:
    probe = Probe()
    async with http_session(probe) as client:
        request = client.request("tools/call", {"name": "ask", "arguments": {"what": what}})
        stream = await client.post(request)
        assert stream.content_type == "text/event-stream"
        while True:
            event = await stream.next_event()
            assert event is not None, "the stream ended before the server asked"
            if event.data:
                asked = event.message()
                check_server_message(asked, REVISION)
                if "method" in asked and "id" in asked:
                    break
        body = {"jsonrpc": "2.0", "id": asked["id"], **answer}
        response = await post_raw(client, body)
        if is_request_with_id(body) and type(body["method"]) is str and response.status == 200:
            # With a method it is the client's own request (ids are per direction):
            # it is owed an answer of its own, an error for a method nobody serves.
            reply = await read_reply(response)
            check_server_message(reply, REVISION)
            assert reply["id"] == body["id"]
        else:
            assert response.status in (202, 400), response.status
            if response.status == 400:
                check_server_message(await response.json(), REVISION)
        await ping_works(client)
        replies = [m for m in await stream.messages() if "method" not in m]
        assert len(replies) == 1, replies
        check_server_message(replies[0], REVISION, request_method="tools/call")
        assert replies[0]["id"] == request["id"]


@FUZZ
@given(what=..., answer=client_answers())
def test_any_answer_to_a_server_request_over_http_is_survived(
    what: bool, answer: dict[str, Any]
) -> None:
    run(_hostile_answer, "sampling" if what else "elicitation", answer)
