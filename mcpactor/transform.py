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

from .server import ArgTransform as ArgTransform
from .server import ToolTransform as ToolTransform
from .server import transformed as transformed

__all__ = ["ArgTransform", "ToolTransform", "transformed"]
