"""A fixed resource and a template, read by URI."""

from mcpactor import Server

server = Server("notes", version="1.0.0")
NOTES = {1: {"title": "shopping", "body": "milk, bread"}}


def titles() -> list[str]:
    return [note["title"] for note in NOTES.values()]


def load(note_id: int) -> dict[str, str]:
    return NOTES[note_id]


# --8<-- [start:sample]
@server.resource("notes://index", mime_type="text/plain")
def index() -> str:
    return "\n".join(titles())


@server.resource("notes://by-id/{note_id}")
async def note(note_id: int) -> dict[str, str]:
    """One note, as JSON."""
    return load(note_id)


# --8<-- [end:sample]


@server.tool()
def count() -> int:
    """How many notes there are."""
    return len(NOTES)
