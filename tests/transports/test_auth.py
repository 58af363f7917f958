"""Resource-server mode over the HTTP transport: metadata, challenges, scopes, binding.

The tokens are checked by a verifier of this module that knows a few fixed tokens; the
verifiers that check real JWTs and introspect are tested on their own.
"""

from __future__ import annotations

import math
from typing import Any

import orjson
import pytest
import trio
import trio.testing

from mcpactor import Context, Server
from mcpactor.auth import (
    InvalidToken,
    Principal,
    ResourceServer,
    VerifierUnavailable,
)
from mcpactor.transports import HttpOptions
from mcpactor.transports.http import HttpServerKind

from ._http_client import ACCEPT_BOTH, AsgiClient, McpClient, Response, read_reply, start_post
from ._http_server import Probe, asgi_client, make_server, socket_client

RESOURCE = "https://mcp.example.com/mcp"
ISSUER = "https://auth.example.com"
METADATA = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
REVISION_2026 = "2026-07-28"


def principal(subject: str, *scopes: str, client_id: str = "app") -> Principal:
    return Principal(subject, issuer=ISSUER, client_id=client_id, scopes=frozenset(scopes))


class Tokens:
    """A verifier that knows fixed tokens; ``expire`` makes one invalid from now on."""

    def __init__(self, known: dict[str, Principal]) -> None:
        self.known = dict(known)
        self.expired: set[str] = set()
        self.seen: list[str] = []
        self.down = False

    def expire(self, token: str) -> None:
        self.expired.add(token)

    async def verify(self, token: str) -> Principal:
        self.seen.append(token)
        if self.down:
            # An issuer that never answers: the resource server's deadline must end it.
            await trio.sleep_forever()
        if token in self.expired:
            raise InvalidToken("the token has expired")
        found = self.known.get(token)
        if found is None:
            raise InvalidToken("the token is not known")
        return found


TOKENS = {
    "alice": principal("alice", "mcp"),
    "alice-admin": principal("alice", "mcp", "admin"),
    "bob": principal("bob", "mcp"),
    "noscope": principal("carol"),
}


@pytest.fixture
def tokens() -> Tokens:
    return Tokens(TOKENS)


def auth_server(probe: Probe) -> Server:
    server = make_server(probe)

    @server.tool(scopes=["admin"])
    async def wipe() -> str:
        """Only for admins."""
        return "wiped"

    @server.tool()
    async def whoami(ctx: Context) -> str:
        """The caller's subject and scopes."""
        caller = ctx.principal
        assert caller is not None
        return f"{caller.subject} {' '.join(sorted(caller.scopes))}"

    @server.tool()
    async def escalate(ctx: Context) -> str:
        """Demands the admin scope at call time (step-up)."""
        ctx.require_scopes("admin")
        return "escalated"

    @server.resource("secret://vault", scopes=["admin"])
    async def vault() -> str:
        """A resource for admins."""
        return "gold"

    @server.prompt(scopes=["admin"])
    async def confess() -> str:
        """A prompt for admins."""
        return "tell"

    return server


def options(tokens: Tokens, **extra: Any) -> HttpOptions:
    return HttpOptions(
        resource_server=ResourceServer(
            resource=RESOURCE,
            authorization_servers=[ISSUER],
            verifier=tokens,
            required_scopes=["mcp"],
            **extra,
        )
    )


def bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


def challenge(response: Response) -> dict[str, str]:
    # The Bearer challenge's parameters (our own challenges: no commas inside values).
    value = response.headers["www-authenticate"]
    scheme, _, rest = value.partition(" ")
    assert scheme == "Bearer"
    params = {}
    for part in rest.split(", "):
        name, _, quoted = part.partition("=")
        assert quoted.startswith('"'), value
        assert quoted.endswith('"'), value
        params[name] = quoted[1:-1]
    return params


class Caller(McpClient):
    """An MCP client that sends a bearer token with every request."""

    def __init__(self, http: AsgiClient, token: str | None) -> None:
        super().__init__(http)
        self.token = token

    def headers(self, **extra: str) -> dict[str, str]:
        headers = super().headers(**extra)
        if self.token is not None:
            headers.setdefault("authorization", f"Bearer {self.token}")
        return headers


async def caller(http: AsgiClient, token: str) -> Caller:
    client = Caller(http, token)
    await client.initialize()
    return client


def call(client: McpClient, tool: str, **arguments: Any) -> dict[str, Any]:
    return client.request("tools/call", {"name": tool, "arguments": arguments})


# --- the metadata document ------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    ["/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"],
)
async def test_the_metadata_is_served_without_a_token(tokens: Tokens, path: str) -> None:
    async with asgi_client(auth_server(Probe()), options=options(tokens)) as (_, http):
        response = await http.request("GET", path, {})
        assert response.status == 200
        assert response.content_type == "application/json"
        document = await response.json()
    assert document["resource"] == RESOURCE
    assert document["authorization_servers"] == [ISSUER]
    # The required scope first, then those the tools, resources and prompts declare.
    assert document["scopes_supported"] == ["mcp", "admin"]
    assert document["bearer_methods_supported"] == ["header"]
    assert tokens.seen == []


async def test_the_metadata_path_of_a_proxied_resource_is_served_too(tokens: Tokens) -> None:
    # Behind a proxy mapping /tenant/mcp to /mcp, clients ask for the resource URL's form.
    rs = options(tokens).resource_server
    assert rs is not None
    proxied = HttpOptions(
        resource_server=ResourceServer(
            resource="https://gw.example.com/tenant/mcp",
            authorization_servers=rs.authorization_servers,
            verifier=tokens,
        )
    )
    async with asgi_client(Server("plain"), options=proxied) as (_, http):
        for path in (
            "/.well-known/oauth-protected-resource/tenant/mcp",
            "/.well-known/oauth-protected-resource/mcp",
        ):
            response = await http.request("GET", path, {})
            assert response.status == 200, path
            assert (await response.json())["resource"] == "https://gw.example.com/tenant/mcp"
        response = await http.request("POST", "/.well-known/oauth-protected-resource", {})
        assert response.status == 405


async def test_the_metadata_carries_cors_headers_when_configured(tokens: Tokens) -> None:
    base = options(tokens)
    configured = HttpOptions(
        resource_server=base.resource_server, cors_origins=["https://app.example.com"]
    )
    async with asgi_client(Server("plain"), options=configured) as (_, http):
        response = await http.request(
            "GET",
            "/.well-known/oauth-protected-resource/mcp",
            {"origin": "https://app.example.com"},
        )
        assert response.status == 200
        assert response.headers["access-control-allow-origin"] == "https://app.example.com"


# --- admission ------------------------------------------------------------------------


async def test_no_token_is_401_with_the_metadata_url_and_scope(tokens: Tokens) -> None:
    async with asgi_client(auth_server(Probe()), options=options(tokens)) as (_, http):
        client = Caller(http, None)
        response = await client.post(client.request("ping"))
        assert response.status == 401
        assert challenge(response) == {"scope": "mcp", "resource_metadata": METADATA}
        body = await response.json()
        assert body["error"]["code"] == -32600
        # Another scheme is no bearer token either.
        response = await client.post(client.request("ping"), authorization="Basic YTpi")
        assert response.status == 401
        assert "error" not in challenge(response)


async def test_a_bad_token_is_401_invalid_token(tokens: Tokens) -> None:
    async with asgi_client(auth_server(Probe()), options=options(tokens)) as (_, http):
        client = Caller(http, "forged")
        response = await client.post(client.request("ping"))
        assert response.status == 401
        params = challenge(response)
        assert params["error"] == "invalid_token"
        assert params["error_description"] == "the token is not known"
        assert params["resource_metadata"] == METADATA
        # Not token68 at all: refused before the verifier sees it.
        client.token = "not\x01a token"
        response = await client.post(client.request("ping"))
        assert response.status in (400, 401)
        assert "not\x01a" not in (await response.body()).decode()
    assert tokens.seen == ["forged"]


@pytest.mark.parametrize(
    "authorization",
    ["Bearer", "Bearer a b", "Bearer alice, Bearer bob"],
)
async def test_a_malformed_authorization_header_is_400(tokens: Tokens, authorization: str) -> None:
    async with asgi_client(auth_server(Probe()), options=options(tokens)) as (_, http):
        client = Caller(http, None)
        response = await client.post(client.request("ping"), authorization=authorization)
        assert response.status == 400
        assert challenge(response)["error"] == "invalid_request"
    assert tokens.seen == []


async def test_a_token_in_the_query_string_is_400(tokens: Tokens) -> None:
    async with asgi_client(auth_server(Probe()), options=options(tokens)) as (_, http):
        client = Caller(http, "alice")
        client.path = "/mcp?access_token=alice"
        response = await client.post(client.request("ping"))
        assert response.status == 400
        params = challenge(response)
        assert params["error"] == "invalid_request"
        assert "query" in params["error_description"]
        assert b"alice" not in await response.body()
    assert tokens.seen == []


async def test_a_token_without_the_required_scope_is_403(tokens: Tokens) -> None:
    async with asgi_client(auth_server(Probe()), options=options(tokens)) as (_, http):
        client = Caller(http, "noscope")
        response = await client.post(client.request("ping"))
        assert response.status == 403
        params = challenge(response)
        assert params["error"] == "insufficient_scope"
        assert params["scope"] == "mcp"
        body = await response.json()
        assert body["error"]["code"] == -32010
        assert body["error"]["data"] == {"requiredScopes": ["mcp"]}


async def test_a_verifier_that_hangs_gives_503_in_bounded_time(
    tokens: Tokens, autojump_clock: trio.testing.MockClock
) -> None:
    tokens.down = True
    async with asgi_client(auth_server(Probe()), options=options(tokens, verify_timeout=2.0)) as (
        _,
        http,
    ):
        client = Caller(http, "alice")
        started = trio.current_time()
        response = await client.post(client.request("ping"))
        assert trio.current_time() - started == pytest.approx(2.0)
        assert response.status == 503
        assert "www-authenticate" not in response.headers
        body = await response.json()
        assert body["error"]["code"] == -32603
        assert "could not be checked" in body["error"]["message"]


async def test_a_verifier_that_is_down_gives_503() -> None:
    class Down:
        async def verify(self, token: str) -> Principal:
            raise VerifierUnavailable("the issuer https://auth.example.com is unreachable")

    down = HttpOptions(
        resource_server=ResourceServer(
            resource=RESOURCE, authorization_servers=[ISSUER], verifier=Down()
        )
    )
    async with asgi_client(Server("plain"), options=down) as (_, http):
        client = Caller(http, "alice")
        response = await client.post(client.request("ping"))
        assert response.status == 503
        assert "unreachable" in (await response.json())["error"]["message"]
        assert "retry-after" not in response.headers


async def test_a_verifier_that_says_when_to_retry_gives_503_with_retry_after() -> None:
    # a key rotation seen while key fetches are rate-limited: the client keeps its token
    class Later:
        async def verify(self, token: str) -> Principal:
            raise VerifierUnavailable("the keys may be fetched again in 12 s", retry_after=11.2)

    later = HttpOptions(
        resource_server=ResourceServer(
            resource=RESOURCE, authorization_servers=[ISSUER], verifier=Later()
        ),
        cors_origins=["https://app.example.com"],
    )
    async with asgi_client(Server("plain"), options=later) as (_, http):
        client = Caller(http, "alice")
        response = await client.post(client.request("ping"), origin="https://app.example.com")
        assert response.status == 503
        assert response.headers["retry-after"] == "12"
        assert "www-authenticate" not in response.headers
        assert "retry-after" in response.headers["access-control-expose-headers"]


async def test_authenticate_and_resource_server_together_are_refused(tokens: Tokens) -> None:
    rs = options(tokens).resource_server
    with pytest.raises(ValueError, match="give one"):
        HttpOptions(resource_server=rs, authenticate=lambda headers: "someone")


# --- scopes per tool, resource and prompt ----------------------------------------------


async def test_a_tool_needing_a_scope_is_403_from_the_body(tokens: Tokens) -> None:
    async with asgi_client(auth_server(Probe()), options=options(tokens)) as (_, http):
        client = await caller(http, "alice")
        message = call(client, "wipe")
        response = await client.post(message)
        assert response.status == 403
        params = challenge(response)
        assert params["error"] == "insufficient_scope"
        assert params["scope"] == "mcp admin"
        assert params["resource_metadata"] == METADATA
        body = await response.json()
        assert body["id"] == message["id"]
        assert body["error"]["data"] == {"requiredScopes": ["mcp", "admin"]}
        for method, params_ in (
            ("resources/read", {"uri": "secret://vault"}),
            ("prompts/get", {"name": "confess"}),
        ):
            response = await client.post(client.request(method, params_))
            assert response.status == 403, method
        # With the scope, the same call goes through.
        client.token = "alice-admin"
        reply = await client.call("tools/call", {"name": "wipe", "arguments": {}})
        assert reply["result"]["content"][0]["text"] == "wiped"


async def test_a_tool_needing_a_scope_is_403_from_mcp_name(tokens: Tokens) -> None:
    async with asgi_client(auth_server(Probe()), options=options(tokens)) as (_, http):
        message = {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": {
                "name": "wipe",
                "arguments": {},
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": REVISION_2026,
                    "io.modelcontextprotocol/clientCapabilities": {},
                    "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
                },
            },
        }
        headers = {
            "accept": ACCEPT_BOTH,
            "content-type": "application/json",
            "mcp-protocol-version": REVISION_2026,
            "mcp-method": "tools/call",
            "mcp-name": "wipe",
        }
        response = await http.request(
            "POST", "/mcp", {**headers, **bearer("alice")}, orjson.dumps(message)
        )
        assert response.status == 403
        assert challenge(response)["scope"] == "mcp admin"
        assert (await response.json())["id"] == 7
        response = await http.request(
            "POST", "/mcp", {**headers, **bearer("alice-admin")}, orjson.dumps(message)
        )
        assert response.status == 200
        assert (await response.json())["result"]["content"][0]["text"] == "wiped"


async def test_step_up_from_a_handler_is_403_with_its_scopes(tokens: Tokens) -> None:
    async with asgi_client(auth_server(Probe()), options=options(tokens)) as (_, http):
        client = await caller(http, "alice")
        message = call(client, "escalate")
        response = await client.post(message)
        assert response.status == 403
        params = challenge(response)
        assert params["error"] == "insufficient_scope"
        assert params["scope"] == "mcp admin"
        body = await response.json()
        assert body["id"] == message["id"]
        assert body["error"]["code"] == -32010
        assert "admin" in body["error"]["data"]["requiredScopes"]
        # The session lives on: the same caller, stepped up, is answered in it.
        client.token = "alice-admin"
        reply = await client.call("tools/call", {"name": "escalate", "arguments": {}})
        assert reply["result"]["content"][0]["text"] == "escalated"


# --- binding to the principal ------------------------------------------------------------


async def test_another_principals_session_is_404(tokens: Tokens) -> None:
    async with asgi_client(auth_server(Probe()), options=options(tokens)) as (_, http):
        alice = await caller(http, "alice")
        mallory = Caller(http, "bob")
        mallory.session_id = alice.session_id
        mallory.protocol_version = alice.protocol_version
        response = await mallory.post(call(mallory, "add", a=1, b=2))
        assert response.status == 404
        response = await mallory.get()
        assert response.status == 404
        response = await mallory.get(last_event_id="0")
        assert response.status == 404
        response = await mallory.delete()
        assert response.status == 404
        # Alice's session is untouched.
        reply = await alice.call("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})
        assert reply["result"]["structuredContent"] == {"result": 3}


async def test_resuming_another_principals_stream_is_404(tokens: Tokens) -> None:
    probe = Probe()
    async with asgi_client(auth_server(probe), options=options(tokens)) as (_, http):
        alice = await caller(http, "alice")
        held = alice.request("tools/call", {"name": "hold", "_meta": {"progressToken": 1}})
        response = await alice.post(held)
        assert response.status == 200
        first = await response.next_event()
        while first is not None and first.id is None:
            first = await response.next_event()
        assert first is not None
        assert first.id is not None
        await response.disconnect()
        mallory = Caller(http, "bob")
        mallory.session_id = alice.session_id
        mallory.protocol_version = alice.protocol_version
        refused = await mallory.get(last_event_id=first.id)
        assert refused.status == 404
        probe.release.set()
        resumed = await alice.get(last_event_id=first.id)
        assert resumed.status == 200
        messages = await resumed.messages()
        assert messages[-1]["result"]["content"][0]["text"] == "released"


async def test_a_refreshed_token_of_the_same_caller_keeps_the_session(tokens: Tokens) -> None:
    async with asgi_client(auth_server(Probe()), options=options(tokens)) as (_, http):
        client = await caller(http, "alice")
        reply = await client.call("tools/call", {"name": "whoami", "arguments": {}})
        assert reply["result"]["content"][0]["text"] == "alice mcp"
        # A new token of the same identity, with a scope more: the handlers see it.
        client.token = "alice-admin"
        reply = await client.call("tools/call", {"name": "whoami", "arguments": {}})
        assert reply["result"]["content"][0]["text"] == "alice admin mcp"


async def test_an_expired_token_is_401_and_in_flight_work_completes(tokens: Tokens) -> None:
    probe = Probe()
    async with asgi_client(auth_server(probe), options=options(tokens)) as (_, http):
        client = await caller(http, "alice")
        held = start_post(client, call(client, "hold_quietly"))
        await probe.started.wait()
        tokens.expire("alice")
        response = await client.post(call(client, "add", a=1, b=2))
        assert response.status == 401
        assert challenge(response)["error"] == "invalid_token"
        probe.release.set()
        answer = await read_reply(await held.wait())
        assert answer["result"]["content"][0]["text"] == "released"
        # The session itself goes on with a fresh token of the same caller.
        client.token = "alice-admin"
        reply = await client.call("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})
        assert reply["result"]["structuredContent"] == {"result": 3}


# --- over a socket: the built-in server, WebSocket denial ---------------------------------


@pytest.mark.parametrize("http_server", ["builtin", "hypercorn"])
async def test_over_a_socket_and_websocket_refusals_carry_the_challenge(
    tokens: Tokens, http_server: HttpServerKind
) -> None:
    async with socket_client(
        auth_server(Probe()), options=options(tokens), http_server=http_server
    ) as http:
        response = await http.request("GET", "/.well-known/oauth-protected-resource/mcp", {})
        assert response.status == 200
        assert (await response.json())["resource"] == RESOURCE
        upgrade = {
            "connection": "Upgrade",
            "upgrade": "websocket",
            "sec-websocket-version": "13",
            "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==",
            "sec-websocket-protocol": "mcp",
        }
        refused = await http.request("GET", "/ws", upgrade)
        assert refused.status == 401
        assert challenge(refused)["resource_metadata"] == METADATA
        assert (await refused.json())["error"]["code"] == -32600
        accepted = await http.request("GET", "/ws", {**upgrade, **bearer("alice")})
        assert accepted.status == 101
        await accepted.disconnect()


async def test_legacy_sse_is_authorized_and_bound(tokens: Tokens) -> None:
    async with asgi_client(auth_server(Probe()), options=options(tokens)) as (_, http):
        refused = await http.request("GET", "/sse", {"accept": "text/event-stream"})
        assert refused.status == 401
        stream = await http.request(
            "GET", "/sse", {"accept": "text/event-stream", **bearer("alice")}
        )
        assert stream.status == 200
        endpoint = await stream.next_event()
        assert endpoint is not None
        assert endpoint.event == "endpoint"
        assert endpoint.data
        post = {"content-type": "application/json"}
        message = orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"})
        response = await http.request("POST", endpoint.data, {**post, **bearer("bob")}, message)
        assert response.status == 404
        response = await http.request("POST", endpoint.data, {**post, **bearer("alice")}, message)
        assert response.status == 202
        await stream.disconnect()


def test_resource_server_settings_are_checked(tokens: Tokens) -> None:
    with pytest.raises(ValueError, match="resource"):
        ResourceServer(resource="mcp.example.com", authorization_servers=[ISSUER], verifier=tokens)
    with pytest.raises(ValueError, match="fragment"):
        ResourceServer(resource=RESOURCE + "#x", authorization_servers=[ISSUER], verifier=tokens)
    with pytest.raises(ValueError, match="at least one"):
        ResourceServer(resource=RESOURCE, authorization_servers=[], verifier=tokens)
    with pytest.raises(ValueError, match="scope"):
        ResourceServer(
            resource=RESOURCE,
            authorization_servers=[ISSUER],
            verifier=tokens,
            required_scopes=['a"b'],
        )
    with pytest.raises(TypeError, match="verify"):
        ResourceServer(resource=RESOURCE, authorization_servers=[ISSUER], verifier=object())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="verify_timeout"):
        ResourceServer(
            resource=RESOURCE,
            authorization_servers=[ISSUER],
            verifier=tokens,
            verify_timeout=math.nan,
        )


def test_a_challenge_description_is_quoted_and_bounded(tokens: Tokens) -> None:
    rs = ResourceServer(resource=RESOURCE, authorization_servers=[ISSUER], verifier=tokens)
    value = rs.challenge(InvalidToken('bad "quote" \\ and\nnewline' + "x" * 1000))
    description = value.split('error_description="', 1)[1]
    assert description.endswith('"')
    inner = description[:-1]
    assert '"' not in inner
    assert "\\" not in inner
    assert "\n" not in inner
    assert len(inner) <= 200


def envelope_call(name: str, request_id: int = 9) -> tuple[dict[str, Any], dict[str, str]]:
    message = {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {
            "name": name,
            "arguments": {},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": REVISION_2026,
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
            },
        },
    }
    headers = {
        "accept": ACCEPT_BOTH,
        "content-type": "application/json",
        "mcp-protocol-version": REVISION_2026,
        "mcp-method": "tools/call",
        "mcp-name": name,
    }
    return message, headers


async def test_a_2026_request_is_authorized_and_stepped_up(tokens: Tokens) -> None:
    async with asgi_client(auth_server(Probe()), options=options(tokens)) as (_, http):
        message, headers = envelope_call("escalate")
        response = await http.request("POST", "/mcp", headers, orjson.dumps(message))
        assert response.status == 401
        assert challenge(response)["resource_metadata"] == METADATA
        response = await http.request(
            "POST", "/mcp", {**headers, **bearer("alice")}, orjson.dumps(message)
        )
        assert response.status == 403
        assert challenge(response)["scope"] == "mcp admin"
        body = await response.json()
        assert body["id"] == 9
        assert body["error"]["code"] == -32010
        message, headers = envelope_call("whoami")
        response = await http.request(
            "POST", "/mcp", {**headers, **bearer("alice-admin")}, orjson.dumps(message)
        )
        assert response.status == 200
        assert (await response.json())["result"]["content"][0]["text"] == "alice admin mcp"


async def test_hide_unauthorized_leaves_out_what_the_caller_may_not_call(tokens: Tokens) -> None:
    async with asgi_client(
        auth_server(Probe()), options=options(tokens, hide_unauthorized=True)
    ) as (_, http):
        alice = await caller(http, "alice")
        names = [tool["name"] for tool in (await alice.call("tools/list"))["result"]["tools"]]
        assert "add" in names
        assert "wipe" not in names
        admin = await caller(http, "alice-admin")
        names = [tool["name"] for tool in (await admin.call("tools/list"))["result"]["tools"]]
        assert "wipe" in names


async def test_the_access_log_shows_no_token(
    tokens: Tokens, caplog: pytest.LogCaptureFixture
) -> None:
    logged = HttpOptions(resource_server=options(tokens).resource_server, access_log=True)
    with caplog.at_level("INFO", logger="mcpactor.access"):
        async with asgi_client(auth_server(Probe()), options=logged) as (_, http):
            client = Caller(http, "alice")
            client.path = "/mcp?access_token=alice"
            assert (await client.post(client.request("ping"))).status == 400
            client.path = "/mcp"
            await client.initialize()
    lines = [record.getMessage() for record in caplog.records if record.name == "mcpactor.access"]
    assert len(lines) >= 3
    assert not any("alice" in line for line in lines)
