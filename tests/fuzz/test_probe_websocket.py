"""Attack probe: MCP over WebSocket, frames written by hand.

What RFC 6455 forbids gets the close code it names (1002 protocol error, 1007 bad
UTF-8, 1009 too big) and the connection ends; what it allows but MCP does not (binary
frames) gets a JSON-RPC error and the session goes on; floods of fragments and pings
cost bounded memory, and a client that floods without reading is dropped at the write
timeout. The handshake's own refusals are in tests/transports/test_websocket.py.

hypercorn fails a connection on a frame wsproto cannot parse by closing it without a
close frame (RFC 6455 §7.1.7 says SHOULD send one): there the case accepts the close
alone; the built-in server must send the code.
"""

from __future__ import annotations

import struct

import orjson
import trio

from ._probe import MAX_MESSAGE, WRITE_TIMEOUT, Served, WsClient, frame, text_frame

PING = {"jsonrpc": "2.0", "id": "p", "method": "ping"}


async def _closed_with(client: WsClient, *codes: int) -> None:
    # The server's close frame carries one of ``codes``; then the connection ends.
    found = await client.close_frame()
    assert found is not None, "closed without a close frame"
    assert found.close_code in codes, (found.close_code, found.payload[:100])


async def _failed(served: Served, client: WsClient, code: int) -> None:
    # The connection failed for a frame it could not take: closed with ``code``.
    found = await client.close_frame()
    if found is None and served.kind == "hypercorn":
        return
    assert found is not None, "closed without a close frame"
    assert found.close_code == code, (found.close_code, found.payload[:100])


async def _serves(client: WsClient) -> None:
    await client.send(text_frame(PING))
    assert (await client.message("p"))["result"] == {}


async def test_a_frame_claiming_two_to_the_63_bytes_is_cut_at_the_limit(served: Served) -> None:
    # Its bytes are counted as they arrive: past the limit it is closed, never held.
    async with WsClient.connect(served) as client:
        await client.initialize()
        head = struct.pack("!BBQ", 0x81, 0x80 | 127, (1 << 63) - 1) + b"\x00\x00\x00\x00"
        before = served.rss()
        await client.send(head)
        piece = b" " * 65536
        sent = 0
        while sent <= MAX_MESSAGE + 65536 and await client.send(piece):
            sent += len(piece)
        await _closed_with(client, 1009)
        assert served.rss() - before < 32 << 20


async def test_fragments_past_the_message_limit_are_closed_with_1009(served: Served) -> None:
    async with WsClient.connect(served) as client:
        await client.initialize()
        piece = b" " * 65536
        await client.send(frame(0x1, b"[", fin=False))
        sent = 1
        while sent <= MAX_MESSAGE + 65536:
            if not await client.send(frame(0x0, piece, fin=False)):
                break
            sent += len(piece)
        await _closed_with(client, 1009)


async def test_a_flood_of_tiny_fragments_is_one_message(served: Served) -> None:
    # 50 000 fragments of a few bytes: one message, assembled in linear time.
    async with WsClient.connect(served) as client:
        await client.initialize()
        text = orjson.dumps(PING)
        pieces = [text[:1]] + [b" "] * 50_000 + [text[1:]]
        data = frame(0x1, pieces[0], fin=False)
        data += b"".join(frame(0x0, piece, fin=False) for piece in pieces[1:-1])
        data += frame(0x0, pieces[-1], fin=True)
        with trio.fail_after(10):
            await client.send(data)
            assert (await client.message("p"))["result"] == {}


async def test_a_ping_flood_is_answered_and_costs_bounded_memory(served: Served) -> None:
    async with WsClient.connect(served) as client:
        await client.initialize()
        before = served.rss()
        pongs = 0

        async def flood() -> None:
            await client.send(frame(0x9, b"p" * 125) * 20_000)
            await client.send(text_frame(PING))

        with trio.fail_after(20):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(flood)
                while True:
                    found = await client.next_frame()
                    assert found is not None
                    if found.opcode == 0xA:
                        pongs += 1
                    elif found.opcode == 0x1:
                        assert found.message()["id"] == "p"
                        break
        assert pongs == 20_000
        assert served.rss() - before < 32 << 20


async def test_a_ping_flood_that_never_reads_its_pongs_is_dropped(served: Served) -> None:
    # The pongs back up; the server stops reading, then its write times out and it drops
    # the connection, holding no more than the socket buffers meanwhile.
    async with WsClient.connect(served) as client:
        await client.initialize()
        before = served.rss()
        pings = frame(0x9, b"p" * 125) * 1000
        with trio.fail_after(WRITE_TIMEOUT + 10):
            while await client.send(pings):
                pass
        assert served.rss() - before < 32 << 20


async def test_invalid_utf8_in_a_text_frame_is_closed_with_1007(served: Served) -> None:
    async with WsClient.connect(served) as client:
        await client.initialize()
        await client.send(frame(0x1, b'{"jsonrpc":"2.0","method":"\xff\xfe"}'))
        await _failed(served, client, 1007)


async def test_invalid_close_codes_are_answered_with_1002(served: Served) -> None:
    for payload in (
        struct.pack("!H", 999),
        struct.pack("!H", 1005),
        struct.pack("!H", 5000),
        b"\x03",
    ):
        async with WsClient.connect(served) as client:
            await client.initialize()
            await client.send(frame(0x8, payload))
            await _failed(served, client, 1002)


async def test_a_close_with_a_valid_code_is_echoed(served: Served) -> None:
    async with WsClient.connect(served) as client:
        await client.initialize()
        await client.send(frame(0x8, struct.pack("!H", 1000) + b"bye"))
        await _closed_with(client, 1000)


async def test_a_binary_frame_is_a_parse_error_and_the_session_goes_on(served: Served) -> None:
    async with WsClient.connect(served) as client:
        await client.initialize()
        await client.send(frame(0x2, orjson.dumps(PING)))
        error = await client.message()
        assert error["error"]["code"] == -32700
        assert "binary" in error["error"]["message"]
        await _serves(client)


async def test_an_unmasked_client_frame_is_closed_with_1002(served: Served) -> None:
    async with WsClient.connect(served) as client:
        await client.initialize()
        await client.send(frame(0x1, orjson.dumps(PING), mask=False))
        await _failed(served, client, 1002)


async def test_reserved_bits_and_opcodes_are_closed_with_1002(served: Served) -> None:
    for bad in (
        frame(0x1, orjson.dumps(PING), rsv=0b100),
        frame(0x3, b"x"),
        frame(0xB, b"x"),
    ):
        async with WsClient.connect(served) as client:
            await client.initialize()
            await client.send(bad)
            await _failed(served, client, 1002)


async def test_control_frames_that_are_long_or_fragmented_are_closed_with_1002(
    served: Served,
) -> None:
    for bad in (frame(0x9, b"p" * 126), frame(0x9, b"p", fin=False)):
        async with WsClient.connect(served) as client:
            await client.initialize()
            await client.send(bad)
            await _failed(served, client, 1002)


async def test_continuations_out_of_order_are_closed_with_1002(served: Served) -> None:
    for bad in (
        frame(0x0, b"orphan"),
        frame(0x1, b"[", fin=False) + frame(0x1, b"]"),
    ):
        async with WsClient.connect(served) as client:
            await client.initialize()
            await client.send(bad)
            await _failed(served, client, 1002)


async def test_a_websocket_without_the_mcp_subprotocol_gets_no_session(served: Served) -> None:
    async with WsClient.connect(served, headers={"Sec-WebSocket-Protocol": "chat"}) as client:
        assert client.handshake.status == 403, client.handshake


async def test_a_handshake_of_another_websocket_version_is_refused(served: Served) -> None:
    async with WsClient.connect(served, headers={"Sec-WebSocket-Version": "8"}) as client:
        assert client.handshake.status in (400, 426), client.handshake


async def test_garbage_after_a_websocket_session_began_ends_only_it(served: Served) -> None:
    async with WsClient.connect(served) as client, WsClient.connect(served) as other:
        await client.initialize()
        await other.initialize()
        await client.send(b"\xff" * 64)
        await _failed(served, client, 1002)
        await _serves(other)


async def test_messages_sent_faster_than_read_are_each_answered_once(served: Served) -> None:
    async with WsClient.connect(served) as client:
        await client.initialize()
        await client.send(
            b"".join(
                text_frame({"jsonrpc": "2.0", "id": n, "method": "ping"}) for n in range(2000)
            )
        )
        seen = [(await client.message())["id"] for _ in range(2000)]
        assert sorted(seen) == list(range(2000))
