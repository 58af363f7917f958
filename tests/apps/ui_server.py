"""A server with an MCP Apps view declaring every ``_meta.ui`` field, for the Apps tests."""

from __future__ import annotations

from mcpactor import Server
from mcpactor.ext import apps

VIEW_URI = "ui://dashboard/view.html"
HTML = """<!doctype html>
<html><head><title>Dashboard</title></head>
<body><p id="answer">waiting</p></body></html>
"""

server = Server("dashboard", version="1.0.0", extensions=[apps.extension])
apps.add_ui_resource(
    server,
    VIEW_URI,
    HTML,
    title="Dashboard",
    csp=apps.Csp(
        connect_domains=["https://api.example.com", "wss://live.example.com"],
        resource_domains=["https://*.cdn.example.com"],
        frame_domains=["https://player.example.com"],
        base_uri_domains=["https://cdn.example.com"],
    ),
    permissions=apps.Permissions(microphone=True, clipboard_write=True),
    domain="a904794854a047f6.claudemcpcontent.com",
    prefers_border=False,
)


@server.tool(meta=apps.ui(VIEW_URI, meta={"com.example/tag": "kept"}))
async def show_dashboard() -> str:
    """Show the dashboard."""
    return "The dashboard is open."


@server.tool(meta=apps.ui(VIEW_URI, visibility=["app"]))
async def refresh(panel: str) -> str:
    """Refresh one panel of the dashboard (called by the view)."""
    return f"{panel} refreshed"


@server.tool()
async def plain() -> str:
    """A tool without a view."""
    return "plain"
