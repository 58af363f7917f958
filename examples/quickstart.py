"""The smallest useful MCP server: two tools, a resource and a prompt.

Serve it to one client over stdin/stdout with either of::

    mcpactor serve examples/quickstart.py
    python examples/quickstart.py
"""

from __future__ import annotations

import trio

from mcpactor import Server
from mcpactor.transports import serve_stdio

server = Server(
    "quickstart",
    version="1.0.0",
    instructions="Arithmetic and greetings; read quickstart://about for more.",
)


@server.tool()
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
async def greet(name: str, excited: bool = False) -> str:
    """Greet someone by name.

    Args:
        name: who to greet
        excited: end with an exclamation mark instead of a full stop
    """
    return f"Hello, {name}{'!' if excited else '.'}"


@server.resource("quickstart://about", mime_type="text/markdown")
async def about() -> str:
    """What this server is."""
    return "# quickstart\n\nThe smallest useful mcpactor server.\n"


@server.prompt()
async def review(code: str, language: str = "python") -> str:
    """Ask the model to review a piece of code.

    Args:
        code: the code to review
        language: the language it is written in
    """
    return f"Please review this {language} code and point out bugs:\n\n{code}"


if __name__ == "__main__":
    trio.run(serve_stdio, server)
