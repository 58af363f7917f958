"""Attack probe: sessions and the headers that name them, Host and Origin, resumption.

Guessing, fixing and crossing sessions; ``Mcp-Session-Id``, ``MCP-Protocol-Version``
and ``Last-Event-ID`` that are repeated, huge or foreign; DNS rebinding through Host and
Origin on every transport; floods of GET streams; DELETE of what is not one's own; the
legacy HTTP+SSE transport's side door. Each case names the status and JSON-RPC code it
expects, and that the sessions it did not own are untouched.
"""

from __future__ import annotations

import secrets

import orjson
import pytest
import trio

from ._probe import (
    ACCEPT,
    REVISION,
    Served,
    WsClient,
    answer,
    assert_refused,
    exchange,
    initialize_message,
    mcp_headers,
    open_session,
    ping,
    post,
    request,
    sse_messages,
    streamed,
)

PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}


async def _raw_post(served: Served, *lines: bytes, body: bytes | None = None) -> bytes:
    # A POST with the MCP headers and the given raw header lines (repeats allowed).
    data = orjson.dumps(PING) if body is None else body
    fields = [
        b"POST /mcp HTTP/1.1",
        b"Host: " + served.host,
        b"Accept: " + ACCEPT.encode(),
        b"Content-Type: application/json",
        *lines,
        b"Content-Length: %d" % len(data),
        b"Connection: close",
    ]
    return b"\r\n".join(fields) + b"\r\n\r\n" + data


async def _gone(served: Served, session: str) -> None:
    reply = await post(served, PING, session)
    assert reply.status == 404, reply.body[:300]
    assert reply.error_code == -32600


# --- guessing, fixing, crossing ------------------------------------------------------------


async def test_guessed_session_ids_are_404(served: Served) -> None:
    real = await open_session(served)
    guesses = [secrets.token_hex(16), secrets.token_urlsafe(32), real[:-1], real + "0"]
    guesses += [real.upper() if real != real.upper() else real.lower(), "0", "null", "*"]
    for guess in guesses:
        if guess != real:
            await _gone(served, guess)
    await ping(served, real)


async def test_session_ids_that_are_huge_or_not_ascii_are_refused_bounded(served: Served) -> None:
    for session in ("x" * 30_000, "s\u00e9ssion", "a b c", "../../etc/passwd", "%00"):
        data = await _raw_post(
            served,
            b"Mcp-Session-Id: " + session.encode(),
            b"MCP-Protocol-Version: " + REVISION.encode(),
        )
        reply = assert_refused(await exchange(served.port, data), 404, 400)
        assert len(reply.body) < 1000


async def test_initialize_with_a_chosen_session_id_opens_no_session(served: Served) -> None:
    # Session fixation: the server never takes a session id from the client.
    chosen = "chosen-by-the-attacker-" + secrets.token_hex(8)
    reply = await post(served, initialize_message(), None, **{"Mcp-Session-Id": chosen})
    assert reply.status == 404, reply.body[:300]
    assert "mcp-session-id" not in reply.headers
    await _gone(served, chosen)


async def test_initialize_again_in_a_live_session_changes_nothing(served: Served) -> None:
    session = await open_session(served)
    again = initialize_message("2025-03-26")
    reply = await post(served, again, session)
    assert answer(reply, "init")["error"]["code"] == -32600
    assert "mcp-session-id" not in reply.headers
    # Still the revision it negotiated: batches stay refused.
    batch = await post(served, [PING, {**PING, "id": 2}], session)
    assert batch.status == 400
    await ping(served, session)


async def test_a_revision_header_unlike_the_sessions_changes_no_rule(served: Served) -> None:
    session = await open_session(served)
    older = {"MCP-Protocol-Version": "2025-03-26"}
    reply = await post(served, [PING, {**PING, "id": 2}], session, **older)
    assert reply.status == 400
    assert "batch" in reply.error_message


async def test_a_repeated_session_header_names_no_session(served: Served) -> None:
    first = await open_session(served)
    second = await open_session(served)
    for lines in (
        (b"Mcp-Session-Id: " + first.encode(), b"Mcp-Session-Id: " + second.encode()),
        (b"Mcp-Session-Id: " + first.encode(), b"Mcp-Session-Id: " + first.encode()),
        (b"Mcp-Session-Id: " + first.encode() + b", " + second.encode(),),
    ):
        data = await _raw_post(served, *lines, b"MCP-Protocol-Version: " + REVISION.encode())
        assert_refused(await exchange(served.port, data), 400, 404, closed=False)
        delete = data.replace(b"POST /mcp", b"DELETE /mcp", 1)
        assert_refused(await exchange(served.port, delete), 400, 404, closed=False)
    await ping(served, first)
    await ping(served, second)


# --- DELETE --------------------------------------------------------------------------------


async def test_delete_of_an_unknown_session_is_404(served: Served) -> None:
    data = request("DELETE", "/mcp", served, headers=mcp_headers(secrets.token_hex(16)))
    assert_refused(await exchange(served.port, data), 404, closed=False)
    missing = request("DELETE", "/mcp", served, headers={"MCP-Protocol-Version": REVISION})
    assert_refused(await exchange(served.port, missing), 400, closed=False)


async def test_a_deleted_session_stays_gone_and_its_neighbours_stay(served: Served) -> None:
    session = await open_session(served)
    neighbour = await open_session(served)
    delete = request("DELETE", "/mcp", served, headers=mcp_headers(session))
    assert (await exchange(served.port, delete)).only.status == 204
    assert_refused(await exchange(served.port, delete), 404, closed=False)
    await _gone(served, session)
    await ping(served, neighbour)


async def test_delete_ends_the_sessions_open_get_stream(served: Served) -> None:
    session = await open_session(served)
    get = request(
        "GET", "/mcp", served, headers={**mcp_headers(session), "Accept": "text/event-stream"}
    )
    async with await trio.open_tcp_stream("127.0.0.1", served.port) as stream:
        await stream.send_all(get)
        head = b""
        with trio.fail_after(5):
            while b"\r\n\r\n" not in head:
                head += await stream.receive_some(65536)
        assert head.startswith(b"HTTP/1.1 200"), head
        delete = request("DELETE", "/mcp", served, headers=mcp_headers(session))
        assert (await exchange(served.port, delete)).only.status == 204
        with trio.fail_after(5):
            while await stream.receive_some(65536):
                pass


# --- MCP-Protocol-Version -------------------------------------------------------------------


@pytest.mark.parametrize(
    "version",
    ["2099-01-01", "2025-11-25x", "x" * 30_000, "1", "2025-11-25, 2025-03-26"],
)
async def test_an_unknown_revision_header_is_400_and_bounded(served: Served, version: str) -> None:
    session = await open_session(served)
    reply = await post(served, PING, session, **{"MCP-Protocol-Version": version})
    assert reply.status == 400, reply.body[:300]
    assert reply.error_code == -32600
    assert "unsupported MCP-Protocol-Version" in reply.error_message
    assert len(reply.body) < 1000


async def test_the_stateless_revision_header_on_a_session_request_wants_its_envelope(
    served: Served,
) -> None:
    session = await open_session(served)
    reply = await post(served, PING, session, **{"MCP-Protocol-Version": "2026-07-28"})
    assert reply.status == 400, reply.body[:300]
    assert reply.error_code == -32602
    await ping(served, session)


# --- Host and Origin (DNS rebinding) ------------------------------------------------------


@pytest.mark.parametrize(
    "host",
    [
        "evil.example",
        "localhost.evil.example",
        "127.0.0.1.nip.io",
        "evil.example:80",
        "0x7f000001",
    ],
)
async def test_foreign_hosts_are_421_on_every_method(served: Served, host: str) -> None:
    session = await open_session(served)
    for method, body in (
        ("POST", orjson.dumps(initialize_message())),
        ("GET", None),
        ("DELETE", None),
    ):
        data = request(method, "/mcp", served, body, headers=mcp_headers(session), host=False)
        data = data.replace(b"HTTP/1.1\r\n", b"HTTP/1.1\r\nHost: " + host.encode() + b"\r\n", 1)
        reply = assert_refused(await exchange(served.port, data), 421, closed=False)
        assert "mcp-session-id" not in reply.headers
    await ping(served, session)


@pytest.mark.parametrize(
    "origin",
    [
        "http://evil.example",
        "null",
        "http://localhost.evil.example",
        "file://",
        "https://127.0.0.1.evil.example",
    ],
)
async def test_foreign_origins_are_403_and_open_no_session(served: Served, origin: str) -> None:
    reply = await post(served, initialize_message(), None, Origin=origin)
    assert reply.status == 403, reply.body[:300]
    assert reply.error_code == -32600
    assert "mcp-session-id" not in reply.headers


async def test_a_loopback_origin_on_another_port_is_a_loopback_origin(served: Served) -> None:
    reply = await post(served, initialize_message(), None, Origin="http://localhost:1")
    assert reply.status == 200
    assert "mcp-session-id" in reply.headers


async def test_a_foreign_origin_cannot_open_a_websocket(served: Served) -> None:
    async with WsClient.connect(served, headers={"Origin": "http://evil.example"}) as client:
        assert client.handshake.status == 403, client.handshake
        assert await client.next_frame(5) is None


async def test_a_foreign_host_cannot_open_a_websocket(served: Served) -> None:
    async with WsClient.connect(served, headers={"Host": "evil.example"}) as client:
        # Host is sent twice here (the client's own and this one): refused either way.
        assert client.handshake.status in (400, 403, 421), client.handshake


async def test_a_foreign_origin_cannot_open_a_legacy_sse_session(served: Served) -> None:
    data = request(
        "GET",
        "/sse",
        served,
        headers={"Accept": "text/event-stream", "Origin": "http://evil.example"},
    )
    assert_refused(await exchange(served.port, data), 403, closed=False)


# --- Last-Event-ID and resumption -------------------------------------------------------


async def _events_of_a_stream(served: Served, session: str) -> bytes:
    # A call answered as an SSE stream (progress first): its raw events.
    message = {
        "jsonrpc": "2.0",
        "id": "countdown",
        "method": "tools/call",
        "params": {
            "name": "clock_countdown",
            "arguments": {"seconds": 1},
            "_meta": {"progressToken": "secret-progress"},
        },
    }
    async with streamed(served, message, session, until=b"secret-progress") as answer_stream:
        reply = await answer_stream.finish()
    assert reply.headers["content-type"].startswith("text/event-stream")
    return reply.body


def _event_ids(body: bytes) -> list[str]:
    return [line[3:].strip() for line in body.decode().split("\n") if line.startswith("id:")]


async def _resume(served: Served, session: str, last_event_id: bytes) -> bytes:
    data = request(
        "GET",
        "/mcp",
        served,
        headers={**mcp_headers(session), "Accept": "text/event-stream"},
    ).replace(b"Connection: close", b"Last-Event-ID: " + last_event_id + b"\r\nConnection: close")
    return data


async def test_resuming_another_sessions_stream_gets_nothing_of_it(served: Served) -> None:
    owner = await open_session(served)
    thief = await open_session(served)
    ids = _event_ids(await _events_of_a_stream(served, owner))
    assert ids
    for event_id in ids:
        found = await exchange(
            served.port, await _resume(served, thief, event_id.encode()), linger=0.3
        )
        reply = found.only
        assert b"secret-progress" not in reply.body
        assert b"countdown" not in reply.body
        if reply.status != 200:
            assert reply.status == 400
            assert reply.error_code == -32600


@pytest.mark.parametrize(
    "last_event_id",
    [
        b"-1",
        b"0",
        b"abc",
        b"1.-1",
        b"99999999999999999999999.1",
        b"x" * 30_000,
        b"1.1.1.1",
        b"\xc3\xa9",
    ],
)
async def test_made_up_last_event_ids_are_400_and_bounded(
    served: Served, last_event_id: bytes
) -> None:
    session = await open_session(served)
    reply = assert_refused(
        await exchange(served.port, await _resume(served, session, last_event_id)),
        400,
        closed=False,
    )
    assert "Last-Event-ID" in reply.error_message
    assert len(reply.body) < 1000
    await ping(served, session)


async def test_a_get_without_event_stream_in_accept_is_406(served: Served) -> None:
    session = await open_session(served)
    data = request(
        "GET", "/mcp", served, headers={**mcp_headers(session), "Accept": "application/json"}
    )
    assert_refused(await exchange(served.port, data), 406, closed=False)


async def test_a_flood_of_get_streams_on_one_session_gets_one_stream(served: Served) -> None:
    session = await open_session(served)
    get = request(
        "GET", "/mcp", served, headers={**mcp_headers(session), "Accept": "text/event-stream"}
    )
    statuses: list[int] = []
    async with trio.open_nursery() as nursery:
        streams = [await trio.open_tcp_stream("127.0.0.1", served.port) for _ in range(40)]
        try:
            for stream in streams:
                await stream.send_all(get)

            async def head(stream: trio.SocketStream) -> None:
                data = b""
                with trio.fail_after(10):
                    while b"\r\n\r\n" not in data:
                        chunk = await stream.receive_some(65536)
                        assert chunk
                        data += chunk
                statuses.append(int(data.split(b" ", 2)[1]))

            for stream in streams:
                nursery.start_soon(head, stream)
        finally:
            pass
    for stream in streams:
        await stream.aclose()
    assert sorted(statuses) == [200] + [409] * 39


async def test_get_streams_on_many_sessions_hold_bounded_memory(served: Served) -> None:
    sessions = [await open_session(served) for _ in range(50)]
    before = served.rss()
    streams = []
    try:
        for session in sessions:
            stream = await trio.open_tcp_stream("127.0.0.1", served.port)
            streams.append(stream)
            await stream.send_all(
                request(
                    "GET",
                    "/mcp",
                    served,
                    headers={**mcp_headers(session), "Accept": "text/event-stream"},
                )
            )
        for stream in streams:
            data = b""
            with trio.fail_after(10):
                while b"\r\n\r\n" not in data:
                    data += await stream.receive_some(65536)
            assert data.startswith(b"HTTP/1.1 200")
        assert served.rss() - before < 32 << 20
    finally:
        for stream in streams:
            await stream.aclose()


# --- the legacy HTTP+SSE transport --------------------------------------------------------


async def test_a_legacy_post_without_a_session_is_400(served: Served) -> None:
    data = request(
        "POST",
        "/messages",
        served,
        orjson.dumps(PING),
        headers={"Content-Type": "application/json"},
    )
    reply = assert_refused(await exchange(served.port, data), 400, closed=False)
    assert "session_id" in reply.error_message


async def test_a_legacy_post_to_another_kind_of_session_is_404(served: Served) -> None:
    streamable = await open_session(served)
    for session in (streamable, secrets.token_hex(16), "x" * 20_000):
        data = request(
            "POST", f"/messages?session_id={session}", served, orjson.dumps(PING),
            headers={"Content-Type": "application/json"},
        )  # fmt: skip
        assert_refused(await exchange(served.port, data), 404, closed=False)
    await ping(served, streamable)


async def test_a_legacy_session_takes_posts_and_refuses_an_oversize_one(served: Served) -> None:
    async with await trio.open_tcp_stream("127.0.0.1", served.port) as stream:
        await stream.send_all(
            request("GET", "/sse", served, headers={"Accept": "text/event-stream"}, close=False)
        )
        data = b""
        with trio.fail_after(5):
            while b"session_id=" not in data or b"\n\n" not in data.split(b"session_id=", 1)[1]:
                data += await stream.receive_some(65536)
        session = data.split(b"session_id=", 1)[1].split(b"\n", 1)[0].decode().strip()
        post_path = f"/messages?session_id={session}"
        big = (
            b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"' + b"a" * (1 << 20) + b'"}}'
        )
        found = await exchange(
            served.port,
            request("POST", post_path, served, big, headers={"Content-Type": "application/json"}),
        )
        assert_refused(found, 413)
        accepted = await exchange(
            served.port,
            request(
                "POST",
                post_path,
                served,
                b"{not json",
                headers={"Content-Type": "application/json"},
            ),
        )
        reply = assert_refused(accepted, 400, closed=False, code=-32700)
        assert reply.error_code == -32700


async def test_the_legacy_stream_path_takes_only_get(served: Served) -> None:
    data = request(
        "POST", "/sse", served, orjson.dumps(PING), headers={"Content-Type": "application/json"}
    )
    found = await exchange(served.port, data)
    assert found.only.status == 405


# --- subscriptions held by a session -------------------------------------------------------


async def test_a_session_holds_a_bounded_number_and_size_of_subscriptions(
    served: Served,
) -> None:
    # URIs a template serves (a subscription to a URI nobody serves is -32002).
    session = await open_session(served, "2025-03-26")

    def subscribe(request_id: int, uri: str) -> dict[str, object]:
        return {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": "resources/subscribe",
            "params": {"uri": uri},
        }

    older = {"MCP-Protocol-Version": "2025-03-26"}
    refused = []
    for start in (0, 1000):  # two batches: each under the in-flight limit
        batch = [subscribe(n, f"file://{served.root}/{n}") for n in range(start, start + 550)]
        reply = await post(served, batch, session, **older)
        refused += [m["error"]["code"] for m in sse_messages(reply)[0] if "error" in m]
    assert len(refused) == 1100 - 1024
    assert set(refused) == {-32602}
    big = answer(
        await post(served, subscribe(9, f"file://{served.root}/" + "x" * 300_000), session), 9
    )
    assert big["error"]["code"] == -32602
    await ping(served, session, "2025-03-26")
