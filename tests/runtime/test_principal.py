"""``ctx.principal`` in both eras, and everything a request creates bound to its principal.

Session era: a SessionActor whose principal holder plays the HTTP session (the transport
refreshes ``principal`` on every admitted request); over HTTP, a session is found only by
the principal that opened it. 2026-07-28: the StatelessHost serves each request with the
principal its transport admitted; tasks, sealed ``requestState`` and listen ``taskIds``
belong to its identity (issuer, subject, client), so a refreshed token of the same caller
keeps them and anyone else's valid token finds nothing.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import attrs
import trio
import trio.testing

from mcpactor import Context, Server
from mcpactor.auth import Principal
from mcpactor.auth._errors import INSUFFICIENT_SCOPE_CODE
from mcpactor.protocol import JSONObject, JSONValue, Request
from mcpactor.protocol._ext_tasks import EXTENSION
from mcpactor.protocol._sealing import KeyRing, SealingKey, StateSealer
from mcpactor.runtime import Outbound, SessionActor
from mcpactor.runtime._peer_base import principal_of
from mcpactor.runtime._stateless import StatelessHost, StatelessOptions
from mcpactor.transports import HttpOptions
from tests.spec_schema import check

from .conftest import SessionHarness, default_guard, tool_text

MODERN = "2026-07-28"
ISSUER = "https://as.example"
ALICE = Principal("alice", issuer=ISSUER, client_id="app", scopes=["jobs"])
# The same caller with a renewed token: other scopes, a later expiry, same identity.
ALICE_RENEWED = Principal(
    "alice", issuer=ISSUER, client_id="app", scopes=["jobs", "admin"], expires_at=2e9
)
BOB = Principal("bob", issuer=ISSUER, client_id="app", scopes=["jobs", "admin"])
# Alice's name from another issuer is someone else.
MALLORY = Principal("alice", issuer="https://evil.example", client_id="app", scopes=["jobs"])
DECLARES = {"extensions": {EXTENSION: {}}, "elicitation": {}}
SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}}


def principal_server(release: trio.Event) -> Server:
    server = Server("who")

    @server.tool
    async def whoami(ctx: Context) -> str:
        """Who is asking, with the scopes of their token as of this request."""
        principal = ctx.principal
        if principal is None:
            return "nobody"
        return f"{principal.subject} {' '.join(sorted(principal.scopes))}"

    @server.tool(scopes=["admin"])
    async def admin_only() -> str:
        """Needs admin."""
        return "admin done"

    @server.tool(task_support="optional", scopes=["jobs"])
    async def job(ctx: Context) -> str:
        """Wait for the test; answer with who the task runs for."""
        await release.wait()
        principal = ctx.principal
        return f"job for {principal.subject if principal else 'nobody'}"

    @server.tool(scopes=["jobs"])
    async def confirm(ctx: Context) -> str:
        """Ask the user (an input_required round at 2026-07-28)."""
        answer = await ctx.elicit("Sure?", SCHEMA)
        return f"confirmed {answer.action}"

    return server


def test_principal_of_what_a_transport_admitted() -> None:
    assert principal_of(None) is None
    assert principal_of(ALICE) is ALICE
    # An authentication hook's own value is a caller without scopes: fail closed.
    legacy = principal_of("alice")
    assert legacy == Principal("alice")
    assert legacy is not None
    assert legacy.scopes == frozenset()
    assert str(ALICE) == str(ALICE_RENEWED) == ALICE.identity
    assert str(ALICE) != str(MALLORY)
    assert ALICE == ALICE_RENEWED


# --- the session era --------------------------------------------------------------------


@attrs.define
class Holder:
    """What an HttpSession is to its actor: the keeper of the session's principal."""

    principal: object = None


@asynccontextmanager
async def open_held_session(server: Server, holder: Holder) -> AsyncIterator[SessionHarness]:
    guard = default_guard()
    outbox_send, outbox_receive = trio.open_memory_channel[Outbound](64)
    inbox_send, inbox_receive = trio.open_memory_channel[JSONValue | Exception](64)
    actor = SessionActor(server, outbox_send, principal_holder=holder)
    harness = SessionHarness(actor, inbox_send, outbox_receive, guard=guard)  # type: ignore[arg-type]
    async with trio.open_nursery() as nursery:
        await nursery.start(actor.run, inbox_receive)
        try:
            yield harness
        finally:
            await inbox_send.aclose()
            with trio.fail_after(guard):
                async for item in outbox_receive:
                    harness._check(item)


async def test_ctx_principal_reads_the_sessions_principal_on_every_request() -> None:
    holder = Holder(ALICE)
    async with open_held_session(principal_server(trio.Event()), holder) as session:
        await session.initialize("2025-11-25")
        assert tool_text(await session.call_tool("whoami")) == "alice jobs"
        error = await session.error_of(await session.start_tool("admin_only"))
        assert error["code"] == INSUFFICIENT_SCOPE_CODE
        assert error["data"] == {"requiredScopes": ["admin"]}
        # The transport admitted a renewed token: the next request sees its scopes.
        holder.principal = ALICE_RENEWED
        assert tool_text(await session.call_tool("whoami")) == "alice admin jobs"
        assert tool_text(await session.call_tool("admin_only")) == "admin done"
        holder.principal = None
        assert tool_text(await session.call_tool("whoami")) == "nobody"


async def test_a_session_task_runs_for_the_sessions_principal() -> None:
    release = trio.Event()
    holder = Holder(ALICE)
    async with open_held_session(principal_server(release), holder) as session:
        await session.initialize("2025-11-25", {"tasks": {}})
        created = await session.request(
            "tools/call", {"name": "job", "arguments": {}, "task": {"ttl": 60_000}}
        )
        task_id = created["task"]["taskId"]
        # Refused before a task exists: the session's principal lost the scope.
        holder.principal = Principal("alice", issuer=ISSUER, client_id="app")
        refused = await session.send_request(
            "tools/call", {"name": "job", "arguments": {}, "task": {"ttl": 60_000}}
        )
        assert (await session.error_of(refused))["code"] == INSUFFICIENT_SCOPE_CODE
        listed = await session.request("tasks/list")
        assert [task["taskId"] for task in listed["tasks"]] == [task_id]
        holder.principal = ALICE_RENEWED
        release.set()
        result = await session.request("tasks/result", {"taskId": task_id})
        assert tool_text(result) == "job for alice"


async def test_an_http_session_belongs_to_its_principals_identity() -> None:
    from ..transports._http_client import McpClient
    from ..transports._http_server import asgi_client

    tokens = {
        "Bearer alice": ALICE,
        "Bearer alice-renewed": ALICE_RENEWED,
        "Bearer bob": BOB,
        "Bearer mallory": MALLORY,
    }

    def authenticate(headers: Mapping[str, str]) -> Principal | None:
        return tokens.get(headers.get("authorization", ""))

    options = HttpOptions(authenticate=authenticate)
    async with asgi_client(principal_server(trio.Event()), options=options) as (_, http):
        alice = McpClient(http)
        opened = await alice.post(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "t", "version": "1"},
                },
            },
            authorization="Bearer alice",
        )
        assert opened.status == 200
        alice.session_id = opened.headers["mcp-session-id"]
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert (await alice.post(initialized, authorization="Bearer alice")).status == 202
        whoami = alice.request("tools/call", {"name": "whoami", "arguments": {}})
        answer = await (await alice.post(whoami, authorization="Bearer alice")).json()
        assert answer["result"]["content"][0]["text"] == "alice jobs"
        # A renewed token of the same caller keeps the session.
        renewed = await alice.post(
            alice.request("tools/call", {"name": "whoami", "arguments": {}}),
            authorization="Bearer alice-renewed",
        )
        assert renewed.status == 200
        assert (await renewed.json())["result"]["content"][0]["text"].startswith("alice ")
        # Anyone else, even with a valid token and the session's id, finds nothing.
        for other in ("Bearer bob", "Bearer mallory"):
            stolen = await alice.post(alice.request("tasks/list"), authorization=other)
            assert stolen.status == 404


# --- 2026-07-28 -------------------------------------------------------------------------


class StatelessClient:
    """Requests of 2026-07-28 handed to a StatelessHost as a transport would."""

    def __init__(self, host: StatelessHost) -> None:
        self.host = host
        self.next_id = 0
        #: what the host emitted while serving (notifications, listen events)
        self.emitted: list[JSONObject] = []

    async def _emit(self, message: JSONObject) -> None:
        self.emitted.append(message)

    def request(self, method: str, params: JSONObject | None = None) -> Request:
        self.next_id += 1
        meta = {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": DECLARES,
        }
        return Request(self.next_id, method, {**(params or {}), "_meta": meta})

    async def send(self, method: str, params: JSONObject | None, principal: object) -> Any:
        answer = await self.host.serve(
            self.request(method, params), self._emit, principal=principal
        )
        check(answer, MODERN, "JSONRPCResponse" if "result" in answer else "JSONRPCErrorResponse")
        return answer

    async def result(self, method: str, params: JSONObject | None, principal: object) -> Any:
        answer = await self.send(method, params, principal)
        assert "result" in answer, answer
        return answer["result"]

    async def error(self, method: str, params: JSONObject | None, principal: object) -> Any:
        answer = await self.send(method, params, principal)
        assert "error" in answer, answer
        return answer["error"]


@asynccontextmanager
async def open_host(server: Server) -> AsyncIterator[StatelessClient]:
    sealer = StateSealer(KeyRing.of(SealingKey.generate("k1")), ttl=60)
    host = StatelessHost(server, options=StatelessOptions(sealer=sealer, keepalive=None))
    async with trio.open_nursery() as nursery:
        host.open_tasks(nursery)
        try:
            yield StatelessClient(host)
        finally:
            await host.aclose()
            nursery.cancel_scope.cancel()


def text_of(result: Any) -> str:
    assert result["resultType"] == "complete", result
    return tool_text(result)


async def test_ctx_principal_of_a_stateless_request() -> None:
    async with open_host(principal_server(trio.Event())) as client:
        assert text_of(await client.result("tools/call", {"name": "whoami"}, ALICE)) == (
            "alice jobs"
        )
        assert text_of(await client.result("tools/call", {"name": "whoami"}, None)) == "nobody"
        error = await client.error("tools/call", {"name": "admin_only"}, ALICE)
        assert error == {
            "code": INSUFFICIENT_SCOPE_CODE,
            "message": "insufficient scope: requires admin",
            "data": {"requiredScopes": ["admin"]},
        }
        assert text_of(await client.result("tools/call", {"name": "admin_only"}, BOB)) == (
            "admin done"
        )
        # Without authorization there is no principal, and no scope is enforced.
        assert text_of(await client.result("tools/call", {"name": "admin_only"}, None)) == (
            "admin done"
        )


async def test_tasks_belong_to_their_creators_identity() -> None:
    release = trio.Event()
    async with open_host(principal_server(release)) as client:
        registry = client.host.tasks
        # No task is made for a caller without the tool's scope.
        nobody = Principal("carol", issuer=ISSUER)
        refused = await client.error("tools/call", {"name": "job"}, nobody)
        assert refused["code"] == INSUFFICIENT_SCOPE_CODE
        assert registry.statistics().stored == 0
        created = await client.result("tools/call", {"name": "job"}, ALICE)
        assert created["resultType"] == "task"
        task_id = created["taskId"]
        for other in (BOB, MALLORY, None):
            for method in ("tasks/get", "tasks/cancel"):
                error = await client.error(method, {"taskId": task_id}, other)
                assert error["code"] == -32602, error
                assert "alice" not in str(error)
            assert not registry.known(task_id, principal=None if other is None else str(other))
        # The creator's renewed token finds it; the task ran for the creator.
        assert registry.known(task_id, principal=str(ALICE_RENEWED))
        release.set()
        await trio.testing.wait_all_tasks_blocked()
        got = await client.result("tasks/get", {"taskId": task_id}, ALICE_RENEWED)
        assert got["status"] == "completed", got
        assert got["result"]["content"][0]["text"] == "job for alice"
        # Completed, not cancelled: the others' tasks/cancel reached nothing; the
        # creator's own is acknowledged, and a finished task stays as it is.
        await client.result("tasks/cancel", {"taskId": task_id}, ALICE)
        got = await client.result("tasks/get", {"taskId": task_id}, ALICE)
        assert got["status"] == "completed"


async def test_request_state_replays_only_for_its_principals_identity() -> None:
    async with open_host(principal_server(trio.Event())) as client:
        first = await client.result("tools/call", {"name": "confirm"}, ALICE)
        assert first["resultType"] == "input_required"
        (key,) = first["inputRequests"]
        retry = {
            "name": "confirm",
            "inputResponses": {key: {"action": "accept", "content": {"ok": True}}},
            "requestState": first["requestState"],
        }
        for other in (BOB, MALLORY, None):
            error = await client.error("tools/call", retry, other)
            assert error["code"] == -32602, error
        done = await client.result("tools/call", retry, ALICE_RENEWED)
        assert text_of(done) == "confirmed accept"


async def test_listen_honours_only_the_listeners_own_task_ids() -> None:
    release = trio.Event()
    async with open_host(principal_server(release)) as client:
        created = await client.result("tools/call", {"name": "job"}, ALICE)
        task_id = created["taskId"]
        acknowledged: dict[str, list[str]] = {}

        async def listen(who: str, principal: Principal) -> None:
            client_of = StatelessClient(client.host)
            request = client_of.request(
                "subscriptions/listen", {"notifications": {"taskIds": [task_id]}}
            )
            await client.host.serve(request, client_of._emit, principal=principal)
            ack = client_of.emitted[0]
            acknowledged[who] = ack["params"]["notifications"]["taskIds"]
            statuses = [
                m["params"]["taskId"]
                for m in client_of.emitted[1:]
                if m.get("method") == "notifications/tasks"
            ]
            acknowledged[f"{who} heard"] = statuses

        async with trio.open_nursery() as nursery:
            nursery.start_soon(listen, "bob", BOB)
            nursery.start_soon(listen, "alice", ALICE_RENEWED)
            await trio.testing.wait_all_tasks_blocked()
            release.set()
            await trio.testing.wait_all_tasks_blocked()
            client.host.stop()
        assert acknowledged["alice"] == [task_id]
        assert acknowledged["bob"] == []
        assert task_id in acknowledged["alice heard"]
        assert acknowledged["bob heard"] == []
