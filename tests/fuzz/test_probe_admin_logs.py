"""Attack probe: the admin listener, log injection and slow clients.

The admin listener: every way in without the token (none, a wrong one, another
scheme, the query string, a forged cookie), cross-site actions with the sign-in cookie,
static paths that climb out, bodies over the limit. The log: what reaches it from every
field a client controls (method and tool names, URIs, paths, header values, a
handler's exception) is escaped and bounded — every case's log is checked by the
``served`` fixture; the cases here aim at it. Slow clients: a body that never
completes, a reader that never reads a long SSE answer.
"""

from __future__ import annotations

import re

import orjson
import pytest
import trio

from ._probe import (
    REQUEST_TIMEOUT,
    TOKEN,
    WRITE_TIMEOUT,
    Reply,
    Served,
    answer,
    call_tool,
    exchange,
    mcp_headers,
    open_session,
    ping,
    post,
    request,
    send_quietly,
)

FORGED = "\r\nCRITICAL mcpactor: forged line\x1b[2J\x1b]0;owned\x07\u202egnp.exe\u2028x"


async def _admin(
    served: Served,
    method: str,
    path: str,
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
) -> Reply:
    data = request(method, path, served, body, headers=headers)
    data = data.replace(b"Host: " + served.host, b"Host: 127.0.0.1:%d" % served.admin_port, 1)
    return (await exchange(served.admin_port, data)).only


def _bearer(token: str = TOKEN) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def _sign_in(served: Served) -> tuple[str, str]:
    # The cookie the login form sets, and the page's CSRF value.
    form = b"token=" + TOKEN.encode()
    reply = await _admin(
        served, "POST", "/login", form, {"Content-Type": "application/x-www-form-urlencoded"}
    )
    assert reply.status in (302, 303), reply
    cookie = reply.headers["set-cookie"].split(";", 1)[0]
    page = await _admin(served, "GET", "/", headers={"Cookie": cookie})
    assert page.status == 200
    found = re.search(rb'<meta name="csrf" content="([0-9a-f]+)">', page.body)
    assert found is not None
    return cookie, found.group(1).decode()


async def _logged(served: Served, offset: int, needle: str) -> str:
    # The log from ``offset`` once ``needle`` is in it: another process writes it, so
    # the file is looked at until it says so.
    with trio.fail_after(5):
        while needle not in (text := served.log_since(offset)):  # noqa: ASYNC110
            await trio.sleep(0.02)
    return text


# --- the admin listener ---------------------------------------------------------------


@pytest.mark.parametrize(
    "headers",
    [
        pytest.param({}, id="none"),
        pytest.param(_bearer("wrong"), id="wrong-token"),
        pytest.param(_bearer(TOKEN.upper()), id="token-in-capitals"),
        pytest.param(_bearer(TOKEN[:-1]), id="token-prefix"),
        pytest.param(_bearer(TOKEN + "x"), id="token-longer"),
        pytest.param({"Authorization": f"Basic {TOKEN}"}, id="basic-scheme"),
        pytest.param({"Authorization": TOKEN}, id="no-scheme"),
        pytest.param({"Cookie": "mcpactor-admin=" + "0" * 64}, id="forged-cookie"),
        pytest.param({"Cookie": f"mcpactor-admin={TOKEN}"}, id="token-as-cookie"),
        pytest.param({"Authorization": "Bearer " + "x" * 30_000}, id="huge-token"),
    ],
)
async def test_the_admin_api_refuses_every_credential_but_its_own(
    served: Served, headers: dict[str, str]
) -> None:
    for path in ("/api/tree", "/api/stream", f"/api/tree?token={TOKEN}", "/api/replicas"):
        reply = await _admin(served, "GET", path, headers=headers)
        assert reply.status == 401, (path, reply.status, reply.body[:200])
        assert "error" in reply.json()
        assert TOKEN.encode() not in reply.body
    action = await _admin(
        served, "POST", "/api/actions/close-session", b'{"session":"x"}', headers=headers
    )
    assert action.status == 401


async def test_the_admin_page_without_a_credential_sends_to_the_login(served: Served) -> None:
    reply = await _admin(served, "GET", "/")
    assert reply.status in (302, 303)
    assert reply.headers["location"].endswith("login")


async def test_a_wrong_token_at_the_login_is_refused_and_sets_no_cookie(served: Served) -> None:
    reply = await _admin(
        served, "POST", "/login", b"token=" + FORGED.encode(),
        {"Content-Type": "application/x-www-form-urlencoded"},
    )  # fmt: skip
    assert reply.status == 403
    assert "set-cookie" not in reply.headers


async def test_a_login_form_over_the_body_limit_is_413(served: Served) -> None:
    body = b"token=" + b"x" * (1 << 20)
    reply = await _admin(
        served, "POST", "/login", body, {"Content-Type": "application/x-www-form-urlencoded"}
    )
    assert reply.status == 413
    assert "error" in reply.json()


async def test_an_action_with_the_cookie_needs_the_pages_csrf_value(served: Served) -> None:
    cookie, csrf = await _sign_in(served)
    victim = await open_session(served)
    body = orjson.dumps({"session": victim})
    for headers in (
        {"Cookie": cookie, "Content-Type": "application/json"},
        {"Cookie": cookie, "X-Admin-CSRF": "0" * 64},
        {"Cookie": cookie, "X-Admin-CSRF": csrf, "Origin": "http://evil.example"},
        {"Cookie": cookie, "X-Admin-CSRF": csrf, "Origin": "null"},
    ):
        reply = await _admin(served, "POST", "/api/actions/close-session", body, headers)
        assert reply.status == 403, (headers, reply.body[:200])
    await ping(served, victim)
    own_origin = f"http://127.0.0.1:{served.admin_port}"
    reply = await _admin(
        served, "POST", "/api/actions/close-session", body,
        {"Cookie": cookie, "X-Admin-CSRF": csrf, "Origin": own_origin},
    )  # fmt: skip
    assert reply.status == 200, reply.body[:200]
    assert reply.json() == {"action": "close-session", "done": True}


@pytest.mark.parametrize(
    "path",
    [
        "/static/..%2f_app.py",
        "/static/%2e%2e/%2e%2e/etc/passwd",
        "/static/..%252f_app.py",
        "/static/../_app.py",
        "/static/app.js%00.py",
        "/static/index.html",
        "/static/",
        "//etc/passwd",
        "/static/..\\_app.py",
    ],
)
async def test_static_paths_that_climb_out_are_404(served: Served, path: str) -> None:
    reply = await _admin(served, "GET", path, headers=_bearer())
    assert reply.status == 404, (reply.status, reply.body[:200])
    assert "error" in reply.json()
    assert b"import" not in reply.body
    assert b"root:" not in reply.body


async def test_admin_action_bodies_are_bounded_and_checked(served: Served) -> None:
    big = b'{"session":"' + b"x" * (1 << 20) + b'"}'
    reply = await _admin(served, "POST", "/api/actions/close-session", big, _bearer())
    assert reply.status == 413
    assert reply.json() == {"error": "413 Request Entity Too Large"}
    for body, status in (
        (b"[" * 10_000, 400),
        (b"[1]", 400),
        (b'{"session": ' + b'"x"' * 1 + b"}", 409),
        (orjson.dumps({"session": "s" * 10_000}), 400),
        (orjson.dumps({"session": FORGED}), 409),
        (orjson.dumps({"session": "x", "request": {"a": 1}}), 409),
    ):
        reply = await _admin(served, "POST", "/api/actions/close-session", body, _bearer())
        assert reply.status == status, (body[:40], reply.status, reply.body[:200])
    unknown = await _admin(served, "POST", "/api/actions/" + "x" * 5000, b"{}", _bearer())
    assert unknown.status == 404
    assert len(unknown.body) < 1000


async def test_an_operators_action_on_a_forged_target_is_logged_escaped(served: Served) -> None:
    offset = served.log_size()
    body = orjson.dumps({"session": "abc", "request": FORGED[:150]})
    reply = await _admin(served, "POST", "/api/actions/cancel-request", body, _bearer())
    assert reply.status == 409
    text = await _logged(served, offset, "admin action cancel-request")
    line = next(line for line in text.split("\n") if "admin action" in line)
    assert "forged line" in line
    assert "\\x1b" in line


async def test_the_admin_stream_is_held_to_its_shortest_interval(served: Served) -> None:
    data = request("GET", "/api/stream?interval=0&limit=999999999&tool=" + "t" * 5000, served,
                   headers=_bearer(), close=False)  # fmt: skip
    data = data.replace(b"Host: " + served.host, b"Host: 127.0.0.1:%d" % served.admin_port, 1)
    async with await trio.open_tcp_stream("127.0.0.1", served.admin_port) as stream:
        await stream.send_all(data)
        received = b""
        with trio.move_on_after(1.0):
            while True:
                chunk = await stream.receive_some(65536)
                if not chunk:
                    break
                received += chunk
    assert received.startswith(b"HTTP/1.1 200"), received[:200]
    assert 1 <= received.count(b"event: tree") <= 5


async def test_a_header_flood_on_the_admin_port_is_refused(served: Served) -> None:
    fields = b"".join(b"X-%d: v\r\n" % n for n in range(200))
    data = b"GET /api/tree HTTP/1.1\r\nHost: 127.0.0.1\r\n" + fields + b"\r\n"
    found = await exchange(served.admin_port, data)
    assert found.only.status == 431
    assert found.closed


# --- log injection ----------------------------------------------------------------------


async def test_a_handlers_exception_quoting_its_argument_is_logged_escaped(
    served: Served,
) -> None:
    offset = served.log_size()
    response = await call_tool(served, await open_session(served), "probe_fail", {"text": FORGED})
    assert response["result"]["isError"] is True
    text = await _logged(served, offset, "could not handle")
    assert "forged line" in text
    assert "\nCRITICAL mcpactor: forged" not in text


async def test_a_huge_exception_text_is_logged_bounded(served: Served) -> None:
    offset = served.log_size()
    await call_tool(served, await open_session(served), "probe_fail", {"text": "y" * 500_000})
    text = await _logged(served, offset, "could not handle")
    assert len(text) < 60_000


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("tools/call", {"name": "no" + FORGED, "arguments": {}}),
        ("resources/read", {"uri": "file:///" + FORGED}),
        ("prompts/get", {"name": FORGED}),
        ("nope" + FORGED, {}),
        ("logging/setLevel", {"level": FORGED}),
        ("completion/complete", {"ref": {"type": "ref/prompt", "name": FORGED}, "argument": {}}),
    ],
)
async def test_names_and_uris_from_the_wire_answer_and_log_escaped(
    served: Served, method: str, params: dict[str, object]
) -> None:
    session = await open_session(served)
    message = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    response = answer(await post(served, message, session), 1)
    assert "error" in response or response["result"].get("isError") is True, response
    if "error" in response:
        assert "\x1b" not in response["error"]["message"]
        assert len(response["error"]["message"]) < 2000


async def test_a_path_and_a_forwarded_address_from_the_wire_are_logged_escaped(
    served: Served,
) -> None:
    offset = served.log_size()
    data = request(
        "GET", "/mcp%0d%0aCRITICAL%20mcpactor:%20forged%1b[2J/x", served,
        headers={"X-Forwarded-For": 'a"b, 198.51.100.9"'},
    )  # fmt: skip
    found = await exchange(served.port, data)
    assert found.only.status == 404
    text = await _logged(served, offset, "mcpactor.access")
    assert "\\r\\nCRITICAL" in text or "\\x0d" in text


async def test_a_method_token_that_is_not_one_is_refused_before_any_log(served: Served) -> None:
    data = b"G\x1bT /mcp HTTP/1.1\r\nHost: " + served.host + b"\r\n\r\n"
    found = await exchange(served.port, data)
    assert found.only.status == 400
    assert found.closed


# --- slow clients -------------------------------------------------------------------------


async def test_a_body_sent_a_byte_at_a_time_is_cut_at_the_request_timeout(
    served: Served,
) -> None:
    session = await open_session(served)
    head = request("POST", "/mcp", served, None, headers=mcp_headers(session), close=False)
    head = head.replace(b"\r\n\r\n", b"\r\nContent-Length: 1000\r\n\r\n")
    async with await trio.open_tcp_stream("127.0.0.1", served.port) as stream:
        await stream.send_all(head)
        started = trio.current_time()
        closed = False
        with trio.move_on_after(REQUEST_TIMEOUT + 3):
            for _ in range(1000):
                if not await send_quietly(stream, b" "):
                    closed = True
                    break
                with trio.move_on_after(0.1):
                    try:
                        said = await stream.receive_some(65536)
                    except trio.BrokenResourceError:
                        said = b""
                    if not said or said.startswith(b"HTTP/1.1 4"):
                        closed = True
                        break
        assert closed, "a body that never ends was held past the request timeout"
        assert trio.current_time() - started < REQUEST_TIMEOUT + 2
    await ping(served, session)


async def test_readers_that_never_read_a_long_sse_answer_hold_bounded_memory(
    served: Served,
) -> None:
    # Ten answers of 2000 progress events of 20 kB (40 MB each) that nobody reads: the
    # server waits on the sockets (backpressure), drops them at the write timeout, and
    # the requests' events, kept for a resumption, are held to the session's bound.
    session = await open_session(served)
    message = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "tools/call",
        "params": {
            "name": "probe_chatter",
            "arguments": {"count": 2000, "size": 20_000},
            "_meta": {"progressToken": "chatter"},
        },
    }
    before = served.rss()
    streams = []
    try:
        for n in range(10):
            stream = await trio.open_tcp_stream("127.0.0.1", served.port)
            streams.append(stream)
            body = orjson.dumps({**message, "id": n})
            await stream.send_all(
                request("POST", "/mcp", served, body, headers=mcp_headers(session))
            )
        peak = 0
        with trio.move_on_after(WRITE_TIMEOUT + 1):
            while True:
                peak = max(peak, served.rss() - before)
                await ping(served, session)
                await trio.sleep(0.2)
        # The session's replay buffers hold 32 MiB at most, whatever its streams make.
        assert peak < 96 << 20, f"{peak >> 20} MiB more while nobody read"
    finally:
        for stream in streams:
            await stream.aclose()


async def test_a_dropped_long_answer_is_not_kept_whole_for_resumption(served: Served) -> None:
    # The connection drops; the request runs on (it is not cancelled) and its events
    # wait for a resumption: a bounded number of them.
    session = await open_session(served)
    message = {
        "jsonrpc": "2.0",
        "id": "dropped",
        "method": "tools/call",
        "params": {
            "name": "probe_chatter",
            "arguments": {"count": 3000, "size": 20_000},
            "_meta": {"progressToken": "dropped"},
        },
    }
    before = served.rss()
    async with await trio.open_tcp_stream("127.0.0.1", served.port) as stream:
        await stream.send_all(
            request("POST", "/mcp", served, orjson.dumps(message), headers=mcp_headers(session))
        )
        await stream.receive_some(65536)
    # 60 MB of events would be made; the handler runs to its end meanwhile.
    peak = 0
    with trio.fail_after(30):
        while True:
            await trio.sleep(0.3)
            peak = max(peak, served.rss() - before)
            # Done once the id is free again (the request ended).
            again = await post(
                served, {"jsonrpc": "2.0", "id": "dropped", "method": "ping"}, session
            )
            if again.status == 200:
                break
    assert peak < 96 << 20, f"{peak >> 20} MiB kept"
