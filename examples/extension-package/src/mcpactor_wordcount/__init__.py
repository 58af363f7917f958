"""com.example/word-count: an mcpactor extension that counts words, as a package of its own."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from mcpactor import Context, CustomMethod, Extension
from mcpactor.middleware import Call, Message, Next, Result

__all__ = ["IDENTIFIER", "extension", "words_in_results"]

IDENTIFIER = "com.example/word-count"
#: the ``_meta`` key the middleware adds to each tool result
WORDS_KEY = "com.example/words"
MAX_WORDS = 10_000


async def count(params: dict[str, Any], ctx: Context) -> dict[str, Any]:
    """Count the words of ``text``; say whether the client declared the extension too."""
    words = params["text"].split()
    declared = IDENTIFIER in ctx.client_capabilities.get("extensions", {})
    return {"words": min(len(words), MAX_WORDS), "clientDeclared": declared}


async def words_in_results(call: Call, call_next: Next) -> AsyncIterator[Message]:
    """Middleware: each tool result says in ``_meta`` how many words its text holds."""
    async for message in call_next(call):
        if call.method == "tools/call" and isinstance(message, Result):
            texts = [c["text"] for c in message.payload.get("content", ()) if "text" in c]
            words = sum(len(text.split()) for text in texts)
            message.payload.setdefault("_meta", {})[WORDS_KEY] = min(words, MAX_WORDS)
        yield message


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
        middleware=[words_in_results],
        description="Counts words for the client.",
    )
