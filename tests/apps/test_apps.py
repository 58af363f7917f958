"""MCP Apps on the wire, without a browser: what a host reads before it renders a view.

The server of ``ui_server.py`` runs as users run it (``mcpactor serve``, over stdio and
Streamable HTTP, in a 2025-11-25 session and at 2026-07-28): its capability, its tools'
``_meta.ui``, its view's listing and contents are checked by value and against each
revision's schema. What an author gives wrong is refused when given, naming it; a tool
naming a view nobody serves stops the server at start.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import trio

from mcpactor import SchemaError, Server
from mcpactor.client import ClientSession, connect_http, connect_memory, connect_stdio
from mcpactor.ext import apps
from tests.apps import ui_server
from tests.serving import serve_http
from tests.spec_schema import check

ROOT = Path(__file__).resolve().parents[2]
SERVER = "tests/apps/ui_server.py"
#: seconds a server gets to start (a cold Python import) and answer
TIMEOUT = 30
UI = "io.modelcontextprotocol/ui"
MIME = "text/html;profile=mcp-app"

#: the view's ``_meta.ui``, as the extension's schema names each field
VIEW_META = {
    "csp": {
        "connectDomains": ["https://api.example.com", "wss://live.example.com"],
        "resourceDomains": ["https://*.cdn.example.com"],
        "frameDomains": ["https://player.example.com"],
        "baseUriDomains": ["https://cdn.example.com"],
    },
    "permissions": {"microphone": {}, "clipboardWrite": {}},
    "domain": "a904794854a047f6.claudemcpcontent.com",
    "prefersBorder": False,
}


async def _check_apps(session: ClientSession, revision: str) -> None:
    """What a host reads of the server, at ``revision``: checked by value and schema."""
    assert session.server.protocol_version == revision
    assert session.server.capabilities["extensions"] == {UI: {}}

    listed = await session.list_page("tools/list")
    check(listed, revision, "ListToolsResult")
    tools = {tool["name"]: tool for tool in listed["tools"]}
    assert tools["show_dashboard"]["_meta"] == {
        "com.example/tag": "kept",
        "ui": {"resourceUri": ui_server.VIEW_URI},
        "ui/resourceUri": ui_server.VIEW_URI,
    }
    assert tools["refresh"]["_meta"]["ui"] == {
        "resourceUri": ui_server.VIEW_URI,
        "visibility": ["app"],
    }
    assert "_meta" not in tools["plain"]

    resources = await session.list_page("resources/list")
    check(resources, revision, "ListResourcesResult")
    (view,) = resources["resources"]
    assert view["uri"] == ui_server.VIEW_URI
    assert view["mimeType"] == MIME
    assert view["_meta"] == {"ui": VIEW_META}

    read = await session.read_resource(ui_server.VIEW_URI)
    check(read, revision, "ReadResourceResult")
    assert read["contents"] == [
        {
            "uri": ui_server.VIEW_URI,
            "mimeType": MIME,
            "text": ui_server.HTML,
            "_meta": {"ui": VIEW_META},
        }
    ]

    # The view's calls back are ordinary tool calls.
    called = await session.call_tool("refresh", {"panel": "sales"})
    assert called["content"] == [{"type": "text", "text": "sales refreshed"}]


def _served_over_http(module: str | Path = SERVER) -> contextlib.AbstractAsyncContextManager[str]:
    return serve_http(str(module), cwd=ROOT, timeout=TIMEOUT)


async def test_a_view_over_http_in_both_eras() -> None:
    async with _served_over_http() as url:
        for revision in ("2025-11-25", "2026-07-28"):
            with trio.fail_after(TIMEOUT):
                async with connect_http(url, initialize=True, protocol_version=revision) as s:
                    await _check_apps(s, revision)


async def test_a_view_over_stdio() -> None:
    command = [sys.executable, "-m", "mcpactor", "serve", SERVER]
    with trio.fail_after(TIMEOUT):
        async with connect_stdio(command, cwd=ROOT, initialize=True) as session:
            await _check_apps(session, "2025-11-25")


async def test_revisions_before_2025_06_18_carry_no_tool_meta() -> None:
    # Their Tool has no _meta: a host of that era sees plain tools and no capability;
    # the view's resource and its contents still read the same.
    async with connect_memory(
        ui_server.server, initialize=True, protocol_version="2025-03-26"
    ) as session:
        assert "extensions" not in session.server.capabilities
        tools = await session.list_tools()
        assert all("_meta" not in tool for tool in tools)
        read = await session.read_resource(ui_server.VIEW_URI)
    assert read["contents"][0]["mimeType"] == MIME


# --- what an author gives, checked when given ---------------------------------------

HTML = "<!doctype html><html><body></body></html>"


@pytest.mark.parametrize(
    ("uri", "message"),
    [
        ("https://example.com/view.html", "must use the ui:// scheme"),
        ("view.html", "must use the ui:// scheme"),
        ("ui:/view.html", "must be ui://<server>/<view>"),
        ("ui://", "must be ui://<server>/<view>"),
        ("ui://app/{page}.html", "is a URI template"),
        ("ui://app/a view.html", "is not a URI"),
        ("ui://" + "a" * 3000, "is not a URI"),
        (42, "must be a string"),
    ],
)
def test_bad_view_uris_are_refused(uri: Any, message: str) -> None:
    with pytest.raises(SchemaError, match=message):
        apps.ui(uri)
    server = Server("s")
    with pytest.raises(SchemaError, match=message):
        apps.add_ui_resource(server, uri, HTML)
    assert server._catalog().resources == {}


@pytest.mark.parametrize(
    "origin",
    [
        "https://a.example.com; script-src *",  # would add a directive of its own
        "https://a.example.com/path",
        "javascript://x",
        "*",
        "https://",
        "https://a b.com",
    ],
)
def test_a_csp_origin_must_be_an_origin(origin: str) -> None:
    with pytest.raises(SchemaError, match=r"connect_domains: .* is not an origin"):
        apps.Csp(connect_domains=[origin])


def test_csp_and_permissions_send_what_is_declared() -> None:
    csp = apps.Csp(resource_domains="https://cdn.example.com", frame_domains=["http://[::1]:8080"])
    assert csp.wire() == {
        "resourceDomains": ["https://cdn.example.com"],
        "frameDomains": ["http://[::1]:8080"],
    }
    assert apps.Csp().wire() == {}
    assert apps.Permissions(camera=True, geolocation=True).wire() == {
        "camera": {},
        "geolocation": {},
    }


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"visibility": "app"}, "must be a list"),
        ({"visibility": []}, "must hold 'model', 'app' or both"),
        ({"visibility": ["agent"]}, "must hold 'model', 'app' or both"),
        ({"visibility": ["app", "app"]}, "once each"),
        ({}, "needs a resource_uri, a visibility, or both"),
        ({"resource_uri": "ui://a/b", "meta": {"ui": {}}}, "already has a 'ui' entry"),
    ],
)
def test_bad_tool_meta_is_refused(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(SchemaError, match=message):
        apps.ui(**kwargs)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"html": "just text"}, "must be an HTML document"),
        ({"html": Path("/nonexistent/view.html")}, "cannot read its HTML from"),
        ({"html": b"<html></html>"}, "html must be a str or a path"),
        ({"csp": {"connectDomains": []}}, "csp must be an apps.Csp"),
        ({"permissions": {"camera": {}}}, "permissions must be an apps.Permissions"),
        ({"domain": "https://x.example.com"}, "must be a host name"),
        ({"prefers_border": "yes"}, "prefers_border must be a bool"),
    ],
)
def test_bad_ui_resources_are_refused(kwargs: dict[str, Any], message: str) -> None:
    server = Server("s")
    with pytest.raises(SchemaError, match=message):
        apps.add_ui_resource(server, "ui://s/view.html", **{"html": HTML, **kwargs})
    assert server._catalog().resources == {}


def test_a_view_is_read_from_its_file_once(tmp_path: Path) -> None:
    path = tmp_path / "view.html"
    path.write_text(HTML, encoding="utf-8")
    server = Server("s", extensions=[apps.extension])
    apps.add_ui_resource(server, "ui://s/view.html", path)
    path.unlink()  # served from what was read at registration
    apps.check(server)


# --- at start --------------------------------------------------------------------------

MISSING = """
from mcpactor import Server
from mcpactor.ext import apps

server = Server("broken", extensions=[apps.extension])
apps.add_ui_resource(server, "ui://broken/a.html", "<!doctype html><html></html>")


@server.tool(meta=apps.ui("ui://broken/b.html"))
async def show() -> str:
    return "shown"
"""


async def test_a_tool_naming_a_view_nobody_serves_stops_the_start() -> None:
    namespace: dict[str, Any] = {}
    exec(compile(MISSING, "broken.py", "exec"), namespace)
    server = namespace["server"]
    with pytest.raises(SchemaError, match=r"tool 'show' names the view 'ui://broken/b.html'"):
        async with server.running():
            pytest.fail("the server started")


def test_mcpactor_serve_names_the_missing_view(tmp_path: Path) -> None:
    module = tmp_path / "broken.py"
    module.write_text(MISSING, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "mcpactor", "serve", str(module)],
        input="",
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=TIMEOUT,
        check=False,
    )
    assert done.returncode != 0
    assert "tool 'show' names the view 'ui://broken/b.html'" in done.stderr, done.stderr


async def test_the_extension_needs_a_resource_to_serve() -> None:
    server = Server("toolsonly", extensions=[apps.extension])

    @server.tool()
    async def only() -> str:
        return "x"

    with pytest.raises(Exception, match=r"io.modelcontextprotocol/ui requires .*resources"):
        async with server.running():
            pytest.fail("the server started")


# --- what the host said -------------------------------------------------------------------

SUPPORTS = """
from mcpactor import Context, Server
from mcpactor.ext import apps

server = Server("asks", extensions=[apps.extension])
apps.add_ui_resource(server, "ui://asks/a.html", "<!doctype html><html></html>")


@server.tool(meta=apps.ui("ui://asks/a.html"))
async def show(ctx: Context) -> str:
    return "view" if apps.host_supports(ctx.client_capabilities) else "text"
"""
HOST_CAPABILITIES = {"extensions": {UI: {"mimeTypes": [MIME]}}}


async def test_a_tool_knows_whether_the_host_renders_views(tmp_path: Path) -> None:
    module = tmp_path / "asks.py"
    module.write_text(SUPPORTS, encoding="utf-8")
    async with _served_over_http(module) as url:
        for revision in ("2025-11-25", "2026-07-28"):
            for capabilities, expected in ((HOST_CAPABILITIES, "view"), ({}, "text")):
                with trio.fail_after(TIMEOUT):
                    async with connect_http(url) as session:
                        # At 2026-07-28 what discovery declared rides in each request.
                        stateless = revision == "2026-07-28"
                        opening = session.discover if stateless else session.initialize
                        await opening(revision, capabilities)
                        called = await session.call_tool("show", {})
                assert called["content"][0]["text"] == expected, (revision, capabilities)


def test_host_supports_reads_the_mime_types() -> None:
    assert apps.host_supports(HOST_CAPABILITIES)
    assert not apps.host_supports({"extensions": {UI: {"mimeTypes": ["text/html"]}}})
    assert not apps.host_supports({"extensions": {UI: {}}})
    assert not apps.host_supports({"extensions": []})
    assert not apps.host_supports({})


HAND_WRITTEN = """
from mcpactor import Server
from mcpactor.ext import apps

server = Server("by-hand", extensions=[apps.extension])
apps.add_ui_resource(server, "ui://by-hand/view.html", "<!doctype html><html></html>")


@server.resource("ui://by-hand/plain.html", mime_type="text/html")
def plain() -> str:
    return "<html></html>"


@server.tool(meta={"ui": {"resourceUri": "https://by-hand.example/view.html"}})
async def elsewhere() -> str:
    return "x"


@server.tool(meta={"ui": {"resourceUri": "ui://by-hand/plain.html"}})
async def untyped() -> str:
    return "x"


@server.tool(meta={"ui": {"resourceUri": "ui://by-hand/view.html", "visibility": [{}]}})
async def hidden() -> str:
    return "x"


@server.tool(meta={"ui": "ui://by-hand/view.html"})
async def flat() -> str:
    return "x"


@server.tool(meta={"ui": {"resourceUri": "ui://by-hand/view.html", "visibility": ["app"]}})
async def fine() -> str:
    return "x"
"""


async def test_hand_written_tool_meta_is_checked_at_start() -> None:
    namespace: dict[str, Any] = {}
    exec(compile(HAND_WRITTEN, "by_hand.py", "exec"), namespace)
    with pytest.raises(SchemaError) as refused:
        async with namespace["server"].running():
            pytest.fail("the server started")
    message = str(refused.value)
    assert "tool 'elsewhere''s view: 'https://by-hand.example/view.html' must use" in message
    assert (
        "tool 'untyped' names the view 'ui://by-hand/plain.html', a resource of type "
        "'text/html', not 'text/html;profile=mcp-app'"
    ) in message
    assert "visibility [{}] must hold 'model', 'app' or both" in message
    assert "tool 'flat': _meta.ui must be an object" in message
    assert "'fine'" not in message
