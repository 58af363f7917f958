"""A lifespan that opens a database while the server is served."""

import contextlib
import sqlite3
from collections.abc import AsyncIterator

from mcpactor import Server

server = Server("notes", version="1.0.0")
#: what the lifespan opened, while the server is served
state: dict[str, sqlite3.Connection] = {}


@server.lifespan
@contextlib.asynccontextmanager
async def database(server: Server) -> AsyncIterator[None]:
    db = sqlite3.connect("notes.db", check_same_thread=False)
    db.execute("CREATE TABLE IF NOT EXISTS notes (title TEXT PRIMARY KEY, body TEXT)")
    state["db"] = db
    try:
        yield
    finally:
        del state["db"]
        db.close()


@server.tool()
def count_notes() -> int:
    """How many notes there are."""
    return state["db"].execute("SELECT count(*) FROM notes").fetchone()[0]
