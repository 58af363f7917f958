"""``mcpactor serve --http`` as a resource server of a real authorization server, end to end.

The authorization server is oidc-provider on Node (``oidc/provider.mjs``); the resource
server is ``guarded_server.py`` in its own process, trusting it with ``--auth-issuer``
and ``--auth-resource``, and requiring the ``mcp`` scope of every request. Clients are the
official SDK (its whole OAuth flow: metadata discovery from the 401, registration, code +
PKCE, the token, a tool call) and plain HTTP requests with tokens got from the provider,
for what the SDK would never send.
"""

from __future__ import annotations

import base64
import functools
import os
import re
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import attrs
import httpx2
import orjson
import pytest
import trio
from mcp import ClientSession
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)
from pydantic import AnyUrl

from ..interop._sdk_client import free_port
from ._provider import TIMEOUT, OidcProvider, follow_authorization

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

SERVER = Path(__file__).with_name("guarded_server.py")
SESSION_REVISION = "2025-11-25"
STATELESS_REVISION = "2026-07-28"
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
ACCEPT = "application/json, text/event-stream"
#: where the SDK client says it listens for its code; the redirect is read, not followed
SDK_REDIRECT = "http://127.0.0.1:5999/callback"


@attrs.frozen
class Guarded:
    """A running guarded server: its endpoint (the resource) and what it printed."""

    url: str
    output: list[str]

    @property
    def metadata_url(self) -> str:
        """Where its protected resource metadata is (RFC 9728 §3.1, path-suffixed)."""
        origin, path = self.url.split("/mcp", 1)
        return f"{origin}/.well-known/oauth-protected-resource/mcp{path}"


@contextmanager
def serving_guarded(provider: OidcProvider, *extra: str) -> Iterator[Guarded]:
    """Run ``guarded_server.py`` trusting ``provider``; yield it once it listens."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    command = [
        sys.executable,
        "-m",
        "mcpactor",
        "serve",
        str(SERVER),
        "--http",
        f"127.0.0.1:{port}",
        "--auth-issuer",
        provider.issuer,
        "--auth-resource",
        url,
        "--auth-scope",
        "mcp",
        *extra,
    ]
    process = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
    )
    output: list[str] = []
    assert process.stderr is not None
    stderr = process.stderr
    try:
        # The server says where it listens once it does: no polling, no sleeping.
        for line in stderr:
            output.append(line.decode(errors="replace"))
            if b"serving http://" in line:
                break
        else:
            code = process.wait()
            raise AssertionError(f"the server exited with {code}:\n{''.join(output)}")
        # Its log goes on being read, so a full pipe never stops it.
        drain = threading.Thread(
            target=lambda: output.extend(line.decode(errors="replace") for line in stderr),
            daemon=True,
        )
        drain.start()
        yield Guarded(url, output)
    finally:
        process.terminate()
        process.wait(timeout=TIMEOUT)
        stderr.close()


@pytest.fixture(scope="module")
def guarded(oidc_provider: OidcProvider) -> Iterator[Guarded]:
    with serving_guarded(oidc_provider) as served:
        yield served


@pytest.fixture(scope="module")
def introspecting(
    oidc_provider: OidcProvider, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Guarded]:
    """A guarded server that also introspects opaque tokens, as the provider's client."""
    client = oidc_provider.introspector
    assert client.client_secret is not None
    secret = tmp_path_factory.mktemp("introspection") / "client-secret"
    secret.write_text(client.client_secret + "\n")
    credentials = ("--auth-client-id", client.client_id, "--auth-client-secret-file", str(secret))
    with serving_guarded(oidc_provider, *credentials) as served:
        yield served


# --- plain HTTP ---------------------------------------------------------------------------


def challenge(response: httpx2.Response) -> dict[str, str]:
    """The parameters of a ``WWW-Authenticate: Bearer`` challenge (RFC 6750 §3)."""
    header = response.headers.get("www-authenticate", "")
    assert header.startswith("Bearer"), (response.status_code, header)
    return dict(re.findall(r'(\w+)="([^"]*)"', header))


def reply_of(response: httpx2.Response, request_id: int) -> dict[str, Any]:
    """The JSON-RPC answer to ``request_id`` in a JSON or an SSE response."""
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        for line in response.text.splitlines():
            if line.startswith("data:"):
                message = orjson.loads(line[5:])
                if isinstance(message, dict) and message.get("id") == request_id:
                    return message
        raise AssertionError(f"no answer to {request_id} in {response.text[:500]!r}")
    message = response.json()
    assert message.get("id") == request_id, message
    assert isinstance(message, dict)
    return message


class Caller:
    """Plain MCP requests over HTTP with one bearer token (or none)."""

    def __init__(self, http: httpx2.AsyncClient, url: str, token: str | None) -> None:
        self.http = http
        self.url = url
        self.token = token
        self.session: str | None = None
        self._next_id = 0

    def headers(self, **extra: str) -> dict[str, str]:
        headers = {"accept": ACCEPT, "content-type": "application/json"}
        if self.token is not None:
            headers["authorization"] = f"Bearer {self.token}"
        if self.session is not None:
            headers["mcp-session-id"] = self.session
            headers["mcp-protocol-version"] = SESSION_REVISION
        headers.update(extra)
        return headers

    def message(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self._next_id += 1
        return {"jsonrpc": "2.0", "id": self._next_id, "method": method, "params": params or {}}

    async def post(self, message: dict[str, Any], **headers: str) -> httpx2.Response:
        return await self.http.post(
            self.url, content=orjson.dumps(message), headers=self.headers(**headers)
        )

    async def initialize(self) -> str:
        """Open a session (initialize, then initialized); returns its id."""
        message = self.message(
            "initialize",
            {
                "protocolVersion": SESSION_REVISION,
                "capabilities": {"tasks": {}},
                "clientInfo": {"name": "e2e", "version": "1"},
            },
        )
        response = await self.post(message)
        assert response.status_code == 200, (response.status_code, response.text)
        assert reply_of(response, message["id"])["result"]["protocolVersion"] == SESSION_REVISION
        self.session = response.headers["mcp-session-id"]
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        response = await self.post(initialized)
        assert response.status_code == 202, (response.status_code, response.text)
        return self.session

    async def request(self, method: str, params: dict[str, Any] | None = None) -> Any:
        """Send one request in the session; returns its JSON-RPC answer (result or error)."""
        message = self.message(method, params)
        response = await self.post(message)
        assert response.status_code == 200, (response.status_code, response.text)
        return reply_of(response, message["id"])

    async def call_tool(self, name: str, arguments: dict[str, Any] | None = None) -> Any:
        """A tools/call in the session; returns its result."""
        reply = await self.request("tools/call", {"name": name, "arguments": arguments or {}})
        assert "result" in reply, reply
        return reply["result"]

    async def stateless(
        self, method: str, params: dict[str, Any] | None = None, *, extensions: bool = False
    ) -> tuple[int, dict[str, Any]]:
        """One 2026-07-28 request, its envelope in ``_meta``; its status and answer."""
        capabilities: dict[str, Any] = {"elicitation": {}}
        if extensions:
            capabilities["extensions"] = {TASKS_EXTENSION: {}}
        params = dict(params or {})
        params["_meta"] = {
            "io.modelcontextprotocol/protocolVersion": STATELESS_REVISION,
            "io.modelcontextprotocol/clientCapabilities": capabilities,
            "io.modelcontextprotocol/clientInfo": {"name": "e2e", "version": "1"},
        }
        message = self.message(method, params)
        headers = {"mcp-protocol-version": STATELESS_REVISION, "mcp-method": method}
        name = params.get("name", params.get("uri", params.get("taskId")))
        if isinstance(name, str):
            headers["mcp-name"] = name
        response = await self.post(message, **headers)
        return response.status_code, reply_of(response, message["id"])


def _b64(part: str) -> bytes:
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))


def text_of(result: dict[str, Any]) -> str:
    (content,) = result["content"]
    text: str = content["text"]
    return text


@asynccontextmanager
async def http_client() -> AsyncIterator[httpx2.AsyncClient]:
    async with httpx2.AsyncClient(timeout=TIMEOUT) as http:
        yield http


async def token_for(
    provider: OidcProvider, guarded: Guarded, scope: str = "mcp", client: str = "service"
) -> str:
    return await provider.client_credentials_token(
        scope=scope, resource=guarded.url, client=client
    )


# --- admission ----------------------------------------------------------------------------


async def test_no_token_is_401_pointing_at_the_metadata(
    guarded: Guarded, oidc_provider: OidcProvider
) -> None:
    async with http_client() as http:
        caller = Caller(http, guarded.url, None)
        response = await caller.post(caller.message("tools/list"))
        assert response.status_code == 401
        params = challenge(response)
        assert "error" not in params
        assert params["resource_metadata"] == guarded.metadata_url
        metadata = await http.get(params["resource_metadata"])
        assert metadata.status_code == 200
        document = metadata.json()
        assert document["resource"] == guarded.url
        assert document["authorization_servers"] == [oidc_provider.issuer]
        assert "mcp" in document["scopes_supported"]
        # The root form of the metadata names the same resource.
        root = await http.get(guarded.url.replace("/mcp", "/.well-known/oauth-protected-resource"))
        assert root.status_code == 200
        assert root.json()["resource"] == guarded.url


async def test_a_token_of_the_provider_is_admitted_and_names_its_client(
    guarded: Guarded, oidc_provider: OidcProvider
) -> None:
    token = await token_for(oidc_provider, guarded, "mcp tools:read")
    async with http_client() as http:
        caller = Caller(http, guarded.url, token)
        await caller.initialize()
        result = await caller.call_tool("whoami")
    service = oidc_provider.clients["service"].client_id
    assert text_of(result) == f"{service} by {service} with mcp tools:read"


async def test_a_token_for_another_resource_is_401(
    guarded: Guarded, oidc_provider: OidcProvider
) -> None:
    token = await oidc_provider.client_credentials_token(
        scope="mcp", resource="http://127.0.0.1:9/mcp"
    )
    async with http_client() as http:
        caller = Caller(http, guarded.url, token)
        response = await caller.post(caller.message("tools/list"))
    assert response.status_code == 401
    params = challenge(response)
    assert params["error"] == "invalid_token"
    assert params["resource_metadata"] == guarded.metadata_url


async def test_a_token_of_another_issuer_is_401(
    guarded: Guarded, other_oidc_provider: OidcProvider
) -> None:
    token = await other_oidc_provider.client_credentials_token(scope="mcp", resource=guarded.url)
    async with http_client() as http:
        caller = Caller(http, guarded.url, token)
        response = await caller.post(caller.message("tools/list"))
    assert response.status_code == 401
    assert challenge(response)["error"] == "invalid_token"


async def test_a_forged_token_is_401(guarded: Guarded, oidc_provider: OidcProvider) -> None:
    token = await token_for(oidc_provider, guarded)
    header, claims, signature = token.split(".")
    flipped = signature[:10] + ("A" if signature[10] != "A" else "B") + signature[11:]
    async with http_client() as http:
        caller = Caller(http, guarded.url, f"{header}.{claims}.{flipped}")
        response = await caller.post(caller.message("tools/list"))
    assert response.status_code == 401
    assert challenge(response)["error"] == "invalid_token"


async def test_a_token_in_the_query_string_is_400(
    guarded: Guarded, oidc_provider: OidcProvider
) -> None:
    token = await token_for(oidc_provider, guarded)
    async with http_client() as http:
        caller = Caller(http, guarded.url, None)
        message = caller.message("tools/list")
        response = await http.post(
            guarded.url,
            params={"access_token": token},
            content=orjson.dumps(message),
            headers=caller.headers(),
        )
    assert response.status_code == 400
    assert challenge(response)["error"] == "invalid_request"
    # Refused, and never written down.
    assert not any(token in line for line in guarded.output)


async def test_a_token_without_the_required_scope_is_403(
    guarded: Guarded, oidc_provider: OidcProvider
) -> None:
    token = await token_for(oidc_provider, guarded, "tools:read")
    async with http_client() as http:
        caller = Caller(http, guarded.url, token)
        response = await caller.post(caller.message("tools/list"))
    assert response.status_code == 403
    params = challenge(response)
    assert params["error"] == "insufficient_scope"
    assert params["scope"] == "mcp"
    assert params["resource_metadata"] == guarded.metadata_url


async def test_a_tool_needing_a_scope_the_token_lacks_is_403_with_the_scope(
    guarded: Guarded, oidc_provider: OidcProvider
) -> None:
    token = await token_for(oidc_provider, guarded, "mcp")
    async with http_client() as http:
        caller = Caller(http, guarded.url, token)
        await caller.initialize()
        message = caller.message("tools/call", {"name": "reset", "arguments": {}})
        response = await caller.post(message)
        assert response.status_code == 403
        params = challenge(response)
        assert params["error"] == "insufficient_scope"
        # every scope the call needs: the tool's and the one each request needs
        assert params["scope"].split() == ["mcp", "tools:admin"]
        assert params["resource_metadata"] == guarded.metadata_url
        refusal = response.json()["error"]
        assert refusal["code"] == -32010
        assert refusal["data"]["requiredScopes"] == ["mcp", "tools:admin"]
        # The same session goes on for what the token may do.
        assert text_of(await caller.call_tool("whoami")).endswith("with mcp")
    admin = await token_for(oidc_provider, guarded, "mcp tools:admin")
    async with http_client() as http:
        caller = Caller(http, guarded.url, admin)
        await caller.initialize()
        assert text_of(await caller.call_tool("reset")) == "reset done"


async def test_a_token_signed_after_a_key_rotation_is_admitted(
    rotating_oidc_provider: OidcProvider,
) -> None:
    # The verifier the flags build: the first unknown kid after a fetch is looked up at once.
    with serving_guarded(rotating_oidc_provider) as guarded:
        before = await token_for(rotating_oidc_provider, guarded)
        async with http_client() as http:
            caller = Caller(http, guarded.url, before)
            await caller.initialize()
            assert text_of(await caller.call_tool("whoami")).endswith("with mcp")
            new_kid = await rotating_oidc_provider.rotate_keys()
            after = await token_for(rotating_oidc_provider, guarded)
            assert orjson.loads(_b64(after.split(".")[0]))["kid"] == new_kid
            # The same caller with its new token: the server fetches the new key, and the
            # session is still the caller's.
            caller.token = after
            assert text_of(await caller.call_tool("whoami")).endswith("with mcp")
            fresh = Caller(http, guarded.url, after)
            await fresh.initialize()
            assert text_of(await fresh.call_tool("whoami")).endswith("with mcp")
            # The old key is still published, so what it signed is still good.
            caller.token = before
            assert text_of(await caller.call_tool("whoami")).endswith("with mcp")


async def test_an_opaque_token_is_introspected_at_the_provider(
    introspecting: Guarded, oidc_provider: OidcProvider
) -> None:
    opaque = await oidc_provider.client_credentials_token(
        scope="mcp tools:admin", resource=introspecting.url, client="opaque"
    )
    assert "." not in opaque
    signed = await token_for(oidc_provider, introspecting)
    async with http_client() as http:
        caller = Caller(http, introspecting.url, opaque)
        await caller.initialize()
        client_id = oidc_provider.clients["opaque"].client_id
        whoami = text_of(await caller.call_tool("whoami"))
        assert whoami == f"{client_id} by {client_id} with mcp tools:admin"
        assert text_of(await caller.call_tool("reset")) == "reset done"
        # JWTs are still checked locally beside it.
        jwt_caller = Caller(http, introspecting.url, signed)
        await jwt_caller.initialize()
        assert text_of(await jwt_caller.call_tool("whoami")).endswith("with mcp")
        # An opaque token the provider never issued is inactive there: 401.
        unknown = Caller(http, introspecting.url, "not-a-token-of-anyone")
        response = await unknown.post(unknown.message("tools/list"))
        assert response.status_code == 401
        assert challenge(response)["error"] == "invalid_token"


async def test_tokens_not_issued_for_the_server_are_401_though_introspection_says_active(
    introspecting: Guarded, oidc_provider: OidcProvider
) -> None:
    # Issue 43: a userinfo token (no resource indicator) with tools:admin called the tool
    # needing it, and a refresh token worked as an access token: both introspect as active
    # and name no audience. The ID token beside them is a JWT for the client.
    userinfo = await oidc_provider.authorization_code(None, "openid mcp tools:admin")
    granted = await oidc_provider.authorization_code(
        introspecting.url, "openid offline_access mcp tools:admin", prompt="consent"
    )
    async with http_client() as http:
        for token in (userinfo["access_token"], granted["refresh_token"], granted["id_token"]):
            caller = Caller(http, introspecting.url, token)
            message = caller.message("tools/call", {"name": "reset", "arguments": {}})
            response = await caller.post(message)
            assert response.status_code == 401, response.text
            assert challenge(response)["error"] == "invalid_token"
            assert "reset done" not in response.text
        # the access token of that same grant, issued for this server, is good
        caller = Caller(http, introspecting.url, granted["access_token"])
        await caller.initialize()
        assert text_of(await caller.call_tool("reset")) == "reset done"


# --- everything bound to its principal ------------------------------------------------------


async def test_another_principal_cannot_use_a_session(
    guarded: Guarded, oidc_provider: OidcProvider
) -> None:
    owner = await token_for(oidc_provider, guarded)
    stranger = await token_for(oidc_provider, guarded, client="other")
    async with http_client() as http:
        first = Caller(http, guarded.url, owner)
        session = await first.initialize()
        second = Caller(http, guarded.url, stranger)
        second.session = session
        message = second.message("tools/call", {"name": "whoami", "arguments": {}})
        assert (await second.post(message)).status_code == 404
        stream = await http.get(guarded.url, headers=second.headers(accept="text/event-stream"))
        assert stream.status_code == 404
        deleted = await http.delete(guarded.url, headers=second.headers())
        assert deleted.status_code == 404
        # The session is still its owner's, untouched.
        assert text_of(await first.call_tool("whoami")).startswith("mcp-service ")


async def test_another_user_of_the_same_client_cannot_use_a_session(
    guarded: Guarded, oidc_provider: OidcProvider
) -> None:
    ann = await oidc_provider.authorization_code_token(guarded.url, "mcp", login_hint="ann")
    bob = await oidc_provider.authorization_code_token(guarded.url, "mcp", login_hint="bob")
    async with http_client() as http:
        first = Caller(http, guarded.url, ann)
        session = await first.initialize()
        second = Caller(http, guarded.url, bob)
        second.session = session
        message = second.message("tools/call", {"name": "whoami", "arguments": {}})
        assert (await second.post(message)).status_code == 404
        # A new token of the same user is still the session's owner.
        again = await oidc_provider.authorization_code_token(guarded.url, "mcp", login_hint="ann")
        first.token = again
        assert text_of(await first.call_tool("whoami")).startswith("ann by ")


async def test_another_principal_cannot_get_or_cancel_a_session_task(
    guarded: Guarded, oidc_provider: OidcProvider
) -> None:
    owner = await token_for(oidc_provider, guarded)
    stranger = await token_for(oidc_provider, guarded, client="other")
    async with http_client() as http:
        first = Caller(http, guarded.url, owner)
        await first.initialize()
        created = await first.request(
            "tools/call",
            {"name": "job", "arguments": {"key": "session-task"}, "task": {"ttl": 60_000}},
        )
        task_id = created["result"]["task"]["taskId"]
        second = Caller(http, guarded.url, stranger)
        await second.initialize()
        for method in ("tasks/get", "tasks/result", "tasks/cancel"):
            reply = await second.request(method, {"taskId": task_id})
            assert "result" not in reply, (method, reply)
            assert reply["error"]["code"] == -32602, (method, reply)
        listed = await second.request("tasks/list")
        assert task_id not in {task["taskId"] for task in listed["result"]["tasks"]}
        # Still running, for its owner.
        status = await first.request("tasks/get", {"taskId": task_id})
        assert status["result"]["status"] == "working"
        cancelled = await first.request("tasks/cancel", {"taskId": task_id})
        assert cancelled["result"]["status"] == "cancelled"


async def test_another_principal_cannot_get_or_cancel_a_task_of_the_extension(
    guarded: Guarded, oidc_provider: OidcProvider
) -> None:
    owner = await token_for(oidc_provider, guarded)
    stranger = await token_for(oidc_provider, guarded, client="other")
    async with http_client() as http:
        first = Caller(http, guarded.url, owner)
        second = Caller(http, guarded.url, stranger)
        status, created = await first.stateless(
            "tools/call", {"name": "job", "arguments": {"key": "extension-task"}}, extensions=True
        )
        assert status == 200, created
        assert created["result"]["resultType"] == "task", created
        task_id = created["result"]["taskId"]
        for method in ("tasks/get", "tasks/cancel"):
            _, reply = await second.stateless(method, {"taskId": task_id}, extensions=True)
            assert "result" not in reply, (method, reply)
            assert reply["error"]["code"] == -32602, (method, reply)
        _, polled = await first.stateless("tasks/get", {"taskId": task_id}, extensions=True)
        assert polled["result"]["status"] == "working", polled
        _, cancelled = await first.stateless("tasks/cancel", {"taskId": task_id}, extensions=True)
        assert "result" in cancelled, cancelled


async def test_another_principal_cannot_replay_a_request_state(
    guarded: Guarded, oidc_provider: OidcProvider
) -> None:
    owner = await token_for(oidc_provider, guarded)
    stranger = await token_for(oidc_provider, guarded, client="other")
    async with http_client() as http:
        first = Caller(http, guarded.url, owner)
        second = Caller(http, guarded.url, stranger)
        call: dict[str, Any] = {"name": "confirm", "arguments": {}}
        status, asked = await first.stateless("tools/call", call)
        assert status == 200, asked
        result = asked["result"]
        assert result["resultType"] == "input_required", result
        (key,) = result["inputRequests"]
        retry = {
            **call,
            "inputResponses": {key: {"action": "accept", "content": {}}},
            "requestState": result["requestState"],
        }
        _, refused = await second.stateless("tools/call", retry)
        assert "result" not in refused, refused
        assert refused["error"]["code"] == -32602
        # The owner's retry completes.
        status, done = await first.stateless("tools/call", retry)
        assert status == 200, done
        assert text_of(done["result"]) == "user said accept"


# --- the official SDK client ------------------------------------------------------------------


class MemoryStorage:
    """Where the SDK keeps its registration and tokens: here, for one test."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


async def sdk_calls(url: str, calls: list[str]) -> tuple[list[str], MemoryStorage]:
    """Connect with the SDK's OAuth flow from nothing, call ``calls``; their texts."""
    storage = MemoryStorage()
    returned: dict[str, str] = {}

    async def redirect(authorization_url: str) -> None:
        # A user who says "yes": the provider logs them in and consents by itself.
        returned.clear()
        async with httpx2.AsyncClient(timeout=TIMEOUT) as browser:
            returned.update(await follow_authorization(browser, authorization_url, SDK_REDIRECT))

    async def callback() -> AuthorizationCodeResult:
        assert "code" in returned, f"the authorization came back without a code: {returned}"
        return AuthorizationCodeResult(
            code=returned["code"], state=returned.get("state"), iss=returned.get("iss")
        )

    auth = OAuthClientProvider(
        server_url=url,
        client_metadata=OAuthClientMetadata(
            client_name="mcpactor end-to-end", redirect_uris=[AnyUrl(SDK_REDIRECT)]
        ),
        storage=storage,
        redirect_handler=redirect,
        callback_handler=callback,
    )
    texts: list[str] = []
    with anyio.fail_after(60):
        async with (
            httpx2.AsyncClient(auth=auth, timeout=TIMEOUT) as http,
            streamable_http_client(url, http_client=http) as (read, write, *_),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            for name in calls:
                result = await session.call_tool(name, {})
                assert not result.is_error, result
                (content,) = result.content
                texts.append(getattr(content, "text", ""))
    return texts, storage


async def run_sdk(url: str, calls: list[str]) -> tuple[list[str], MemoryStorage]:
    """`sdk_calls` on an asyncio loop of its own (the SDK runs on anyio/asyncio)."""
    return await trio.to_thread.run_sync(
        functools.partial(anyio.run, sdk_calls, url, calls, backend="asyncio")
    )


async def test_the_sdk_client_discovers_registers_authorizes_and_calls_a_tool(
    guarded: Guarded,
) -> None:
    texts, storage = await run_sdk(guarded.url, ["whoami"])
    assert storage.client is not None
    assert storage.client.client_id
    assert storage.tokens is not None
    assert texts == [f"test-user by {storage.client.client_id} with mcp"]


async def test_the_sdk_client_steps_up_for_a_tool_needing_more_scope(guarded: Guarded) -> None:
    texts, storage = await run_sdk(guarded.url, ["whoami", "reset", "whoami"])
    assert storage.client is not None
    client_id = storage.client.client_id
    assert texts == [
        f"test-user by {client_id} with mcp",
        "reset done",
        f"test-user by {client_id} with mcp tools:admin",
    ]
