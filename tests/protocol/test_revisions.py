"""The revision table: negotiation, and each row checked against its official schema."""

from __future__ import annotations

import functools
from typing import Any

import orjson
import pytest

from mcpactor.protocol import HEADERLESS_HTTP, LATEST, REVISIONS, SESSION_REVISIONS, negotiate
from mcpactor.protocol._revisions import STATELESS_REVISIONS, revision
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

#: every row of the table, both eras
ALL_VERSIONS = tuple(REVISIONS)

CONTENT_DEFINITIONS = {
    "text": "TextContent",
    "image": "ImageContent",
    "audio": "AudioContent",
    "resource": "EmbeddedResource",
    "resource_link": "ResourceLink",
}


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_batching_matches_schema(version: str) -> None:
    assert REVISIONS[version].batching == ("JSONRPCBatchRequest" in definitions(version))


@pytest.mark.parametrize("version", ALL_VERSIONS)
@pytest.mark.parametrize("kind", sorted(CONTENT_DEFINITIONS))
def test_content_kinds_match_schema(version: str, kind: str) -> None:
    defined = CONTENT_DEFINITIONS[kind] in definitions(version)
    assert (kind in REVISIONS[version].content_kinds) == defined


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_content_kind_tags_match_schema(version: str) -> None:
    # the kind names are the wire ``type`` tags
    for kind in REVISIONS[version].content_kinds:
        schema = definitions(version)[CONTENT_DEFINITIONS[kind]]
        assert schema["properties"]["type"]["const"] == kind


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_structured_content_matches_schema(version: str) -> None:
    has = "structuredContent" in properties(version, "CallToolResult")
    assert REVISIONS[version].structured_content == has
    assert ("outputSchema" in properties(version, "Tool")) == has


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_elicitation_matches_schema(version: str) -> None:
    has = "ElicitRequest" in definitions(version)
    assert REVISIONS[version].elicitation == has
    assert ("elicitation" in properties(version, "ClientCapabilities")) == has
    assert ("elicitation/create" in methods(version)) == has


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_url_elicitation_matches_schema(version: str) -> None:
    defs = definitions(version)
    row = REVISIONS[version]
    assert row.elicitation_url == ("ElicitRequestURLParams" in defs)
    # 2026-07-28 keeps URL mode but drops its id, its notification and -32042.
    assert row.elicitation_ids == ("URLElicitationRequiredError" in defs)
    if row.elicitation_url:
        url_params = properties(version, "ElicitRequestURLParams")
        assert row.elicitation_ids == ("elicitationId" in url_params)
        assert row.elicitation_ids == ("notifications/elicitation/complete" in methods(version))


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_tasks_match_schema(version: str) -> None:
    assert REVISIONS[version].tasks == ("tasks/get" in methods(version))
    assert REVISIONS[version].tasks == ("tasks" in properties(version, "ServerCapabilities"))


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_completions_capability_matches_schema(version: str) -> None:
    has = "completions" in properties(version, "ServerCapabilities")
    assert REVISIONS[version].completions_capability == has


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_progress_message_matches_schema(version: str) -> None:
    params = resolve(version, definitions(version)["ProgressNotification"]["properties"]["params"])
    assert REVISIONS[version].progress_message == ("message" in params["properties"])


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_tool_fields_match_schema(version: str) -> None:
    assert REVISIONS[version].tool_fields == properties(version, "Tool")


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_resource_fields_match_schema(version: str) -> None:
    fields = properties(version, "Resource") | properties(version, "ResourceTemplate")
    assert REVISIONS[version].resource_fields == fields


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_prompt_fields_match_schema(version: str) -> None:
    assert REVISIONS[version].prompt_fields == properties(version, "Prompt")


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_implementation_fields_match_schema(version: str) -> None:
    assert REVISIONS[version].implementation_fields == properties(version, "Implementation")


@pytest.mark.parametrize("version", SESSION_VERSIONS)
def test_session_revisions_have_initialize(version: str) -> None:
    assert REVISIONS[version].sessions
    assert {"initialize", "notifications/initialized"} <= methods(version)


# --- the facts the stateless era differs by, each read from the schema -------------------


def union_methods(version: str, union: str) -> set[str]:
    """The methods of the messages a union definition (ClientRequest, …) allows."""
    defs = definitions(version)
    if union not in defs:
        return set()
    return {
        defs[ref["$ref"].rsplit("/", 1)[-1]]["properties"]["method"]["const"]
        for ref in defs[union]["anyOf"]
    }


#: each request with parameters of its own, by the definition of those parameters
PARAMS_OF = {
    "tools/call": "CallToolRequestParams",
    "prompts/get": "GetPromptRequestParams",
    "resources/read": "ReadResourceRequestParams",
    "completion/complete": "CompleteRequestParams",
}

#: each request's result definition, for the cacheable ones and their neighbours
RESULT_OF = {
    "server/discover": "DiscoverResult",
    "tools/list": "ListToolsResult",
    "tools/call": "CallToolResult",
    "prompts/list": "ListPromptsResult",
    "prompts/get": "GetPromptResult",
    "resources/list": "ListResourcesResult",
    "resources/templates/list": "ListResourceTemplatesResult",
    "resources/read": "ReadResourceResult",
    "completion/complete": "CompleteResult",
}


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_client_requests_match_schema(version: str) -> None:
    assert REVISIONS[version].client_requests == union_methods(version, "ClientRequest")


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_server_requests_match_schema(version: str) -> None:
    assert REVISIONS[version].server_requests == union_methods(version, "ServerRequest")


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_input_requests_match_schema(version: str) -> None:
    row = REVISIONS[version]
    assert row.input_requests == union_methods(version, "InputRequest")
    retried = {
        method
        for method, params in PARAMS_OF.items()
        if params in definitions(version) and "inputResponses" in properties(version, params)
    }
    assert row.input_required_methods == retried
    # a revision either sends the client requests or asks in results, never both
    assert not (row.input_requests and row.server_requests)


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_request_envelope_matches_schema(version: str) -> None:
    defs = definitions(version)
    has = "RequestMetaObject" in defs and {
        "io.modelcontextprotocol/protocolVersion",
        "io.modelcontextprotocol/clientCapabilities",
    } <= set(defs["RequestMetaObject"].get("required", ()))
    assert REVISIONS[version].request_envelope == has
    # the envelope replaces the handshake: exactly the revisions without sessions
    assert REVISIONS[version].request_envelope == (not REVISIONS[version].sessions)
    assert REVISIONS[version].sessions == ("initialize" in methods(version))


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_result_type_matches_schema(version: str) -> None:
    result = definitions(version)["Result"]
    assert REVISIONS[version].result_type == ("resultType" in result.get("required", ()))


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_server_info_meta_matches_schema(version: str) -> None:
    meta = definitions(version).get("ResultMetaObject", {}).get("properties", {})
    assert REVISIONS[version].server_info_meta == ("io.modelcontextprotocol/serverInfo" in meta)


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_cacheable_results_match_schema(version: str) -> None:
    defs = definitions(version)
    cacheable = {
        method
        for method, result in RESULT_OF.items()
        if result in defs and {"ttlMs", "cacheScope"} <= set(defs[result].get("required", ()))
    }
    assert REVISIONS[version].cacheable == cacheable


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_per_request_log_level_matches_schema(version: str) -> None:
    meta = definitions(version).get("RequestMetaObject", {}).get("properties", {})
    has = "io.modelcontextprotocol/logLevel" in meta
    assert REVISIONS[version].log_level_per_request == has
    assert REVISIONS[version].log_level_per_request == ("logging/setLevel" not in methods(version))


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_listen_matches_schema(version: str) -> None:
    row = REVISIONS[version]
    assert row.listen == ("subscriptions/listen" in methods(version))
    assert row.listen == ("resources/subscribe" not in methods(version))


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_header_mirroring_matches_schema(version: str) -> None:
    assert REVISIONS[version].header_mirroring == ("HeaderMismatchError" in definitions(version))


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_extensions_match_schema(version: str) -> None:
    has = "extensions" in properties(version, "ServerCapabilities")
    assert REVISIONS[version].extensions == has
    assert ("extensions" in properties(version, "ClientCapabilities")) == has


def test_the_stateless_revision_is_a_row_of_its_own() -> None:
    assert STATELESS_REVISIONS == ("2026-07-28",)
    row = REVISIONS["2026-07-28"]
    assert not row.sessions
    assert not row.batching
    # resource-not-found is Invalid Params at 2026-07-28 (the basic page's error codes)
    assert row.resource_not_found_code == -32602
    assert {REVISIONS[v].resource_not_found_code for v in SESSION_REVISIONS} == {-32002}
    # no event ids, so no priming event; tasks moved out into an extension
    assert not row.priming_event
    assert not row.tasks


@pytest.mark.parametrize("requested", [*STATELESS_REVISIONS])
def test_negotiate_never_picks_a_stateless_revision(requested: str) -> None:
    assert negotiate(requested) is LATEST
    assert negotiate(requested, SESSION_REVISIONS) is LATEST
