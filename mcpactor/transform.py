"""Tool transformations: a tool exposed under another name, description or signature.

A transformation is declared where a server is mounted, by the mounted server's own tool
names::

    parent.mount(weather, "weather", tools={
        "get_forecast": ToolTransform(
            name="forecast",
            arguments={"units": ArgTransform(hide=True, value="metric")},
        ),
        "debug_dump": ToolTransform(hide=True),
    })

or with ``transformed(server, tools)`` for a server served alone, or in ``mcpactor.toml``
(``[servers.NAME.tools.TOOL]``). The transformed tool is listed with a schema that
follows its new signature, and its calls are validated against it (docs/transformations.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .server import ArgTransform as ArgTransform
from .server import Server
from .server import ToolTransform as ToolTransform

__all__ = ["ArgTransform", "ToolTransform", "transformed"]


def transformed(server: Server[Any], tools: Mapping[str, ToolTransform]) -> Server[Any]:
    """A Server serving ``server`` with its ``tools`` transformed (for serving it alone).

    It has the server's name, version and instructions, runs its middleware, and mounts
    it unprefixed with the transformations; mount ``server`` with ``tools=`` instead to
    compose it with others.
    """
    parent: Server[Any] = Server(
        server.name,
        server.version,
        title=server.title,
        description=server.description,
        instructions=server.instructions,
        website_url=server.website_url,
        icons=server.icons,
    )
    parent.mount(server, name=server.name, tools=tools)
    # The served server's chain is the one that runs: the original's layers move up.
    for layer in server.middleware:
        parent.middleware.use(layer)
    return parent
