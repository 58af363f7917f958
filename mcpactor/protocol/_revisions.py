# The revision table: every difference between protocol revisions lives here as data.
#
# Code elsewhere asks a ``Revision`` record ("does this revision have batches?", "which
# content kinds can this client read?") and never compares version strings. Adding a
# revision is adding a row.

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

import attrs

__all__ = [
    "HEADERLESS_HTTP",
    "LATEST",
    "REVISIONS",
    "SESSION_REVISIONS",
    "Revision",
    "negotiate",
    "revision",
]

_ALL_CONTENT: Final = frozenset({"text", "image", "audio", "resource", "resource_link"})


@attrs.frozen
class Revision:
    """What one protocol revision has: one row of the revision table."""

    version: str
    #: JSON-RPC batches may be sent (only 2025-03-26 has them).
    batching: bool = False
    #: ``initialize`` opens a session (False for the stateless revisions).
    sessions: bool = True
    #: content block kinds a client of this revision understands
    content_kinds: frozenset[str] = _ALL_CONTENT
    #: fields of Tool / Resource / Prompt objects this revision defines
    tool_fields: frozenset[str] = frozenset()
    resource_fields: frozenset[str] = frozenset()
    prompt_fields: frozenset[str] = frozenset()
    implementation_fields: frozenset[str] = frozenset({"name", "version"})
    #: the ``completions`` server capability exists
    completions_capability: bool = True
    #: ``tools/call`` results may carry ``structuredContent`` (tools: ``outputSchema``)
    structured_content: bool = True
    #: ``notifications/progress`` may carry ``message``
    progress_message: bool = True
    #: the client may declare the ``elicitation`` capability
    elicitation: bool = True
    #: URL-mode elicitation (and -32042) exists
    elicitation_url: bool = False
    #: task-augmented requests (``tasks/*``) exist
    tasks: bool = False
    #: the Streamable HTTP transport exists (2024-11-05 has only HTTP+SSE)
    streamable_http: bool = True
    #: a POST's SSE stream opens with a priming event, an id and no data (SEP-1699);
    #: clients of older revisions may not expect an event without data
    priming_event: bool = False
    #: a tool's invalid arguments are a tool execution error (``isError``), not -32602
    input_errors_in_result: bool = False
    #: the code a missing resource is answered with
    resource_not_found_code: int = -32002


_BASE_TOOL: Final = frozenset({"name", "description", "inputSchema"})
_BASE_RESOURCE: Final = frozenset(
    {"uri", "name", "description", "mimeType", "size", "annotations"}
)
_BASE_TEMPLATE: Final = frozenset({"uriTemplate"})
_BASE_PROMPT: Final = frozenset({"name", "description", "arguments"})
_TITLED: Final = frozenset({"title", "_meta"})
_ICONS: Final = frozenset({"icons"})

REVISIONS: Final[Mapping[str, Revision]] = {
    r.version: r
    for r in (
        Revision(
            "2024-11-05",
            content_kinds=frozenset({"text", "image", "resource"}),
            tool_fields=_BASE_TOOL,
            resource_fields=_BASE_RESOURCE | _BASE_TEMPLATE,
            prompt_fields=_BASE_PROMPT,
            completions_capability=False,
            structured_content=False,
            progress_message=False,
            elicitation=False,
            streamable_http=False,
        ),
        Revision(
            "2025-03-26",
            batching=True,
            content_kinds=frozenset({"text", "image", "audio", "resource"}),
            tool_fields=_BASE_TOOL | {"annotations"},
            resource_fields=_BASE_RESOURCE | _BASE_TEMPLATE,
            prompt_fields=_BASE_PROMPT,
            structured_content=False,
            elicitation=False,
        ),
        Revision(
            "2025-06-18",
            tool_fields=_BASE_TOOL | _TITLED | {"annotations", "outputSchema"},
            resource_fields=_BASE_RESOURCE | _BASE_TEMPLATE | _TITLED,
            prompt_fields=_BASE_PROMPT | _TITLED,
            implementation_fields=frozenset({"name", "version", "title"}),
        ),
        Revision(
            "2025-11-25",
            tool_fields=_BASE_TOOL
            | _TITLED
            | _ICONS
            | {"annotations", "outputSchema", "execution"},
            resource_fields=_BASE_RESOURCE | _BASE_TEMPLATE | _TITLED | _ICONS,
            prompt_fields=_BASE_PROMPT | _TITLED | _ICONS,
            implementation_fields=frozenset(
                {"name", "version", "title", "description", "icons", "websiteUrl"}
            ),
            elicitation_url=True,
            tasks=True,
            priming_event=True,
            input_errors_in_result=True,
        ),
    )
}

#: Revisions whose sessions open with ``initialize``, oldest first.
SESSION_REVISIONS: Final = tuple(v for v, r in REVISIONS.items() if r.sessions)
LATEST: Final = REVISIONS[SESSION_REVISIONS[-1]]
#: What a Streamable HTTP request without ``MCP-Protocol-Version`` is taken to speak:
#: the transports page says to assume the revision that introduced the transport.
HEADERLESS_HTTP: Final = REVISIONS["2025-03-26"]


def revision(version: str) -> Revision:
    """Return the row of a supported revision; KeyError if it is not supported."""
    return REVISIONS[version]


def negotiate(requested: object, supported: tuple[str, ...] = SESSION_REVISIONS) -> Revision:
    """Pick the revision for a client's ``initialize``: its own if we have it, else our latest."""
    if isinstance(requested, str) and requested in supported:
        return REVISIONS[requested]
    return REVISIONS[supported[-1]]
