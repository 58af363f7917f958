"""An MCP App: a tool that opens an interactive view, and a tool only the view calls.

Build the view once (one HTML document with the MCP Apps SDK inlined), then serve::

    cd examples/apps && npm ci && npm run build && cd -
    mcpactor serve --http 127.0.0.1:8000 examples/apps/greeter.py

A host that supports MCP Apps lists ``open_greeter`` to its model; when the model calls
it, the host reads ``ui://greeter/greeter.html``, renders it in a sandboxed iframe and
hands it the tool's result. The view's "Greet" button calls ``greet`` through the host,
a tool hosts keep from the model (``visibility=["app"]``). Clients without MCP Apps
see two ordinary tools that answer in text.
"""

from __future__ import annotations

from pathlib import Path

from mcpactor import Server
from mcpactor.ext import apps

VIEW = Path(__file__).resolve().parent / "dist" / "greeter.html"
VIEW_URI = "ui://greeter/greeter.html"

if not VIEW.is_file():
    raise RuntimeError(
        f"{VIEW} is missing: build the view first "
        f"(cd {VIEW.parent.parent} && npm ci && npm run build)"
    )

server = Server("greeter", version="1.0.0", extensions=[apps.extension])

# Everything the view needs is inline, so its CSP names no origin: the host's default
# policy (no network, no external scripts) is the one it runs under.
apps.add_ui_resource(
    server,
    VIEW_URI,
    VIEW,
    title="Greeter",
    description="Greets whoever you name.",
    prefers_border=True,
)


@server.tool(meta=apps.ui(VIEW_URI))
async def open_greeter(name: str = "world") -> str:
    """Open the greeter, an interactive view that greets whoever you name."""
    return f"The greeter is open; it says hello to {name} first."


@server.tool(meta=apps.ui(VIEW_URI, visibility=["app"]))
async def greet(name: str) -> str:
    """Greet someone by name (called by the greeter's view)."""
    name = name.strip() or "stranger"
    return f"Hello, {name}! Greetings from mcpactor."
