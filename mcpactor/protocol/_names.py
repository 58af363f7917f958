# The names, codes and status table of the stateless era and the tasks extension, and
# the keyword of a wrapped tool result.
#
# Other layers read these when they load (a ``_meta`` key, an error code, the task
# status table, the envelope's refusal they catch), while the machinery that uses them
# (request envelopes in _envelope.py, the tasks extension's messages in _ext_tasks.py,
# multi round-trip requests in _mrtr.py) loads with the first request that needs it: a
# session of 2025-11-25 never does. Those modules re-export what they define here, so
# either place reads the same object.

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final, Literal, TypeAlias

from .._exceptions import INVALID_PARAMS, RemoteProtocolError
from ._revisions import REVISIONS

if TYPE_CHECKING:
    from ._jsonrpc import RequestId

__all__ = [
    "ALL_VERSIONS",
    "AUGMENTABLE",
    "CLIENT_CAPABILITIES",
    "CLIENT_INFO",
    "EXTENSION",
    "HEADER_MISMATCH",
    "INITIAL",
    "INPUT_REQUIRED",
    "LISTEN_FILTER_KEY",
    "LOG_LEVEL",
    "MAX_INPUT_KEY_LENGTH",
    "MAX_INPUT_REQUESTS",
    "MAX_LISTEN_TASK_IDS",
    "MAX_TASK_ID_LENGTH",
    "METHODS",
    "MISSING_CLIENT_CAPABILITY",
    "NAMED_BY",
    "PROTOCOL_VERSION",
    "REMOVED_METHODS",
    "STATUS_NOTIFICATION",
    "SUBSCRIPTION_ID",
    "TERMINAL",
    "TRANSITIONS",
    "UNSUPPORTED_PROTOCOL_VERSION",
    "WRAPPED_RESULT",
    "EnvelopeError",
    "TaskStatus",
    "TaskSupport",
]

# --- the request envelope (see _envelope.py) ---------------------------------------------

#: the HTTP headers do not match the body, or a required header is missing or malformed
HEADER_MISMATCH: Final = -32020
#: serving the request needs a client capability the request did not declare
MISSING_CLIENT_CAPABILITY: Final = -32021
#: the request's protocol version is not one the server serves
UNSUPPORTED_PROTOCOL_VERSION: Final = -32022

#: the ``_meta`` keys of the envelope (RequestMetaObject) and of results (ResultMetaObject)
PROTOCOL_VERSION: Final = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES: Final = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO: Final = "io.modelcontextprotocol/clientInfo"
LOG_LEVEL: Final = "io.modelcontextprotocol/logLevel"
SUBSCRIPTION_ID: Final = "io.modelcontextprotocol/subscriptionId"

_BAD_REQUEST: Final = 400


class EnvelopeError(RemoteProtocolError):
    """A request's envelope is missing, malformed or names what we cannot serve."""

    def __init__(
        self,
        message: str,
        *,
        code: int = INVALID_PARAMS,
        data: Any = None,
        request_id: RequestId | None = None,
        http_status: int = _BAD_REQUEST,
    ) -> None:
        super().__init__(message, code=code, data=data, request_id=request_id)
        #: the status a Streamable HTTP response carrying this error is sent with
        self.http_status = http_status


#: every revision of the table, newest first: what a server of both eras serves and
#: lists in ``supported`` (an -32022 error) and ``supportedVersions`` (``server/discover``)
ALL_VERSIONS: Final = tuple(reversed(tuple(REVISIONS)))

# --- multi round-trip requests (see _mrtr.py) --------------------------------------------

#: the ``resultType`` of a finished result and of an interim one
INPUT_REQUIRED: Final = "input_required"

#: the most ``inputRequests`` one result asks, and ``inputResponses`` one retry carries
MAX_INPUT_REQUESTS: Final = 64
#: the longest key of either map
MAX_INPUT_KEY_LENGTH: Final = 128

# --- the tasks extension (see _ext_tasks.py) ---------------------------------------------

#: the extension's identifier, the key under ``capabilities.extensions`` on both sides
EXTENSION: Final = "io.modelcontextprotocol/tasks"

#: the methods a server that offers the extension serves
METHODS: Final = ("tasks/get", "tasks/update", "tasks/cancel")
#: the session era's task methods, which must answer -32601 here
REMOVED_METHODS: Final = ("tasks/result", "tasks/list")
#: the requests a server may answer with a task
AUGMENTABLE: Final = frozenset({"tools/call"})
#: the params key each ``tasks/*`` method is named by (the ``Mcp-Name`` header's value)
NAMED_BY: Final[Mapping[str, str]] = dict.fromkeys(METHODS, "taskId")

#: the notification a task sends to the listen streams that named it
STATUS_NOTIFICATION: Final = "notifications/tasks"
#: the key of the ``subscriptions/listen`` filter (and of its acknowledgement)
LISTEN_FILTER_KEY: Final = "taskIds"

#: the longest task id read from a client (ours are far shorter)
MAX_TASK_ID_LENGTH: Final = 256
#: the most task ids one listen filter may name
MAX_LISTEN_TASK_IDS: Final = 256

TaskStatus: TypeAlias = Literal["working", "input_required", "completed", "failed", "cancelled"]
#: whether a tool may, must or must not run as a task (the server's own setting: the
#: extension puts nothing about it on the wire)
TaskSupport: TypeAlias = Literal["forbidden", "optional", "required"]

#: every task starts here (the spec's state diagram: ``[*] --> working``)
INITIAL: Final[TaskStatus] = "working"
TERMINAL: Final[frozenset[TaskStatus]] = frozenset({"completed", "failed", "cancelled"})
#: status -> the statuses it may move to; the terminal ones are final
TRANSITIONS: Final[Mapping[TaskStatus, frozenset[TaskStatus]]] = {
    "working": frozenset({"input_required", "completed", "failed", "cancelled"}),
    "input_required": frozenset({"working", "completed", "failed", "cancelled"}),
    "completed": frozenset(),
    "failed": frozenset(),
    "cancelled": frozenset(),
}


#: the keyword of a generated ``outputSchema`` whose object only wraps the tool's value
#: as ``{"result": value}`` (structured content is an object): a client may unwrap it
WRAPPED_RESULT: Final = "x-mcpactor-wrap-result"
