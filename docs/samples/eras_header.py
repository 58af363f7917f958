"""A tool argument mirrored into the Mcp-Param-Region header."""

# --8<-- [start:imports]
from typing import Annotated

from mcpactor.server import Header, Server

# --8<-- [end:imports]

server = Server("warehouse", version="1.0.0")


# --8<-- [start:sample]
@server.tool
async def query(region: Annotated[str, Header("Region")], sql: str) -> str:
    """Run a query in a region."""
    # --8<-- [end:sample]
    return f"{region}: {sql}"
