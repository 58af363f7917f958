"""How a mounted server is doing, read from its Mount."""

from mcpactor import Server
from mcpactor.server import MountStatistics

weather = Server("weather", version="1.0.0")
notes = Server("notes", version="1.0.0")


@notes.tool()
async def add(text: str) -> str:
    """Keep a note."""
    return f"noted: {text}"


server = Server("assistant", version="1.0.0")
server.mount(weather, "weather")
server.mount(notes, "notes", max_concurrent=4)


def notes_statistics() -> MountStatistics:
    """The notes server's statistics, as the page shows them."""
    # --8<-- [start:sample]
    statistics = server.mounts[1].statistics()
    # --8<-- [end:sample]
    return statistics
