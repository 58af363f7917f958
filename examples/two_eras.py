"""Asking the user mid-call, in both eras: one handler, sessions and 2026-07-28 alike.

In a session (2025-11-25 and before) ``ctx.elicit`` sends the client a request and waits
for the answer. At 2026-07-28 there is no session to wait in: the first ``elicit`` ends
the request with ``input_required``, the client asks its user and sends the request
again with the answer, and the handler runs again from the top. So everything before a
question must be safe to repeat. Here the handler only reads before it asks, and the
one write (the booking) comes after the last question, keyed so that a retry of the
same booking cannot book twice.

Serve it with ``mcpactor serve examples/two_eras.py`` (stdio) or add ``--http 8000``.
"""

from __future__ import annotations

import hashlib
from typing import Final

import trio

from mcpactor import Context, Server
from mcpactor.transports import serve_stdio

server = Server("two-eras", version="1.0.0")

#: free tables per evening (the read the handler may repeat)
TABLES: Final = {"friday": 3, "saturday": 1, "sunday": 0}

#: bookings by idempotency key (the write it must not repeat)
BOOKINGS: dict[str, str] = {}

GUEST_FORM: Final = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "Name for the booking"},
        "guests": {"type": "integer", "minimum": 1, "maximum": 8},
    },
    "required": ["name", "guests"],
}
CONFIRM_FORM: Final = {
    "type": "object",
    "properties": {"confirm": {"type": "boolean", "description": "Book it?"}},
    "required": ["confirm"],
}


@server.tool()
async def book_table(evening: str, ctx: Context) -> str:
    """Book a table for an evening, asking the user who comes and to confirm.

    Args:
        evening: friday, saturday or sunday
    """
    free = TABLES.get(evening.lower())  # a read: fine to run again on every round
    if not free:
        return f"No table free on {evening}."
    guest = await ctx.elicit(f"{free} table(s) free on {evening}. Who is coming?", GUEST_FORM)
    if guest.action != "accept" or not guest.content:
        return "Booking abandoned."
    name, guests = guest.content["name"], guest.content["guests"]
    sure = await ctx.elicit(f"Book {evening} for {name}, {guests} guest(s)?", CONFIRM_FORM)
    if sure.action != "accept" or not (sure.content or {}).get("confirm"):
        return "Nothing booked."
    # The write, after the last question, and idempotent: the same booking once.
    key = hashlib.sha256(f"{evening}|{name}|{guests}".encode()).hexdigest()[:12]
    if key not in BOOKINGS:
        BOOKINGS[key] = f"{evening}: {name} x{guests}"
        TABLES[evening.lower()] = free - 1
    return f"Booked {BOOKINGS[key]} (reference {key})."


@server.tool()
async def where_am_i(ctx: Context) -> str:
    """Name the client's roots, if it has any to tell."""
    if "roots" not in ctx.client_capabilities:
        return "The client shares no roots."
    roots = await ctx.list_roots()
    return ", ".join(str(root.uri) for root in roots) or "The client has no roots."


if __name__ == "__main__":
    trio.run(serve_stdio, server)
