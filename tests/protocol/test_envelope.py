"""The stateless envelope: ``params._meta`` read, checked and refused with the schema's errors."""

from __future__ import annotations

from typing import Any

import pytest

from mcpactor.protocol import REVISIONS, Negotiated, Request, error_message_for
from mcpactor.protocol._envelope import (
    ALL_VERSIONS,
    CLIENT_CAPABILITIES,
    CLIENT_INFO,
    HEADER_MISMATCH,
    LOG_LEVEL,
    MAX_CAPABILITIES_DEPTH,
    MISSING_CLIENT_CAPABILITY,
    PROTOCOL_VERSION,
    UNSUPPORTED_PROTOCOL_VERSION,
    Envelope,
    EnvelopeError,
    has_envelope,
    missing_capabilities,
    read_envelope,
    require_capabilities,
)
from tests.spec_schema import check

MODERN = "2026-07-28"


def meta(**extra: Any) -> dict[str, Any]:
    found: dict[str, Any] = {PROTOCOL_VERSION: MODERN, CLIENT_CAPABILITIES: {}}
    found.update(extra)
    return found


def request(params: dict[str, Any] | None, method: str = "tools/list") -> Request:
    return Request(7, method, params)


def refusal(req: Request, **kwargs: Any) -> EnvelopeError:
    with pytest.raises(EnvelopeError) as info:
        read_envelope(req, **kwargs)
    error = info.value
    assert error.http_status == 400
    assert error.request_id == 7
    # every refusal is a valid error response at the revision
    check(error_message_for(error), MODERN, "JSONRPCErrorResponse")
    return error


# --- what a good envelope gives ---------------------------------------------------------


def test_a_minimal_envelope_is_a_negotiated_view() -> None:
    envelope = read_envelope(request({"_meta": meta()}))
    assert isinstance(envelope, Negotiated)
    assert envelope.revision is REVISIONS[MODERN]
    assert envelope.client_capabilities == {}
    assert envelope.client_info is None
    assert envelope.log_level is None
    check({"_meta": meta()}, MODERN, "RequestParams")


def test_every_optional_key_is_read() -> None:
    info = {"name": "client", "version": "1.2.3", "title": "A client"}
    caps = {"elicitation": {"form": {}}, "roots": {}}
    params = {
        "_meta": meta(**{CLIENT_INFO: info, CLIENT_CAPABILITIES: caps, LOG_LEVEL: "warning"})
    }
    check(params, MODERN, "RequestParams")
    envelope = read_envelope(request(params))
    assert envelope == Envelope(REVISIONS[MODERN], caps, info, "warning")
    assert envelope.client_has("elicitation", "form")
    assert envelope.client_has("roots")
    assert not envelope.client_has("sampling")


def test_log_messages_only_at_or_above_the_level_asked_for() -> None:
    quiet = read_envelope(request({"_meta": meta()}))
    assert not quiet.log_enabled("emergency")
    loud = read_envelope(request({"_meta": meta(**{LOG_LEVEL: "warning"})}))
    assert not loud.log_enabled("info")
    assert loud.log_enabled("warning")
    assert loud.log_enabled("error")
    assert not loud.log_enabled("no-such-level")


def test_has_envelope_is_the_version_key() -> None:
    assert has_envelope({"_meta": meta()})
    assert has_envelope({"_meta": {PROTOCOL_VERSION: 3}})  # malformed, still an envelope
    assert not has_envelope(None)
    assert not has_envelope({})
    assert not has_envelope({"_meta": {"progressToken": 1}})
    assert not has_envelope({"_meta": "x"})


# --- missing or malformed keys: -32602, 400 -----------------------------------------------


@pytest.mark.parametrize(
    "params",
    [
        None,
        {},
        {"_meta": None},
        {"_meta": []},
        {"_meta": {CLIENT_CAPABILITIES: {}}},
        {"_meta": {PROTOCOL_VERSION: 20260728, CLIENT_CAPABILITIES: {}}},
        {"_meta": {PROTOCOL_VERSION: MODERN}},
        {"_meta": {PROTOCOL_VERSION: MODERN, CLIENT_CAPABILITIES: []}},
        {"_meta": {PROTOCOL_VERSION: MODERN, CLIENT_CAPABILITIES: None}},
        {"_meta": meta(**{CLIENT_INFO: "me"})},
        {"_meta": meta(**{CLIENT_INFO: {"name": "me"}})},
        {"_meta": meta(**{CLIENT_INFO: {"name": "me", "version": 1}})},
        {"_meta": meta(**{LOG_LEVEL: "loud"})},
        {"_meta": meta(**{LOG_LEVEL: 3})},
    ],
)
def test_missing_or_malformed_keys_are_invalid_params(params: dict[str, Any] | None) -> None:
    error = refusal(request(params))
    assert error.code == -32602
    check(error.to_error(), MODERN, "InvalidParamsError")


def test_a_deep_capabilities_object_is_refused_without_walking_it() -> None:
    deep: dict[str, Any] = {}
    node = deep
    for _ in range(MAX_CAPABILITIES_DEPTH + 1):
        node["x"] = {}
        node = node["x"]
    error = refusal(request({"_meta": meta(**{CLIENT_CAPABILITIES: deep})}))
    assert error.code == -32602
    assert str(MAX_CAPABILITIES_DEPTH) in error.message


def test_a_huge_value_is_quoted_bounded() -> None:
    error = refusal(request({"_meta": meta(**{CLIENT_INFO: "x" * 100_000})}))
    assert len(error.message) < 400


# --- unknown versions: -32022 with supported and requested --------------------------------


@pytest.mark.parametrize("version", ["1900-01-01", "2025-11-25", "", "2026-07-28 "])
def test_an_unserved_version_names_what_is_served(version: str) -> None:
    error = refusal(request({"_meta": meta(**{PROTOCOL_VERSION: version})}))
    assert error.code == UNSUPPORTED_PROTOCOL_VERSION == -32022
    assert error.data == {"supported": list(ALL_VERSIONS), "requested": version}
    check(error_message_for(error), MODERN, "UnsupportedProtocolVersionError")


def test_a_server_may_serve_fewer_revisions() -> None:
    error = refusal(request({"_meta": meta()}), supported=())
    assert error.code == -32022
    assert error.data == {"supported": [], "requested": MODERN}


def test_a_long_requested_version_is_clipped() -> None:
    error = refusal(request({"_meta": meta(**{PROTOCOL_VERSION: "9" * 10_000})}))
    assert len(error.data["requested"]) <= 500


def test_supported_lists_both_eras_newest_first() -> None:
    # as the versioning page's example: a server of both eras names every revision
    assert ALL_VERSIONS[0] == MODERN
    assert set(ALL_VERSIONS) == set(REVISIONS)
    assert tuple(sorted(REVISIONS, reverse=True)) == ALL_VERSIONS


def test_a_session_revision_has_no_envelope() -> None:
    error = refusal(request({"_meta": meta(**{PROTOCOL_VERSION: "2025-11-25"})}))
    assert error.code == -32022
    assert "initialize" in error.message
    served = read_envelope(request({"_meta": meta()}), supported=(MODERN,))
    assert served.revision.version == MODERN


# --- capabilities a method needs: -32021 ----------------------------------------------------


def test_a_method_that_needs_a_capability_refuses_a_client_without_it() -> None:
    requires = {"tools/call": {"elicitation": {}}}
    ok = read_envelope(request({"_meta": meta()}, "tools/list"), requires=requires)
    assert ok.client_capabilities == {}
    error = refusal(request({"_meta": meta()}, "tools/call"), requires=requires)
    assert error.code == MISSING_CLIENT_CAPABILITY == -32021
    assert error.data == {"requiredCapabilities": {"elicitation": {}}}
    check(error_message_for(error), MODERN, "MissingRequiredClientCapabilityError")
    caps = {"elicitation": {}}
    served = read_envelope(
        request({"_meta": meta(**{CLIENT_CAPABILITIES: caps})}, "tools/call"), requires=requires
    )
    assert served.client_has("elicitation")


def test_missing_capabilities_walks_nested_requirements() -> None:
    negotiated = Negotiated(
        REVISIONS[MODERN], {"elicitation": {"form": {}}, "sampling": False, "roots": None}
    )
    assert missing_capabilities(negotiated, {"elicitation": {"form": {}}}) == {}
    assert missing_capabilities(negotiated, {"elicitation": {"url": {}}}) == {
        "elicitation": {"url": {}}
    }
    assert missing_capabilities(negotiated, {"sampling": {}, "roots": {}}) == {
        "sampling": {},
        "roots": {},
    }
    with pytest.raises(EnvelopeError) as info:
        require_capabilities(negotiated, {"extensions": {"io.modelcontextprotocol/tasks": {}}})
    assert info.value.code == -32021
    assert info.value.data == {
        "requiredCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}
    }
    require_capabilities(negotiated, {})


def test_the_codes_are_the_specs() -> None:
    # the basic page's table: HeaderMismatch, MissingRequiredClientCapability,
    # UnsupportedProtocolVersion
    assert (HEADER_MISMATCH, MISSING_CLIENT_CAPABILITY, UNSUPPORTED_PROTOCOL_VERSION) == (
        -32020,
        -32021,
        -32022,
    )
    for code, definition in [
        (-32020, "HeaderMismatchError"),
        (-32021, "MissingRequiredClientCapabilityError"),
        (-32022, "UnsupportedProtocolVersionError"),
    ]:
        data = {"requiredCapabilities": {}} if code == -32021 else None
        if code == -32022:
            data = {"supported": [], "requested": "x"}
        error: dict[str, Any] = {"code": code, "message": "m"}
        if data is not None:
            error["data"] = data
        check({"jsonrpc": "2.0", "id": 1, "error": error}, MODERN, definition)
