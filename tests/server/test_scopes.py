"""Scopes on registrations: validation, ``required_scopes``, the backstop, step-up, hiding.

Requests are served by ``Server.handle_request`` directly with a Context whose peer
carries a principal, as the runtime's peers do for requests the HTTP layer admitted;
every result and error is checked against the official schema of its revision.
"""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from mcpactor import Context, RequestError, SchemaError, Server
from mcpactor.auth import InsufficientScope, Principal
from mcpactor.auth._errors import INSUFFICIENT_SCOPE_CODE
from mcpactor.server._caching import CacheHint
from mcpactor.server._stateless import cache_hint

from .conftest import LATEST, FakePeer, call, call_error, make_context


@attrs.define
class AuthPeer(FakePeer):
    """A FakePeer whose requests were admitted as ``principal``."""

    principal: Principal | None = None


def caller(*scopes: str, subject: str = "alice") -> AuthPeer:
    return AuthPeer(principal=Principal(subject, issuer="https://as.example", scopes=scopes))


def files_server(**options: Any) -> Server:
    server = Server("files", **options)

    @server.tool
    async def ping() -> str:
        """No scopes."""
        return "pong"

    @server.tool(scopes=["files:read"])
    async def read_file(path: str) -> str:
        """Needs files:read."""
        return f"contents of {path}"

    @server.tool(scopes=["files:read", "files:write"])
    async def write_file(path: str, ctx: Context) -> str:
        """Needs both; deleting needs admin too (step-up)."""
        if path.startswith("/etc"):
            ctx.require_scopes("admin")
        return f"wrote {path}"

    @server.resource("file:///readme", scopes=["files:read"])
    async def readme() -> str:
        return "read me"

    @server.resource("file:///public")
    async def public() -> str:
        return "for all"

    @server.resource("file:///logs/{name}", scopes=["logs"])
    async def log(name: str, ctx: Context) -> str:
        if name == "audit":
            ctx.require_scopes("audit")
        return f"log {name}"

    @server.resource("file:///any/{name}")
    async def anything(name: str) -> str:
        return name

    @server.prompt(scopes=["prompts"])
    async def summarize(text: str) -> str:
        return f"Summarize: {text}"

    @server.prompt
    async def hello() -> str:
        return "Hello"

    @server.completion("summarize", "text")
    async def complete_text(value: str, context: dict[str, str]) -> list[str]:
        return [value + "!"]

    return server


def assert_scope_error(error: RequestError, required: list[str]) -> None:
    assert error.code == INSUFFICIENT_SCOPE_CODE == -32010
    assert error.message == f"insufficient scope: requires {' '.join(required)}"
    assert error.data == {"requiredScopes": required}


# --- registration ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("scopes", "complaint"),
    [
        ("files:read", "a list of strings"),
        (["files:read files:write"], "invalid scope 'files:read files:write'"),
        (["a", "a"], "scope 'a' is listed twice"),
        ([1], "each scope must be a string"),
        (['say"hi'], "invalid scope"),
        (["back\\slash"], "invalid scope"),
        ([""], "invalid scope ''"),
        (["é"], "invalid scope"),
        (["x" * 257], "invalid scope"),
        ([f"s{i}" for i in range(65)], "at most 64 scopes"),
        (42, "a list of strings"),
    ],
)
def test_scopes_refused_at_registration(scopes: Any, complaint: str) -> None:
    server = Server("bad")
    with pytest.raises(SchemaError, match=complaint) as tool:
        server.add_tool(lambda: "x", name="t", scopes=scopes)
    assert "tool 't'" in str(tool.value)
    with pytest.raises(SchemaError, match=complaint):
        server.add_resource(lambda: "x", "res://one", scopes=scopes)
    with pytest.raises(SchemaError, match=complaint) as template:
        server.add_resource(lambda name: name, "res://{name}", scopes=scopes)
    assert "resource template" in str(template.value)
    with pytest.raises(SchemaError, match=complaint):
        server.add_prompt(lambda: "x", name="p", scopes=scopes)
    # Nothing half-registered.
    assert not server._registry.tools
    assert not server._registry.resources
    assert not server._registry.templates
    assert not server._registry.prompts


def test_scopes_kept_on_the_entries() -> None:
    server = files_server()
    assert server._registry.tools["write_file"].scopes == ("files:read", "files:write")
    assert server._registry.tools["ping"].scopes == ()
    assert server._registry.resources["file:///readme"].scopes == ("files:read",)
    assert server._registry.templates["file:///logs/{name}"].scopes == ("logs",)
    assert server._registry.prompts["summarize"].scopes == ("prompts",)
    # Every scope-token character of RFC 6749 is accepted, scopes are never on the wire.
    server.add_tool(lambda: "x", name="odd", scopes=["!#[]~:/.", "https://api.example/x"])
    assert server._registry.tools["odd"].scopes == ("!#[]~:/.", "https://api.example/x")
    assert "scopes" not in server._registry.tools["odd"].definition


# --- required_scopes --------------------------------------------------------------------


def test_required_scopes_by_method_and_name() -> None:
    server = files_server()
    assert server.required_scopes("tools/call", "read_file") == ("files:read",)
    assert server.required_scopes("tools/call", "write_file") == ("files:read", "files:write")
    assert server.required_scopes("tools/call", "ping") == ()
    assert server.required_scopes("tools/call", "nope") == ()
    assert server.required_scopes("prompts/get", "summarize") == ("prompts",)
    assert server.required_scopes("prompts/get", "hello") == ()
    assert server.required_scopes("resources/read", "file:///readme") == ("files:read",)
    assert server.required_scopes("resources/read", "file:///public") == ()
    assert server.required_scopes("resources/read", "file:///logs/app") == ("logs",)
    assert server.required_scopes("resources/subscribe", "file:///logs/app") == ("logs",)
    assert server.required_scopes("resources/read", "file:///any/thing") == ()
    assert server.required_scopes("resources/read", "file:///elsewhere") == ()
    # A name of another kind, another method, or no string at all: nothing known.
    assert server.required_scopes("prompts/get", "read_file") == ()
    assert server.required_scopes("tools/list", "read_file") == ()
    assert server.required_scopes("tools/call", None) == ()  # type: ignore[arg-type]


def test_required_scopes_follow_registry_changes() -> None:
    server = Server("late")

    @server.resource("db://{table}")
    async def table(table: str) -> str:
        return table

    assert server.required_scopes("resources/read", "db://users") == ()
    server.remove_resource("db://{table}")
    server.add_resource(lambda table: table, "db://{table}", scopes=["db"])
    assert server.required_scopes("resources/read", "db://users") == ("db",)
    server.add_tool(lambda: "x", name="t", scopes=["t"])
    assert server.required_scopes("tools/call", "t") == ("t",)
    server.remove_tool("t")
    assert server.required_scopes("tools/call", "t") == ()


def test_required_scopes_of_mounted_servers() -> None:
    parent = Server("parent")

    @parent.tool(scopes=["own"])
    async def own() -> str:
        return "own"

    @parent.resource("mem://{key}", scopes=["mem"])
    async def mem(key: str) -> str:
        return key

    parent.mount(files_server(), prefix="files")
    inner = Server("inner")

    @inner.tool(scopes=["deep"])
    async def deep() -> str:
        return "deep"

    @inner.resource("deep://{x}", scopes=["deep:read"])
    async def deep_read(x: str) -> str:
        return x

    middle = Server("middle")
    middle.mount(inner, prefix="in")
    parent.mount(middle, prefix="mid")

    assert parent.required_scopes("tools/call", "own") == ("own",)
    assert parent.required_scopes("tools/call", "files_read_file") == ("files:read",)
    assert parent.required_scopes("tools/call", "files_ping") == ()
    assert parent.required_scopes("tools/call", "read_file") == ()
    assert parent.required_scopes("tools/call", "mid_in_deep") == ("deep",)
    assert parent.required_scopes("prompts/get", "files_summarize") == ("prompts",)
    assert parent.required_scopes("resources/read", "file:///readme") == ("files:read",)
    assert parent.required_scopes("resources/read", "file:///logs/x") == ("logs",)
    assert parent.required_scopes("resources/read", "mem://k") == ("mem",)
    assert parent.required_scopes("resources/read", "deep://1") == ("deep:read",)
    assert parent.required_scopes("resources/read", "nowhere://1") == ()
    assert parent.required_scopes("completion/complete", "files_summarize") == ()


# --- the backstop -----------------------------------------------------------------------


async def test_backstop_refuses_a_tool_the_principal_lacks_scopes_for() -> None:
    server = files_server()
    params = {"name": "write_file", "arguments": {"path": "/tmp/x"}}
    error = await call_error(server, "tools/call", params, peer=caller("files:read"))
    assert_scope_error(error, ["files:read", "files:write"])
    # At every session revision the error is a plain JSON-RPC error.
    for revision in ("2024-11-05", "2025-06-18"):
        refused = await call_error(
            server, "tools/call", params, peer=caller("files:read"), revision=revision
        )
        assert refused.code == INSUFFICIENT_SCOPE_CODE
    allowed = await call(server, "tools/call", params, peer=caller("files:read", "files:write"))
    assert allowed["content"][0]["text"] == "wrote /tmp/x"
    assert not allowed.get("isError")


async def test_without_a_principal_scopes_are_not_enforced() -> None:
    server = files_server()
    params = {"name": "write_file", "arguments": {"path": "/etc/passwd"}}
    for peer in (AuthPeer(), AuthPeer(principal=None)):
        result = await call(server, "tools/call", params, peer=peer)
        assert result["content"][0]["text"] == "wrote /etc/passwd"
    read = await call(server, "resources/read", {"uri": "file:///logs/audit"}, peer=AuthPeer())
    assert read["contents"][0]["text"] == "log audit"


async def test_backstop_on_prompts_resources_templates_subscribe_and_completion() -> None:
    server = files_server()
    nobody = caller()
    cases: list[tuple[str, dict[str, Any], list[str]]] = [
        ("prompts/get", {"name": "summarize", "arguments": {"text": "t"}}, ["prompts"]),
        ("resources/read", {"uri": "file:///readme"}, ["files:read"]),
        ("resources/read", {"uri": "file:///logs/app"}, ["logs"]),
        ("resources/subscribe", {"uri": "file:///readme"}, ["files:read"]),
        (
            "completion/complete",
            {
                "ref": {"type": "ref/prompt", "name": "summarize"},
                "argument": {"name": "text", "value": "a"},
            },
            ["prompts"],
        ),
        (
            "completion/complete",
            {
                "ref": {"type": "ref/resource", "uri": "file:///logs/{name}"},
                "argument": {"name": "name", "value": "a"},
            },
            ["logs"],
        ),
    ]
    for method, params, required in cases:
        assert_scope_error(await call_error(server, method, params, peer=nobody), required)
    assert nobody.subscriptions == set()
    # What needs no scopes is served to the same caller.
    assert (await call(server, "resources/read", {"uri": "file:///public"}, peer=nobody))[
        "contents"
    ][0]["text"] == "for all"
    assert (await call(server, "prompts/get", {"name": "hello"}, peer=nobody))["messages"]
    granted = caller("prompts", "logs", "files:read")
    for method, params, _ in cases:
        await call(server, method, params, peer=granted)
    assert granted.subscriptions == {"file:///readme"}


async def test_backstop_comes_before_a_session_task_is_made() -> None:
    server = Server("jobs")

    @server.tool(task_support="optional", scopes=["jobs"])
    async def job() -> str:
        return "done"

    # FakePeer has no task table: a task would fail otherwise than with the scope error.
    params = {"name": "job", "arguments": {}, "task": {"ttl": 1000}}
    error = await call_error(server, "tools/call", params, peer=caller("other"))
    assert_scope_error(error, ["jobs"])


async def test_backstop_in_a_mounted_server() -> None:
    parent = Server("parent")
    parent.mount(files_server(), prefix="files")
    params = {"name": "files_read_file", "arguments": {"path": "a"}}
    assert_scope_error(
        await call_error(parent, "tools/call", params, peer=caller()), ["files:read"]
    )
    result = await call(parent, "tools/call", params, peer=caller("files:read"))
    assert result["content"][0]["text"] == "contents of a"
    read = {"uri": "file:///logs/app"}
    assert_scope_error(await call_error(parent, "resources/read", read, peer=caller()), ["logs"])


# --- step-up ----------------------------------------------------------------------------


async def test_step_up_in_a_tool_is_a_scope_error_not_a_tool_error() -> None:
    server = files_server()
    params = {"name": "write_file", "arguments": {"path": "/etc/hosts"}}
    error = await call_error(
        server, "tools/call", params, peer=caller("files:read", "files:write")
    )
    # The tool's own scopes are named too, so the new token keeps them.
    assert_scope_error(error, ["files:read", "files:write", "admin"])
    result = await call(
        server, "tools/call", params, peer=caller("files:read", "files:write", "admin")
    )
    assert result["content"][0]["text"] == "wrote /etc/hosts"


async def test_step_up_in_a_resource_a_sync_tool_and_a_completer() -> None:
    server = files_server()
    error = await call_error(
        server, "resources/read", {"uri": "file:///logs/audit"}, peer=caller("logs")
    )
    assert_scope_error(error, ["logs", "audit"])

    @server.tool
    def blocking(ctx: Context) -> str:
        """Runs in a worker thread."""
        ctx.require_scopes("threads", "more")
        return "ran"

    @server.completion("file:///any/{name}", "name")
    async def complete_name(value: str, context: dict[str, str], ctx: Context) -> list[str]:
        ctx.require_scopes("complete")
        return [value]

    peer = caller("threads")
    assert_scope_error(
        await call_error(server, "tools/call", {"name": "blocking"}, peer=peer),
        ["threads", "more"],
    )
    assert peer.thread_calls == 1
    complete = {
        "ref": {"type": "ref/resource", "uri": "file:///any/{name}"},
        "argument": {"name": "name", "value": "a"},
    }
    assert_scope_error(
        await call_error(server, "completion/complete", complete, peer=caller()), ["complete"]
    )
    assert (await call(server, "completion/complete", complete, peer=caller("complete")))[
        "completion"
    ]["values"] == ["a"]


async def test_require_scopes_without_a_principal_does_nothing() -> None:
    ctx = make_context(peer=AuthPeer(principal=None))
    ctx.require_scopes("anything")
    granted = make_context(peer=caller("a", "b"))
    granted.require_scopes("a")
    granted.require_scopes()
    with pytest.raises(InsufficientScope) as info:
        granted.require_scopes("a", "c")
    assert info.value.scopes == ("a", "c")
    assert info.value.status == 403


async def test_ctx_principal_is_the_peers() -> None:
    server = Server("who")

    @server.tool
    async def whoami(ctx: Context) -> str:
        principal = ctx.principal
        return "nobody" if principal is None else f"{principal.subject} {sorted(principal.scopes)}"

    peer = caller("b", "a")
    result = await call(server, "tools/call", {"name": "whoami"}, peer=peer)
    assert result["content"][0]["text"] == "alice ['a', 'b']"
    peer.principal = Principal("alice", issuer="https://as.example", scopes=["c"])
    result = await call(server, "tools/call", {"name": "whoami"}, peer=peer)
    assert result["content"][0]["text"] == "alice ['c']"
    result = await call(server, "tools/call", {"name": "whoami"}, peer=AuthPeer())
    assert result["content"][0]["text"] == "nobody"


# --- hiding -----------------------------------------------------------------------------


def names(result: dict[str, Any], kind: str) -> list[str]:
    key = {
        "tools": "name",
        "prompts": "name",
        "resources": "uri",
        "resourceTemplates": "uriTemplate",
    }[kind]
    return [entry[key] for entry in result[kind]]


LISTS = {
    "tools/list": "tools",
    "prompts/list": "prompts",
    "resources/list": "resources",
    "resources/templates/list": "resourceTemplates",
}


async def test_hiding_leaves_out_what_the_principal_may_not_call() -> None:
    server = files_server(hide_unauthorized=True)
    reader = caller("files:read")
    assert names(await call(server, "tools/list", peer=reader), "tools") == ["ping", "read_file"]
    assert names(await call(server, "prompts/list", peer=reader), "prompts") == ["hello"]
    assert names(await call(server, "resources/list", peer=reader), "resources") == [
        "file:///readme",
        "file:///public",
    ]
    assert names(
        await call(server, "resources/templates/list", peer=reader), "resourceTemplates"
    ) == ["file:///any/{name}"]
    everything = caller("files:read", "files:write", "logs", "prompts", "unrelated")
    for method in LISTS:
        full = await call(server, method, peer=AuthPeer())
        # No principal (stdio, no authorization) and a principal with every scope: all.
        assert await call(server, method, peer=everything) == full
        assert await call(server, method, peer=AuthPeer()) == full
    assert names(await call(server, "tools/list", peer=caller()), "tools") == ["ping"]
    # Still the same answers the second time (from the kept pages).
    assert names(await call(server, "tools/list", peer=reader), "tools") == ["ping", "read_file"]


async def test_without_hiding_every_principal_sees_everything() -> None:
    server = files_server()
    for method in LISTS:
        assert await call(server, method, peer=caller()) == await call(
            server, method, peer=AuthPeer()
        )
    server.hide_unauthorized = True  # set after construction, as the CLI does
    assert names(await call(server, "tools/list", peer=caller()), "tools") == ["ping"]


async def test_hidden_lists_follow_registry_changes_and_page() -> None:
    server = Server("paged", page_size=2, hide_unauthorized=True)
    for index in range(5):
        server.add_tool(lambda: "x", name=f"t{index}", scopes=["odd"] if index % 2 else None)
    peer = caller()
    first = await call(server, "tools/list", peer=peer)
    assert names(first, "tools") == ["t0", "t2"]
    second = await call(server, "tools/list", {"cursor": first["nextCursor"]}, peer=peer)
    assert names(second, "tools") == ["t4"]
    assert "nextCursor" not in second
    server.add_tool(lambda: "x", name="t5")
    server.remove_tool("t0")
    first = await call(server, "tools/list", peer=peer)
    assert names(first, "tools") == ["t2", "t4"]
    rest = await call(server, "tools/list", {"cursor": first["nextCursor"]}, peer=peer)
    assert names(rest, "tools") == ["t5"]
    odd = await call(server, "tools/list", peer=caller("odd"))
    assert names(odd, "tools") == ["t1", "t2"]


async def test_hiding_in_a_composed_server_is_the_parents_setting() -> None:
    parent = Server("parent", hide_unauthorized=True)

    @parent.tool(scopes=["own"])
    async def own() -> str:
        return "own"

    parent.mount(files_server(), prefix="files")
    listed = names(await call(parent, "tools/list", peer=caller("files:read")), "tools")
    assert listed == ["files_ping", "files_read_file"]
    listed = names(await call(parent, "tools/list", peer=caller("own")), "tools")
    assert listed == ["own", "files_ping"]
    templates = await call(parent, "resources/templates/list", peer=caller("logs"))
    assert names(templates, "resourceTemplates") == ["file:///logs/{name}", "file:///any/{name}"]
    parent.hide_unauthorized = False
    listed = names(await call(parent, "tools/list", peer=caller()), "tools")
    assert listed == ["own", "files_ping", "files_read_file", "files_write_file"]


def test_scoped_results_are_never_hinted_public() -> None:
    server = files_server(cache=CacheHint(60_000, "public"))
    # A list that is the same for everyone may be shared; a hiding one may not.
    assert cache_hint(server, "tools/list", None) == CacheHint(60_000, "public")
    server.hide_unauthorized = True
    assert cache_hint(server, "tools/list", None) == CacheHint(60_000, "private")
    assert cache_hint(server, "resources/read", {"uri": "file:///public"}).scope == "public"
    assert cache_hint(server, "resources/read", {"uri": "file:///readme"}).scope == "private"
    assert cache_hint(server, "resources/read", {"uri": "file:///logs/x"}).scope == "private"
    bare = Server("bare", cache=CacheHint(5, "public"), hide_unauthorized=True)
    bare.add_tool(lambda: "x", name="t")
    assert cache_hint(bare, "tools/list", None) == CacheHint(5, "public")
    assert LATEST == "2025-11-25"


async def test_step_up_in_a_composed_servers_own_completer() -> None:
    parent = Server("parent")

    @parent.prompt
    async def pick(colour: str) -> str:
        return colour

    @parent.completion("pick", "colour")
    async def colours(value: str, context: dict[str, str], ctx: Context) -> list[str]:
        ctx.require_scopes("colours")
        return ["red"]

    parent.mount(files_server(), prefix="files")
    params = {
        "ref": {"type": "ref/prompt", "name": "pick"},
        "argument": {"name": "colour", "value": ""},
    }
    assert_scope_error(
        await call_error(parent, "completion/complete", params, peer=caller()), ["colours"]
    )
    done = await call(parent, "completion/complete", params, peer=caller("colours"))
    assert done["completion"]["values"] == ["red"]
