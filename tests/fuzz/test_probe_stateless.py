"""Attack probe: the 2026-07-28 envelope and ``subscriptions/listen``.

A stateless request carries its revision and capabilities in ``params._meta`` and its
multi round-trip state in ``requestState``: each case forges, inflates or omits one of
them and checks the code the revision names (-32020 header mismatch, -32022 unknown
revision, -32602 bad params) in bounded time. Listen streams are the era's long-lived
connections: they are bounded per client as sessions are, and one that ends gives its
place back.
"""

from __future__ import annotations

import re
from typing import Any

import orjson
import pytest
import trio

from ._probe import (
    PER_CLIENT,
    Reply,
    Served,
    exchange,
    mcp_headers,
    open_session,
    post,
    request,
)

STATELESS = "2026-07-28"
META: dict[str, Any] = {
    "io.modelcontextprotocol/protocolVersion": STATELESS,
    "io.modelcontextprotocol/clientCapabilities": {},
}


def _call(name: str, arguments: dict[str, Any] | None = None, **params: Any) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments or {}, "_meta": META, **params},
    }


def _headers(message: dict[str, Any], **extra: str) -> dict[str, str]:
    headers = {"MCP-Protocol-Version": STATELESS, "Mcp-Method": str(message.get("method"))}
    params = message.get("params")
    if message.get("method") == "tools/call" and type(params) is dict:
        headers["Mcp-Name"] = str(params.get("name"))
    headers.update(extra)
    return headers


async def _post(served: Served, message: dict[str, Any], **extra: str) -> Reply:
    return await post(served, message, None, **_headers(message, **extra))


def _error(reply: Reply, status: int | tuple[int, ...], code: int) -> str:
    assert reply.status in (status if type(status) is tuple else (status,)), reply.body[:300]
    assert reply.error_code == code, reply.body[:300]
    assert len(reply.body) < 2000, reply.body[:300]
    assert "mcp-session-id" not in reply.headers
    return reply.error_message


async def test_a_stateless_call_is_served_as_the_control(served: Served) -> None:
    reply = await _post(served, _call("clock_now"))
    assert reply.status == 200, reply.body[:300]
    assert reply.json()["result"]["structuredContent"]["timezone"] == "UTC"


async def test_an_unknown_revision_in_the_envelope_is_32022(served: Served) -> None:
    message = _call("clock_now")
    message["params"]["_meta"] = {**META, "io.modelcontextprotocol/protocolVersion": "2099-01-01"}
    reply = await _post(served, message, **{"MCP-Protocol-Version": "2099-01-01"})
    _error(reply, 400, -32022)
    assert STATELESS in reply.json()["error"]["data"]["supported"]


async def test_a_revision_header_unlike_the_envelope_is_32020(served: Served) -> None:
    message = _call("clock_now")
    message["params"]["_meta"] = {**META, "io.modelcontextprotocol/protocolVersion": "2025-11-25"}
    _error(await _post(served, message), 400, -32020)


@pytest.mark.parametrize(
    "meta",
    [
        pytest.param(None, id="missing"),
        pytest.param("2026-07-28", id="a-string"),
        pytest.param([META], id="a-list"),
        pytest.param({"io.modelcontextprotocol/protocolVersion": STATELESS}, id="no-capabilities"),
        pytest.param(
            {**META, "io.modelcontextprotocol/clientCapabilities": "all"}, id="capabilities-string"
        ),
    ],
)
async def test_a_missing_or_malformed_envelope_is_32602(served: Served, meta: Any) -> None:
    message = _call("clock_now")
    if meta is None:
        del message["params"]["_meta"]
    else:
        message["params"]["_meta"] = meta
    _error(await _post(served, message), 400, -32602)


async def test_client_capabilities_nested_a_thousand_deep_are_refused_at_once(
    served: Served,
) -> None:
    deep: Any = {}
    for _ in range(120):
        deep = {"x": deep}
    message = _call("clock_now")
    message["params"]["_meta"] = {**META, "io.modelcontextprotocol/clientCapabilities": deep}
    with trio.fail_after(5):
        reply = await _post(served, message)
    _error(reply, 400, -32602)


async def test_client_capabilities_of_half_a_megabyte_cost_one_request(served: Served) -> None:
    wide = {f"experimental-{n}": {"x": "y" * 40} for n in range(8000)}
    message = _call("clock_now")
    message["params"]["_meta"] = {**META, "io.modelcontextprotocol/clientCapabilities": wide}
    before = served.rss()
    with trio.fail_after(10):
        for _ in range(5):
            reply = await _post(served, message)
            assert reply.status == 200, reply.body[:300]
            assert b"experimental-" not in reply.body
    assert served.rss() - before < 32 << 20


@pytest.mark.parametrize(
    ("state", "words"),
    [
        pytest.param("forged", "requestState refused", id="forged"),
        pytest.param("x" * 300_000, "requestState refused", id="300-kb"),
        pytest.param({"a": 1}, "must be a string", id="an-object"),
        pytest.param(
            "v1." + "A" * 2000 + "." + "B" * 100, "requestState refused", id="looks-sealed"
        ),
    ],
)
async def test_forged_or_huge_request_states_are_32602(
    served: Served, state: Any, words: str
) -> None:
    with trio.fail_after(5):
        reply = await _post(served, _call("clock_now", requestState=state))
    message = _error(reply, 200, -32602)
    assert words in message


async def test_headers_that_differ_from_the_body_are_32020(served: Served) -> None:
    message = _call("clock_now")
    for extra in (
        {"Mcp-Method": "tools/list"},
        {"Mcp-Name": "fs_read"},
        {"Mcp-Name": "clock_now\u00e9"},
    ):
        _error(await _post(served, message, **extra), 400, -32020)
    missing = {"MCP-Protocol-Version": STATELESS}
    _error(await post(served, message, None, **missing), 400, -32020)


async def test_a_batch_at_the_stateless_revision_is_refused(served: Served) -> None:
    message = _call("clock_now")
    reply = await post(served, [message, message], None, **_headers(message))
    _error(reply, 400, -32600)


async def test_a_session_id_on_a_stateless_request_reaches_no_session(served: Served) -> None:
    session = await open_session(served)
    message = _call("clock_now")
    reply = await post(served, message, None, **_headers(message), **{"Mcp-Session-Id": session})
    assert reply.status == 200, reply.body[:300]
    assert "mcp-session-id" not in reply.headers


# --- subscriptions/listen ----------------------------------------------------------------


def _listen(**notifications: Any) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": "listen",
        "method": "subscriptions/listen",
        "params": {"_meta": META, "notifications": notifications},
    }


# A filter is a request's params: its refusal is -32602 (docs/limits.md), answered as the
# request's error; only the envelope's own refusals must be 400 on HTTP.


async def test_a_listen_filter_of_too_many_or_too_long_uris_is_32602(served: Served) -> None:
    for uris in (["memory://graph"] * 10_000, ["memory://" + "x" * 300_000]):
        reply = await _post(served, _listen(resourceSubscriptions=uris))
        _error(reply, (200, 400), -32602)


async def test_a_listen_filter_of_the_wrong_shape_is_32602(served: Served) -> None:
    for filter_ in ({"toolsListChanged": "yes"}, {"resourceSubscriptions": "memory://graph"}):
        _error(await _post(served, _listen(**filter_)), (200, 400), -32602)
    message = _listen()
    del message["params"]["notifications"]
    _error(await _post(served, message), (200, 400), -32602)


async def _open_listen(served: Served, client: str | None) -> trio.SocketStream:
    # A listen stream, read up to its acknowledgement; left open.
    message = _listen(toolsListChanged=True)
    extra = {} if client is None else {"X-Forwarded-For": client}
    data = request(
        "POST", "/mcp", served, orjson.dumps(message),
        headers=mcp_headers(None, **_headers(message), **extra), close=False,
    )  # fmt: skip
    stream = await trio.open_tcp_stream("127.0.0.1", served.port)
    await stream.send_all(data)
    return stream


async def _head_of(stream: trio.SocketStream) -> bytes:
    # The head and, for a 200, up to the acknowledgement; for a refusal, its whole body.
    data = b""

    def whole() -> bool:
        head, found, body = data.partition(b"\r\n\r\n")
        if not found:
            return False
        if head.startswith(b"HTTP/1.1 200"):
            return b"acknowledged" in body
        length = re.search(rb"(?i)content-length: *(\d+)", head)
        return length is None or len(body) >= int(length.group(1))

    with trio.fail_after(10):
        while not whole():
            chunk = await stream.receive_some(65536)
            if not chunk:
                break
            data += chunk
    return data


async def test_one_client_holds_at_most_its_share_of_listen_streams(served: Served) -> None:
    # As many as a client may hold sessions; past that, 503 and its place is not taken.
    client = "198.51.100.41"
    streams = [await _open_listen(served, client) for _ in range(PER_CLIENT)]
    try:
        for stream in streams:
            head = await _head_of(stream)
            assert head.startswith(b"HTTP/1.1 200"), head[:300]
        one_more = await _open_listen(served, client)
        async with one_more:
            head = await _head_of(one_more)
            assert head.startswith(b"HTTP/1.1 503"), head[:300]
            assert b"-32603" in head
        # Another client is not held back by this one.
        other = await _open_listen(served, "198.51.100.42")
        async with other:
            assert (await _head_of(other)).startswith(b"HTTP/1.1 200")
    finally:
        for stream in streams:
            await stream.aclose()
    # Their places come back once they are closed.
    with trio.fail_after(10):
        while True:
            again = await _open_listen(served, client)
            async with again:
                head = await _head_of(again)
            if head.startswith(b"HTTP/1.1 200"):
                break
            await trio.sleep(0.05)


async def test_listen_streams_that_end_give_their_places_back(served: Served) -> None:
    # A hundred opened and dropped by a loopback client: stateless calls still served.
    for _ in range(2):
        streams = [await _open_listen(served, None) for _ in range(50)]
        for stream in streams:
            assert (await _head_of(stream)).startswith(b"HTTP/1.1 200")
        for stream in streams:
            await stream.aclose()
    with trio.fail_after(10):
        reply = await _post(served, _call("clock_now"))
    assert reply.status == 200


async def test_stateless_calls_of_one_client_are_bounded_too(served: Served) -> None:
    # Held in flight: the client's share of places; past it, 503 for that client only.
    client = "198.51.100.43"
    held = _call("clock_countdown", {"seconds": 2})

    async def call() -> Reply:
        return await post(served, held, None, **_headers(held), **{"X-Forwarded-For": client})

    replies: list[Reply] = []
    async with trio.open_nursery() as nursery:

        async def one() -> None:
            replies.append(await call())

        for _ in range(PER_CLIENT + 2):
            nursery.start_soon(one)
        await trio.sleep(0.5)
        other = await post(
            served, _call("clock_now"), None, **_headers(_call("clock_now")),
            **{"X-Forwarded-For": "198.51.100.44"},
        )  # fmt: skip
        assert other.status == 200, other.body[:300]
    statuses = sorted(reply.status for reply in replies)
    assert statuses == [200] * PER_CLIENT + [503] * 2, statuses
    refused = [reply for reply in replies if reply.status == 503]
    assert all(reply.error_code == -32603 for reply in refused)


async def test_a_stateless_notification_is_accepted_and_does_nothing(served: Served) -> None:
    message = {
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": 1, "_meta": META},
    }
    data = request(
        "POST",
        "/mcp",
        served,
        orjson.dumps(message),
        headers=mcp_headers(
            None, **{"MCP-Protocol-Version": STATELESS, "Mcp-Method": "notifications/cancelled"}
        ),
    )
    found = await exchange(served.port, data)
    assert found.only.status == 202
