# The revision table: every difference between protocol revisions lives here as data.
#
# Code elsewhere asks a ``Revision`` record ("does this revision have batches?", "which
# content kinds can this client read?") and never compares version strings. Adding a
# revision is adding a row.
#
# Two eras share the table. The session revisions (``SESSION_REVISIONS``) open with
# ``initialize``; 2026-07-28 has no sessions: each request carries its revision and the
# client's capabilities in ``params._meta`` (its envelope, see _envelope.py), results say
# their ``resultType``, and the server asks the client for input by answering
# ``input_required`` (multi round-trip requests, _mrtr.py) instead of sending requests.
# ``negotiate`` only ever picks a session revision: a stateless revision is never the
# answer to an ``initialize``.

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

import attrs

__all__ = [
    "CORE_METHODS",
    "HEADERLESS_HTTP",
    "LATEST",
    "REVISIONS",
    "SESSION_REVISIONS",
    "STATELESS_REVISIONS",
    "Revision",
    "negotiate",
    "revision",
]

_ALL_CONTENT: Final = frozenset({"text", "image", "audio", "resource", "resource_link"})
# The requests a client may send (the schema's ClientRequest), by era.
_SESSION_REQUESTS: Final = frozenset(
    {
        "initialize",
        "ping",
        "logging/setLevel",
        "completion/complete",
        "prompts/get",
        "prompts/list",
        "resources/list",
        "resources/read",
        "resources/subscribe",
        "resources/unsubscribe",
        "resources/templates/list",
        "tools/call",
        "tools/list",
    }
)
_SESSION_TASK_REQUESTS: Final = frozenset(
    {"tasks/get", "tasks/result", "tasks/list", "tasks/cancel"}
)
_STATELESS_REQUESTS: Final = frozenset(
    {
        "server/discover",
        "subscriptions/listen",
        "completion/complete",
        "prompts/get",
        "prompts/list",
        "resources/list",
        "resources/read",
        "resources/templates/list",
        "tools/call",
        "tools/list",
    }
)
# What the server may ask of the client: the schema's ServerRequest, or at a stateless
# revision the schema's InputRequest (what ``inputRequests`` may hold).
_SAMPLING_AND_ROOTS: Final = frozenset({"sampling/createMessage", "roots/list"})
_WITH_ELICITATION: Final = _SAMPLING_AND_ROOTS | {"elicitation/create"}


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
    #: URL-mode elicitation exists
    elicitation_url: bool = False
    #: a URL-mode elicitation names itself (``elicitationId``, the ``complete`` notification)
    #: and the -32042 "URL elicitation required" error exists
    elicitation_ids: bool = False
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
    #: the requests a client may send (the schema's ``ClientRequest``)
    client_requests: frozenset[str] = _SESSION_REQUESTS
    #: the requests the server may send the client while serving (``ServerRequest``);
    #: empty at a stateless revision, which asks with ``input_required`` instead
    server_requests: frozenset[str] = _SAMPLING_AND_ROOTS | {"ping"}
    #: the methods the server may ask about in an ``input_required`` result's
    #: ``inputRequests`` (multi round-trip requests); empty: it sends requests instead
    input_requests: frozenset[str] = frozenset()
    #: the client's requests a server may answer with ``input_required``
    input_required_methods: frozenset[str] = frozenset()
    #: each request carries the revision and the client's capabilities (and optionally
    #: its info and log level) in ``params._meta``; no handshake declares them
    request_envelope: bool = False
    #: every result says its ``resultType`` (``"complete"``, ``"input_required"``)
    result_type: bool = False
    #: results name the server in ``_meta["io.modelcontextprotocol/serverInfo"]``
    server_info_meta: bool = False
    #: the methods whose complete results carry the cache hints ``ttlMs``/``cacheScope``
    cacheable: frozenset[str] = frozenset()
    #: the log level comes with each request (``_meta`` logLevel); no ``logging/setLevel``,
    #: and no log messages for a request that did not ask for them
    log_level_per_request: bool = False
    #: change notifications flow on ``subscriptions/listen`` streams, tagged with their
    #: subscription; there is no standalone GET stream and no ``resources/subscribe``
    listen: bool = False
    #: Streamable HTTP POSTs carry ``Mcp-Method``/``Mcp-Name``, and a tool may mirror
    #: its arguments into ``Mcp-Param-*`` headers (``x-mcp-header`` in its inputSchema)
    header_mirroring: bool = False
    #: server capabilities may list ``extensions`` (and clients declare theirs)
    extensions: bool = False
    #: a server's enabled extensions are declared under ``capabilities.extensions``:
    #: where the schema has the field, and in 2025-11-25 sessions by SEP-2133
    extension_capabilities: bool = False


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
            server_requests=_WITH_ELICITATION | {"ping"},
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
            elicitation_ids=True,
            tasks=True,
            priming_event=True,
            input_errors_in_result=True,
            client_requests=_SESSION_REQUESTS | _SESSION_TASK_REQUESTS,
            server_requests=_WITH_ELICITATION | _SESSION_TASK_REQUESTS | {"ping"},
            # SEP-2133 (final) negotiates extensions in initialize's capabilities, and
            # this schema's capability objects admit the extra key: extension SDKs and
            # hosts (MCP Apps) already use it in 2025-11-25 sessions.
            extension_capabilities=True,
        ),
        Revision(
            "2026-07-28",
            sessions=False,
            tool_fields=_BASE_TOOL | _TITLED | _ICONS | {"annotations", "outputSchema"},
            resource_fields=_BASE_RESOURCE | _BASE_TEMPLATE | _TITLED | _ICONS,
            prompt_fields=_BASE_PROMPT | _TITLED | _ICONS,
            implementation_fields=frozenset(
                {"name", "version", "title", "description", "icons", "websiteUrl"}
            ),
            elicitation_url=True,
            # Core tasks moved out into the io.modelcontextprotocol/tasks extension.
            tasks=False,
            # No event ids at all: a broken stream loses its request (no resumption).
            priming_event=False,
            input_errors_in_result=True,
            resource_not_found_code=-32602,
            client_requests=_STATELESS_REQUESTS,
            server_requests=frozenset(),
            input_requests=_WITH_ELICITATION,
            input_required_methods=frozenset({"tools/call", "prompts/get", "resources/read"}),
            request_envelope=True,
            result_type=True,
            server_info_meta=True,
            cacheable=frozenset(
                {
                    "server/discover",
                    "tools/list",
                    "prompts/list",
                    "resources/list",
                    "resources/templates/list",
                    "resources/read",
                }
            ),
            log_level_per_request=True,
            listen=True,
            header_mirroring=True,
            extensions=True,
            extension_capabilities=True,
        ),
    )
}

#: Revisions whose sessions open with ``initialize``, oldest first.
SESSION_REVISIONS: Final = tuple(v for v, r in REVISIONS.items() if r.sessions)
#: Revisions served request by request (each request's envelope says which), oldest first.
STATELESS_REVISIONS: Final = tuple(v for v, r in REVISIONS.items() if not r.sessions)
LATEST: Final = REVISIONS[SESSION_REVISIONS[-1]]
#: What a Streamable HTTP request without ``MCP-Protocol-Version`` is taken to speak:
#: the transports page says to assume the revision that introduced the transport.
HEADERLESS_HTTP: Final = REVISIONS["2025-03-26"]


# The notifications of every revision, either way (the schemas' *Notification methods).
_NOTIFICATIONS: Final = frozenset(
    {
        "notifications/cancelled",
        "notifications/elicitation/complete",
        "notifications/initialized",
        "notifications/message",
        "notifications/progress",
        "notifications/prompts/list_changed",
        "notifications/resources/list_changed",
        "notifications/resources/updated",
        "notifications/roots/list_changed",
        "notifications/subscriptions/acknowledged",
        "notifications/tasks/status",
        "notifications/tools/list_changed",
    }
)
#: Every method name the core protocol defines at some revision, requests and
#: notifications, either way: what an extension may not register as its own.
CORE_METHODS: Final = frozenset(
    _NOTIFICATIONS.union(
        *(r.client_requests | r.server_requests | r.input_requests for r in REVISIONS.values())
    )
)


def revision(version: str) -> Revision:
    """Return the row of a supported revision; KeyError if it is not supported."""
    return REVISIONS[version]


def negotiate(requested: object, supported: tuple[str, ...] = SESSION_REVISIONS) -> Revision:
    """Pick the revision for a client's ``initialize``: its own if we have it, else our latest."""
    if isinstance(requested, str) and requested in supported:
        return REVISIONS[requested]
    return REVISIONS[supported[-1]]
