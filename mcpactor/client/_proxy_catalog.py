# What a proxied remote serves, as the proxy keeps it and hands it on.
#
# The remote's lists are kept as it sent them (``Remote``), keyed as the proxy's catalog
# looks them up, and cut down to the fields of the revision each client speaks when
# listed. Answers the proxy relays are adapted the same way (``adapt_prompt``; tool
# results go through the server's own adapter). This changes when the spec adds or
# renames fields, never when the connection or the relaying does.

from __future__ import annotations

import logging
from typing import Final

import attrs

from ..protocol import JSONObject, Revision, describe
from ..server import UriTemplate, UriTemplateError, adapt_content

__all__ = [
    "LISTS",
    "LIST_CHANGED",
    "Remote",
    "adapt_prompt",
    "by_key",
    "templates",
    "without_progress_token",
]

_log = logging.getLogger("mcpactor.proxy")

#: the remote's list-changed notifications, and the kind of list each refreshes
LIST_CHANGED: Final = {
    "notifications/tools/list_changed": "tools",
    "notifications/resources/list_changed": "resources",
    "notifications/prompts/list_changed": "prompts",
}
#: list requests served from the kept lists: the capability each needs, and its key
LISTS: Final = {
    "tools/list": ("tools", "tools"),
    "prompts/list": ("prompts", "prompts"),
    "resources/list": ("resources", "resources"),
    "resources/templates/list": ("resources", "resourceTemplates"),
}


@attrs.frozen
class Remote:
    """A tool, resource, template or prompt as the remote listed it."""

    definition: JSONObject
    kind: str  # "tool", "resource" or "prompt"
    template: UriTemplate | None = None

    def wire(self, revision: Revision) -> JSONObject:
        """The definition with only the fields ``revision`` has."""
        if self.kind == "tool":
            allowed = revision.tool_fields
        elif self.kind == "prompt":
            allowed = revision.prompt_fields
        else:
            allowed = revision.resource_fields
        definition = {k: v for k, v in self.definition.items() if k in allowed}
        arguments = definition.get("arguments")
        if self.kind == "prompt" and "title" not in allowed and isinstance(arguments, list):
            definition["arguments"] = [
                {k: v for k, v in a.items() if k != "title"} if isinstance(a, dict) else a
                for a in arguments
            ]
        return definition


def by_key(items: list[JSONObject], key: str, kind: str) -> dict[str, Remote]:
    """Key listed items by their ``key`` field; items without a string one are dropped."""
    found: dict[str, Remote] = {}
    for item in items:
        value = item.get(key) if isinstance(item, dict) else None
        if isinstance(value, str):
            found[value] = Remote(item, kind)
        else:
            _log.warning("ignored a %s without a string %r: %s", kind, key, describe(item))
    return found


def templates(items: list[JSONObject]) -> dict[str, Remote]:
    """Key listed resource templates by ``uriTemplate``, parsed for routing reads."""
    found: dict[str, Remote] = {}
    for item in items:
        uri = item.get("uriTemplate") if isinstance(item, dict) else None
        if not isinstance(uri, str):
            _log.warning("ignored a resource template without a uriTemplate: %s", describe(item))
            continue
        try:
            template: UriTemplate | None = UriTemplate.parse(uri)
        except UriTemplateError as exc:
            # Still listed; reads of its URIs cannot be routed to it when mounted.
            _log.warning("resource template %s cannot be matched: %s", describe(uri), exc)
            template = None
        found[uri] = Remote(item, "resource", template)
    return found


def adapt_prompt(result: JSONObject, revision: Revision) -> JSONObject:
    """A ``prompts/get`` result with its content blocks as ``revision`` has them."""
    messages = result.get("messages")
    if not isinstance(messages, list):
        return result
    adapted = []
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, dict):
            message = {**message, "content": adapt_content([content], revision)[0]}
        adapted.append(message)
    return {**result, "messages": adapted}


def without_progress_token(params: JSONObject) -> JSONObject:
    """``params`` without the client's progress token, which means nothing to the remote."""
    # The proxy's own client sets a token of its own.
    meta = params.get("_meta")
    if not isinstance(meta, dict) or "progressToken" not in meta:
        return params
    params = dict(params)
    rest = {key: value for key, value in meta.items() if key != "progressToken"}
    if rest:
        params["_meta"] = rest
    else:
        del params["_meta"]
    return params
