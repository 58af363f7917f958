"""A tool: its schema from the signature, its result structured from the return type."""

# --8<-- [start:imports]
from typing import Annotated, Literal

import attrs

from mcpactor import Context, Server, ToolAnnotations, ToolError

# --8<-- [end:imports]

server = Server("notes", version="1.0.0")
NOTES = {"shopping": "milk, bread"}


# --8<-- [start:sample]
@attrs.frozen
class Note:
    title: str
    body: str


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
async def find_note(
    title: Annotated[str, "The note's title"],
    match: Literal["exact", "prefix"] = "exact",
) -> Note:
    """Find a note by its title."""
    # --8<-- [end:sample]
    for name, body in NOTES.items():
        if name == title or (match == "prefix" and name.startswith(title)):
            return Note(name, body)
    raise ToolError(f"no note called {title!r}")


@server.tool()
async def note_count(ctx: Context) -> int:
    """How many notes there are."""
    await ctx.info(f"counting for {ctx.client_info}")
    return len(NOTES)
