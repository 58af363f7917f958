# What a client makes of a result at a revision without sessions (sans-io).
#
# Every result says its ``resultType``: "complete" is the answer, "task" a task the
# server runs on (the caller gets it as it is), "input_required" a question. For the
# last, ``read_input_required`` reads the keyed ``inputRequests`` (bounded, each a
# request object of a kind the revision asks in results) and the opaque
# ``requestState``; ``retry_params`` builds the retry's params from the original ones,
# the answers by the same keys and the state echoed back exactly (left out when the
# server sent none). ``request_error`` turns a JSON-RPC error into the exception the
# caller sees: the stateless era's own codes each have a class of their own.

from __future__ import annotations

from typing import Any, Final

import attrs

from .._exceptions import INVALID_REQUEST, RemoteProtocolError, RequestError
from ..protocol import (
    COMPLETE,
    HEADER_MISMATCH,
    INPUT_REQUIRED,
    MAX_INPUT_KEY_LENGTH,
    MAX_INPUT_REQUESTS,
    MISSING_CLIENT_CAPABILITY,
    UNSUPPORTED_PROTOCOL_VERSION,
    JSONObject,
    Revision,
    describe,
)

__all__ = [
    "COMPLETE",
    "INPUT_REQUIRED",
    "TASK",
    "HeaderMismatch",
    "InputRound",
    "MissingClientCapability",
    "UnsupportedProtocolVersion",
    "read_input_required",
    "request_error",
    "result_type",
    "retry_params",
]

#: the ``resultType`` of a result that is a task the server runs on
TASK: Final = "task"
# The keys a retry adds to the original params, dropped from them before each round.
_ROUND_KEYS: Final = ("inputResponses", "requestState")


class HeaderMismatch(RequestError):
    """-32020: the HTTP headers of the request did not match its body."""


class MissingClientCapability(RequestError):
    """-32021: serving the request needs a client capability the request did not declare."""

    @property
    def required_capabilities(self) -> JSONObject:
        """The capabilities the server said the request needs (``data.requiredCapabilities``)."""
        found = self.data.get("requiredCapabilities") if type(self.data) is dict else None
        return found if type(found) is dict else {}


class UnsupportedProtocolVersion(RequestError):
    """-32022: the server does not serve the revision the request spoke."""

    @property
    def supported(self) -> list[str]:
        """The revisions the server said it serves (``data.supported``)."""
        found = self.data.get("supported") if type(self.data) is dict else None
        return [v for v in found if isinstance(v, str)] if type(found) is list else []


_ERRORS: Final[dict[int, type[RequestError]]] = {
    HEADER_MISMATCH: HeaderMismatch,
    MISSING_CLIENT_CAPABILITY: MissingClientCapability,
    UNSUPPORTED_PROTOCOL_VERSION: UnsupportedProtocolVersion,
}


def request_error(code: int, message: str, data: Any = None) -> RequestError:
    """The exception a JSON-RPC error from the server becomes."""
    return _ERRORS.get(code, RequestError)(code, message, data)


def result_type(result: JSONObject) -> str:
    """The ``resultType`` of a result; one without it (a session revision's) is complete."""
    kind = result.get("resultType")
    return kind if isinstance(kind, str) else COMPLETE


@attrs.frozen
class InputRound:
    """What an ``input_required`` result asks before the request is tried again."""

    #: the questions, by the keys their answers go under
    input_requests: dict[str, JSONObject]
    #: the state to echo back exactly, or None: the retry carries none
    request_state: str | None


def read_input_required(result: JSONObject, revision: Revision) -> InputRound:
    """Read an ``input_required`` result.

    Raises:
        RemoteProtocolError: it is malformed: ``inputRequests`` is not a map of at most
            ``MAX_INPUT_REQUESTS`` request objects of kinds the revision asks in results,
            ``requestState`` is not a string, or neither is there.
    """
    requests = result.get("inputRequests", {})
    state = result.get("requestState")
    if type(requests) is not dict or len(requests) > MAX_INPUT_REQUESTS:
        raise _malformed(f"'inputRequests' must be a map of at most {MAX_INPUT_REQUESTS}", result)
    if state is not None and type(state) is not str:
        raise _malformed("'requestState' must be a string", result)
    if not requests and state is None:
        raise _malformed("an input_required result needs inputRequests or requestState", result)
    for key, request in requests.items():
        if not key or len(key) > MAX_INPUT_KEY_LENGTH:
            raise _malformed(f"an inputRequests key is 1 to {MAX_INPUT_KEY_LENGTH} long", result)
        method = request.get("method") if type(request) is dict else None
        if method not in revision.input_requests:
            raise _malformed(
                f"inputRequests[{describe(key)}] is no input request of {revision.version}", result
            )
        params = request.get("params")
        if params is not None and type(params) is not dict:
            raise _malformed(f"inputRequests[{describe(key)}].params must be an object", result)
    return InputRound(dict(requests), state)


def retry_params(
    params: JSONObject | None, responses: JSONObject, request_state: str | None
) -> JSONObject:
    """The params of a round: the original ones, with the answers and the state."""
    retry = {k: v for k, v in (params or {}).items() if k not in _ROUND_KEYS}
    if responses:
        retry["inputResponses"] = responses
    if request_state is not None:
        retry["requestState"] = request_state
    return retry


def _malformed(why: str, result: JSONObject) -> RemoteProtocolError:
    return RemoteProtocolError(
        f"malformed input_required result: {why}: {describe(result)}", code=INVALID_REQUEST
    )
