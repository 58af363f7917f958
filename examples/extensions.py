"""A server with an extension of its own: com.example/search, declared, served, notified.

The extension adds a request method (``com.example/search``) with schemas for its params
and result, a notification the client sends (``com.example/selected``), one the server
sends while it searches (``com.example/found``), a resource its ``setup`` registers, and
a requirement on the server's tools. Serve it with::

    mcpactor serve examples/extensions.py

and ask ``com.example/search`` with any client (``capabilities.extensions`` lists it in a
2025-11-25 session and in 2026-07-28 discovery).
"""

from __future__ import annotations

from typing import Any

from mcpactor import Context, CustomMethod, CustomNotification, Extension, Server

# --8<-- [start:handlers]
BOOKS = ["Dune", "Emma", "Ulysses", "Middlemarch", "Beloved"]


async def search(params: dict[str, Any], ctx: Context) -> dict[str, Any]:
    """Find the books whose title holds ``query``; tell the client about each."""
    query = params["query"].lower()
    hits = [title for title in BOOKS if query in title.lower()]
    for title in hits:
        await ctx.notify("com.example/found", {"title": title})
    # What the client declared for the extension, in either era.
    declared = ctx.client_capabilities.get("extensions", {}).get("com.example/search")
    return {"hits": hits, "ranked": bool(declared and declared.get("ranking"))}


SELECTED: list[str] = []


async def selected(params: dict[str, Any], ctx: Context) -> None:
    """The client picked a hit: remember it."""
    SELECTED.append(params["title"])


def setup(server: Server) -> None:
    """Register what the extension serves besides its methods: the catalogue."""

    @server.resource("search://catalogue", mime_type="text/plain")
    def catalogue() -> str:
        return "\n".join(BOOKS)


# --8<-- [end:handlers]

# --8<-- [start:extension]
SEARCH = Extension(
    "com.example/search",
    settings={"ranking": False},
    requires=["tools"],
    methods=[
        CustomMethod(
            "com.example/search",
            search,
            params_schema={
                "type": "object",
                "properties": {"query": {"type": "string", "maxLength": 200}},
                "required": ["query"],
            },
            result_schema={
                "type": "object",
                "properties": {
                    "hits": {"type": "array", "items": {"type": "string"}},
                    "ranked": {"type": "boolean"},
                },
                "required": ["hits"],
            },
        )
    ],
    notifications=[
        CustomNotification(
            "com.example/selected",
            {"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]},
            handler=selected,
        ),
        CustomNotification(
            "com.example/found",
            {"type": "object", "properties": {"title": {"type": "string"}}},
        ),
    ],
    setup=setup,
    description="Search the catalogue of books.",
)
# --8<-- [end:extension]

# --8<-- [start:server]
server = Server("library", extensions=[SEARCH])


@server.tool
def count_books() -> int:
    """How many books the library holds."""
    return len(BOOKS)


# --8<-- [end:server]
