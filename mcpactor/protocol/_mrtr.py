# Multi round-trip requests: the shapes of ``input_required`` and of the retry.
#
# At a revision with ``Revision.input_requests`` the server never sends the client a
# request. A handler that needs the user (elicitation), the client's model (sampling)
# or its roots answers its own request with an ``InputRequiredResult``: a map of keyed
# ``inputRequests`` and, usually, a sealed ``requestState`` (_sealing.py). The client
# asks, then retries the original request with a new id, ``inputResponses`` under the
# same keys and the state echoed back.
#
# This module builds the requests (``elicitation_request``, ``sampling_request``,
# ``roots_request``), checks them against the revision and what the client declared
# (only kinds the client declared may be asked; -32021 otherwise), shapes the result
# (``input_required_result``) and reads a retry (``read_retry``): the answers by key,
# bounded, and the state still sealed. Matching answers to questions is by key only;
# answers nobody asked for are ignored, as the MRTR page says.

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

import attrs

from .._exceptions import INVALID_PARAMS, CapabilityError, LocalProtocolError
from ._bounded import bounded_value, clip_all, describe
from ._envelope import EnvelopeError, missing_capabilities
from ._jsonrpc import JSONObject, RequestId
from ._names import (
    INPUT_REQUIRED,
    MAX_INPUT_KEY_LENGTH,
    MAX_INPUT_REQUESTS,
    MISSING_CLIENT_CAPABILITY,
)
from ._session import Negotiated

__all__ = [
    "INPUT_REQUIRED",
    "MAX_INPUT_KEY_LENGTH",
    "MAX_INPUT_REQUESTS",
    "Retry",
    "client_lacks",
    "elicitation_request",
    "input_required_result",
    "needed_capabilities",
    "read_retry",
    "roots_request",
    "sampling_request",
    "url_elicitation_request",
]

_SAMPLING_CONTEXTS: Final = frozenset({"thisServer", "allServers"})


def elicitation_request(message: str, requested_schema: JSONObject) -> JSONObject:
    """An ``elicitation/create`` input request in form mode."""
    return {
        "method": "elicitation/create",
        "params": {"mode": "form", "message": message, "requestedSchema": requested_schema},
    }


def url_elicitation_request(message: str, url: str) -> JSONObject:
    """An ``elicitation/create`` input request in URL mode (no id: the retry says how it went)."""
    return {
        "method": "elicitation/create",
        "params": {"mode": "url", "message": message, "url": url},
    }


def sampling_request(params: JSONObject) -> JSONObject:
    """A ``sampling/createMessage`` input request with these (CreateMessageRequest) params."""
    return {"method": "sampling/createMessage", "params": params}


def roots_request() -> JSONObject:
    """A ``roots/list`` input request."""
    return {"method": "roots/list"}


def needed_capabilities(input_request: JSONObject) -> JSONObject:
    """The client capabilities asking ``input_request`` needs (ClientCapabilities-shaped)."""
    method = input_request.get("method")
    params = input_request.get("params")
    params = params if type(params) is dict else {}
    if method == "elicitation/create":
        return {"elicitation": {"url" if params.get("mode") == "url" else "form": {}}}
    if method == "sampling/createMessage":
        needed: JSONObject = {}
        if params.get("tools") or params.get("toolChoice"):
            needed["tools"] = {}
        if params.get("includeContext") in _SAMPLING_CONTEXTS:
            needed["context"] = {}
        return {"sampling": needed}
    if method == "roots/list":
        return {"roots": {}}
    return {}


def client_lacks(negotiated: Negotiated, needed: JSONObject) -> JSONObject:
    """The part of ``needed`` the client did not declare (empty: all declared)."""
    # An elicitation capability without modes declares form mode only (the
    # elicitation page's backward-compatible reading).
    elicitation = negotiated.client_capabilities.get("elicitation")
    wanted = needed.get("elicitation")
    if (
        type(elicitation) is dict
        and type(wanted) is dict
        and "form" in wanted
        and "form" not in elicitation
        and "url" not in elicitation
    ):
        needed = {k: v for k, v in needed.items() if k != "elicitation"}
    return missing_capabilities(negotiated, needed)


def input_required_result(
    negotiated: Negotiated,
    *,
    method: str,
    input_requests: Mapping[str, JSONObject] | None = None,
    request_state: str | None = None,
) -> JSONObject:
    """The ``InputRequiredResult`` answering a ``method`` request at this revision.

    Raises:
        LocalProtocolError: the revision has no multi round-trip requests, ``method``
            may not be answered so, a request is not of a kind the revision asks in
            results, a key is empty or too long, there are too many, or neither
            requests nor a state are given.
        CapabilityError: the client did not declare what a request needs (code -32021,
            ``data.requiredCapabilities``).
    """
    revision = negotiated.revision
    if method not in revision.input_required_methods:
        raise LocalProtocolError(
            f"{describe(method)} cannot be answered with input_required at {revision.version}"
        )
    requests = dict(input_requests or {})
    if not requests and request_state is None:
        raise LocalProtocolError("an input_required result needs inputRequests or requestState")
    if len(requests) > MAX_INPUT_REQUESTS:
        raise LocalProtocolError(f"more than {MAX_INPUT_REQUESTS} inputRequests in one result")
    required: JSONObject = {}
    for key, request in requests.items():
        if not isinstance(key, str) or not key or len(key) > MAX_INPUT_KEY_LENGTH:
            raise LocalProtocolError(
                f"an inputRequests key is 1 to {MAX_INPUT_KEY_LENGTH} characters, "
                f"got {describe(key)}"
            )
        kind = request.get("method")
        if kind not in revision.input_requests:
            raise LocalProtocolError(
                f"inputRequests[{key!r}]: {describe(kind)} is not an input request at "
                f"{revision.version}; expected one of {sorted(revision.input_requests)}"
            )
        lacking = client_lacks(negotiated, needed_capabilities(request))
        _merge(required, lacking)
    if required:
        raise CapabilityError(
            f"the client did not declare what the server must ask it: {describe(required)}",
            code=MISSING_CLIENT_CAPABILITY,
            data={"requiredCapabilities": required},
        )
    result: JSONObject = {"resultType": INPUT_REQUIRED}
    if requests:
        result["inputRequests"] = requests
    if request_state is not None:
        result["requestState"] = request_state
    return result


def _merge(into: JSONObject, more: JSONObject) -> None:
    for key, value in more.items():
        if type(value) is dict and type(into.get(key)) is dict:
            _merge(into[key], value)
        else:
            into[key] = value


@attrs.frozen
class Retry:
    """What a retry of a multi round-trip request carries."""

    #: the client's answers by the keys of the ``inputRequests`` they answer
    responses: Mapping[str, JSONObject] = attrs.field(factory=dict)
    #: the ``requestState`` echoed back, still sealed; None on a first attempt
    state: str | None = None

    @property
    def is_retry(self) -> bool:
        """Whether the request carries answers or a state (its result must not be cached)."""
        return bool(self.responses) or self.state is not None

    def answers(self, input_requests: Mapping[str, JSONObject]) -> dict[str, JSONObject]:
        """The answers to ``input_requests``, by key; keys not answered are left out."""
        return {key: self.responses[key] for key in input_requests if key in self.responses}

    def unanswered(self, input_requests: Mapping[str, JSONObject]) -> list[str]:
        """The keys of ``input_requests`` the retry has no answer for (to ask again)."""
        return [key for key in input_requests if key not in self.responses]


def read_retry(params: JSONObject | None, *, request_id: RequestId | None = None) -> Retry:
    """Read ``inputResponses`` and ``requestState`` from a request's params.

    Raises:
        EnvelopeError: either is malformed, or there are too many answers, or a key is
            too long (-32602, HTTP status 400).
    """
    if params is None:
        return Retry()
    responses = params.get("inputResponses")
    state = params.get("requestState")
    if state is not None and type(state) is not str:
        raise EnvelopeError(
            f"'requestState' must be a string, got {describe(state)}",
            code=INVALID_PARAMS,
            request_id=request_id,
        )
    if responses is None:
        return Retry({}, state)
    if type(responses) is not dict:
        raise EnvelopeError(
            f"'inputResponses' must be an object, got {describe(responses)}",
            code=INVALID_PARAMS,
            request_id=request_id,
        )
    if len(responses) > MAX_INPUT_REQUESTS:
        raise EnvelopeError(
            f"'inputResponses' has {len(responses)} answers; at most {MAX_INPUT_REQUESTS}",
            code=INVALID_PARAMS,
            request_id=request_id,
        )
    bad = [
        key
        for key, value in responses.items()
        if len(key) > MAX_INPUT_KEY_LENGTH or type(value) is not dict
    ]
    if bad:
        raise EnvelopeError(
            "'inputResponses' maps keys of at most "
            f"{MAX_INPUT_KEY_LENGTH} characters to result objects; not so: "
            + ", ".join(describe(key) for key in bad[:5]),
            code=INVALID_PARAMS,
            data={"keys": [bounded_value(key) for key in clip_all(bad)]},
            request_id=request_id,
        )
    return Retry(dict(responses), state)
