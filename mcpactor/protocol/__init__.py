"""The sans-io MCP protocol core: JSON-RPC framing, revisions, wire types and sessions."""

from typing import TYPE_CHECKING, Any

from .._exceptions import LocalProtocolError as LocalProtocolError
from .._exceptions import ProtocolError as ProtocolError
from .._exceptions import RemoteProtocolError as RemoteProtocolError
from ._body import Batch as Batch
from ._body import Body as Body
from ._body import answered_ids as answered_ids
from ._body import batch_refusal as batch_refusal
from ._body import classify_body as classify_body
from ._body import owed_ids as owed_ids
from ._body import unowed_errors as unowed_errors
from ._bounded import MAX_DEPTH as MAX_DEPTH
from ._bounded import bounded_value as bounded_value
from ._bounded import clip as clip
from ._bounded import clip_all as clip_all
from ._bounded import describe as describe
from ._bounded import describe_error as describe_error
from ._bounded import error_text as error_text
from ._bounded import exceeds_depth as exceeds_depth
from ._bounded import over_limit as over_limit
from ._bounded import utf8_size as utf8_size
from ._convert import structure as structure
from ._convert import unstructure as unstructure
from ._framing import DEFAULT_MAX_LINE_BYTES as DEFAULT_MAX_LINE_BYTES
from ._framing import FrameTooLong as FrameTooLong
from ._framing import LineFramer as LineFramer
from ._framing import decode as decode
from ._framing import encode as encode
from ._framing import serialize as serialize
from ._jsonrpc import ErrorResponse as ErrorResponse
from ._jsonrpc import JSONObject as JSONObject
from ._jsonrpc import JSONValue as JSONValue
from ._jsonrpc import Message as Message
from ._jsonrpc import Notification as Notification
from ._jsonrpc import Request as Request
from ._jsonrpc import RequestId as RequestId
from ._jsonrpc import Response as Response
from ._jsonrpc import classify as classify
from ._jsonrpc import error_message as error_message
from ._jsonrpc import result_message as result_message
from ._listen import MAX_RESOURCE_SUBSCRIPTIONS as MAX_RESOURCE_SUBSCRIPTIONS
from ._listen import MAX_SUBSCRIPTION_BYTES as MAX_SUBSCRIPTION_BYTES
from ._listen import MAX_URI_BYTES as MAX_URI_BYTES
from ._listen import ResourceSubscriptions as ResourceSubscriptions
from ._revisions import HEADERLESS_HTTP as HEADERLESS_HTTP
from ._revisions import LATEST as LATEST
from ._revisions import REVISIONS as REVISIONS
from ._revisions import SESSION_REVISIONS as SESSION_REVISIONS
from ._revisions import Revision as Revision
from ._revisions import negotiate as negotiate
from ._session import LOG_LEVELS as LOG_LEVELS
from ._session import CancelRequested as CancelRequested
from ._session import ErrorReceived as ErrorReceived
from ._session import Event as Event
from ._session import Initialized as Initialized
from ._session import Negotiated as Negotiated
from ._session import NotificationReceived as NotificationReceived
from ._session import Phase as Phase
from ._session import RequestReceived as RequestReceived
from ._session import ResponseReceived as ResponseReceived
from ._session import RootsChanged as RootsChanged
from ._session import Send as Send
from ._session import ServerSession as ServerSession
from ._session import unanswered_reply as unanswered_reply
from ._types import *  # noqa: F403
from ._types import __all__ as _types_all

if TYPE_CHECKING:
    from ._client_types import CreateMessageResult as CreateMessageResult
    from ._client_types import ElicitResult as ElicitResult
    from ._client_types import ModelHint as ModelHint
    from ._client_types import ModelPreferences as ModelPreferences
    from ._client_types import Root as Root
    from ._client_types import SamplingMessage as SamplingMessage
    from ._convert import converter as converter

# Loaded on first use: the wire types of server→client requests (see _client_types.py).
_CLIENT_TYPES = frozenset(
    {
        "CreateMessageResult",
        "ElicitResult",
        "ModelHint",
        "ModelPreferences",
        "Root",
        "SamplingMessage",
    }
)

__all__ = [
    "DEFAULT_MAX_LINE_BYTES",
    "HEADERLESS_HTTP",
    "LATEST",
    "LOG_LEVELS",
    "MAX_RESOURCE_SUBSCRIPTIONS",
    "MAX_SUBSCRIPTION_BYTES",
    "MAX_URI_BYTES",
    "REVISIONS",
    "SESSION_REVISIONS",
    "Batch",
    "Body",
    "CancelRequested",
    "ErrorReceived",
    "ErrorResponse",
    "Event",
    "FrameTooLong",
    "Initialized",
    "JSONObject",
    "JSONValue",
    "LineFramer",
    "LocalProtocolError",
    "Message",
    "Negotiated",
    "Notification",
    "NotificationReceived",
    "Phase",
    "ProtocolError",
    "RemoteProtocolError",
    "Request",
    "RequestId",
    "RequestReceived",
    "ResourceSubscriptions",
    "Response",
    "ResponseReceived",
    "Revision",
    "RootsChanged",
    "Send",
    "ServerSession",
    "answered_ids",
    "batch_refusal",
    "classify",
    "error_message",
    "result_message",
    "classify_body",
    "converter",
    "decode",
    "encode",
    "negotiate",
    "over_limit",
    "owed_ids",
    "structure",
    "unanswered_reply",
    "unowed_errors",
    "unstructure",
    "utf8_size",
    *_types_all,
    *sorted(_CLIENT_TYPES),
]


def __getattr__(name: str) -> Any:
    if name in _CLIENT_TYPES:
        from . import _client_types

        return getattr(_client_types, name)
    # The converter is built on first use (see _convert.py).
    if name == "converter":
        from . import _convert

        return _convert.converter
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
