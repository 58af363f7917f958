"""Middleware that rewrites params, answers early, or refuses."""

# --8<-- [start:layers]
from collections.abc import AsyncIterator

from mcpactor import RequestError, Server
from mcpactor.middleware import Call, Message, Next, Progress, Result

server = Server("shop")


@server.tool()
async def price(item: str) -> str:
    """The price of an item."""
    return f"{item}: 3 EUR"


async def lower_case(call: Call, call_next: Next) -> AsyncIterator[Message]:
    # Rewrite the params on the way in (a new dict: the old one may be shared).
    if call.method == "tools/call" and call.params is not None:
        arguments = dict(call.params.get("arguments") or {})
        if isinstance(arguments.get("item"), str):
            arguments["item"] = arguments["item"].lower()
        call.params = {**call.params, "arguments": arguments}
    async for message in call_next(call):
        yield message


async def closed_on_sunday(call: Call, call_next: Next) -> AsyncIterator[Message]:
    # Answer without calling the handler, or refuse with a JSON-RPC error.
    arguments = (call.params or {}).get("arguments") or {}
    if arguments.get("item") == "sunday":
        yield Result({"content": [{"type": "text", "text": "closed today"}]})
        return
    if arguments.get("item") == "secret":
        raise RequestError(-32001, "not for sale", {"item": "secret"})
    async for message in call_next(call):
        # Drop every other progress notice; the rest (and the answer) go on.
        if isinstance(message, Progress) and int(message.params["progress"]) % 2:
            continue
        yield message


server.middleware.use(lower_case)  # outermost: sees the request first
server.middleware.use(closed_on_sunday)  # inside it: sees the rewritten params
# --8<-- [end:layers]
