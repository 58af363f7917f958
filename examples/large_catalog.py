"""A catalog too long to list: 60 tools over three servers, served in search mode.

A client lists three tools: ``search_tools``, ``call_tool`` and the pinned ``status``.
It finds the others by what they do and calls them through ``call_tool``; each call is
that tool's own (its schema, its errors, its progress). Clients that declare the tool
manifests extension (draft SEP-2636, experimental) can fetch definitions by name and
digest as well. Serve it with::

    mcpactor serve examples/large_catalog.py

``mcpactor serve anything.py --tool-search --pin status`` puts any server in search
mode without a line of code.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from mcpactor import Server, tool_manifests, tool_search

# --8<-- [start:tools]
RECORDS = {
    "shop": ["order", "product", "customer", "coupon"],
    "hr": ["employee", "leave_request", "payslip", "job_opening"],
    "ops": ["server", "deployment", "alert", "dns_record"],
}
VERBS = {
    "list": "List every {record} in the {domain} system, newest first.",
    "get": "Get one {record} of the {domain} system by its id.",
    "create": "Create a new {record} in the {domain} system.",
    "update": "Change the fields of an existing {record} in the {domain} system.",
    "delete": "Delete a {record} from the {domain} system for good.",
}


def make_tool(name: str) -> Callable[[str], Awaitable[str]]:
    async def tool(record_id: str = "") -> str:
        return f"{name}({record_id})"

    return tool


def domain_server(domain: str) -> Server:
    server = Server(domain)
    for record in RECORDS[domain]:
        for verb, description in VERBS.items():
            words = record.replace("_", " ")
            server.add_tool(
                make_tool(f"{domain}_{verb}_{record}"),
                name=f"{domain}_{verb}_{record}",
                description=description.format(record=words, domain=domain),
            )
    return server


# --8<-- [end:tools]

# --8<-- [start:server]
server = Server(
    "large-catalog",
    extensions=[tool_search(pinned=["status"], limit=5), tool_manifests()],
)


@server.tool
def status() -> str:
    """Say whether every system is up: stays listed in search mode."""
    return "all systems up"


for name in RECORDS:
    server.mount(domain_server(name))
# --8<-- [end:server]
