"""The benchmark driver's wire: HTTP/1.1 responses, event streams and JSON-RPC bytes."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import sys
from typing import Any

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


def test_an_endpoint_with_a_token_sends_it_on_every_post() -> None:
    endpoint = wire.Endpoint("http://127.0.0.1:8123/mcp", token="abc.def.ghi")
    for post in (endpoint.post(b"{}", None, initialize=True), endpoint.post(b"{}", "s")):
        assert b"\r\nAuthorization: Bearer abc.def.ghi\r\n" in post
    assert b"Authorization" not in wire.Endpoint("http://127.0.0.1:8123/mcp").post(b"{}", "s")


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


# --- the stateless revision (2026-07-28): an envelope on every request, no handshake ------

STATELESS = "2026-07-28"
PV, CAPS, INFO = (
    "io.modelcontextprotocol/protocolVersion",
    "io.modelcontextprotocol/clientCapabilities",
    "io.modelcontextprotocol/clientInfo",
)


def test_a_revision_is_one_the_harness_speaks() -> None:
    assert not wire.SESSION.stateless
    assert wire.SESSION.meta is None
    assert wire.SESSION.opening() == ("initialize", wire.INIT_PARAMS)
    modern = wire.Revision(STATELESS)
    assert modern.stateless
    assert modern.meta == {PV: STATELESS, CAPS: {}, INFO: wire.CLIENT_INFO}
    assert modern.opening() == ("server/discover", None)
    with pytest.raises(ValueError, match="2099-01-01"):
        wire.Revision("2099-01-01")


def test_a_stateless_request_carries_the_envelope_beside_its_own_meta() -> None:
    modern = wire.Revision(STATELESS)
    params = {"name": "p", "arguments": {}, "_meta": {"progressToken": "t", PV: "mine"}}
    sent = orjson.loads(modern.request(9, "tools/call", params))
    assert sent["params"]["_meta"] == {
        "progressToken": "t",
        PV: "mine",
        CAPS: {},
        INFO: {
            "name": "mcpbench",
            "version": "0.1",
        },
    }
    assert params["_meta"] == {"progressToken": "t", PV: "mine"}  # the caller's is untouched
    assert orjson.loads(modern.request(1, "server/discover"))["params"]["_meta"][PV] == STATELESS
    # at a session's revision the request is as it always was
    assert wire.SESSION.request(1, "tools/list") == wire.request(1, "tools/list")


def test_what_the_harness_sends_at_2026_is_valid_by_its_schema() -> None:
    from .spec_schema import check

    modern = wire.Revision(STATELESS)
    check(orjson.loads(modern.request(1, "server/discover")), STATELESS, "DiscoverRequest")
    for rid in (1, 77):
        call = orjson.loads(modern.call_template("echo", {"text": "hi"})(rid))
        check(call, STATELESS, "CallToolRequest")
        assert call == orjson.loads(
            modern.request(rid, "tools/call", {"name": "echo", "arguments": {"text": "hi"}})
        )


def test_a_result_of_2026_is_complete_only_when_it_says_so() -> None:
    modern = wire.Revision(STATELESS)
    done = {"id": 1, "result": {"content": [], "resultType": "complete"}}
    assert modern.succeeded(done)
    assert wire.SESSION.succeeded(done)
    untagged = {"id": 1, "result": {"content": []}}
    assert wire.SESSION.succeeded(untagged)
    assert not modern.succeeded(untagged)
    asking = {"id": 1, "result": {"resultType": "input_required", "inputRequests": {}}}
    assert not modern.succeeded(asking)
    tool_error = {"id": 1, "result": {"isError": True, "resultType": "complete"}}
    assert not modern.succeeded(tool_error)
    body = orjson.dumps(untagged)
    assert wire.answered(1, (200, {}, body))
    assert not wire.Endpoint("http://h/mcp", modern).answered(1, (200, {}, body))


def test_the_opening_of_2026_must_list_the_revision() -> None:
    modern = wire.Revision(STATELESS)
    modern.check_opening({"result": {"supportedVersions": [STATELESS, "2025-11-25"]}})
    for reply in (
        {"result": {"supportedVersions": ["2025-11-25"]}},
        {"result": {}},
        {"error": {"code": -32601, "message": "no"}},
    ):
        with pytest.raises(RuntimeError, match="server/discover"):
            modern.check_opening(reply)


def head_lines(post: bytes) -> list[bytes]:
    return post.partition(b"\r\n\r\n")[0].split(b"\r\n")


def test_a_post_of_2026_names_its_revision_method_and_name_in_headers() -> None:
    endpoint = wire.Endpoint("http://127.0.0.1:8123/mcp", wire.Revision(STATELESS))
    modern = endpoint.revision
    call = endpoint.post(modern.request(1, "tools/call", {"name": "echo"}), None)
    lines = head_lines(call)
    assert b"Mcp-Protocol-Version: 2026-07-28" in lines
    assert b"Mcp-Method: tools/call" in lines
    assert b"Mcp-Name: echo" in lines
    assert not any(line.startswith(b"Mcp-Session-Id") for line in lines)
    read = head_lines(endpoint.post(modern.request(2, "resources/read", {"uri": "a://b c"}), None))
    assert b"Mcp-Name: a://b c" in read
    listed = head_lines(endpoint.post(modern.request(3, "tools/list"), None))
    assert b"Mcp-Method: tools/list" in listed
    assert not any(line.startswith(b"Mcp-Name") for line in listed)
    # what the lanes send, built once: the same head as post() derives from the body
    body = modern.call_template("echo", {"text": "x"})(5)
    lane = endpoint.post_head(None, method="tools/call", name="echo") + b"%d\r\n\r\n" % len(body)
    assert lane + body == endpoint.post(body, None)
    # a session's endpoint sends none of them
    session = wire.Endpoint("http://127.0.0.1:8123/mcp")
    old = head_lines(session.post(wire.request(1, "tools/call", {"name": "echo"}), "s"))
    assert b"Mcp-Protocol-Version: 2025-11-25" in old
    assert not any(line.startswith((b"Mcp-Method", b"Mcp-Name")) for line in old)


def test_a_header_value_that_is_not_plain_ascii_is_base64_wrapped() -> None:
    assert wire.header_value("get_weather") == b"get_weather"
    for text in ("héllo", " padded", "line\nbreak", "日本"):
        value = wire.header_value(text)
        assert value.startswith(b"=?base64?")
        assert value.endswith(b"?=")
        assert base64.b64decode(value[9:-2]).decode() == text


class ScriptedHttp:
    """An HTTP/1.1 server on a free port: records each request, answers from a script."""

    def __init__(self, answer: Any) -> None:
        self.answer = answer  # (head lines, JSON body) -> JSON reply
        self.seen: list[tuple[list[bytes], Any]] = []

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.writers.append(writer)
        with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
            while True:
                lines = (await reader.readuntil(b"\r\n\r\n"))[:-4].split(b"\r\n")
                fields = dict(line.partition(b": ")[::2] for line in lines[1:])
                body = orjson.loads(await reader.readexactly(int(fields[b"Content-Length"])))
                self.seen.append((lines, body))
                reply = orjson.dumps(self.answer(lines, body))
                writer.write(JSON_HEAD + b"%d\r\n\r\n" % len(reply) + reply)
                await writer.drain()

    async def __aenter__(self) -> Any:
        self.writers: list[asyncio.StreamWriter] = []
        self.server = await asyncio.start_server(self.serve, "127.0.0.1", 0)
        port = self.server.sockets[0].getsockname()[1]
        return wire.Endpoint(f"http://127.0.0.1:{port}/mcp", wire.Revision(STATELESS))

    async def __aexit__(self, *exc: object) -> None:
        self.server.close()
        for writer in self.writers:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()
        await self.server.wait_closed()


def discover_then_echo(lines: list[bytes], body: Any) -> Any:
    if body["method"] == "server/discover":
        return {"jsonrpc": "2.0", "id": body["id"], "result": {"supportedVersions": [STATELESS]}}
    tagged = body["params"]["name"] == "echo"  # any other tool answers untagged
    result = {"content": [], **({"resultType": "complete"} if tagged else {})}
    return {"jsonrpc": "2.0", "id": body["id"], "result": result}


def test_the_load_of_2026_discovers_once_and_checks_each_answer() -> None:
    runs = load_harness("runs")
    scripted = ScriptedHttp(discover_then_echo)

    async def scenario() -> list[bool]:
        async with scripted as endpoint:
            sessions = await runs.open_sessions(endpoint, 1)
            assert sessions == [None]
            connections = await endpoint.connect_many(2)
            checks: list[bool] = []
            finished = asyncio.Event()

            def done(check: Any) -> None:
                checks.append(check is not None and check())
                if len(checks) == 2:
                    finished.set()

            for lane in runs.http_lanes(endpoint, sessions, connections):
                lane(done)
            await asyncio.wait_for(finished.wait(), 10)
            other = await endpoint.call(connections[0], 9, "tools/call", {"name": "add"}, None)
            checks.append(other is not None and endpoint.answered(9, other))
            for c in connections:
                c.close()
            return checks

    assert asyncio.run(scenario()) == [True, True, False]
    (discover_head, discover), *calls = scripted.seen
    assert discover["method"] == "server/discover"
    assert b"Mcp-Method: server/discover" in discover_head
    assert discover["params"]["_meta"][PV] == STATELESS
    for lines, body in calls:
        assert b"Mcp-Protocol-Version: 2026-07-28" in lines
        assert b"Mcp-Method: tools/call" in lines
        assert b"Mcp-Name: " + body["params"]["name"].encode() in lines
        assert body["params"]["_meta"][CAPS] == {}
        assert not any(line.startswith(b"Mcp-Session-Id") for line in lines)
    assert len({body["id"] for _, body in calls}) == 3


def test_a_server_without_2026_fails_the_opening() -> None:
    def session_only(lines: list[bytes], body: Any) -> Any:
        return {"jsonrpc": "2.0", "id": body["id"], "error": {"code": -32601, "message": "no"}}

    async def scenario() -> None:
        async with ScriptedHttp(session_only) as endpoint:
            await load_harness("runs").open_sessions(endpoint, 1)

    with pytest.raises(RuntimeError, match="server/discover failed"):
        asyncio.run(scenario())


STDIO_ECHO = """
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if "id" not in m:
        continue
    meta = (m.get("params") or {}).get("_meta", {})
    version = meta.get("io.modelcontextprotocol/protocolVersion")
    r = {"resultType": "complete", "method": m["method"], "meta": meta}
    r["supportedVersions"] = [version]
    print(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": r}), flush=True)
"""


def test_a_stdio_client_of_2026_discovers_and_stamps_every_request() -> None:
    async def scenario() -> list[dict[str, Any]]:
        client = await wire.StdioClient.start(
            [sys.executable, "-c", STDIO_ECHO], dict(os.environ), None, wire.Revision(STATELESS)
        )
        try:
            await client.open()
            replies = [await client.call(1, "tools/call", {"name": "echo", "_meta": {"k": 1}})]
            got: list[dict[str, Any]] = []
            client.expect(2, got.append)
            client.write(client.revision.call_template("echo", {})(2) + b"\n")
            replies.append(await asyncio.wait_for(client.call(3, "ping"), 10))
            return [*replies, *got]
        finally:
            await client.close()

    replies = asyncio.run(scenario())
    assert [r["result"]["method"] for r in replies] == ["tools/call", "ping", "tools/call"]
    for reply in replies:
        assert reply["result"]["meta"][PV] == STATELESS
        assert wire.Revision(STATELESS).succeeded(reply)
    assert replies[0]["result"]["meta"]["k"] == 1
