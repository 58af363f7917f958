"""Peer: the official MCP Python SDK (mcp 2.3.0), its high-level MCPServer.

    sdk_server.py stdio | http HOST PORT [--json] [--stateless]

--json: json_response=True (its default answers every POST with an SSE stream);
--stateless: stateless_http=True. Logs at MCPBENCH_LOG_LEVEL (default WARNING).
"""

import os
import sys

import framework_tools
from contract import parse_argv
from mcp.server.mcpserver import Context, MCPServer


def build() -> MCPServer:
    """The SDK server with the contract's tools, resource and prompt."""
    server = MCPServer("bench-sdk", log_level=os.environ.get("MCPBENCH_LOG_LEVEL", "WARNING"))
    for fn in framework_tools.tools(Context):
        server.tool()(fn)
    server.resource(framework_tools.STATIC_URI)(framework_tools.static_resource)
    server.prompt()(framework_tools.greet)
    return server


def main() -> None:
    """Serve on the transport the command line asks for."""
    opts = parse_argv(sys.argv)
    server = build()
    if opts["transport"] == "stdio":
        server.run("stdio")
        return
    server.run(
        "streamable-http",
        host=opts["host"],
        port=opts["port"],
        json_response=opts["json"],
        stateless_http=opts["stateless"],
    )


if __name__ == "__main__":
    main()
