"""The benchmark driver's wire: HTTP/1.1 responses, event streams and JSON-RPC bytes."""

from __future__ import annotations

import orjson
import pytest

from .bench_scripts import load_harness

wire = load_harness("wire")

JSON_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "


def test_a_response_framed_by_content_length_waits_for_its_whole_body() -> None:
    body = b'{"jsonrpc":"2.0","id":1,"result":{}}'
    data = JSON_HEAD + b"%d\r\n\r\n" % len(body) + body
    for cut in (10, len(data) - len(body), len(data) - 1):
        assert wire.parse_response(data[:cut]) is None, cut
    (status, headers, got), used = wire.parse_response(data + b"HTTP/1.1 2")
    assert (status, got, used) == (200, body, len(data))
    assert headers[b"content-type"] == b"application/json"


def test_a_chunked_response_is_joined_and_its_trailers_skipped() -> None:
    data = (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: text/event-stream\r\n\r\n"
        b"6;ext=1\r\nevent:\r\n3\r\n ok\r\n0\r\nX-Trailer: 1\r\n\r\n"
    )
    for cut in range(len(data)):
        assert wire.parse_response(data[:cut]) is None, cut
    (status, _, body), used = wire.parse_response(data + b"next")
    assert (status, body, used) == (200, b"event: ok", len(data))


def test_two_pipelined_responses_are_read_one_after_the_other() -> None:
    first = b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n"
    second = b"HTTP/1.1 404 Not Found\r\ncontent-length: 2\r\n\r\nno"
    (status, _, body), used = wire.parse_response(first + second)
    assert (status, body, used) == (202, b"", len(first))
    (status, _, body), _ = wire.parse_response((first + second)[used:])
    assert (status, body) == (404, b"no")


def test_a_response_without_a_body_needs_no_framing() -> None:
    data = b"HTTP/1.1 204 No Content\r\n\r\n"
    assert wire.parse_response(data) == ((204, {}, b""), len(data))
    # framed by the end of the connection: never complete while it is open
    assert wire.parse_response(b"HTTP/1.1 200 OK\r\n\r\nbody") is None


def test_the_messages_of_an_event_stream() -> None:
    body = (
        b'event: message\r\ndata: {"id":1,"result":{}}\r\n\r\n'
        b": a comment\n\n"
        b'data: {"method":\ndata: "x"}\n\n'
        b"data: not json\n\n"
    )
    assert wire.sse_messages(body) == [{"id": 1, "result": {}}, {"method": "x"}]
    assert wire.messages({b"content-type": b"text/event-stream; charset=utf-8"}, body)[1] == {
        "method": "x"
    }


def test_the_messages_of_a_json_body() -> None:
    assert wire.messages({}, b"") == []
    assert wire.messages({b"content-type": b"application/json"}, b"[1,2]") == [1, 2]
    assert wire.messages({}, b"{oops") == []


def test_an_answer_is_a_successful_response_to_that_id() -> None:
    ok = orjson.dumps({"jsonrpc": "2.0", "id": 7, "result": {"content": [], "isError": False}})
    tool_error = orjson.dumps({"jsonrpc": "2.0", "id": 7, "result": {"isError": True}})
    assert wire.answered(7, (200, {}, ok))
    assert not wire.answered(8, (200, {}, ok))
    assert not wire.answered(7, (500, {}, ok))
    assert not wire.answered(7, (200, {}, tool_error))
    assert not wire.answered(7, (200, {}, b"[3]"))


def test_a_call_template_makes_the_request_it_stands_for() -> None:
    make = wire.call_template("echo", {"text": "hi"})
    assert orjson.loads(make(41)) == orjson.loads(
        wire.request(41, "tools/call", {"name": "echo", "arguments": {"text": "hi"}})
    )


def test_an_endpoint_builds_its_posts() -> None:
    endpoint = wire.Endpoint("http://127.0.0.1:8123/mcp")
    assert (endpoint.host, endpoint.port, endpoint.path) == ("127.0.0.1", 8123, b"/mcp")
    post = endpoint.post(b"{}", "abc")
    head, _, body = post.partition(b"\r\n\r\n")
    assert body == b"{}"
    assert head.startswith(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:8123\r\n")
    assert b"\r\nMcp-Session-Id: abc\r\n" in head
    assert head.endswith(b"\r\nContent-Length: 2")
    first = endpoint.post(b"{}", None, initialize=True)
    assert b"Mcp-Session-Id" not in first
    assert b"Mcp-Protocol-Version" not in first
    assert wire.Endpoint("http://example/").port == 80
    with pytest.raises(ValueError, match="only http"):
        wire.Endpoint("https://example/mcp")


class FakeTransport:
    def __init__(self) -> None:
        self.written: list[bytes] = []
        self.closed = False

    def get_extra_info(self, name: str) -> None:
        return None

    def write(self, data: bytes) -> None:
        self.written.append(data)

    def close(self) -> None:
        self.closed = True


def connection() -> tuple[object, FakeTransport]:
    transport = FakeTransport()
    conn = wire.HttpConnection()
    conn.connection_made(transport)
    return conn, transport


def test_a_connection_the_server_closes_is_closed_after_its_last_response() -> None:
    conn, transport = connection()
    got: list[object] = []
    conn.send(b"POST / HTTP/1.1\r\n\r\n", got.append)
    assert transport.written == [b"POST / HTTP/1.1\r\n\r\n"]
    conn.data_received(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\n")
    assert got == []
    conn.data_received(b"{}")
    assert got == [(200, {b"content-length": b"2", b"connection": b"keep-alive"}, b"{}")]
    assert not conn.closed
    conn.send(b"again", got.append)
    conn.data_received(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: Close\r\n\r\n")
    assert got[-1][0] == 200
    assert conn.closed
    assert transport.closed
    conn.send(b"never sent", got.append)
    assert got[-1] is None
    assert transport.written[-1] == b"again"


def test_a_response_cut_short_or_framed_by_the_close_is_reported_when_the_connection_ends() -> (
    None
):
    conn, _ = connection()
    got: list[object] = []
    conn.send(b"x", got.append)
    conn.data_received(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\ndata: 1\n\n")
    conn.connection_lost(None)
    assert got == [(200, {b"content-type": b"text/event-stream"}, b"data: 1\n\n")]
    conn, _ = connection()
    conn.send(b"x", got.append)
    conn.data_received(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nshort")
    conn.connection_lost(None)
    assert got[-1] is None
