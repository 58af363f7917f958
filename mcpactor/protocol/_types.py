# MCP wire types that handlers build and read, as frozen attrs classes.
#
# Python names are snake_case; the converter in _convert.py renames them to the spec's
# camelCase (``mime_type`` → ``mimeType``, ``meta`` → ``_meta``) and omits fields left at
# None. Content blocks carry their ``type`` discriminator as a non-init field so it is
# always on the wire. Only what handlers touch is modelled here: the envelopes of list
# and lifecycle results are plain dicts built by the session and the server registry,
# which is faster and keeps the user's schemas verbatim (DESIGN invariant 7). The types
# of server→client requests (sampling, elicitation, roots) are in _client_types.py, and
# those no server reads while it starts (Implementation, ToolAnnotations, Completion) in
# _described.py.
#
# No ``from __future__ import annotations`` here, on purpose: the annotations are real
# types from the start, so nothing has to resolve strings later — not cattrs (which would
# look them up in ``__module__``'s namespace, and the package renames that to
# ``mcpactor``), and not an import-time ``attrs.resolve_types`` pass, which evaluated
# every annotation string at start-up.

import base64
from typing import Any, Literal, TypeAlias

import attrs

from ._names import WRAPPED_RESULT

__all__ = [
    "WRAPPED_RESULT",
    "Annotations",
    "AudioContent",
    "BlobResourceContents",
    "CallToolResult",
    "ContentBlock",
    "EmbeddedResource",
    "GetPromptResult",
    "Icon",
    "ImageContent",
    "PromptMessage",
    "ResourceContents",
    "ResourceLink",
    "Role",
    "TextContent",
    "TextResourceContents",
]


Role: TypeAlias = Literal["user", "assistant"]


@attrs.frozen(kw_only=True)
class Icon:
    """An icon a client may show for a tool, resource, prompt or server."""

    src: str
    mime_type: str | None = None
    sizes: list[str] | None = None
    theme: Literal["light", "dark"] | None = None


@attrs.frozen(kw_only=True)
class Annotations:
    """Hints for the client about how content is used and how important it is."""

    audience: list[Role] | None = None
    priority: float | None = None
    last_modified: str | None = None


@attrs.frozen(kw_only=True)
class TextContent:
    """A text content block."""

    text: str
    annotations: Annotations | None = None
    meta: dict[str, Any] | None = None
    type: Literal["text"] = attrs.field(default="text", init=False)


@attrs.frozen(kw_only=True)
class ImageContent:
    """An image content block; ``data`` is base64."""

    data: str
    mime_type: str
    annotations: Annotations | None = None
    meta: dict[str, Any] | None = None
    type: Literal["image"] = attrs.field(default="image", init=False)

    @classmethod
    def from_bytes(cls, data: bytes, mime_type: str = "image/png") -> "ImageContent":
        """Build an image block from raw bytes."""
        return cls(data=base64.b64encode(data).decode("ascii"), mime_type=mime_type)


@attrs.frozen(kw_only=True)
class AudioContent:
    """An audio content block; ``data`` is base64."""

    data: str
    mime_type: str
    annotations: Annotations | None = None
    meta: dict[str, Any] | None = None
    type: Literal["audio"] = attrs.field(default="audio", init=False)

    @classmethod
    def from_bytes(cls, data: bytes, mime_type: str = "audio/wav") -> "AudioContent":
        """Build an audio block from raw bytes."""
        return cls(data=base64.b64encode(data).decode("ascii"), mime_type=mime_type)


@attrs.frozen(kw_only=True)
class TextResourceContents:
    """The text contents of a resource."""

    uri: str
    text: str
    mime_type: str | None = None
    meta: dict[str, Any] | None = None


@attrs.frozen(kw_only=True)
class BlobResourceContents:
    """The binary contents of a resource; ``blob`` is base64."""

    uri: str
    blob: str
    mime_type: str | None = None
    meta: dict[str, Any] | None = None

    @classmethod
    def from_bytes(
        cls, uri: str, data: bytes, mime_type: str | None = None
    ) -> "BlobResourceContents":
        """Build blob contents from raw bytes."""
        return cls(uri=uri, blob=base64.b64encode(data).decode("ascii"), mime_type=mime_type)


ResourceContents: TypeAlias = TextResourceContents | BlobResourceContents


@attrs.frozen(kw_only=True)
class EmbeddedResource:
    """A resource's contents embedded in a tool result or prompt message."""

    resource: ResourceContents
    annotations: Annotations | None = None
    meta: dict[str, Any] | None = None
    type: Literal["resource"] = attrs.field(default="resource", init=False)


@attrs.frozen(kw_only=True)
class ResourceLink:
    """A link to a resource the client may read (2025-06-18 and later)."""

    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None
    annotations: Annotations | None = None
    icons: list[Icon] | None = None
    meta: dict[str, Any] | None = None
    type: Literal["resource_link"] = attrs.field(default="resource_link", init=False)


ContentBlock: TypeAlias = (
    TextContent | ImageContent | AudioContent | EmbeddedResource | ResourceLink
)


@attrs.frozen(kw_only=True)
class CallToolResult:
    """The full result of a tool call, for handlers that want every field."""

    content: list[ContentBlock] = attrs.field(factory=list)
    structured_content: dict[str, Any] | None = None
    is_error: bool | None = None
    meta: dict[str, Any] | None = None


@attrs.frozen(kw_only=True)
class PromptMessage:
    """One message of a prompt."""

    role: Role
    content: ContentBlock


@attrs.frozen(kw_only=True)
class GetPromptResult:
    """The full result of ``prompts/get``."""

    messages: list[PromptMessage]
    description: str | None = None
    meta: dict[str, Any] | None = None
