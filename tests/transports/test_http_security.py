"""Who may reach the HTTP endpoint: Host/Origin guard, body limit, authentication, CORS."""

from __future__ import annotations

from collections.abc import Mapping

import orjson
import pytest
import trio

from mcpactor.transports import HttpOptions
from mcpactor.transports._security import (
    RequestGuard,
    _parse_host,
    accepts,
    is_loopback,
    parse_host,
)
from mcpactor.transports.http import HttpServerKind

from ..spec_schema import check_server_message
from ._http_client import McpClient
from ._http_server import Probe, asgi_client, initialized, make_server, socket_client

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}


@pytest.fixture
def probe() -> Probe:
    return Probe()


@pytest.mark.parametrize(
    ("host", "origin", "status"),
    [
        ("127.0.0.1:8000", None, 200),
        ("localhost:1234", "http://localhost:5173", 200),
        ("[::1]:8000", "https://127.0.0.1", 200),
        ("localhost", "http://[::1]:3000", 200),
        ("evil.example.com", None, 421),
        ("evil.example.com:8000", "http://evil.example.com:8000", 421),
        ("127.0.0.1:8000", "http://evil.example.com", 403),
        ("127.0.0.1:8000", "null", 403),
        ("localhost.evil.example.com", None, 421),
    ],
)
async def test_loopback_servers_refuse_foreign_hosts_and_origins(
    probe: Probe, host: str, origin: str | None, status: int
) -> None:
    async with asgi_client(make_server(probe)) as (app, http):
        client = McpClient(http)
        headers = {"host": host} if origin is None else {"host": host, "origin": origin}
        response = await client.post(INITIALIZE, **headers)
        assert response.status == status
        if status != 200:
            body = await response.json()
            assert "id" not in body
            check_server_message(body, "2025-11-25")
            assert app.manager.statistics().sessions == 0


async def test_dns_rebinding_like_the_conformance_suite(probe: Probe) -> None:
    async with socket_client(make_server(probe)) as http:
        client = McpClient(http)
        foreign = await client.post(
            INITIALIZE, host="evil.example.com", origin="http://evil.example.com"
        )
        assert 400 <= foreign.status < 500
        own = f"{http.host}:{http.port}"
        local = await client.post(INITIALIZE, host=own, origin=f"http://{own}")
        assert local.status == 200


async def test_public_servers_default_to_same_origin(probe: Probe) -> None:
    async with asgi_client(make_server(probe), bind_host="0.0.0.0") as (_, http):
        client = McpClient(http)
        assert (await client.post(INITIALIZE, host="mcp.example.com")).status == 200
        same = await client.post(
            INITIALIZE, host="mcp.example.com", origin="https://mcp.example.com"
        )
        assert same.status == 200
        other = await client.post(
            INITIALIZE, host="mcp.example.com", origin="https://evil.example.com"
        )
        assert other.status == 403


async def test_configured_allow_lists(probe: Probe) -> None:
    options = HttpOptions(
        allowed_hosts=["mcp.internal:8443"], allowed_origins=["https://app.internal"]
    )
    async with asgi_client(make_server(probe), options=options) as (_, http):
        client = McpClient(http)
        assert (await client.post(INITIALIZE, host="mcp.internal:8443")).status == 200
        assert (await client.post(INITIALIZE, host="mcp.internal:9000")).status == 421
        assert (await client.post(INITIALIZE, host="localhost:8000")).status == 421
        ok = await client.post(
            INITIALIZE, host="mcp.internal:8443", origin="https://app.internal:444"
        )
        assert ok.status == 200
        wrong_scheme = await client.post(
            INITIALIZE, host="mcp.internal:8443", origin="http://app.internal"
        )
        assert wrong_scheme.status == 403


def test_guard_patterns() -> None:
    guard = RequestGuard(
        bind_host="10.0.0.1",
        allowed_hosts=["a.example", "b.example:80", "[fe80::1]:*"],
        allowed_origins=["app.example", "https://x.example:8443"],
    )
    assert guard.host_allowed("A.EXAMPLE:1")
    assert guard.host_allowed("b.example:80")
    assert not guard.host_allowed("b.example:81")
    assert guard.host_allowed("[fe80::1]:9")
    assert not guard.host_allowed(None)
    assert guard.origin_allowed("http://app.example:1", "a.example")
    assert guard.origin_allowed("https://x.example:8443", "a.example")
    assert not guard.origin_allowed("https://x.example", "a.example")
    assert guard.origin_allowed(None, "a.example")
    anything = RequestGuard(bind_host="127.0.0.1", allowed_hosts=["*"], allowed_origins=["*"])
    assert anything.host_allowed("evil.example")
    assert anything.origin_allowed("http://evil.example", "evil.example")
    assert is_loopback("127.0.0.2")
    assert is_loopback("[::1]")
    assert not is_loopback("0.0.0.0")


@pytest.mark.parametrize(
    ("header", "json", "sse", "ok"),
    [
        ("application/json, text/event-stream", True, True, True),
        ("text/event-stream;q=0.9, application/json", True, True, True),
        ("*/*", True, True, True),
        ("application/*, text/*", True, True, True),
        ("application/json", True, True, False),
        ("application/json", True, False, True),
        (None, True, False, False),
    ],
)
def test_accept_header(header: str | None, json: bool, sse: bool, ok: bool) -> None:
    assert accepts(header, json=json, event_stream=sse) is ok


async def test_bodies_over_the_limit_are_413(probe: Probe) -> None:
    options = HttpOptions(max_body_bytes=1024)
    async with asgi_client(make_server(probe), options=options) as (_, http):
        client = await initialized(http)
        big = client.request("tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}})
        big["params"]["_meta"] = {"padding": "x" * 2000}
        response = await client.post(big)
        assert response.status == 413
        assert (await response.json())["error"]["code"] == -32600
    async with socket_client(make_server(probe), options=options) as sockets:
        headers = {"accept": "application/json, text/event-stream"}
        headers["content-type"] = "application/json"
        refused = await sockets.request("POST", "/mcp", headers, orjson.dumps(big))
        assert refused.status == 413


async def test_authentication_hook(probe: Probe) -> None:
    async def authenticate(headers: Mapping[str, str]) -> str | None:
        token = headers.get("authorization", "")
        return {"Bearer alice": "alice", "Bearer bob": "bob"}.get(token)

    options = HttpOptions(
        authenticate=authenticate,
        www_authenticate='Bearer resource_metadata="http://localhost/.well-known/x"',
    )
    async with asgi_client(make_server(probe), options=options) as (_, http):
        anonymous = await McpClient(http).post(INITIALIZE)
        assert anonymous.status == 401
        assert anonymous.headers["www-authenticate"].startswith("Bearer resource_metadata=")
        alice = McpClient(http)
        alice_headers = {"authorization": "Bearer alice"}
        response = await alice.post(INITIALIZE, **alice_headers)
        assert response.status == 200
        alice.session_id = response.headers["mcp-session-id"]
        assert (await alice.post(alice.request("ping"), **alice_headers)).status == 200
        # Bob cannot use Alice's session, even with its id.
        assert (await alice.post(alice.request("ping"), authorization="Bearer bob")).status == 404
        assert (await alice.post(alice.request("ping"))).status == 401


async def test_no_cors_headers_unless_configured(probe: Probe) -> None:
    async with asgi_client(make_server(probe)) as (_, http):
        response = await McpClient(http).post(INITIALIZE, origin="http://localhost:5173")
        assert response.status == 200
        assert not [h for h in response.headers if h.startswith("access-control")]
        preflight = await http.request("OPTIONS", "/mcp", {"origin": "http://localhost:5173"})
        assert preflight.status == 405

    options = HttpOptions(cors_origins=["http://localhost:5173"])
    async with asgi_client(make_server(probe), options=options) as (_, http):
        preflight = await http.request(
            "OPTIONS",
            "/mcp",
            {"origin": "http://localhost:5173", "access-control-request-method": "POST"},
        )
        assert preflight.status == 204
        assert preflight.headers["access-control-allow-origin"] == "http://localhost:5173"
        assert "mcp-session-id" in preflight.headers["access-control-allow-headers"]
        response = await McpClient(http).post(INITIALIZE, origin="http://localhost:5173")
        assert response.headers["access-control-allow-origin"] == "http://localhost:5173"
        assert "mcp-session-id" in response.headers["access-control-expose-headers"]
        other = await http.request("OPTIONS", "/mcp", {"origin": "http://localhost:9999"})
        assert other.status == 403


async def test_a_notifications_202_carries_the_cors_headers(probe: Probe) -> None:
    # A browser client treats an answer without them as a failed request: the official
    # TypeScript client's initialize failed at its notifications/initialized.
    page = "http://localhost:5173"
    options = HttpOptions(cors_origins=[page])
    notification = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    async with asgi_client(make_server(probe), options=options) as (_, http):
        session = await initialized(http)
        accepted = await session.post(notification, origin=page)
        assert accepted.status == 202
        assert accepted.headers["access-control-allow-origin"] == page
        stateless = McpClient(http)
        stateless.protocol_version = "2026-07-28"
        accepted = await stateless.post(notification, origin=page)
        assert accepted.status == 202
        assert accepted.headers["access-control-allow-origin"] == page


def test_remembered_host_verdicts_stay_right_past_the_cache_size() -> None:
    guard = RequestGuard(bind_host="127.0.0.1")
    for round_ in range(2):
        for number in range(600):
            assert not guard.host_allowed(f"evil{number}.example:{round_}")
            assert guard.host_allowed("localhost:8000")
        assert guard.host_allowed("127.0.0.1:9")
        assert not guard.host_allowed("127.0.0.2")


def test_remembered_host_and_origin_verdicts_stay_right_past_the_cache_size() -> None:
    guard = RequestGuard(bind_host="127.0.0.1", cors_origins=["http://localhost:5173"])
    for round_ in range(2):
        for number in range(600):
            refused = guard.verdicts[f"evil{number}.example:{round_}", None]
            assert (refused.status, refused.why) == (421, "Host header not allowed")
            origin = guard.verdicts["localhost:8000", f"http://evil{number}.example"]
            assert (origin.status, origin.cors) == (403, ())
            assert guard.verdicts["localhost:8000", None].status == 200
        cors = guard.verdicts["127.0.0.1:9", "http://localhost:5173"]
        assert cors.status == 200
        assert (b"access-control-allow-origin", b"http://localhost:5173") in cors.cors
        assert guard.verdicts["[::1", None].framing == "malformed Host header"
        assert guard.verdicts["a, b", None].framing == "more than one Host header"
        assert len(guard.verdicts) <= 256


@pytest.mark.parametrize(
    "host",
    [
        "[::1]evil.example",
        "[::1].evil.example:80",
        "[::1]:80x",
        "[::1]:80:80",
        "[::1",
        "[nonsense]",
        "127.0.0.1:80:80",
        "127.0.0.1:",
        "localhost:99999",
        "localhost:123456",
        "localhost/evil",
        "user@localhost",
        "localhost evil",
        "localhost,evil.example",
        "local%68ost",
        "",
        "x" * 400,
    ],
)
def test_malformed_hosts_match_no_pattern(host: str) -> None:
    guard = RequestGuard(bind_host="127.0.0.1")
    assert parse_host(host) is None
    assert not guard.host_allowed(host)
    assert not guard.origin_allowed(f"http://{host}", "localhost")


@pytest.mark.parametrize(
    ("host", "parsed"),
    [
        ("localhost", ("localhost", None)),
        ("LocalHost:8000", ("localhost", "8000")),
        ("[::1]:1", ("[::1]", "1")),
        ("[0:0::1]", ("[0:0::1]", None)),
        ("127.0.0.1:65535", ("127.0.0.1", "65535")),
        (" mcp.example.com ", ("mcp.example.com", None)),
    ],
)
def test_hosts_parse_into_name_and_port(host: str, parsed: tuple[str, str | None]) -> None:
    assert parse_host(host) == parsed


def test_a_host_parses_the_same_every_time_and_an_overlong_one_is_not_kept() -> None:
    # parse_host is cached: the second answer is the first, and a value past the
    # authority limit is refused before it could become a key.
    assert parse_host("Cached.Example:8080") == parse_host("Cached.Example:8080")
    assert parse_host("cached.example:8080") == ("cached.example", "8080")
    before = _parse_host.cache_info().currsize
    for n in range(50):
        assert parse_host("h" * 400 + str(n)) is None
    assert _parse_host.cache_info().currsize == before


@pytest.mark.parametrize(
    ("origin", "allowed"),
    [
        ("http://localhost:5173", True),
        ("https://[::1]", True),
        ("ftp://localhost", False),
        ("chrome-extension://localhost", False),
        ("file://localhost", False),
        ("http://localhost/", False),
        ("http://localhost/app", False),
        ("http://[::1]evil.example", False),
        ("http://user@localhost", False),
        ("localhost", False),
        ("null", False),
        ("http://", False),
    ],
)
def test_loopback_origins_are_http_or_https_and_nothing_else(origin: str, allowed: bool) -> None:
    guard = RequestGuard(bind_host="127.0.0.1")
    assert guard.origin_allowed(origin, "localhost:8000") is allowed


def test_a_pattern_with_a_scheme_takes_that_scheme_and_bad_patterns_are_refused() -> None:
    guard = RequestGuard(bind_host="10.0.0.1", allowed_origins=["chrome-extension://abc"])
    assert guard.origin_allowed("chrome-extension://abc", "a.example")
    assert not guard.origin_allowed("http://abc", "a.example")
    with pytest.raises(ValueError, match="not a host pattern"):
        RequestGuard(bind_host="127.0.0.1", allowed_hosts=["evil/path"])


@pytest.mark.parametrize("http_server", ["builtin", "hypercorn"])
async def test_headers_sent_as_trailers_do_not_authenticate(
    probe: Probe, http_server: HttpServerKind
) -> None:
    # A chunked body's trailer fields come after the body: never request headers, so an
    # Authorization (or Host, Origin, Mcp-Session-Id) there meets no check and counts
    # for nothing.
    options = HttpOptions(authenticate=lambda headers: headers.get("authorization") == "ok")
    body = orjson.dumps(INITIALIZE)
    async with socket_client(make_server(probe), options=options, http_server=http_server) as h:
        async with await trio.open_tcp_stream(h.host, h.port) as stream:
            await stream.send_all(
                b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n"
                b"Accept: application/json, text/event-stream\r\n"
                b"Content-Type: application/json\r\n\r\n"
                + b"%x\r\n%b\r\n0\r\nAuthorization: ok\r\n\r\n"
                % (len(body), body)
            )
            answer = await stream.receive_some(65536)
        assert answer.startswith(b"HTTP/1.1 401 ")
        accepted = await h.request("POST", "/mcp", {**_MCP, "authorization": "ok"}, body)
        assert accepted.status == 200


_MCP = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
