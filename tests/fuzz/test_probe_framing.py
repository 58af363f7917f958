"""Attack probe: request smuggling, framing and header abuse on a served process.

Each case sends what a smuggler or a flood would, on both HTTP servers, and checks the
precise outcome: one refusal of the right status (its body, when it has one, a JSON-RPC
error), nothing answered after it, the connection closed — or, where HTTP allows the
request, one answer and no second request read from its body. After every case the
process runs and a bystander's session still answers (the ``served`` fixture).
"""

from __future__ import annotations

import orjson
import trio

from ._probe import (
    MAX_MESSAGE,
    REVISION,
    Served,
    answer,
    assert_refused,
    exchange,
    mcp_headers,
    open_session,
    read_exchange,
    request,
    send_quietly,
)

PING = orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"})


def _head(
    served: Served, *lines: bytes, target: bytes = b"/mcp", method: bytes = b"POST"
) -> bytes:
    # A request head with the MCP headers, the Host and the given lines.
    fields = [
        method + b" " + target + b" HTTP/1.1",
        b"Host: " + served.host,
        b"Accept: application/json, text/event-stream",
        b"Content-Type: application/json",
        *lines,
    ]
    return b"\r\n".join(fields) + b"\r\n\r\n"


def _health(served: Served) -> bytes:
    return b"GET /healthz HTTP/1.1\r\nHost: " + served.host + b"\r\n\r\n"


# --- Content-Length and Transfer-Encoding --------------------------------------------------


async def test_content_length_with_transfer_encoding_is_refused_and_closed(
    served: Served,
) -> None:
    data = _head(served, b"Content-Length: 5", b"Transfer-Encoding: chunked") + b"0\r\n\r\n"
    assert_refused(await exchange(served.port, data), 400)


async def test_a_request_smuggled_behind_content_length_and_chunked_is_never_served(
    served: Served,
) -> None:
    # The front end reads 60 bytes of body, the back end a chunked empty body and then
    # the smuggled request: refused before either reading, and nothing else answered.
    smuggled = _health(served)
    body = b"0\r\n\r\n" + smuggled
    data = _head(served, b"Content-Length: %d" % len(body), b"Transfer-Encoding: chunked") + body
    assert_refused(await exchange(served.port, data, responses=2), 400)


async def test_two_different_content_lengths_are_refused(served: Served) -> None:
    data = _head(served, b"Content-Length: 2", b"Content-Length: 20") + b"{}"
    assert_refused(await exchange(served.port, data), 400)


async def test_a_content_length_list_of_two_values_is_refused(served: Served) -> None:
    data = _head(served, b"Content-Length: 2, 3") + b"{}"
    assert_refused(await exchange(served.port, data), 400)


async def test_negative_signed_and_overlong_content_lengths_are_refused(served: Served) -> None:
    for value in (b"-1", b"+2", b"0x2", b"2 2", b"99999999999999999999999"):
        data = _head(served, b"Content-Length: " + value) + b"{}"
        assert_refused(await exchange(served.port, data), 400, 413)


async def test_transfer_codings_other_than_chunked_are_refused(served: Served) -> None:
    for coding in (b"gzip, chunked", b"identity", b"xchunked", b"chunked, identity"):
        data = _head(served, b"Transfer-Encoding: " + coding) + b"0\r\n\r\n"
        assert_refused(await exchange(served.port, data), 400, 501)


async def test_transfer_encoding_sent_twice_is_refused(served: Served) -> None:
    data = _head(served, b"Transfer-Encoding: chunked", b"Transfer-Encoding: chunked")
    assert_refused(await exchange(served.port, data + b"0\r\n\r\n"), 400, 501)


async def test_transfer_encoding_with_space_before_the_colon_is_refused(served: Served) -> None:
    data = _head(served, b"Transfer-Encoding : chunked", b"Content-Length: 2") + b"{}"
    assert_refused(await exchange(served.port, data), 400)


async def test_transfer_encoding_in_http10_is_refused(served: Served) -> None:
    data = _head(served, b"Transfer-Encoding: chunked").replace(b"HTTP/1.1", b"HTTP/1.0", 1)
    assert_refused(await exchange(served.port, data + b"0\r\n\r\n"), 400)


# --- chunked bodies ------------------------------------------------------------------------


async def test_invalid_chunk_sizes_are_refused(served: Served) -> None:
    for size in (b"zz", b"-2", b"0x2", b" 2", b"2 2"):
        data = _head(served, b"Transfer-Encoding: chunked") + size + b"\r\n{}\r\n0\r\n\r\n"
        assert_refused(await exchange(served.port, data), 400)


async def test_a_chunk_bigger_than_the_body_limit_is_refused_as_it_arrives(
    served: Served,
) -> None:
    # Declared 2 GiB: refused once the body passes the limit, not held for the rest.
    data = (
        _head(served, b"Transfer-Encoding: chunked")
        + b"7fffffff\r\n"
        + b" " * (MAX_MESSAGE + 4096)
    )
    found = await exchange(served.port, data)
    assert_refused(found, 413, 400)


async def test_a_flood_of_chunk_extensions_is_refused(served: Served) -> None:
    flood = b"2" + b";ext=value" * 200_000 + b"\r\n{}\r\n0\r\n\r\n"
    data = _head(served, b"Transfer-Encoding: chunked") + flood
    assert_refused(await exchange(served.port, data), 400, 431)


async def test_a_flood_of_trailer_fields_is_refused(served: Served) -> None:
    # Past the head limit (64 KiB), as a head would be.
    trailers = b"".join(b"X-T%d: v\r\n" % n for n in range(30_000))
    data = _head(served, b"Transfer-Encoding: chunked") + b"2\r\n{}\r\n0\r\n" + trailers + b"\r\n"
    assert_refused(await exchange(served.port, data), 400, 431)


async def test_a_session_id_sent_as_a_trailer_does_not_reach_a_session(served: Served) -> None:
    # Trailers are read and dropped: the request has no session id, whatever the
    # trailer says, and is refused as such.
    session = await open_session(served)
    body = b"%x\r\n%s\r\n0\r\nMcp-Session-Id: %s\r\nMCP-Protocol-Version: %s\r\n\r\n" % (
        len(PING),
        PING,
        session.encode(),
        REVISION.encode(),
    )
    data = _head(served, b"Transfer-Encoding: chunked", b"Connection: close") + body
    reply = assert_refused(await exchange(served.port, data), 400, closed=False)
    assert "Mcp-Session-Id header required" in reply.error_message


async def test_a_chunked_body_with_its_request_pipelined_after_is_answered_in_order(
    served: Served,
) -> None:
    # The control case: chunked framing read right, the next request served next.
    session = await open_session(served)
    first = _head(
        served,
        b"Transfer-Encoding: chunked",
        b"Mcp-Session-Id: " + session.encode(),
        b"MCP-Protocol-Version: " + REVISION.encode(),
    )
    first += b"%x\r\n%s\r\n0\r\n\r\n" % (len(PING), PING)
    second = b"GET /healthz HTTP/1.1\r\nHost: " + served.host + b"\r\nConnection: close\r\n\r\n"
    found = await exchange(served.port, first + second, responses=2)
    assert [reply.status for reply in found.replies] == [200, 200], found
    assert answer(found.replies[0], 1)["result"] == {}
    assert found.replies[1].json() == {"status": "ok"}
    assert found.closed
    assert not found.rest


# --- line endings, folding, request lines --------------------------------------------------


async def test_an_obs_folded_header_is_refused_or_unfolded_never_a_field_of_its_own(
    served: Served,
) -> None:
    # RFC 9112 §5.2: refuse, or replace the fold with spaces. Read as a field of its own,
    # the folded line would name a session.
    session = await open_session(served)
    data = _head(
        served,
        b"X-Note: a",
        b" Mcp-Session-Id: " + session.encode(),
        b"Content-Length: %d" % len(PING),
        b"Connection: close",
    )
    reply = assert_refused(await exchange(served.port, data + PING), 400, closed=False)
    if reply.error_code == -32600 and "Mcp-Session-Id" in reply.error_message:
        return  # unfolded into X-Note's value: the request has no session id
    assert reply.status == 400


async def test_bare_line_feeds_end_lines_or_the_request_is_refused(served: Served) -> None:
    # RFC 9112 §2.2 lets a recipient take a bare LF as a line end; either way, one
    # answer and no second request read out of the first.
    data = b"GET /healthz HTTP/1.1\nHost: " + served.host + b"\nConnection: close\n\n"
    found = await exchange(served.port, data)
    reply = found.only
    assert reply.status in (200, 400), reply
    assert found.closed


async def test_a_bare_carriage_return_in_a_field_is_refused(served: Served) -> None:
    data = b"GET /healthz HTTP/1.1\r\nHost: " + served.host + b"\r\nX: a\rb\r\n\r\n"
    assert_refused(await exchange(served.port, data), 400)


async def test_control_characters_in_field_values_are_refused(served: Served) -> None:
    for value in (b"a\x00b", b"a\x1b[31mb", b"a\x7fb", b"a\x08b"):
        data = (
            b"GET /healthz HTTP/1.1\r\nHost: "
            + served.host
            + b"\r\nX-Note: "
            + value
            + b"\r\n\r\n"
        )
        assert_refused(await exchange(served.port, data), 400)


async def test_field_names_that_are_not_tokens_are_refused(served: Served) -> None:
    for name in (b"X Note", b"X\x01Note", b"(X)", b"X:Note\x00"):
        data = b"GET /healthz HTTP/1.1\r\nHost: " + served.host + b"\r\n" + name + b": v\r\n\r\n"
        assert_refused(await exchange(served.port, data), 400)


async def test_a_missing_or_repeated_host_is_refused(served: Served) -> None:
    missing = b"GET /healthz HTTP/1.1\r\nX: y\r\n\r\n"
    assert_refused(await exchange(served.port, missing), 400)
    twice = b"GET /mcp HTTP/1.1\r\nHost: " + served.host + b"\r\nHost: evil.example\r\n\r\n"
    assert_refused(await exchange(served.port, twice), 400)


async def test_malformed_hosts_are_refused(served: Served) -> None:
    for host in (b"a b", b"user@127.0.0.1", b"127.0.0.1:99999", b"[::1", b"127.0.0.1:x"):
        data = request("POST", "/mcp", served, PING, headers=mcp_headers(), host=False)
        data = data.replace(
            b"POST /mcp HTTP/1.1\r\n", b"POST /mcp HTTP/1.1\r\nHost: " + host + b"\r\n"
        )
        assert_refused(await exchange(served.port, data), 400)


async def test_an_absolute_form_target_is_held_to_the_host_guard(served: Served) -> None:
    # The authority of an absolute-form target replaces the Host (RFC 9112 §3.2.2): a
    # foreign one is refused as a foreign Host would be.
    data = request("POST", "http://evil.example/mcp", served, PING, headers=mcp_headers())
    reply = assert_refused(await exchange(served.port, data), 421, 400, closed=False)
    assert reply.error_code == -32600


async def test_http_versions_other_than_1x_are_refused(served: Served) -> None:
    for version in (b"HTTP/1.2", b"HTTP/3.0", b"HTTP/0.9", b"HTTP/1.1.1", b"http/1.1"):
        data = b"GET /healthz " + version + b"\r\nHost: " + served.host + b"\r\n\r\n"
        found = await exchange(served.port, data)
        if found.replies:
            assert_refused(found, 400, 505)
        else:
            # Not HTTP/1 at all: closed without an answer a client could misread.
            assert found.closed
            assert not found.rest.startswith(b"HTTP/1.1 2")


# --- sizes -------------------------------------------------------------------------------


async def test_a_header_field_over_the_head_limit_is_431(served: Served) -> None:
    data = _head(served, b"X-Big: " + b"a" * 100_000, b"Content-Length: 2") + b"{}"
    assert_refused(await exchange(served.port, data), 431)


async def test_more_header_fields_than_allowed_is_431(served: Served) -> None:
    fields = [b"X-F%d: v" % n for n in range(150)]
    data = _head(served, *fields, b"Content-Length: 2") + b"{}"
    assert_refused(await exchange(served.port, data), 431)


async def test_a_request_target_over_the_head_limit_is_refused(served: Served) -> None:
    data = b"GET /" + b"a" * 100_000 + b" HTTP/1.1\r\nHost: " + served.host + b"\r\n\r\n"
    assert_refused(await exchange(served.port, data), 414, 431, 400)


async def test_a_body_over_the_limit_is_413_before_it_is_read(served: Served) -> None:
    size = MAX_MESSAGE + 1
    head = _head(served, b"Content-Length: %d" % size)
    async with await trio.open_tcp_stream("127.0.0.1", served.port) as stream:
        # Only the head is sent: the refusal may not wait for a body it will not read.
        await stream.send_all(head)
        found = await read_exchange(stream)
    reply = assert_refused(found, 413)
    assert str(MAX_MESSAGE) in reply.error_message


async def test_a_chunked_body_over_the_limit_is_413(served: Served) -> None:
    chunk = b" " * 65536
    body = b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for _ in range(MAX_MESSAGE // 65536 + 2))
    data = _head(served, b"Transfer-Encoding: chunked") + body + b"0\r\n\r\n"
    assert_refused(await exchange(served.port, data), 413)


# --- pipelining and closing ----------------------------------------------------------------


async def test_a_request_asking_to_close_is_answered_and_what_follows_is_not_read(
    served: Served,
) -> None:
    # RFC 9112 §9.6: no further request is processed after "close"; the one that asked
    # gets its own answer, not an error about the bytes behind it.
    session = await open_session(served)
    first = request("POST", "/mcp", served, PING, headers=mcp_headers(session))
    found = await exchange(served.port, first + _health(served) * 3, responses=2)
    reply = found.only
    assert answer(reply, 1)["result"] == {}
    assert found.closed


async def test_a_refused_request_with_requests_pipelined_behind_it_gets_its_refusal(
    served: Served,
) -> None:
    refused = _head(served, b"Content-Length: 2", b"Transfer-Encoding: chunked") + b"0\r\n\r\n"
    found = await exchange(served.port, refused + _health(served) * 3, responses=2)
    assert_refused(found, 400)


async def test_pipelined_requests_are_answered_each_once_in_order(served: Served) -> None:
    session = await open_session(served)
    pings = b"".join(
        request(
            "POST",
            "/mcp",
            served,
            orjson.dumps({"jsonrpc": "2.0", "id": n, "method": "ping"}),
            headers=mcp_headers(session),
            close=n == 9,
        )
        for n in range(10)
    )
    found = await exchange(served.port, pings, responses=10)
    assert [answer(reply, n)["result"] for n, reply in enumerate(found.replies)] == [{}] * 10
    assert found.closed
    assert not found.rest


async def test_bytes_after_a_websocket_refusal_are_not_read_as_a_request(served: Served) -> None:
    # An upgrade refused (no mcp subprotocol) is one answer; the request hidden behind
    # it is never served.
    head = request(
        "GET",
        "/ws",
        served,
        headers={
            "Upgrade": "websocket",
            "Connection": "Upgrade",
            "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
            "Sec-WebSocket-Version": "13",
        },
        close=False,
    )
    async with await trio.open_tcp_stream("127.0.0.1", served.port) as stream:
        await send_quietly(stream, head + _health(served))
        found = await read_exchange(stream, responses=2)
    statuses = [reply.status for reply in found.replies]
    # A refusal (403), or an accept that the server then closes (101): never the health
    # answer of the smuggled request.
    assert statuses in ([403], [101], [400]), (statuses, found.rest[:200])
    assert b'{"status":"ok"}' not in found.rest
