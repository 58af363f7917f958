"""Result helpers: ``Image``/``Audio``, byte sniffing, and fitting content to a revision."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest

from mcpactor import Audio, AudioContent, Image, ImageContent, TextContent
from mcpactor.protocol import REVISIONS, unstructure
from mcpactor.server._registered import adapt_tool_result, tool_result
from mcpactor.server._results import (
    adapt_content,
    error_result,
    to_content,
    to_prompt_result,
    to_resource_contents,
)
from tests.spec_schema import check

from .conftest import ALL_REVISIONS, PNG, WAV

SAMPLES = [
    (PNG, "image/png"),
    (b"\xff\xd8\xff\xe0" + b"\x00" * 8, "image/jpeg"),
    (b"GIF87a" + b"\x00" * 4, "image/gif"),
    (b"GIF89a" + b"\x00" * 4, "image/gif"),
    (b"RIFF\x00\x00\x00\x00WEBPVP8 ", "image/webp"),
    (WAV, "audio/wav"),
    (b"ID3\x04\x00" + b"\x00" * 8, "audio/mpeg"),
    (b"OggS\x00\x02" + b"\x00" * 8, "audio/ogg"),
    (b"fLaC\x00\x00\x00\x22", "audio/flac"),
]


@pytest.mark.parametrize(("data", "mime_type"), SAMPLES)
def test_bytes_are_sniffed_into_image_or_audio(data: bytes, mime_type: str) -> None:
    [block] = to_content(data)
    expected_type = ImageContent if mime_type.startswith("image/") else AudioContent
    assert isinstance(block, expected_type)
    assert block.mime_type == mime_type
    assert base64.b64decode(block.data) == data


@pytest.mark.parametrize("data", [b"", b"RIFF\x00\x00\x00\x00AVI ", b"%PDF-1.7", b"\x89PNX"])
def test_unrecognised_bytes_become_an_embedded_blob(data: bytes) -> None:
    [block] = unstructure(to_content(bytearray(data)))
    assert block == {
        "type": "resource",
        "resource": {
            "uri": "data:application/octet-stream",
            "blob": base64.b64encode(data).decode(),
            "mimeType": "application/octet-stream",
        },
    }


def test_image_and_audio_helpers_sniff_or_take_the_type() -> None:
    assert Image(PNG).mime_type == "image/png"
    assert Image(PNG, mime_type="image/x-custom").mime_type == "image/x-custom"
    assert Image(b"<svg/>").mime_type == "application/octet-stream"
    assert Audio(WAV).mime_type == "audio/wav"
    assert Audio(b"????", mime_type="audio/aac").mime_type == "audio/aac"
    assert base64.b64decode(Audio(WAV).data) == WAV


def test_image_and_audio_helpers_read_files(tmp_path: Path) -> None:
    picture = tmp_path / "p.png"
    picture.write_bytes(PNG)
    sound = tmp_path / "s.wav"
    sound.write_bytes(WAV)
    assert Image(path=str(picture)) == Image(PNG)
    assert Audio(path=str(sound)) == Audio(WAV)


@pytest.mark.parametrize("helper", [Image, Audio])
def test_image_and_audio_helpers_need_exactly_one_source(helper: Any, tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="exactly one of data or path"):
        helper()
    with pytest.raises(TypeError, match="exactly one of data or path"):
        helper(PNG, path=str(tmp_path / "x"))


def test_to_content_of_other_values_is_json_text() -> None:
    blocks = unstructure(to_content(({"a": 1}, 2.5, ["x"])))
    assert blocks == [
        {"type": "text", "text": '{"a":1}'},
        {"type": "text", "text": "2.5"},
        # A nested list is one value, not more blocks.
        {"type": "text", "text": '["x"]'},
    ]


def test_to_content_of_an_unserialisable_value_uses_str() -> None:
    class Opaque:
        def __str__(self) -> str:
            return "<opaque>"

    assert to_content(Opaque()) == [TextContent(text="<opaque>")]


@pytest.mark.parametrize("revision", ALL_REVISIONS)
def test_adapt_content_keeps_what_the_revision_has(revision: str) -> None:
    blocks = [
        {"type": "text", "text": "t"},
        {"type": "image", "data": "AA==", "mimeType": "image/png"},
        {"type": "resource", "resource": {"uri": "a://b", "text": "x"}},
    ]
    # Text, image and embedded resources exist in every revision: nothing changes.
    assert adapt_content(blocks, REVISIONS[revision]) == blocks


def test_adapt_tool_result_does_not_change_its_input() -> None:
    original = {
        "content": [{"type": "audio", "data": "AA==", "mimeType": "audio/wav"}],
        "structuredContent": {"a": 1},
    }
    snapshot = {
        "content": [{"type": "audio", "data": "AA==", "mimeType": "audio/wav"}],
        "structuredContent": {"a": 1},
    }
    adapted = adapt_tool_result(original, REVISIONS["2024-11-05"])
    assert original == snapshot
    assert adapted["content"][0]["type"] == "text"
    assert "structuredContent" not in adapted
    check(adapted, "2024-11-05", "CallToolResult")
    assert adapt_tool_result(original, REVISIONS["2025-11-25"]) == snapshot


def test_tool_result_text_fallback_and_error_result() -> None:
    assert tool_result("x", {"result": "x"}, has_output_schema=True) == {
        "content": [{"type": "text", "text": "x"}],
        "structuredContent": {"result": "x"},
    }
    assert tool_result([1, 2], {"result": [1, 2]}, has_output_schema=True)["content"] == [
        {"type": "text", "text": '{"result":[1,2]}'}
    ]
    failed = error_result("no")
    assert failed == {"content": [{"type": "text", "text": "no"}], "isError": True}
    for revision in ALL_REVISIONS:
        check(failed, revision, "CallToolResult")


def test_to_prompt_result_description_only_when_known() -> None:
    assert to_prompt_result("hi", None) == {
        "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}]
    }
    assert to_prompt_result([], "d") == {"messages": [], "description": "d"}


def test_to_resource_contents_given_mime_type_wins() -> None:
    assert to_resource_contents(PNG, "a://b", "image/x-icon") == [
        {"uri": "a://b", "blob": base64.b64encode(PNG).decode(), "mimeType": "image/x-icon"}
    ]
    assert to_resource_contents([1, 2], "a://b", None) == [
        {"uri": "a://b", "text": "1", "mimeType": "application/json"},
        {"uri": "a://b", "text": "2", "mimeType": "application/json"},
    ]
