"""Play the client's part: answer the server's sampling requests in the test."""

from typing import Any

import mcpactor.testing
from mcpactor import Context, Server, TextContent

server = Server("oracle", version="1.0.0")


@server.tool()
async def ask_the_model(question: str, ctx: Context) -> str:
    """Ask the client's model a question."""
    answer = await ctx.sample(question, max_tokens=10)
    return answer.content.text if isinstance(answer.content, TextContent) else "no text"


# --8<-- [start:sample]
async def test_the_model_answers() -> None:
    async def sampling(params: dict[str, Any]) -> dict[str, Any]:
        return {"role": "assistant", "content": {"type": "text", "text": "42"}, "model": "test"}

    async with mcpactor.testing.client(server, sampling_handler=sampling) as client:
        result = await client.call_tool("ask_the_model", {"question": "?"})
    assert result.text == "42"


# --8<-- [end:sample]
