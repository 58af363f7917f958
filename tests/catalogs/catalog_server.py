"""The 500 generated tools as a composition: one server per domain, mounted in one.

``mcpactor serve tests/catalogs/catalog_server.py:server --tool-search`` serves it in
search mode; ``searching`` is the same composition with search mode enabled in code.
"""

from __future__ import annotations

import inspect
from typing import Any

import trio

from mcpactor import Context, Server, tool_search
from tests.catalogs.catalog_data import tools

#: set when a slow call ends (in this process: the in-memory tests)
ENDED = trio.Event()


def _tool(name: str, schema: dict[str, Any]) -> Any:
    async def call(ctx: Context, **given: Any) -> str:
        arguments = {key: value for key, value in given.items() if value is not None}
        if arguments.get("limit") == -1:
            # A slow call: reports progress, then waits to be cancelled.
            await ctx.report_progress(1, 2, "started")
            try:
                await trio.sleep_forever()
            finally:
                ENDED.set()
        return f"{name} called with {sorted(arguments.items())}"

    # The schema is given; the signature names each argument, as a handler's would.
    parameters = [inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, annotation=Context)]
    parameters += [
        inspect.Parameter(arg, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=Any)
        for arg in schema["properties"]
    ]
    call.__signature__ = inspect.Signature(parameters, return_annotation=str)  # type: ignore[attr-defined]
    return call


def build(*, search: bool = False, pinned: tuple[str, ...] = ()) -> Server:
    """The composition of every domain's server (in search mode with ``search``)."""
    domains: dict[str, Server] = {}
    for domain, name, description, schema in tools():
        child = domains.get(domain)
        if child is None:
            child = domains[domain] = Server(domain)
        child.add_tool(
            _tool(name, schema), name=name, description=description, input_schema=schema
        )
    parent = Server("catalog", extensions=[tool_search(pinned=pinned)] if search else ())

    @parent.tool
    async def ping() -> str:
        """Answer pong: a tool that stays listed in search mode."""
        return "pong"

    for child in domains.values():
        parent.mount(child)
    return parent


server = build()
searching = build(search=True, pinned=("ping",))
