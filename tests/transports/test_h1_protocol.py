"""The built-in server's sans-io HTTP/1.1 protocol, alone: bytes in, events out, no sockets.

Every case of the request table is fed three ways (whole, byte by byte, and in two
halves) and must come out the same: the requests read, in order, then the status of
the refusal that ended the connection, if any.
"""

from __future__ import annotations

import ast
from pathlib import Path

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcpactor.transports.h1 import (
    CONTINUE,
    NEED_DATA,
    H1Protocol,
    Limits,
    ProtocolError,
    Request,
    Response,
    Upgrade,
    _rules,
)

LIMITS = Limits(max_head_bytes=4096, max_headers=20, max_body_bytes=2048)


def get(target: bytes = b"/", extra: bytes = b"", version: bytes = b"1.1") -> bytes:
    host = b"Host: h\r\n" if version == b"1.1" else b""
    return b"GET " + target + b" HTTP/" + version + b"\r\n" + host + extra + b"\r\n"


def post(body: bytes = b"hello", extra: bytes = b"") -> bytes:
    head = b"POST /mcp HTTP/1.1\r\nHost: h\r\n" + extra
    return head + b"Content-Length: %d\r\n\r\n" % len(body) + body


def chunked(chunks: list[bytes], extra: bytes = b"", trailer: bytes = b"") -> bytes:
    head = b"POST /mcp HTTP/1.1\r\nHost: h\r\n" + extra + b"Transfer-Encoding: chunked\r\n\r\n"
    return head + b"".join(chunks) + b"0\r\n" + trailer + b"\r\n"


@attrs.frozen
class Seen:
    """What came out of one feeding: the requests (method, target, body), then a refusal."""

    requests: tuple[tuple[str, bytes, bytes], ...]
    refused: int | None = None


def feed(protocol: H1Protocol, pieces: list[bytes]) -> tuple[list[Request], ProtocolError | None]:
    """Feed ``pieces`` one by one, taking every event after each; stop at a refusal."""
    requests: list[Request] = []
    for piece in pieces:
        protocol.receive_data(piece)
        while True:
            try:
                event = protocol.next_event()
            except ProtocolError as error:
                return requests, error
            if event is NEED_DATA:
                break
            if event is CONTINUE:
                continue
            assert isinstance(event, Request)
            requests.append(event)
    return requests, None


def split(data: bytes, how: str) -> list[bytes]:
    if how == "whole":
        return [data]
    if how == "bytes":
        return [data[i : i + 1] for i in range(len(data))]
    return [data[: len(data) // 2], data[len(data) // 2 :]]


def seen(data: bytes, how: str = "whole", limits: Limits = LIMITS) -> Seen:
    requests, error = feed(H1Protocol(limits), split(data, how))
    read = tuple((r.method, r.target, r.body) for r in requests)
    return Seen(read, None if error is None else error.error_status_hint)


def ok(*requests: tuple[str, bytes, bytes]) -> Seen:
    return Seen(requests)


def refused(status: int, *before: tuple[str, bytes, bytes]) -> Seen:
    return Seen(before, status)


GET = ("GET", b"/", b"")
POST = ("POST", b"/mcp", b"hello")

CASES: list[tuple[str, bytes, Seen]] = [
    # --- well-formed ---------------------------------------------------------------------
    ("get", get(), ok(GET)),
    ("post with Content-Length", post(), ok(POST)),
    ("post chunked", chunked([b"2\r\nhe\r\n", b"3\r\nllo\r\n"]), ok(POST)),
    ("chunk extensions", chunked([b'5;a=b;c="d"\r\nhello\r\n']), ok(POST)),
    ("chunked, any case", chunked([b"5\r\nhello\r\n"]).replace(b"chunked", b"Chunked"), ok(POST)),
    ("trailers are read and dropped", chunked([b"5\r\nhello\r\n"], trailer=b"X-T: v\r\n"),
     ok(POST)),
    ("Content-Length with leading zeros",
     post().replace(b"Content-Length: ", b"Content-Length: 000"), ok(POST)),
    ("pipelined in one feed", get() + post() + get(b"/b"), ok(GET, POST, ("GET", b"/b", b""))),
    ("HTTP/1.0 without Host", get(version=b"1.0"), ok(GET)),
    ("absolute-form", get(b"http://h:8/a?q"), ok(("GET", b"/a?q", b""))),
    ("absolute-form without a path", get(b"https://h"), ok(GET)),
    ("asterisk-form", b"OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n", ok(("OPTIONS", b"*", b""))),
    # --- smuggling: Content-Length and Transfer-Encoding (RFC 9112 §6) ---------------------
    ("CL then TE", chunked([b"5\r\nhello\r\n"], extra=b"Content-Length: 5\r\n"), refused(400)),
    ("TE then CL", chunked([b"5\r\nhello\r\n"]).replace(
        b"Transfer-Encoding: chunked\r\n", b"Transfer-Encoding: chunked\r\nContent-Length: 5\r\n"),
     refused(400)),
    ("CL.TE with a smuggled byte", chunked([], extra=b"Content-Length: 6\r\n") + b"G",
     refused(400)),
    ("differing Content-Length", post(extra=b"Content-Length: 7\r\n"), refused(400)),
    ("repeated identical Content-Length", post(extra=b"Content-Length: 5\r\n"), refused(400)),
    ("Content-Length as a list", post().replace(b"Content-Length: ", b"Content-Length: 5, "),
     refused(400)),
    ("Content-Length with a sign", post().replace(b"Content-Length: ", b"Content-Length: +"),
     refused(400)),
    ("Transfer-Encoding: gzip, chunked",
     chunked([b"5\r\nhello\r\n"]).replace(b"chunked", b"gzip, chunked"), refused(501)),
    ("Transfer-Encoding: chunked, gzip",
     chunked([b"5\r\nhello\r\n"]).replace(b"chunked", b"chunked, gzip"), refused(400)),
    ("Transfer-Encoding: gzip", post().replace(b"Content-Length: 5", b"Transfer-Encoding: gzip"),
     refused(400)),
    ("Transfer-Encoding: chunked, chunked",
     chunked([b"5\r\nhello\r\n"]).replace(b"chunked", b"chunked, chunked"), refused(400)),
    ("Transfer-Encoding: chunked twice",
     chunked([b"5\r\nhello\r\n"], extra=b"Transfer-Encoding: chunked\r\n"), refused(400)),
    ("Transfer-Encoding in HTTP/1.0",
     chunked([b"5\r\nhello\r\n"]).replace(b"HTTP/1.1", b"HTTP/1.0"), refused(400)),
    # --- field syntax (RFC 9112 §5, §2.2) ---------------------------------------------------
    ("obs-fold", get(extra=b"X-A: b\r\n c\r\n"), refused(400)),
    ("obs-fold of Transfer-Encoding",
     chunked([b"5\r\nhello\r\n"]).replace(b"Encoding: chunked", b"Encoding:\r\n chunked"),
     refused(400)),
    ("bare LF line ends", get().replace(b"\r\n", b"\n"), refused(400)),
    ("bare LF after a header", get(extra=b"X-A: b\n"), refused(400)),
    ("bare CR in a field", get(extra=b"X-A: b\rc\r\n"), refused(400)),
    ("whitespace before the colon",
     chunked([b"5\r\nhello\r\n"]).replace(b"Transfer-Encoding:", b"Transfer-Encoding :"),
     refused(400)),
    ("tab before the colon", get(extra=b"X-A\t: b\r\n"), refused(400)),
    ("NUL in a field", get(extra=b"X-A: b\x00c\r\n"), refused(400)),
    ("control character in a field", get(extra=b"X-A: b\x01c\r\n"), refused(400)),
    ("invalid field name", get(extra=b"X(A): b\r\n"), refused(400)),
    ("continuation line first", b"GET / HTTP/1.1\r\n Host: h\r\n\r\n", refused(400)),
    # --- chunked bodies (RFC 9112 §7.1) ------------------------------------------------------
    ("chunk size not hex", chunked([b"zz\r\nhello\r\n"]), refused(400)),
    ("negative chunk size", chunked([b"-5\r\nhello\r\n"]), refused(400)),
    ("chunk size with a space", chunked([b"5 ;a\r\nhello\r\n"]), refused(400)),
    ("chunk size overflow", chunked([b"fffffffffffffffffff\r\nhello\r\n"]), refused(400)),
    ("NUL in a chunk extension", chunked([b"5;\x00\r\nhello\r\n"]), refused(400)),
    ("chunk data without its CRLF", chunked([b"5\r\nhelloXX"]), refused(400)),
    # --- Host (RFC 9112 §3.2) --------------------------------------------------------------
    ("HTTP/1.1 without Host", b"GET / HTTP/1.1\r\n\r\n", refused(400)),
    ("two Host headers", get(extra=b"Host: h\r\n"), refused(400)),
    ("two different Host headers", get(extra=b"Host: evil\r\n"), refused(400)),
    ("absolute-form of another scheme", get(b"ftp://h/a"), refused(400)),
    ("absolute-form with a bad authority", get(b"http://[::1]x/a"), refused(400)),
    # --- versions ------------------------------------------------------------------------------
    ("HTTP/2.0 request line", get(version=b"2.0"), refused(505)),
    ("HTTP/0.9 request line", b"GET /\r\n\r\n", refused(400)),
    ("garbage", b"\x16\x03\x01 hello\r\n\r\n", refused(400)),
    # --- pipelining and refusals -------------------------------------------------------------
    ("a broken request after good ones", get() + post() + b"BROKEN\r\n\r\n",
     refused(400, GET, POST)),
    # --- limits ------------------------------------------------------------------------------
    ("too many header fields", get(extra=b"".join(b"X-%d: v\r\n" % n for n in range(25))),
     refused(431)),
    ("head too large", get(extra=b"X-Big: " + b"y" * 5000 + b"\r\n"), refused(431)),
    ("request target too long", get(b"/" + b"x" * 5000), refused(414)),
    ("declared body too large", post(b"x" * 3000), refused(413)),
    ("chunked body too large", chunked([b"400\r\n" + b"x" * 1024 + b"\r\n"] * 3), refused(413)),
    ("trailers count against the head limit",
     chunked([b"5\r\nhello\r\n"], trailer=b"".join(b"X-T%d: %s\r\n" % (n, b"v" * 300)
                                                  for n in range(15))), refused(431)),
    ("trailers count against the field limit",
     chunked([b"5\r\nhello\r\n"], trailer=b"".join(b"X-T%d: v\r\n" % n for n in range(25))),
     refused(431)),
]  # fmt: skip


@pytest.mark.parametrize("how", ["whole", "bytes", "halves"])
@pytest.mark.parametrize(("data", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_request_table(data: bytes, expected: Seen, how: str) -> None:
    assert seen(data, how) == expected


@pytest.mark.parametrize(
    ("start", "status"),
    [
        (b"GET / HTTP/1.1\r\nHost: h\r\nX-Big: ", 431),
        (b"GET /", 414),
        (chunked([b"5;"])[: -len(b"0\r\n\r\n")], 400),
    ],
    ids=["header value", "request target", "chunk extension"],
)
def test_an_endless_unit_is_cut_at_the_head_limit_plus_one_feed(start: bytes, status: int) -> None:
    # Feeds that complete nothing add up against max_head_bytes, so the limit holds
    # even though no field ever ends.
    protocol = H1Protocol(LIMITS)
    protocol.receive_data(start)
    fed = 0
    while not protocol.failed:
        assert protocol.next_event() is NEED_DATA
        protocol.receive_data(b"a" * 1000)
        fed += 1000
        assert fed <= LIMITS.max_head_bytes + 1000
    with pytest.raises(ProtocolError) as caught:
        protocol.next_event()
    assert caught.value.error_status_hint == status


def test_an_upgrade_other_than_websocket_is_refused_before_the_requests_fed_with_it() -> None:
    # The bytes after such an upgrade are not HTTP/1.1: nothing fed with it is served.
    data = get() + get(extra=b"Connection: upgrade\r\nUpgrade: h2c\r\n")
    requests, error = feed(H1Protocol(LIMITS), [data])
    assert requests == []
    assert error is not None
    assert "upgrades other than WebSocket" in error.message


@given(
    st.sampled_from(CASES),
    st.lists(st.integers(min_value=0, max_value=1 << 16), max_size=12),
)
def test_any_split_of_the_bytes_gives_the_same_verdict(
    case: tuple[str, bytes, Seen], cuts: list[int]
) -> None:
    _, data, expected = case
    points = sorted({cut % (len(data) + 1) for cut in cuts})
    pieces = [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True)]
    requests, error = feed(H1Protocol(LIMITS), pieces)
    got = Seen(
        tuple((r.method, r.target, r.body) for r in requests),
        None if error is None else error.error_status_hint,
    )
    assert got == expected


def test_headers_keep_their_order_and_repeats_with_lowercase_names() -> None:
    [request], error = feed(H1Protocol(LIMITS), [get(extra=b"X-A: 1\r\nx-b: 2\r\nX-a: 3\r\n")])
    assert error is None
    assert request.raw_headers == [(b"host", b"h"), (b"x-a", b"1"), (b"x-b", b"2"), (b"x-a", b"3")]


def test_trailer_fields_never_become_headers() -> None:
    data = chunked([b"5\r\nhello\r\n"], trailer=b"Host: evil\r\nMcp-Session-Id: s\r\n")
    [request], error = feed(H1Protocol(LIMITS), [data])
    assert error is None
    assert request.raw_headers == [(b"host", b"h"), (b"transfer-encoding", b"chunked")]


def test_absolute_form_authority_replaces_host() -> None:
    data = get(b"http://other:8/a").replace(b"Host: h", b"Host: evil")
    [request], _ = feed(H1Protocol(LIMITS), [data])
    assert (request.target, request.raw_headers) == (b"/a", [(b"host", b"other:8")])


@pytest.mark.parametrize(
    ("data", "keep_alive", "version"),
    [
        (get(), True, "1.1"),
        (get(extra=b"Connection: close\r\n"), False, "1.1"),
        (get(version=b"1.0"), False, "1.0"),
        (get(version=b"1.0", extra=b"Connection: keep-alive\r\n"), True, "1.0"),
    ],
)
def test_keep_alive_follows_the_version_and_connection(
    data: bytes, keep_alive: bool, version: str
) -> None:
    [request], error = feed(H1Protocol(LIMITS), [data])
    assert error is None
    assert (request.keep_alive, request.http_version) == (keep_alive, version)


def test_a_request_asking_for_100_continue_gets_one_continue_before_its_body() -> None:
    protocol = H1Protocol(LIMITS)
    protocol.receive_data(post(extra=b"Expect: 100-continue\r\n")[:-5])
    assert protocol.next_event() is CONTINUE
    assert protocol.next_event() is NEED_DATA
    protocol.receive_data(b"hello")
    event = protocol.next_event()
    assert isinstance(event, Request)
    assert event.body == b"hello"


def test_an_http10_request_gets_no_100_continue() -> None:
    protocol = H1Protocol(LIMITS)
    protocol.receive_data(post(extra=b"Expect: 100-continue\r\n")[:-5].replace(b"1.1", b"1.0"))
    assert protocol.next_event() is NEED_DATA


def test_a_websocket_upgrade_comes_after_the_requests_before_it_with_the_bytes_after_it() -> None:
    upgrade = get(b"/ws", b"Connection: upgrade\r\nUpgrade: websocket\r\n")
    protocol = H1Protocol(LIMITS)
    protocol.receive_data(get() + upgrade + b"\x81\x00")
    first = protocol.next_event()
    assert isinstance(first, Request)
    assert first.target == b"/"
    switch = protocol.next_event()
    assert isinstance(switch, Upgrade)
    assert (switch.request.target, switch.trailing) == (b"/ws", b"\x81\x00")
    assert protocol.stopped
    # Nothing after the upgrade is read as HTTP.
    protocol.receive_data(b"GET / HTTP/1.1\r\nHost: h\r\n\r\n")
    assert protocol.next_event() is NEED_DATA


def test_a_refusal_is_sticky_and_feeding_after_it_never_raises() -> None:
    protocol = H1Protocol(LIMITS)
    protocol.receive_data(b"GET / HTTP/1.1\r\n\r\n")
    assert protocol.failed
    for _ in range(2):
        with pytest.raises(ProtocolError, match="needs a Host") as caught:
            protocol.next_event()
        assert caught.value.error_status_hint == 400
        protocol.receive_data(get())
    assert protocol.queued == 0


def test_idle_until_a_request_begins_and_again_once_it_is_whole() -> None:
    protocol = H1Protocol(LIMITS)
    assert protocol.idle
    protocol.receive_data(b"POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhe")
    assert not protocol.idle
    assert protocol.next_event() is NEED_DATA
    protocol.receive_data(b"llo")
    assert protocol.idle
    assert protocol.queued == 1


def test_a_body_in_pieces_is_one_body() -> None:
    protocol = H1Protocol(LIMITS)
    for piece in split(chunked([b"2\r\nhe\r\n", b"3\r\nllo\r\n"]), "bytes"):
        protocol.receive_data(piece)
    event = protocol.next_event()
    assert isinstance(event, Request)
    assert (event.body, event.size) == (b"hello", 5)


# --- responses --------------------------------------------------------------------------

DATE = b"date: Thu, 01 Jan 1970 00:00:00 GMT\r\n"


def respond(
    parts: list[tuple[bytes, bool]],
    *,
    method: str = "GET",
    version: str = "1.1",
    status: int = 200,
    headers: tuple[tuple[bytes, bytes], ...] = (),
    closing: bool = False,
) -> tuple[bytes, Response]:
    response = Response(method, version, keep_alive=version == "1.1")
    response.start(status, headers, DATE)
    out = b"".join(response.body(body, more, closing) for body, more in parts)
    return out + response.end(), response


def test_a_whole_response_is_one_piece_with_its_length() -> None:
    out, response = respond([(b"hi", False)], headers=((b"content-type", b"text/plain"),))
    assert out == (
        b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n" + DATE + b"content-length: 2\r\n\r\nhi"
    )
    assert response.keep_alive


def test_a_streamed_response_is_chunked_over_http11() -> None:
    out, response = respond([(b"one", True), (b"", True), (b"two", False)])
    assert out == (
        b"HTTP/1.1 200 OK\r\n" + DATE + b"transfer-encoding: chunked\r\n\r\n"
        b"3\r\none\r\n3\r\ntwo\r\n0\r\n\r\n"
    )
    assert response.keep_alive


def test_a_streamed_response_left_open_is_ended_by_end() -> None:
    response = Response("GET", "1.1", keep_alive=True)
    response.start(200, (), b"")
    assert response.body(b"x", True).endswith(b"1\r\nx\r\n")
    assert response.end() == b"0\r\n\r\n"
    assert response.end() == b""


def test_a_streamed_response_over_http10_ends_with_the_connection() -> None:
    out, response = respond([(b"one", True), (b"two", False)], version="1.0")
    assert out == b"HTTP/1.1 200 OK\r\n" + DATE + b"connection: close\r\n\r\nonetwo"
    assert not response.keep_alive


def test_http10_keep_alive_is_said_back() -> None:
    response = Response("GET", "1.0", keep_alive=True)
    response.start(200, (), b"")
    assert response.body(b"x", False) == (
        b"HTTP/1.1 200 OK\r\ncontent-length: 1\r\nconnection: keep-alive\r\n\r\nx"
    )


@pytest.mark.parametrize(("method", "status"), [("HEAD", 200), ("GET", 204), ("GET", 304)])
def test_head_204_and_304_send_no_body(method: str, status: int) -> None:
    out, _ = respond([(b"body", False)], method=method, status=status)
    assert out.endswith(b"\r\n\r\n")
    assert b"body" not in out
    assert (b"content-length" in out) == (status == 200)


def test_the_apps_framing_headers_give_way_to_the_servers() -> None:
    headers = ((b"Transfer-Encoding", b"gzip"), (b"Connection", b"close"), (b"X-A", b"b"))
    out, response = respond([(b"hi", False)], headers=headers)
    assert b"gzip" not in out
    assert out.count(b"connection: close") == 1
    assert b"X-A: b\r\n" in out
    assert not response.keep_alive


def test_a_closing_server_says_so_in_the_head() -> None:
    out, response = respond([(b"hi", False)], closing=True)
    assert b"connection: close\r\n" in out
    assert not response.keep_alive


def test_the_app_gets_an_error_for_a_response_out_of_order() -> None:
    response = Response("GET", "1.1", keep_alive=True)
    with pytest.raises(RuntimeError, match="before the response started"):
        response.body(b"", False)
    response.start(200, (), b"")
    with pytest.raises(RuntimeError, match="already started"):
        response.start(200, (), b"")
    response.body(b"", False)
    with pytest.raises(RuntimeError, match="already ended"):
        response.body(b"", False)


# --- generic -----------------------------------------------------------------------------

PACKAGE = Path(__file__).resolve().parents[2] / "mcpactor" / "transports" / "h1"
#: what the server may import of the package besides itself: Host parsing, nothing else
ALLOWED = {"mcpactor.transports._security"}


def test_the_server_imports_nothing_of_the_runtime_or_json_rpc() -> None:
    found = set()
    for path in PACKAGE.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                if node.level == 1:
                    continue  # the package itself
                if node.level == 0:
                    name = node.module or ""
                else:
                    base = ["mcpactor", "transports", "h1"][: 3 - node.level + 1]
                    name = ".".join([*base, node.module] if node.module else base)
            elif isinstance(node, ast.Import):
                found.update(a.name for a in node.names if a.name.startswith("mcpactor"))
                continue
            else:
                continue
            if name.startswith("mcpactor"):
                found.add(name)
    assert found <= ALLOWED


def test_header_names_past_the_remembered_ones_are_read_the_same() -> None:
    # Names are remembered lowered and classified, up to a bound: the names that come
    # after the table is full (off the wire, any number) are worked out each time, and a
    # framing field among them is still checked.
    names = _rules.NAMES
    kept = dict(names)
    names.clear()
    try:
        limits = Limits(max_headers=20)
        for first in range(0, _rules.MAX_NAMES + 40, 16):
            extra = b"".join(b"X-Name-%d: %d\r\n" % (n, n) for n in range(first, first + 16))
            [request], error = feed(H1Protocol(limits), [get(extra=extra)])
            assert error is None
            assert request.headers == {"host": "h"} | {
                f"x-name-{n}": str(n) for n in range(first, first + 16)
            }
            assert request.raw_headers[1] == (b"x-name-%d" % first, b"%d" % first)
        assert len(names) == _rules.MAX_NAMES
        _, error = feed(H1Protocol(limits), [get(extra=b"HOST: again\r\n")])
        assert error is not None
        assert error.message == "more than one Host header"
        too_long = b"POST / HTTP/1.1\r\nHost: h\r\nCONTENT-length: 5000000\r\n\r\n"
        _, error = feed(H1Protocol(limits), [too_long])
        assert error is not None
        assert error.error_status_hint == 413
    finally:
        names.clear()
        names.update(kept)


def test_100_continue_is_asked_for_only_once_the_head_is_whole() -> None:
    # The Expect field is read before the rest of the head: no CONTINUE until the head
    # is complete (and checked), however the bytes are split.
    head = post(extra=b"Expect: 100-continue\r\n")[:-5]
    for cut in range(len(head) - 1):
        protocol = H1Protocol(LIMITS)
        protocol.receive_data(head[:cut])
        assert protocol.next_event() is NEED_DATA
        protocol.receive_data(head[cut:])
        assert protocol.next_event() is CONTINUE
