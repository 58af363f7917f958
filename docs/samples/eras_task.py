"""A tool that may run as a task of the tasks extension."""

from mcpactor import Server

server = Server("studio", version="1.0.0")


# --8<-- [start:sample]
@server.tool(task_support="optional")
async def render(scene: str) -> str:
    return f"rendered {scene}"


# --8<-- [end:sample]
