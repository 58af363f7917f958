"""The wire-type converter: names on the wire, round trips, errors with wire-named paths."""

from __future__ import annotations

import enum
import functools
import re
import types
import typing
from typing import Any, Literal

import attrs
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mcpactor
from mcpactor._exceptions import INVALID_PARAMS, RemoteProtocolError
from mcpactor.protocol import _client_types, _described, _types, structure, unstructure
from mcpactor.protocol._client_types import (
    CreateMessageResult,
    ElicitResult,
    ModelPreferences,
    Root,
)
from mcpactor.protocol._convert import _build, _wire_path, wire_name
from mcpactor.protocol._described import Completion, Implementation, ToolAnnotations
from mcpactor.protocol._types import (
    Annotations,
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    ContentBlock,
    EmbeddedResource,
    GetPromptResult,
    Icon,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)
from tests.spec_schema import check

WIRE_TYPES = sorted(
    (
        cls
        for module in (_types, _described, _client_types)
        for name in module.__all__
        if attrs.has(cls := getattr(module, name))
    ),
    key=lambda cls: cls.__name__,
)

# --- names on the wire ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("attribute", "wire"),
    [
        ("uri", "uri"),
        ("meta", "_meta"),
        ("mime_type", "mimeType"),
        ("website_url", "websiteUrl"),
        ("read_only_hint", "readOnlyHint"),
        ("structured_content", "structuredContent"),
        ("is_error", "isError"),
    ],
)
def test_wire_name(attribute: str, wire: str) -> None:
    assert wire_name(attribute) == wire


@pytest.mark.parametrize(
    ("line", "wire"),
    [
        ("required field missing @ $.mime_type", "required field missing @ $.mimeType"),
        ("bad @ $.content[2].resource.mime_type", "bad @ $.content[2].resource.mimeType"),
        ("bad @ $.meta", "bad @ $._meta"),
        ("bad @ $.hints[0]", "bad @ $.hints[0]"),
        ("bad @ $", "bad @ $"),
        # a line that names no path is kept as it is
        ("expected an object, got int", "expected an object, got int"),
    ],
)
def test_error_paths_renamed_to_wire_names(line: str, wire: str) -> None:
    assert _wire_path(line) == wire


def test_unstructure_renames_and_omits_none() -> None:
    image = ImageContent(data="AAAA", mime_type="image/png", meta={"k": [1, None]})
    assert unstructure(image) == {
        "type": "image",
        "data": "AAAA",
        "mimeType": "image/png",
        "_meta": {"k": [1, None]},
    }
    assert unstructure(ToolAnnotations(read_only_hint=True, open_world_hint=False)) == {
        "readOnlyHint": True,
        "openWorldHint": False,
    }
    assert unstructure(ToolAnnotations()) == {}
    assert unstructure(
        Implementation(name="n", version="1", website_url="https://x", icons=[Icon(src="s")])
    ) == {"name": "n", "version": "1", "websiteUrl": "https://x", "icons": [{"src": "s"}]}


def test_unstructure_keeps_type_tags_and_real_defaults() -> None:
    assert unstructure(TextContent(text="")) == {"type": "text", "text": ""}
    # an empty content list and False are values, not absences
    assert unstructure(CallToolResult()) == {"content": []}
    assert unstructure(CallToolResult(is_error=False, structured_content={"a": None})) == {
        "content": [],
        "isError": False,
        "structuredContent": {"a": None},
    }


def test_unstructure_nested_and_lists() -> None:
    block = EmbeddedResource(
        resource=BlobResourceContents(uri="file:///a", blob="AA==", mime_type="x/y"),
        annotations=Annotations(audience=["user"], priority=0.5, last_modified="2025-01-01"),
    )
    assert unstructure([block, ResourceLink(uri="u", name="n", size=3)]) == [
        {
            "type": "resource",
            "resource": {"uri": "file:///a", "blob": "AA==", "mimeType": "x/y"},
            "annotations": {
                "audience": ["user"],
                "priority": 0.5,
                "lastModified": "2025-01-01",
            },
        },
        {"type": "resource_link", "uri": "u", "name": "n", "size": 3},
    ]


def test_from_bytes_builders() -> None:
    assert ImageContent.from_bytes(b"\x89PNG") == ImageContent(
        data="iVBORw==", mime_type="image/png"
    )
    assert AudioContent.from_bytes(b"RIFF", "audio/x") == AudioContent(
        data="UklGRg==", mime_type="audio/x"
    )
    assert BlobResourceContents.from_bytes("u", b"\x00") == BlobResourceContents(
        uri="u", blob="AA=="
    )


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"type": "text", "text": "x"}, TextContent(text="x")),
        (
            {"type": "audio", "data": "A", "mimeType": "a/b"},
            AudioContent(data="A", mime_type="a/b"),
        ),
        (
            {"type": "resource", "resource": {"uri": "u", "blob": "AA=="}},
            EmbeddedResource(resource=BlobResourceContents(uri="u", blob="AA==")),
        ),
        (
            {"type": "resource", "resource": {"uri": "u", "text": "t", "mimeType": "m"}},
            EmbeddedResource(resource=TextResourceContents(uri="u", text="t", mime_type="m")),
        ),
        (
            {"type": "resource_link", "uri": "u", "name": "n", "_meta": {"a": 1}},
            ResourceLink(uri="u", name="n", meta={"a": 1}),
        ),
    ],
)
def test_structure_content_by_type_tag(value: Any, expected: Any) -> None:
    assert structure(value, ContentBlock) == expected  # type: ignore[arg-type]


def test_structure_accepts_integers_for_numbers() -> None:
    assert structure({"priority": 1}, Annotations) == Annotations(priority=1.0)
    assert type(structure({"priority": 1}, Annotations).priority) is float


def test_types_convert_after_the_public_module_rename() -> None:
    # The package shows public classes under ``mcpactor``; cattrs resolves string
    # annotations in ``__module__``'s namespace, which must not break a fresh converter.
    assert mcpactor.TextContent.__module__ == "mcpactor"
    fresh = _build()
    for cls in WIRE_TYPES:
        fresh.get_structure_hook(cls)
        fresh.get_unstructure_hook(cls)
    assert fresh.structure({"type": "text", "text": "x"}, TextContent) == TextContent(text="x")


# --- errors carry wire names ------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "cls", "path"),
    [
        (
            {
                "role": "assistant",
                "content": {"type": "text", "text": "x"},
                "model": "m",
                "stopReason": 5,
            },
            CreateMessageResult,
            "$.stopReason",
        ),
        (
            {"role": "assistant", "content": {"type": "image", "data": "x"}, "model": "m"},
            CreateMessageResult,
            "$.content.mimeType",
        ),
        (
            {"role": "user", "content": {"type": "text", "text": "x"}},
            CreateMessageResult,
            "$.model",
        ),
        ({"costPriority": "high"}, ModelPreferences, "$.costPriority"),
        ({"hints": [{"name": 3}]}, ModelPreferences, "$.hints[0].name"),
        ({"uri": "file:///", "_meta": 5}, Root, "$._meta"),
        ({"action": "accept", "content": ["x"]}, ElicitResult, "$.content"),
        ({"action": "maybe"}, ElicitResult, "$.action"),
        ({"values": ["a"], "hasMore": "yes"}, Completion, "$.hasMore"),
        ({"values": ["a"], "total": 1.5}, Completion, "$.total"),
        (
            {"type": "text", "text": "t", "annotations": {"lastModified": 2025}},
            TextContent,
            "$.annotations.lastModified",
        ),
        (
            {"messages": [{"role": "user", "content": {"type": "video"}}]},
            GetPromptResult,
            "$.messages[0].content",
        ),
    ],
)
def test_structure_error_paths_use_wire_names(value: Any, cls: type, path: str) -> None:
    with pytest.raises(RemoteProtocolError) as info:
        structure(value, cls)
    assert info.value.code == INVALID_PARAMS
    errors = info.value.data["errors"]
    assert any(line.endswith(f" @ {path}") for line in errors), errors
    assert info.value.message.startswith(f"invalid {cls.__name__}: ")


@pytest.mark.parametrize("value", [None, 5, "text", [1]])
def test_structure_of_a_non_object_is_32602(value: Any) -> None:
    with pytest.raises(RemoteProtocolError) as info:
        structure(value, Root)
    assert info.value.code == INVALID_PARAMS
    assert info.value.data == {"errors": [f"expected an object, got {type(value).__name__}"]}


def test_structure_unknown_content_type() -> None:
    with pytest.raises(RemoteProtocolError) as info:
        structure({"type": "video", "url": "x"}, ContentBlock)  # type: ignore[arg-type]
    assert info.value.code == INVALID_PARAMS
    assert info.value.data == {"errors": ["unknown content type 'video'"]}


@pytest.mark.parametrize(
    ("cls", "base", "key", "bad"),
    [
        (Root, {}, "uri", 5),
        (Root, {}, "uri", None),
        (Root, {}, "uri", {"a": 1}),
        (Root, {"uri": "u"}, "name", False),
        (Completion, {"values": []}, "hasMore", "false"),
        (Completion, {"values": []}, "hasMore", 1),
        (Completion, {"values": []}, "total", "3"),
        (Completion, {"values": []}, "total", True),
        (Completion, {"values": []}, "total", 2.0),
        (Completion, {}, "values", "abc"),
        (Annotations, {}, "priority", True),
        (Annotations, {}, "priority", "0.5"),
        (TextContent, {}, "text", 12),
    ],
)
def test_structure_does_not_coerce_scalars(
    cls: type, base: dict[str, Any], key: str, bad: Any
) -> None:
    # a peer's wrong shape is an error, not a silently converted value (bool("false"))
    with pytest.raises(RemoteProtocolError) as info:
        structure({**base, key: bad}, cls)
    assert any(f"@ $.{key}" in line for line in info.value.data["errors"])


# --- strategies: every wire type, built from its own annotations -------------------------

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=6,
)
json_objects = st.dictionaries(st.text(max_size=6), json_values, max_size=3)
# what a form may answer in ElicitResult.content (the schema's primitive values)
form_values = st.dictionaries(
    st.text(max_size=6),
    st.text(max_size=4) | st.integers(-100, 100) | st.booleans() | st.lists(st.text(max_size=3)),
    max_size=3,
)


def strategy_for(tp: Any) -> st.SearchStrategy[Any]:
    """Values of one field's annotated type that the official schema also accepts."""
    origin = typing.get_origin(tp)
    if tp is type(None):
        return st.none()
    if tp is str:
        return st.text(max_size=8)
    if tp is bool:
        return st.booleans()
    if tp is int:
        return st.integers(min_value=0, max_value=2**53)
    if tp is float:
        # every float field of the wire types is a priority in [0, 1]
        return st.floats(min_value=0.0, max_value=1.0)
    if origin is Literal:
        return st.sampled_from(typing.get_args(tp))
    if origin in (typing.Union, types.UnionType):
        return st.one_of([strategy_for(arg) for arg in typing.get_args(tp)])
    if origin is list:
        (item,) = typing.get_args(tp)
        return st.lists(strategy_for(item), max_size=2)
    if origin is dict:
        return json_objects
    assert attrs.has(tp), tp
    return instances(tp)


@functools.cache
def instances(cls: type) -> st.SearchStrategy[Any]:
    fields: dict[str, st.SearchStrategy[Any]] = {}
    for field in attrs.fields(attrs.resolve_types(cls)):
        if field.init:
            fields[field.name] = strategy_for(field.type)
    if cls is ElicitResult:
        fields["content"] = st.none() | form_values
    return st.builds(cls, **fields)


def test_every_wire_type_is_covered() -> None:
    # a new wire type must show up in the round-trip and schema tests below
    assert {cls.__name__ for cls in WIRE_TYPES} == set(SCHEMA_DEFINITIONS) | {"Completion"}


@pytest.mark.parametrize("cls", WIRE_TYPES, ids=lambda cls: cls.__name__)
@given(data=st.data())
@settings(max_examples=40)
def test_round_trip(cls: type, data: st.DataObject) -> None:
    value = data.draw(instances(cls))
    wire = unstructure(value)
    assert structure(wire, cls) == value
    # and through real JSON bytes
    assert structure(orjson.loads(orjson.dumps(wire)), cls) == value
    # None never reaches the wire at the top level of a type
    assert None not in wire.values()
    assert all("_" not in key or key == "_meta" for key in wire)


@pytest.mark.parametrize("cls", WIRE_TYPES, ids=lambda cls: cls.__name__)
@given(data=st.data())
@settings(max_examples=25)
def test_unstructure_without_cattrs_matches_the_converter(cls: type, data: st.DataObject) -> None:
    # unstructure() walks wire types itself; cattrs must agree on every one of them
    value = data.draw(instances(cls))
    assert unstructure(value) == _build().unstructure(value)


class Colour(enum.Enum):
    RED = "red"


@attrs.frozen
class UserRecord:
    some_field: int


@pytest.mark.parametrize(
    "meta",
    [
        {"colour": Colour.RED},
        {"pair": (1, 2)},
        {"record": UserRecord(some_field=1)},
        {"nested": [{"deep": frozenset()}]},
        {1: "an int key"},
    ],
    ids=["enum", "tuple", "attrs", "nested-set", "int-key"],
)
def test_unstructure_hands_other_values_to_the_converter(meta: dict[Any, Any]) -> None:
    block = TextContent(text="x", meta=meta)
    assert unstructure(block) == _build().unstructure(block)
    assert unstructure([block]) == _build().unstructure([block])


SCHEMA_DEFINITIONS = {
    "Annotations": "Annotations",
    "AudioContent": "AudioContent",
    "BlobResourceContents": "BlobResourceContents",
    "CallToolResult": "CallToolResult",
    "CreateMessageResult": "CreateMessageResult",
    "ElicitResult": "ElicitResult",
    "EmbeddedResource": "EmbeddedResource",
    "GetPromptResult": "GetPromptResult",
    "Icon": "Icon",
    "ImageContent": "ImageContent",
    "Implementation": "Implementation",
    "ModelHint": "ModelHint",
    "ModelPreferences": "ModelPreferences",
    "PromptMessage": "PromptMessage",
    "ResourceLink": "ResourceLink",
    "Root": "Root",
    "SamplingMessage": "SamplingMessage",
    "TextContent": "TextContent",
    "TextResourceContents": "TextResourceContents",
    "ToolAnnotations": "ToolAnnotations",
}


@pytest.mark.parametrize(
    "cls",
    [cls for cls in WIRE_TYPES if cls.__name__ in SCHEMA_DEFINITIONS],
    ids=lambda c: c.__name__,
)
@given(data=st.data())
@settings(max_examples=25)
def test_unstructured_values_match_the_schema(cls: type, data: st.DataObject) -> None:
    value = data.draw(instances(cls))
    check(unstructure(value), "2025-11-25", SCHEMA_DEFINITIONS[cls.__name__])


@given(instances(Completion))
def test_completion_matches_the_schema(completion: Completion) -> None:
    check({"completion": unstructure(completion)}, "2025-11-25", "CompleteResult")


content_blocks = st.one_of(
    [
        instances(cls)
        for cls in (TextContent, ImageContent, AudioContent, EmbeddedResource, ResourceLink)
    ]
)


@given(content_blocks)
def test_content_blocks_match_the_schema(block: Any) -> None:
    wire = unstructure(block)
    check(wire, "2025-11-25", "ContentBlock")
    assert structure(wire, ContentBlock) == block  # type: ignore[arg-type]


# --- a wrong value in any field is reported at that field's wire name ------------------


def field_cases() -> list[tuple[type, str]]:
    return [(cls, field.name) for cls in WIRE_TYPES for field in attrs.fields(cls) if field.init]


@pytest.mark.parametrize(
    ("cls", "attribute"), field_cases(), ids=lambda v: v.__name__ if isinstance(v, type) else v
)
@given(data=st.data())
@settings(max_examples=5)
def test_wrong_field_reported_at_its_wire_name(
    cls: type, attribute: str, data: st.DataObject
) -> None:
    wire = unstructure(data.draw(instances(cls)))
    key = wire_name(attribute)
    # [7] is wrong for every field type of the wire types: no field is a list of ints
    wire[key] = [7]
    with pytest.raises(RemoteProtocolError) as info:
        structure(wire, cls)
    assert info.value.code == INVALID_PARAMS
    pattern = re.compile(rf" @ \$\.{re.escape(key)}(\[\d+\])?(\.|$)")
    assert any(pattern.search(line) for line in info.value.data["errors"]), info.value.data
    assert not any(
        f"$.{attribute}" in line for line in info.value.data["errors"] if key != attribute
    )
