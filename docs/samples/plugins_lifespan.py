"""A lifespan that runs a background task while the plugin is served, and yields its state."""

# --8<-- [start:imports]
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import attrs
import trio

from mcpactor import Context, Server

# --8<-- [end:imports]


# --8<-- [start:sample]
@attrs.define
class Forecasts:
    polls: list[float] = attrs.Factory(list)


async def poll_the_weather_service(forecasts: Forecasts) -> None:
    while True:
        forecasts.polls.append(trio.current_time())
        await trio.sleep(60)


@asynccontextmanager
async def refresh_forecasts(server: Server) -> AsyncIterator[Forecasts]:
    forecasts = Forecasts()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(poll_the_weather_service, forecasts)
        yield forecasts
        nursery.cancel_scope.cancel()


server = Server("weather", version="1.0.0", lifespan=refresh_forecasts)


@server.tool()
async def polled(ctx: Context[Forecasts]) -> int:
    """How many times the weather service was polled."""
    return len(ctx.state.polls)


# --8<-- [end:sample]
