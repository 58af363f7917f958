# An extension the conformance server ships and serves when it is named: not enabled by
# default, so the official suite sees the server it expects. ``mcpactor serve
# conformance --extension io.github.mcpactor/echo`` (or ``extensions`` in mcpactor.toml)
# enables it; its entry point is in the ``mcpactor.extensions`` group.

from __future__ import annotations

from typing import Any, Final

from mcpactor import Context, CustomMethod, CustomNotification, Extension

__all__ = ["ECHO", "extension"]

#: the extension's identifier
ECHO: Final = "io.github.mcpactor/echo"

_TEXT: Final = {
    "type": "object",
    "properties": {"text": {"type": "string", "maxLength": 10_000}},
    "required": ["text"],
}


async def _echo(params: dict[str, Any], ctx: Context) -> dict[str, Any]:
    # Says it back, first as the extension's notification, and whether the client
    # declared the extension (in initialize, or in the request's envelope).
    text = params["text"]
    await ctx.notify("io.github.mcpactor/echoed", {"text": text})
    declared = ECHO in (ctx.client_capabilities.get("extensions") or {})
    return {"text": text, "clientDeclared": declared}


#: ``io.github.mcpactor/echo``: one request method, one notification it sends
extension: Final = Extension(
    ECHO,
    settings={"maxLength": 10_000},
    requires=["tools"],
    methods=[
        CustomMethod(
            "io.github.mcpactor/echo",
            _echo,
            params_schema=_TEXT,
            result_schema={
                "type": "object",
                "properties": {"text": {"type": "string"}, "clientDeclared": {"type": "boolean"}},
                "required": ["text", "clientDeclared"],
            },
            description="Say the text back.",
        )
    ],
    notifications=[CustomNotification("io.github.mcpactor/echoed", _TEXT)],
    description="Echoes text through a custom method, for clients testing extensions.",
)
