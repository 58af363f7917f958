"""Test a server with state: its lifespan runs while the client is open."""

from notes import Note, server

import mcpactor.testing


async def test_a_note_is_added() -> None:
    async with mcpactor.testing.client(server) as client:
        added = await client.call_tool("add_note", {"title": "shop", "body": "milk"})
        assert added.data == Note(title="shop", body="milk")
        assert (await client.call_tool("count_notes")).data == 1
        # What the lifespan yielded, as the handlers see it
        rows = server.state.db.execute("SELECT body FROM notes").fetchall()
        assert rows == [("milk",)]
