"""The revision table: negotiation, and each row checked against its official schema."""

from __future__ import annotations

import functools
from typing import Any

import orjson
import pytest

from mcpactor.protocol import HEADERLESS_HTTP, LATEST, REVISIONS, SESSION_REVISIONS, negotiate
from mcpactor.protocol._revisions import revision
from tests.protocol.helpers import SESSION_VERSIONS
from tests.spec_schema import SPEC_DIR


@functools.cache
def definitions(version: str) -> dict[str, Any]:
    document = orjson.loads((SPEC_DIR / "schema" / version / "schema.json").read_bytes())
    return document.get("$defs") or document["definitions"]  # type: ignore[no-any-return]


def resolve(version: str, node: dict[str, Any]) -> dict[str, Any]:
    """Follow a local ``$ref`` to its definition."""
    ref = node.get("$ref")
    if ref is None:
        return node
    resolved: dict[str, Any] = definitions(version)[ref.rsplit("/", 1)[-1]]
    return resolved


def properties(version: str, name: str) -> set[str]:
    return set(definitions(version)[name]["properties"])


def methods(version: str) -> set[str]:
    """Every method name the revision's schema defines a message for."""
    found = set()
    for definition in definitions(version).values():
        method = definition.get("properties", {}).get("method", {})
        if "const" in method:
            found.add(method["const"])
    return found


# --- the table's shape ---------------------------------------------------------------


def test_session_revisions_are_the_four_known_ones_oldest_first() -> None:
    assert SESSION_REVISIONS == SESSION_VERSIONS
    assert LATEST is REVISIONS["2025-11-25"]
    assert all(REVISIONS[v].version == v for v in REVISIONS)


def test_revision_lookup() -> None:
    assert revision("2025-03-26") is REVISIONS["2025-03-26"]
    with pytest.raises(KeyError):
        revision("2099-01-01")


# --- transport facts (the transports page, not the schema) -----------------------------


def test_a_request_without_a_version_header_speaks_the_first_streamable_revision() -> None:
    # The transports page: assume 2025-03-26, the revision that introduced the transport.
    assert HEADERLESS_HTTP is REVISIONS["2025-03-26"]
    first = next(r for r in REVISIONS.values() if r.streamable_http)
    assert HEADERLESS_HTTP is first


def test_priming_events_came_with_2025_11_25_and_stay() -> None:
    # SEP-1699: POST SSE streams open with a priming event from 2025-11-25 on.
    priming = [v for v, r in REVISIONS.items() if r.priming_event]
    assert priming == ["2025-11-25"]
    assert priming == list(SESSION_REVISIONS[SESSION_REVISIONS.index(priming[0]) :])
    assert all(REVISIONS[v].streamable_http for v in priming)


# --- negotiate -------------------------------------------------------------------------


@pytest.mark.parametrize("version", SESSION_VERSIONS)
def test_negotiate_echoes_a_supported_revision(version: str) -> None:
    assert negotiate(version) is REVISIONS[version]


@pytest.mark.parametrize(
    "requested",
    ["2099-01-01", "2024-10-07", "", "2025-11-25 ", "2026-07-28", None, 20251125, ["2025-11-25"]],
)
def test_negotiate_answers_anything_else_with_the_latest(requested: object) -> None:
    assert negotiate(requested) is LATEST


def test_negotiate_within_a_restricted_set() -> None:
    supported = ("2025-03-26", "2025-06-18")
    assert negotiate("2025-03-26", supported) is REVISIONS["2025-03-26"]
    # supported by the table but not offered by this server: our latest of the offered
    assert negotiate("2025-11-25", supported) is REVISIONS["2025-06-18"]
    assert negotiate("2024-11-05", supported) is REVISIONS["2025-06-18"]


# --- every row agrees with its official schema ------------------------------------------

CONTENT_DEFINITIONS = {
    "text": "TextContent",
    "image": "ImageContent",
    "audio": "AudioContent",
    "resource": "EmbeddedResource",
    "resource_link": "ResourceLink",
}


@pytest.mark.parametrize("version", SESSION_VERSIONS)
def test_batching_matches_schema(version: str) -> None:
    assert REVISIONS[version].batching == ("JSONRPCBatchRequest" in definitions(version))


@pytest.mark.parametrize("version", SESSION_VERSIONS)
@pytest.mark.parametrize("kind", sorted(CONTENT_DEFINITIONS))
def test_content_kinds_match_schema(version: str, kind: str) -> None:
    defined = CONTENT_DEFINITIONS[kind] in definitions(version)
    assert (kind in REVISIONS[version].content_kinds) == defined


@pytest.mark.parametrize("version", SESSION_VERSIONS)
def test_content_kind_tags_match_schema(version: str) -> None:
    # the kind names are the wire ``type`` tags
    for kind in REVISIONS[version].content_kinds:
        schema = definitions(version)[CONTENT_DEFINITIONS[kind]]
        assert schema["properties"]["type"]["const"] == kind


@pytest.mark.parametrize("version", SESSION_VERSIONS)
def test_structured_content_matches_schema(version: str) -> None:
    has = "structuredContent" in properties(version, "CallToolResult")
    assert REVISIONS[version].structured_content == has
    assert ("outputSchema" in properties(version, "Tool")) == has


@pytest.mark.parametrize("version", SESSION_VERSIONS)
def test_elicitation_matches_schema(version: str) -> None:
    has = "ElicitRequest" in definitions(version)
    assert REVISIONS[version].elicitation == has
    assert ("elicitation" in properties(version, "ClientCapabilities")) == has
    assert ("elicitation/create" in methods(version)) == has


@pytest.mark.parametrize("version", SESSION_VERSIONS)
def test_url_elicitation_matches_schema(version: str) -> None:
    defs = definitions(version)
    assert REVISIONS[version].elicitation_url == ("ElicitRequestURLParams" in defs)
    assert REVISIONS[version].elicitation_url == ("URLElicitationRequiredError" in defs)


@pytest.mark.parametrize("version", SESSION_VERSIONS)
def test_tasks_match_schema(version: str) -> None:
    assert REVISIONS[version].tasks == ("tasks/get" in methods(version))
    assert REVISIONS[version].tasks == ("tasks" in properties(version, "ServerCapabilities"))


@pytest.mark.parametrize("version", SESSION_VERSIONS)
def test_completions_capability_matches_schema(version: str) -> None:
    has = "completions" in properties(version, "ServerCapabilities")
    assert REVISIONS[version].completions_capability == has


@pytest.mark.parametrize("version", SESSION_VERSIONS)
def test_progress_message_matches_schema(version: str) -> None:
    params = resolve(version, definitions(version)["ProgressNotification"]["properties"]["params"])
    assert REVISIONS[version].progress_message == ("message" in params["properties"])


@pytest.mark.parametrize("version", SESSION_VERSIONS)
def test_tool_fields_match_schema(version: str) -> None:
    assert REVISIONS[version].tool_fields == properties(version, "Tool")


@pytest.mark.parametrize("version", SESSION_VERSIONS)
def test_resource_fields_match_schema(version: str) -> None:
    fields = properties(version, "Resource") | properties(version, "ResourceTemplate")
    assert REVISIONS[version].resource_fields == fields


@pytest.mark.parametrize("version", SESSION_VERSIONS)
def test_prompt_fields_match_schema(version: str) -> None:
    assert REVISIONS[version].prompt_fields == properties(version, "Prompt")


@pytest.mark.parametrize("version", SESSION_VERSIONS)
def test_implementation_fields_match_schema(version: str) -> None:
    assert REVISIONS[version].implementation_fields == properties(version, "Implementation")


@pytest.mark.parametrize("version", SESSION_VERSIONS)
def test_session_revisions_have_initialize(version: str) -> None:
    assert REVISIONS[version].sessions
    assert {"initialize", "notifications/initialized"} <= methods(version)
