"""com.example/word-count: an mcpactor extension that counts words, as a package of its own."""

from __future__ import annotations

from typing import Any

from mcpactor import Context, CustomMethod, Extension

__all__ = ["IDENTIFIER", "extension"]

IDENTIFIER = "com.example/word-count"
MAX_WORDS = 10_000


async def count(params: dict[str, Any], ctx: Context) -> dict[str, Any]:
    """Count the words of ``text``; say whether the client declared the extension too."""
    words = params["text"].split()
    declared = IDENTIFIER in ctx.client_capabilities.get("extensions", {})
    return {"words": min(len(words), MAX_WORDS), "clientDeclared": declared}


def extension() -> Extension:
    """The extension, as the ``mcpactor.extensions`` entry point gives it."""
    return Extension(
        IDENTIFIER,
        settings={"maxWords": MAX_WORDS},
        # Counting words is a tool's companion: a server without tools is a mistake.
        requires=["tools"],
        methods=[
            CustomMethod(
                "com.example/count",
                count,
                params_schema={
                    "type": "object",
                    "properties": {"text": {"type": "string", "maxLength": 1_000_000}},
                    "required": ["text"],
                },
                result_schema={
                    "type": "object",
                    "properties": {
                        "words": {"type": "integer", "minimum": 0},
                        "clientDeclared": {"type": "boolean"},
                    },
                    "required": ["words"],
                },
                description="Count the words of a text.",
            )
        ],
        description="Counts words for the client.",
    )
