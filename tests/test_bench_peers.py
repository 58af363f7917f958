"""The framework-free benchmark peers answer to the harness contract."""

from __future__ import annotations

import orjson
import pytest
import trio
import trio.testing

from .bench_scripts import load_harness, load_peer

contract = load_peer("contract")
canned = load_peer("canned")
raw_stdio = load_peer("raw_stdio")

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}


def call(rid: object, name: str, **arguments: object) -> bytes:
    params = {"name": name, "arguments": arguments}
    return orjson.dumps({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params})


def test_the_command_line_of_the_contract() -> None:
    assert contract.parse_argv(["s", "stdio"])["transport"] == "stdio"
    opts = contract.parse_argv(["s", "http", "0.0.0.0", "9000", "--json", "--stateless"])
    assert (opts["host"], opts["port"], opts["json"], opts["stateless"], opts["sse"]) == (
        "0.0.0.0",
        9000,
        True,
        True,
        False,
    )
    for bad in (["s"], ["s", "tcp"], ["s", "http", "h", "1", "--jsno"]):
        with pytest.raises(SystemExit):
            contract.parse_argv(bad)


def test_the_raw_stdio_loop_answers_requests_and_not_notifications() -> None:
    init = orjson.loads(raw_stdio.answer(INITIALIZE))
    assert init["result"]["protocolVersion"] == "2025-11-25"
    assert raw_stdio.answer({"jsonrpc": "2.0", "method": "notifications/initialized"}) is None
    echo = orjson.loads(raw_stdio.answer(orjson.loads(call("a", "echo", text="hé"))))
    assert echo == {"jsonrpc": "2.0", "id": "a", "result": contract.text_result("hé")}
    added = orjson.loads(raw_stdio.answer(orjson.loads(call(2, "add", a=2, b=3))))
    assert added["result"]["content"][0]["text"] == "5"
    unknown = orjson.loads(raw_stdio.answer(orjson.loads(call(3, "nope"))))
    assert unknown["result"]["isError"] is True
    assert raw_stdio.answer(orjson.loads(call(4, "echo_sync", text="x"))).endswith(b"\n")


async def open_session(mcp: object) -> bytes:
    status, body, session = await mcp.handle(b"POST", None, orjson.dumps(INITIALIZE))
    assert status == 200
    assert orjson.loads(body)["result"]["serverInfo"]["name"] == "raw-test"
    assert session is not None
    return session


async def test_the_canned_server_checks_its_sessions() -> None:
    mcp = canned.CannedMcp("raw-test", stateless=False)
    session = await open_session(mcp)
    status, body, _ = await mcp.handle(b"POST", session, call(1, "echo", text="t"))
    assert (status, orjson.loads(body)["result"]) == (200, contract.text_result("t"))
    status, body, _ = await mcp.handle(b"POST", b"forged", call(2, "echo", text="t"))
    assert status == 404
    assert orjson.loads(body)["error"]["code"] == -32600
    assert (await mcp.handle(b"DELETE", session, b""))[0] == 200
    assert (await mcp.handle(b"POST", session, call(3, "echo", text="t")))[0] == 404
    assert (await mcp.handle(b"GET", None, b""))[0] == 405


async def test_the_stateless_canned_server_hands_out_no_session() -> None:
    mcp = canned.CannedMcp("raw-test", stateless=True)
    status, _, session = await mcp.handle(b"POST", None, orjson.dumps(INITIALIZE))
    assert (status, session) == (200, None)
    assert (await mcp.handle(b"POST", None, call(1, "echo", text="t")))[0] == 200


async def test_a_canned_sleep_is_cancelled_by_its_own_sessions_notification(
    autojump_clock: trio.testing.MockClock,
) -> None:
    mcp = canned.CannedMcp("raw-test", stateless=False)
    session, other = await open_session(mcp), await open_session(mcp)
    replies: dict[str, tuple[int, bytes, bytes | None]] = {}

    async def sleep(name: str, session: bytes) -> None:
        replies[name] = await mcp.handle(b"POST", session, call("s", "sleep", seconds=10))

    def cancel(rid: object) -> bytes:
        params = {"requestId": rid}
        return orjson.dumps(
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params}
        )

    async with trio.open_nursery() as nursery:
        nursery.start_soon(sleep, "mine", session)
        nursery.start_soon(sleep, "theirs", other)
        await trio.testing.wait_all_tasks_blocked()
        assert len(mcp.sleeping) == 2
        assert (await mcp.handle(b"POST", session, cancel("other-id")))[0] == 202
        assert (await mcp.handle(b"POST", session, cancel("s")))[0] == 202
        await trio.testing.wait_all_tasks_blocked()
        assert replies["mine"] == (202, b"", None)
        assert "theirs" not in replies
        before = trio.current_time()
    assert trio.current_time() - before == pytest.approx(10)
    assert orjson.loads(replies["theirs"][1])["result"] == contract.text_result("slept")
    assert mcp.sleeping == {}


def test_an_sse_reply_is_one_event() -> None:
    assert canned.framed(b"{}", sse=True) == b"event: message\ndata: {}\n\n"
    assert canned.framed(b"{}", sse=False) == b"{}"


def test_the_raw_http_server_reads_the_head_and_answers_what_the_driver_parses() -> None:
    raw_http = load_peer("raw_http")
    wire = load_harness("wire")
    head = b"POST /mcp HTTP/1.1\r\nHost: h\r\ncontent-length: 12\r\nMcp-Session-Id:  ab \r\nX: y"
    assert raw_http.request_head(head) == (b"POST", 12, b"ab")
    assert raw_http.request_head(b"GET /mcp HTTP/1.1") == (b"GET", 0, None)
    body = b'{"jsonrpc":"2.0","id":1,"result":{}}'
    for sse in (False, True):
        data = raw_http.response(200, body, b"sid", sse)
        (status, headers, got), used = wire.parse_response(data)
        assert (status, used, headers[b"mcp-session-id"]) == (200, len(data), b"sid")
        assert wire.messages(headers, got) == [orjson.loads(body)]
    empty = raw_http.response(202, b"", None, True)
    assert wire.parse_response(empty) == ((202, {b"content-length": b"0"}, b""), len(empty))
