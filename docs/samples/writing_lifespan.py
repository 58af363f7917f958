"""A lifespan that opens a database while the server is served; handlers reach it typed."""

import contextlib
import dataclasses
import sqlite3
from collections.abc import AsyncIterator

from mcpactor import Context, Server


@dataclasses.dataclass
class Notes:
    """What the handlers share while the server is served."""

    db: sqlite3.Connection


@dataclasses.dataclass
class Note:
    title: str
    body: str


@contextlib.asynccontextmanager
async def open_notes(server: Server) -> AsyncIterator[Notes]:
    # ":memory:" keeps the sample self-contained; a file path keeps the notes.
    db = sqlite3.connect(":memory:", check_same_thread=False)
    db.execute("CREATE TABLE notes (title TEXT PRIMARY KEY, body TEXT)")
    try:
        yield Notes(db)
    finally:
        db.close()


server = Server("notes", version="1.0.0", lifespan=open_notes)


@server.tool()
def add_note(title: str, body: str, ctx: Context[Notes]) -> Note:
    """Add a note, or replace the one of that title."""
    with ctx.state.db:
        ctx.state.db.execute("REPLACE INTO notes VALUES (?, ?)", (title, body))
    return Note(title, body)


@server.tool()
def count_notes(ctx: Context[Notes]) -> int:
    """How many notes there are."""
    (count,) = ctx.state.db.execute("SELECT count(*) FROM notes").fetchone()
    return int(count)
