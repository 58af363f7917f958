# Turning what handlers return into wire results, per revision.
#
# Tools may return a str, a content block, a list of them, raw bytes (sniffed as image
# or audio, else an embedded blob), a CallToolResult, or — when they have an output
# schema — any value the schema describes (sent as structuredContent plus a JSON text
# fallback; the ``tools/call`` result is built beside the tool, in _registered.py).
# Older revisions cannot show every content kind; ``adapt_content`` turns what a client
# cannot read into text that says what it was, so nothing is silently lost.

from __future__ import annotations

import base64
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Final, cast

import orjson

from .. import protocol as wire
from ..protocol import JSONObject, Revision, describe, unstructure, wire_classes_loaded

if TYPE_CHECKING:
    from ..protocol import AudioContent, ContentBlock, ImageContent, ResourceContents

__all__ = [
    "CONTENT_TYPES",
    "Audio",
    "Image",
    "adapt_content",
    "completion_result",
    "to_content",
    "to_prompt_result",
    "to_resource_contents",
]

#: the most values a ``completion/complete`` result carries (spec: at most 100)
MAX_COMPLETIONS: Final = 100

#: the content block classes, by name: the classes are built when one is first used (a
#: handler that returns text or plain values never builds them), see ``wire_classes_loaded``
CONTENT_TYPES: Final = (
    "TextContent",
    "ImageContent",
    "AudioContent",
    "EmbeddedResource",
    "ResourceLink",
)

_MAGIC: Final = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"ID3", "audio/mpeg"),
    (b"OggS", "audio/ogg"),
    (b"fLaC", "audio/flac"),
)


def _sniff(data: bytes) -> str | None:
    for magic, mime in _MAGIC:
        if data.startswith(magic):
            return mime
    if data[:4] == b"RIFF" and data[8:12] == b"WAVE":
        return "audio/wav"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def Image(
    data: bytes | None = None, *, path: str | None = None, mime_type: str | None = None
) -> ImageContent:
    """Build an image content block from bytes or a file; the type is sniffed if not given."""
    raw = _read(data, path)
    return wire.ImageContent.from_bytes(
        raw, mime_type or _sniff(raw) or "application/octet-stream"
    )


def Audio(
    data: bytes | None = None, *, path: str | None = None, mime_type: str | None = None
) -> AudioContent:
    """Build an audio content block from bytes or a file; the type is sniffed if not given."""
    raw = _read(data, path)
    return wire.AudioContent.from_bytes(
        raw, mime_type or _sniff(raw) or "application/octet-stream"
    )


def _read(data: bytes | None, path: str | None) -> bytes:
    if (data is None) == (path is None):
        raise TypeError("pass exactly one of data or path")
    if data is not None:
        return data
    assert path is not None
    with open(path, "rb") as file:
        return file.read()


def _one_block(item: Any) -> ContentBlock:
    # The content classes are read through the package: built with the first block made.
    if isinstance(item, wire_classes_loaded(*CONTENT_TYPES)):
        return cast("ContentBlock", item)
    if isinstance(item, str):
        return wire.TextContent(text=item)
    if isinstance(item, bytes | bytearray):
        data = bytes(item)
        mime = _sniff(data)
        if mime is not None and mime.startswith("image/"):
            return wire.ImageContent.from_bytes(data, mime)
        if mime is not None:
            return wire.AudioContent.from_bytes(data, mime)
        return wire.EmbeddedResource(
            resource=wire.BlobResourceContents.from_bytes(
                "data:application/octet-stream", data, "application/octet-stream"
            )
        )
    if isinstance(item, wire_classes_loaded("TextResourceContents", "BlobResourceContents")):
        return wire.EmbeddedResource(resource=cast("ResourceContents", item))
    return wire.TextContent(text=_json_text(item))


def _json_text(value: Any) -> str:
    try:
        return orjson.dumps(unstructure(value)).decode()
    except (TypeError, RecursionError):
        # Not JSON (or too deep to write): its str(), unless that cannot finish either.
        return _str_or_describe(value)


def _str_or_describe(value: Any) -> str:
    try:
        return str(value)
    except Exception:
        return describe(value)


def to_content(value: Any) -> list[ContentBlock]:
    """Convert a handler's return value into a list of content blocks."""
    if value is None:
        return []
    if isinstance(value, list | tuple):
        return [_one_block(item) for item in value]
    return [_one_block(value)]


def error_result(message: str) -> JSONObject:
    """Build a ``tools/call`` result reporting a tool execution error."""
    return {"content": [{"type": "text", "text": message}], "isError": True}


def adapt_content(blocks: Iterable[JSONObject], revision: Revision) -> list[JSONObject]:
    """Replace content blocks the revision cannot carry with text describing them."""
    kinds = revision.content_kinds
    adapted = []
    for block in blocks:
        kind = block.get("type")
        if kind in kinds:
            adapted.append(block)
        elif kind == "resource_link":
            adapted.append(
                {"type": "text", "text": f"resource: {block.get('uri')} ({block.get('name')})"}
            )
        elif kind == "audio":
            adapted.append(
                {
                    "type": "text",
                    "text": f"[{block.get('mimeType')} audio: this client's protocol revision "
                    f"{revision.version} cannot carry audio content]",
                }
            )
        else:
            adapted.append(block)
    return adapted


def to_prompt_result(value: Any, description: str | None) -> JSONObject:
    """Convert a prompt handler's return value into a ``prompts/get`` result."""
    if isinstance(value, wire_classes_loaded("GetPromptResult")):
        result: JSONObject = unstructure(value)
        if description and "description" not in result:
            result["description"] = description
        return result
    items = value if isinstance(value, list | tuple) else [value]
    messages = []
    for item in items:
        if isinstance(item, wire_classes_loaded("PromptMessage")):
            messages.append(unstructure(item))
        elif isinstance(item, dict) and "role" in item and "content" in item:
            content = item["content"]
            block = content if isinstance(content, dict) else unstructure(_one_block(content))
            messages.append({"role": item["role"], "content": block})
        else:
            messages.append({"role": "user", "content": unstructure(_one_block(item))})
    result = {"messages": messages}
    if description:
        result["description"] = description
    return result


def to_resource_contents(value: Any, uri: str, mime_type: str | None) -> list[JSONObject]:
    """Convert a resource handler's return value into ``resources/read`` contents."""
    items = value if isinstance(value, list | tuple) else [value]
    contents: list[JSONObject] = []
    given = wire_classes_loaded("TextResourceContents", "BlobResourceContents")
    for item in items:
        if isinstance(item, given):
            contents.append(unstructure(item))
            continue
        entry: JSONObject = {"uri": uri}
        if isinstance(item, str):
            entry["text"] = item
            entry["mimeType"] = mime_type or "text/plain"
        elif isinstance(item, bytes | bytearray):
            entry["blob"] = base64.b64encode(bytes(item)).decode("ascii")
            entry["mimeType"] = mime_type or _sniff(bytes(item)) or "application/octet-stream"
        else:
            entry["text"] = _json_text(item)
            entry["mimeType"] = mime_type or "application/json"
        contents.append(entry)
    return contents


def completion_result(answer: Any) -> JSONObject:
    """The ``completion`` object for what a completer returned (strings or a Completion)."""
    from ..protocol import Completion  # built when a completer first answers

    if isinstance(answer, Completion):
        values = list(answer.values)
        total, has_more = answer.total, answer.has_more
    else:
        values = [str(v) for v in (answer or ())]
        total, has_more = len(values), False
    if len(values) > MAX_COMPLETIONS:
        total = total if total is not None and total >= len(values) else len(values)
        values, has_more = values[:MAX_COMPLETIONS], True
    completion: JSONObject = {"values": values}
    if total is not None:
        completion["total"] = total
    if has_more is not None:
        completion["hasMore"] = has_more
    return completion
