"""List the tools of a server over WebSocket."""

from mcpactor.client import connect_websocket


async def list_remote_tools(url: str) -> list[str]:
    async with connect_websocket(url, initialize=True) as client:
        tools = await client.list_tools()
    return [tool["name"] for tool in tools]
