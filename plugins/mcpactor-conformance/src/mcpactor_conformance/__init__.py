"""The server the official MCP conformance suite tests, written with mcpactor.

The suite (npm ``@modelcontextprotocol/conformance``, server mode) connects to a server,
calls a fixed set of fixtures and checks what comes back. This module is that set for
the session revisions: 14 tools, 4 resources (one a template), 4 prompts, completion and
logging, returning the exact texts the reference fixtures return, so that every round
trip succeeds for real rather than passing by accident. What the 0.2 suite adds lives
beside it: the 2026-07-28 fixtures (multi round-trip requests, the diagnostic tools of
the stateless scenarios, a header-mirrored parameter) in ``_stateless.py`` and the tasks
extension's in ``_tasks.py``; the same server serves both eras.

It doubles as a tour of the Server API: content blocks, progress and logging through
the ``Context``, sampling and elicitation requests to the client, a hand-written JSON
Schema, resources and templates, prompts with arguments, completions.

Serve it with::

    mcpactor serve mcpactor_conformance:server                       # stdio
    mcpactor serve mcpactor_conformance:server --http 127.0.0.1:3001  # Streamable HTTP

and point the suite at ``http://127.0.0.1:3001/mcp``.
"""

from __future__ import annotations

import base64
import json
from typing import Annotated, Final

import trio

from mcpactor import (
    Audio,
    AudioContent,
    Context,
    EmbeddedResource,
    Image,
    ImageContent,
    MCPActorError,
    Server,
    TextContent,
    TextResourceContents,
    ToolError,
)

from . import _stateless, _tasks
from ._extension import extension

__version__ = "0.1.0"

__all__ = [
    "ARGUMENT_SUGGESTIONS",
    "CONTACT_SCHEMA",
    "DEFAULTS_FORM",
    "ENUMS_FORM",
    "PIXEL_PNG",
    "SILENCE_WAV",
    "USER_FORM",
    "extension",
    "server",
]

server = Server(
    "mcpactor-conformance",
    version=__version__,
    title="MCP conformance fixtures",
    description="The fixtures the official MCP conformance suite calls",
    instructions="A test server: every tool, resource and prompt is safe to use.",
)

#: a 1×1 PNG (one blue pixel): the picture of every image fixture
PIXEL_PNG: Final = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR42mMwTjsDAAI1AWa0b5eeAAAAAElFTkSuQmCC"
)

#: eight frames of silence (16-bit mono PCM at 8 kHz) as a WAV file: the audio fixture
SILENCE_WAV: Final = base64.b64decode(
    "UklGRjQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YRAAAAAAAAAAAAAAAAAAAAAAAAAA"
)

# The harness expects the three notifications of the logging and progress fixtures to
# be spread out a little, as a real long-running tool would send them.
_STEP_SECONDS: Final = 0.05


# --- tools: content of every kind ----------------------------------------------------


@server.tool()
async def test_simple_text() -> str:
    """Return one text item."""
    return "This is a simple text response for testing."


@server.tool()
async def test_image_content() -> ImageContent:
    """Return one image item (a PNG)."""
    return Image(PIXEL_PNG, mime_type="image/png")


@server.tool()
async def test_audio_content() -> AudioContent:
    """Return one audio item (a WAV)."""
    return Audio(SILENCE_WAV, mime_type="audio/wav")


@server.tool()
async def test_embedded_resource() -> EmbeddedResource:
    """Return one embedded text resource."""
    return EmbeddedResource(
        resource=TextResourceContents(
            uri="test://embedded-resource",
            mime_type="text/plain",
            text="This is an embedded resource content.",
        )
    )


@server.tool()
async def test_multiple_content_types() -> list[TextContent | ImageContent | EmbeddedResource]:
    """Return a text, an image and an embedded JSON resource, in that order."""
    return [
        TextContent(text="Multiple content types test:"),
        Image(PIXEL_PNG, mime_type="image/png"),
        EmbeddedResource(
            resource=TextResourceContents(
                uri="test://mixed-content-resource",
                mime_type="application/json",
                text=json.dumps({"test": "data", "value": 123}),
            )
        ),
    ]


@server.tool()
async def test_error_handling() -> str:
    """Fail on purpose: the result is a tool error (``isError: true``), not a JSON-RPC one."""
    raise ToolError("This tool intentionally returns an error for testing")


# --- tools: notifications during a call ---------------------------------------------


@server.tool()
async def test_tool_with_logging(ctx: Context) -> str:
    """Send three log messages at level info while running."""
    await ctx.info("Tool execution started")
    await trio.sleep(_STEP_SECONDS)
    await ctx.info("Tool processing data")
    await trio.sleep(_STEP_SECONDS)
    await ctx.info("Tool execution completed")
    return "Tool with logging executed successfully"


@server.tool()
async def test_tool_with_progress(ctx: Context) -> str:
    """Report progress 0, 50 and 100 of 100; return the progress token as text.

    Progress is sent only when the request carries a progress token, and always with
    that token exactly as the client sent it.
    """
    await ctx.report_progress(0, total=100, message="Completed step 0 of 100")
    await trio.sleep(_STEP_SECONDS)
    await ctx.report_progress(50, total=100, message="Completed step 50 of 100")
    await trio.sleep(_STEP_SECONDS)
    await ctx.report_progress(100, total=100, message="Completed step 100 of 100")
    token = ctx.progress_token
    return str(token) if token is not None else "no progress token was given"


# --- tools: requests to the client --------------------------------------------------
#
# A client without the capability, or one that answers with an error, is not a failure
# of these tools: they say what happened in their text result instead.


@server.tool()
async def test_sampling(
    prompt: Annotated[str, "the message to send to the client's model"], ctx: Context
) -> str:
    """Ask the client's model for a reply (``sampling/createMessage``) and return it."""
    try:
        reply = await ctx.sample(prompt, max_tokens=100)
    except MCPActorError as exc:
        return f"Sampling not supported or failed: {exc}"
    content = reply.content
    text = content.text if isinstance(content, TextContent) else f"({content.type} content)"
    return f"LLM response: {text}"


#: the form of ``test_elicitation``: two required strings
USER_FORM: Final = {
    "type": "object",
    "properties": {
        "username": {"type": "string", "description": "Your user name"},
        "email": {"type": "string", "description": "Your email address"},
    },
    "required": ["username", "email"],
}


@server.tool()
async def test_elicitation(message: Annotated[str, "what to ask the user"], ctx: Context) -> str:
    """Ask the user for a user name and email (``elicitation/create``)."""
    try:
        answer = await ctx.elicit(message, USER_FORM)
    except MCPActorError as exc:
        return f"Elicitation not supported or failed: {exc}"
    return f"User response: action={answer.action}, content={json.dumps(answer.content)}"


#: a form whose every field has a default of its own type (SEP-1034)
DEFAULTS_FORM: Final = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "User name", "default": "John Doe"},
        "age": {"type": "integer", "description": "User age", "default": 30},
        "score": {"type": "number", "description": "User score", "default": 95.5},
        "status": {
            "type": "string",
            "description": "User status",
            "enum": ["active", "inactive", "pending"],
            "default": "active",
        },
        "verified": {"type": "boolean", "description": "Verification status", "default": True},
    },
}


@server.tool()
async def test_elicitation_sep1034_defaults(ctx: Context) -> str:
    """Ask for a form whose fields all have defaults (SEP-1034)."""
    try:
        answer = await ctx.elicit("Please review your profile", DEFAULTS_FORM)
    except MCPActorError as exc:
        return f"Elicitation not supported or failed: {exc}"
    return f"Elicitation completed: action={answer.action}, content={json.dumps(answer.content)}"


#: one field of each enum style: untitled and titled, single and multiple choice, and
#: the deprecated ``enumNames`` (SEP-1330)
ENUMS_FORM: Final = {
    "type": "object",
    "properties": {
        "untitledSingle": {
            "type": "string",
            "title": "Untitled single choice",
            "enum": ["option1", "option2", "option3"],
        },
        "titledSingle": {
            "type": "string",
            "title": "Titled single choice",
            "oneOf": [
                {"const": "value1", "title": "First Option"},
                {"const": "value2", "title": "Second Option"},
                {"const": "value3", "title": "Third Option"},
            ],
        },
        "legacyEnum": {
            "type": "string",
            "title": "Legacy titled choice",
            "enum": ["opt1", "opt2", "opt3"],
            "enumNames": ["Option One", "Option Two", "Option Three"],
        },
        "untitledMulti": {
            "type": "array",
            "title": "Untitled multiple choice",
            "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
        },
        "titledMulti": {
            "type": "array",
            "title": "Titled multiple choice",
            "items": {
                "anyOf": [
                    {"const": "value1", "title": "First Choice"},
                    {"const": "value2", "title": "Second Choice"},
                    {"const": "value3", "title": "Third Choice"},
                ]
            },
        },
    },
}

# Multiple-choice fields in elicitation forms arrived with this revision (SEP-1330);
# earlier clients would reject the whole form.
_ENUM_STYLES_SINCE: Final = "2025-11-25"


@server.tool()
async def test_elicitation_sep1330_enums(ctx: Context) -> str:
    """Ask for a form with one field of each enum style (SEP-1330)."""
    if ctx.protocol_version < _ENUM_STYLES_SINCE:
        return (
            f"Elicitation not attempted: multiple-choice enum fields need protocol revision "
            f"{_ENUM_STYLES_SINCE} or later, this session uses {ctx.protocol_version}"
        )
    try:
        answer = await ctx.elicit("Please pick options of every kind", ENUMS_FORM)
    except MCPActorError as exc:
        return f"Elicitation not supported or failed: {exc}"
    return f"Elicitation completed: action={answer.action}, content={json.dumps(answer.content)}"


# --- tools: schemas and transports ---------------------------------------------------

#: a JSON Schema 2020-12 input schema using references, an anchor, composition and
#: conditionals; mcpactor sends it exactly as written and validates arguments with it
CONTACT_SCHEMA: Final = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "address",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    # Some way to reach the person, and the one they prefer if they said.
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}


@server.tool(input_schema=CONTACT_SCHEMA)
async def json_schema_2020_12_tool(
    name: str | None = None,
    address: dict[str, str] | None = None,
    contactMethod: str | None = None,  # the schema's name for it
    phone: str | None = None,
    email: str | None = None,
) -> str:
    """Take a contact described by a JSON Schema 2020-12 input schema; echo it back."""
    contact = {
        "name": name,
        "address": address,
        "contactMethod": contactMethod,
        "phone": phone,
        "email": email,
    }
    given = {key: value for key, value in contact.items() if value is not None}
    return f"Received contact: {json.dumps(given)}"


@server.tool()
async def test_reconnection(ctx: Context) -> str:
    """Close this call's SSE stream mid-call; the result arrives when the client resumes.

    Over Streamable HTTP the client reconnects with ``Last-Event-ID`` and gets the
    rest of the stream, result included (SEP-1699). Over stdio there is no stream to
    close and the call simply completes.
    """
    await ctx.info("Before disconnect")
    await ctx.close_sse_stream()
    # Give the client time to reconnect; what follows waits in the replay buffer.
    await trio.sleep(3 * _STEP_SECONDS)
    await ctx.info("After reconnect")
    return "Reconnection test completed"


# --- resources -----------------------------------------------------------------------


@server.resource("test://static-text", title="Static text", mime_type="text/plain")
async def static_text() -> str:
    """A text resource that never changes."""
    return "This is the content of the static text resource."


@server.resource("test://static-binary", title="Static binary", mime_type="image/png")
async def static_binary() -> bytes:
    """A binary resource that never changes: a one-pixel PNG."""
    return PIXEL_PNG


@server.resource("test://template/{id}/data", title="Templated data", mime_type="application/json")
async def template_data(id: str) -> dict[str, str | bool]:  # noqa: A002 - the URI's variable
    """JSON data for any id, read through a resource template."""
    return {"id": id, "templateTest": True, "data": f"Data for ID: {id}"}


@server.resource("test://watched-resource", title="Watched resource", mime_type="text/plain")
async def watched_resource() -> str:
    """A resource clients may subscribe to."""
    return "Watched resource content"


# --- prompts -------------------------------------------------------------------------


@server.prompt()
async def test_simple_prompt() -> str:
    """A prompt without arguments."""
    return "This is a simple prompt for testing."


@server.prompt()
async def test_prompt_with_arguments(arg1: str, arg2: str) -> str:
    """A prompt with two required arguments.

    Args:
        arg1: First test argument
        arg2: Second test argument
    """
    return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"


@server.prompt()
async def test_prompt_with_embedded_resource(
    resourceUri: str,  # the argument's name in the suite
) -> list[EmbeddedResource | str]:
    """A prompt that embeds a resource.

    Args:
        resourceUri: URI of the resource to embed
    """
    resource = TextResourceContents(
        uri=resourceUri, mime_type="text/plain", text="Embedded resource content for testing."
    )
    return [EmbeddedResource(resource=resource), "Please process the embedded resource above."]


@server.prompt()
async def test_prompt_with_image() -> list[ImageContent | str]:
    """A prompt that shows an image."""
    return [Image(PIXEL_PNG, mime_type="image/png"), "Please analyze the image above."]


# --- completion ----------------------------------------------------------------------

#: what the arguments of ``test_prompt_with_arguments`` complete to
ARGUMENT_SUGGESTIONS: Final = ("testValue1", "testValue2", "testValue3")


@server.completion("test_prompt_with_arguments", "arg1")
@server.completion("test_prompt_with_arguments", "arg2")
async def complete_prompt_argument(value: str, arguments: dict[str, str]) -> list[str]:
    """Suggestions that start with what was typed; none (not an error) for anything else."""
    return [suggestion for suggestion in ARGUMENT_SUGGESTIONS if suggestion.startswith(value)]


# --- what the 0.2 suite adds: the 2026-07-28 requirement set and the tasks extension ----

_stateless.register(server)
_tasks.register(server)
