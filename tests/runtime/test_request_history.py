"""What a request actor tells the history when it ends: its error's message.

Both eras' request actors end through the same wrapper (``runtime._request.handled``).
"""

from __future__ import annotations

import pytest

from mcpactor import RequestError, Server
from mcpactor.client import connect_memory
from mcpactor.runtime import METRICS


def make_server() -> Server:
    server = Server("history", version="1.0.0")

    @server.tool()
    async def refuse(why: str) -> str:
        """Refuse with a request error."""
        raise RequestError(-32000, why)

    @server.prompt()
    async def crash() -> str:
        """Fail with an exception (a tool's would be its result's isError)."""
        raise ValueError("the disk is full")

    return server


async def test_an_error_s_message_reaches_the_history() -> None:
    history = METRICS.keep_history()
    try:
        async with connect_memory(make_server(), initialize=True) as client:
            with pytest.raises(RequestError):
                await client.call_tool("refuse", {"why": "not on a Sunday"})
            with pytest.raises(RequestError):
                await client.get_prompt("crash")
        items = {item["name"]: item for item in history.items()}
        assert items["refuse"]["outcome"] == "error"
        assert items["refuse"]["detail"] == "not on a Sunday"
        assert items["crash"]["error"] == "internal"
        assert "the disk is full" in items["crash"]["detail"]
    finally:
        METRICS.drop_history()
