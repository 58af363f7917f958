"""A gateway serving two remote servers: one it launches, one it reaches over WebSocket."""

# --8<-- [start:sample]
import sys

from mcpactor import Server
from mcpactor.client import proxy_stdio, proxy_url

app = Server("gateway")
app.mount(proxy_stdio([sys.executable, "-m", "some_mcp_server"], name="remote"), "remote")
app.mount(proxy_url("ws://127.0.0.1:9000/ws", name="web"), "web")
# --8<-- [end:sample]
