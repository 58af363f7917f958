"""A lifespan that runs a background task while the plugin is served."""

# --8<-- [start:imports]
from contextlib import asynccontextmanager

import trio

# --8<-- [end:imports]
from mcpactor import Server

server = Server("weather", version="1.0.0")
polls: list[float] = []


async def poll_the_weather_service() -> None:
    while True:
        polls.append(trio.current_time())
        await trio.sleep(60)


@server.tool()
async def polled() -> int:
    """How many times the weather service was polled."""
    return len(polls)


# --8<-- [start:sample]
@server.lifespan
@asynccontextmanager
async def refresh_forecasts(server):
    async with trio.open_nursery() as nursery:
        nursery.start_soon(poll_the_weather_service)
        yield
        nursery.cancel_scope.cancel()


# --8<-- [end:sample]
