"""Peer: fastmcp 4.1.6.

    fastmcp_server.py stdio | http HOST PORT [--json] [--stateless]

No banner, no update check (it would reach the network) and quiet logs, all through
fastmcp's own environment settings, set before it is imported.
"""

import os
import sys

LOG_LEVEL = os.environ.get("MCPBENCH_LOG_LEVEL", "WARNING")
os.environ.setdefault("FASTMCP_SHOW_SERVER_BANNER", "false")
os.environ.setdefault("FASTMCP_CHECK_FOR_UPDATES", "off")
os.environ.setdefault("FASTMCP_LOG_LEVEL", LOG_LEVEL)

import framework_tools  # noqa: E402
from contract import parse_argv  # noqa: E402
from fastmcp import Context, FastMCP  # noqa: E402


def build() -> FastMCP:
    """The fastmcp server with the contract's tools, resource and prompt."""
    server = FastMCP("bench-fastmcp")
    for fn in framework_tools.tools(Context):
        server.tool(fn)
    server.resource(framework_tools.STATIC_URI)(framework_tools.static_resource)
    server.prompt(framework_tools.greet)
    return server


def main() -> None:
    """Serve on the transport the command line asks for."""
    opts = parse_argv(sys.argv)
    server = build()
    if opts["transport"] == "stdio":
        server.run("stdio", show_banner=False)
        return
    server.run(
        "http",
        show_banner=False,
        host=opts["host"],
        port=opts["port"],
        log_level=LOG_LEVEL,
        json_response=opts["json"],
        stateless_http=opts["stateless"],
    )


if __name__ == "__main__":
    main()
