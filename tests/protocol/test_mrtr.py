"""Multi round-trip requests: input_required results and retries, checked against the schema."""

from __future__ import annotations

from typing import Any

import pytest

from mcpactor._exceptions import CapabilityError, LocalProtocolError
from mcpactor.protocol import REVISIONS, Negotiated, error_message_for
from mcpactor.protocol._envelope import EnvelopeError
from mcpactor.protocol._mrtr import (
    INPUT_REQUIRED,
    MAX_INPUT_KEY_LENGTH,
    MAX_INPUT_REQUESTS,
    Retry,
    elicitation_request,
    input_required_result,
    needed_capabilities,
    read_retry,
    roots_request,
    sampling_request,
    url_elicitation_request,
)
from mcpactor.protocol._sealing import KeyRing, SealingKey, StateSealer
from tests.spec_schema import check

MODERN = "2026-07-28"
EVERYTHING = {"elicitation": {"form": {}, "url": {}}, "sampling": {"tools": {}}, "roots": {}}
SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
SAMPLING = {
    "messages": [{"role": "user", "content": {"type": "text", "text": "Capital of France?"}}],
    "maxTokens": 100,
}


def negotiated(capabilities: dict[str, Any] | None = None, version: str = MODERN) -> Negotiated:
    return Negotiated(REVISIONS[version], EVERYTHING if capabilities is None else capabilities)


def envelope_meta() -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": EVERYTHING,
    }


# --- the requests -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("request_", "definition"),
    [
        (elicitation_request("Your GitHub login?", SCHEMA), "ElicitRequest"),
        (url_elicitation_request("Sign in", "https://example.com/auth"), "ElicitRequest"),
        (sampling_request(SAMPLING), "CreateMessageRequest"),
        (roots_request(), "ListRootsRequest"),
    ],
)
def test_each_input_request_is_a_schema_request(request_: dict[str, Any], definition: str) -> None:
    check(request_, MODERN, definition)
    check(request_, MODERN, "InputRequest")


def test_what_each_request_needs() -> None:
    assert needed_capabilities(elicitation_request("m", SCHEMA)) == {"elicitation": {"form": {}}}
    assert needed_capabilities(url_elicitation_request("m", "https://x")) == {
        "elicitation": {"url": {}}
    }
    assert needed_capabilities(sampling_request(SAMPLING)) == {"sampling": {}}
    tools = {**SAMPLING, "tools": [{"name": "t", "inputSchema": {"type": "object"}}]}
    assert needed_capabilities(sampling_request(tools)) == {"sampling": {"tools": {}}}
    context = {**SAMPLING, "includeContext": "thisServer"}
    assert needed_capabilities(sampling_request(context)) == {"sampling": {"context": {}}}
    assert needed_capabilities(roots_request()) == {"roots": {}}


# --- the result ---------------------------------------------------------------------------


def test_an_input_required_result_validates() -> None:
    sealer = StateSealer(KeyRing.of(SealingKey.generate("k")))
    params = {"_meta": envelope_meta(), "name": "book", "arguments": {"city": "Oslo"}}
    state = sealer.seal({"round": 1}, method="tools/call", params=params, now=0)
    result = input_required_result(
        negotiated(),
        method="tools/call",
        input_requests={
            "github_login": elicitation_request("Your GitHub login?", SCHEMA),
            "capital": sampling_request(SAMPLING),
            "where": roots_request(),
        },
        request_state=state,
    )
    assert result["resultType"] == INPUT_REQUIRED
    assert set(result["inputRequests"]) == {"github_login", "capital", "where"}
    check(result, MODERN, "InputRequiredResult")
    check({"jsonrpc": "2.0", "id": 1, "result": result}, MODERN, "JSONRPCResultResponse")
    # and the client's retry is a valid request of the same method
    retry = {
        **params,
        "inputResponses": {
            "github_login": {"action": "accept", "content": {"name": "octocat"}},
            "capital": {
                "role": "assistant",
                "content": {"type": "text", "text": "Paris"},
                "model": "m",
            },
            "where": {"roots": [{"uri": "file:///src"}]},
        },
        "requestState": state,
    }
    check(retry, MODERN, "CallToolRequestParams")
    read = read_retry(retry)
    assert read.answers(result["inputRequests"]) == retry["inputResponses"]
    assert read.state == state
    assert sealer.open(read.state, method="tools/call", params=retry, now=1) == {"round": 1}


def test_a_state_alone_is_an_input_required_result() -> None:
    result = input_required_result(negotiated({}), method="prompts/get", request_state="s")
    assert result == {"resultType": INPUT_REQUIRED, "requestState": "s"}
    check(result, MODERN, "InputRequiredResult")


def test_a_result_needs_requests_or_a_state() -> None:
    with pytest.raises(LocalProtocolError, match="inputRequests or requestState"):
        input_required_result(negotiated(), method="tools/call")


@pytest.mark.parametrize("method", ["tools/list", "completion/complete", "server/discover"])
def test_only_the_retryable_methods_may_ask(method: str) -> None:
    with pytest.raises(LocalProtocolError, match="cannot be answered with input_required"):
        input_required_result(negotiated(), method=method, request_state="s")


def test_a_session_revision_never_asks_in_results() -> None:
    with pytest.raises(LocalProtocolError):
        input_required_result(
            negotiated(version="2025-11-25"), method="tools/call", request_state="s"
        )


def test_only_input_request_kinds_are_asked() -> None:
    with pytest.raises(LocalProtocolError, match="not an input request"):
        input_required_result(
            negotiated(), method="tools/call", input_requests={"p": {"method": "ping"}}
        )


@pytest.mark.parametrize("key", ["", "k" * (MAX_INPUT_KEY_LENGTH + 1)])
def test_keys_are_bounded(key: str) -> None:
    with pytest.raises(LocalProtocolError, match="key"):
        input_required_result(
            negotiated(), method="tools/call", input_requests={key: roots_request()}
        )


def test_the_number_of_requests_is_bounded() -> None:
    many = {f"r{i}": roots_request() for i in range(MAX_INPUT_REQUESTS + 1)}
    with pytest.raises(LocalProtocolError, match="more than"):
        input_required_result(negotiated(), method="tools/call", input_requests=many)


@pytest.mark.parametrize(
    ("declared", "request_", "required"),
    [
        ({}, elicitation_request("m", SCHEMA), {"elicitation": {"form": {}}}),
        (
            {"elicitation": {"url": {}}},
            elicitation_request("m", SCHEMA),
            {"elicitation": {"form": {}}},
        ),
        (
            {"elicitation": {}},
            url_elicitation_request("m", "https://x"),
            {"elicitation": {"url": {}}},
        ),
        ({"roots": {}}, sampling_request(SAMPLING), {"sampling": {}}),
        (
            {"sampling": {}},
            sampling_request({**SAMPLING, "toolChoice": {"mode": "auto"}}),
            {"sampling": {"tools": {}}},
        ),
        ({"sampling": {}}, roots_request(), {"roots": {}}),
    ],
)
def test_only_kinds_the_client_declared_are_asked(
    declared: dict[str, Any], request_: dict[str, Any], required: dict[str, Any]
) -> None:
    with pytest.raises(CapabilityError) as info:
        input_required_result(
            negotiated(declared), method="tools/call", input_requests={"k": request_}
        )
    error = info.value
    assert error.code == -32021
    assert error.data == {"requiredCapabilities": required}
    check(error_message_for(error), MODERN, "MissingRequiredClientCapabilityError")


def test_an_elicitation_capability_without_modes_is_form_mode() -> None:
    result = input_required_result(
        negotiated({"elicitation": {}}),
        method="tools/call",
        input_requests={"k": elicitation_request("m", SCHEMA)},
    )
    check(result, MODERN, "InputRequiredResult")


def test_every_missing_capability_is_named_at_once() -> None:
    with pytest.raises(CapabilityError) as info:
        input_required_result(
            negotiated({}),
            method="resources/read",
            input_requests={"a": roots_request(), "b": sampling_request(SAMPLING)},
        )
    assert info.value.data == {"requiredCapabilities": {"roots": {}, "sampling": {}}}


# --- the retry ----------------------------------------------------------------------------


def test_a_first_attempt_is_no_retry() -> None:
    assert read_retry(None) == Retry()
    first = read_retry({"name": "book"})
    assert not first.is_retry
    assert first.unanswered({"k": roots_request()}) == ["k"]


def test_answers_match_by_key_and_strays_are_ignored() -> None:
    asked = {"a": roots_request(), "b": roots_request()}
    retry = read_retry({"inputResponses": {"a": {"roots": []}, "zzz": {"roots": []}}})
    assert retry.is_retry
    assert retry.answers(asked) == {"a": {"roots": []}}
    assert retry.unanswered(asked) == ["b"]
    assert read_retry({"requestState": "s"}).is_retry


@pytest.mark.parametrize(
    "params",
    [
        {"inputResponses": []},
        {"inputResponses": "x"},
        {"inputResponses": {"a": "accept"}},
        {"inputResponses": {"k" * (MAX_INPUT_KEY_LENGTH + 1): {}}},
        {"inputResponses": {f"r{i}": {} for i in range(MAX_INPUT_REQUESTS + 1)}},
        {"requestState": 3},
        {"requestState": {"sealed": True}},
    ],
)
def test_a_malformed_retry_is_invalid_params(params: dict[str, Any]) -> None:
    with pytest.raises(EnvelopeError) as info:
        read_retry(params, request_id=4)
    error = info.value
    assert error.code == -32602
    assert error.http_status == 400
    assert len(error.message) < 700
    check(error_message_for(error), MODERN, "JSONRPCErrorResponse")
