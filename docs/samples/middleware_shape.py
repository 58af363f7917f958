"""A middleware written by hand: it times each request and marks tool results."""

# --8<-- [start:layer]
import logging
from collections.abc import AsyncIterator

import trio

from mcpactor import Server
from mcpactor.middleware import Call, Message, Next, Progress, Result

server = Server("greeter")
log = logging.getLogger("greeter")


@server.tool()
async def greet(name: str) -> str:
    """Greet someone."""
    return f"hello {name}"


@server.middleware.use
async def audited(call: Call, call_next: Next) -> AsyncIterator[Message]:
    started = trio.current_time()  # before: the request on its way in
    async for message in call_next(call):
        if isinstance(message, Progress):
            pass  # each notice, as the handler sends it
        elif isinstance(message, Result) and call.method == "tools/call":
            message.payload.setdefault("_meta", {})["example.com/audited"] = True
        yield message
    # after: the answer is on its way out
    log.info("%s took %.3f s", call.method, trio.current_time() - started)


# --8<-- [end:layer]
