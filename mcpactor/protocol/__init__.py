"""The sans-io MCP protocol core: JSON-RPC framing, revisions, wire types and sessions."""

from typing import TYPE_CHECKING, Any

from .._exceptions import LocalProtocolError as LocalProtocolError
from .._exceptions import ProtocolError as ProtocolError
from .._exceptions import RemoteProtocolError as RemoteProtocolError
from ._bounded import MAX_DEPTH as MAX_DEPTH
from ._bounded import MAX_DETAILS as MAX_DETAILS
from ._bounded import bounded_value as bounded_value
from ._bounded import clip as clip
from ._bounded import clip_all as clip_all
from ._bounded import describe as describe
from ._bounded import describe_error as describe_error
from ._bounded import error_text as error_text
from ._bounded import exceeds_depth as exceeds_depth
from ._bounded import over_limit as over_limit
from ._bounded import utf8_size as utf8_size
from ._client_session import MODERN_ERRORS as MODERN_ERRORS
from ._client_session import ClientEvent as ClientEvent
from ._client_session import ClientPhase as ClientPhase
from ._client_session import ClientSessionCore as ClientSessionCore
from ._client_session import Discovered as Discovered
from ._client_session import DiscoverRefused as DiscoverRefused
from ._client_session import InitializeRefused as InitializeRefused
from ._client_session import MalformedReceived as MalformedReceived
from ._client_session import ProgressReceived as ProgressReceived
from ._client_session import ServerRequestReceived as ServerRequestReceived
from ._client_session import SessionInitialized as SessionInitialized
from ._client_session import SubscriptionAcknowledged as SubscriptionAcknowledged
from ._client_session import SubscriptionCancelled as SubscriptionCancelled
from ._client_session import SubscriptionNotification as SubscriptionNotification
from ._client_session import UnattributedError as UnattributedError
from ._client_session import UnexpectedResponse as UnexpectedResponse
from ._convert import structure as structure
from ._convert import unstructure as unstructure
from ._envelope import ALL_VERSIONS as ALL_VERSIONS
from ._envelope import CLIENT_INFO as CLIENT_INFO
from ._envelope import HEADER_MISMATCH as HEADER_MISMATCH
from ._envelope import MISSING_CLIENT_CAPABILITY as MISSING_CLIENT_CAPABILITY
from ._envelope import PROTOCOL_VERSION as PROTOCOL_VERSION
from ._envelope import UNSUPPORTED_PROTOCOL_VERSION as UNSUPPORTED_PROTOCOL_VERSION
from ._envelope import Envelope as Envelope
from ._envelope import EnvelopeError as EnvelopeError
from ._envelope import has_envelope as has_envelope
from ._envelope import read_envelope as read_envelope
from ._ext_tasks import AUGMENTABLE as AUGMENTABLE
from ._ext_tasks import LISTEN_FILTER_KEY as LISTEN_FILTER_KEY
from ._ext_tasks import MAX_TASK_ID_LENGTH as MAX_TASK_ID_LENGTH
from ._ext_tasks import METHODS as TASK_EXTENSION_METHODS
from ._ext_tasks import NAMED_BY as NAMED_BY
from ._ext_tasks import STATUS_NOTIFICATION as STATUS_NOTIFICATION
from ._ext_tasks import TERMINAL as TERMINAL
from ._ext_tasks import TRANSITIONS as TRANSITIONS
from ._ext_tasks import Snapshot as Snapshot
from ._ext_tasks import TaskStatus as TaskStatus
from ._ext_tasks import TaskSupport as TaskSupport
from ._ext_tasks import Update as Update
from ._ext_tasks import acknowledgement as acknowledgement
from ._ext_tasks import apply_update as apply_update
from ._ext_tasks import create_task_result as create_task_result
from ._ext_tasks import detailed_task as detailed_task
from ._ext_tasks import get_task_result as get_task_result
from ._ext_tasks import read_listen_task_ids as read_listen_task_ids
from ._ext_tasks import read_task_id as read_task_id
from ._ext_tasks import read_update as read_update
from ._ext_tasks import require_declared as require_declared
from ._ext_tasks import runs_as_task as runs_as_task
from ._ext_tasks import server_capability as server_capability
from ._ext_tasks import task_not_found as task_not_found
from ._framing import DEFAULT_MAX_LINE_BYTES as DEFAULT_MAX_LINE_BYTES
from ._framing import FrameTooLong as FrameTooLong
from ._framing import LineFramer as LineFramer
from ._jsonrpc import Batch as Batch
from ._jsonrpc import Body as Body
from ._jsonrpc import ErrorResponse as ErrorResponse
from ._jsonrpc import JSONObject as JSONObject
from ._jsonrpc import JSONValue as JSONValue
from ._jsonrpc import Message as Message
from ._jsonrpc import Notification as Notification
from ._jsonrpc import Request as Request
from ._jsonrpc import RequestId as RequestId
from ._jsonrpc import Response as Response
from ._jsonrpc import answered_ids as answered_ids
from ._jsonrpc import batch_refusal as batch_refusal
from ._jsonrpc import classify as classify
from ._jsonrpc import classify_body as classify_body
from ._jsonrpc import decode as decode
from ._jsonrpc import encode as encode
from ._jsonrpc import error_message as error_message
from ._jsonrpc import error_message_for as error_message_for
from ._jsonrpc import owed_ids as owed_ids
from ._jsonrpc import result_message as result_message
from ._jsonrpc import serialize as serialize
from ._jsonrpc import unowed_errors as unowed_errors
from ._listen import MAX_RESOURCE_SUBSCRIPTIONS as MAX_RESOURCE_SUBSCRIPTIONS
from ._listen import MAX_SUBSCRIPTION_BYTES as MAX_SUBSCRIPTION_BYTES
from ._listen import MAX_URI_BYTES as MAX_URI_BYTES
from ._listen import ResourceSubscriptions as ResourceSubscriptions
from ._listen import Subscription as Subscription
from ._listen import read_filter as read_filter
from ._mrtr import INPUT_REQUIRED as INPUT_REQUIRED
from ._mrtr import MAX_INPUT_KEY_LENGTH as MAX_INPUT_KEY_LENGTH
from ._mrtr import MAX_INPUT_REQUESTS as MAX_INPUT_REQUESTS
from ._mrtr import client_lacks as client_lacks
from ._mrtr import input_required_result as input_required_result
from ._mrtr import needed_capabilities as needed_capabilities
from ._mrtr import read_retry as read_retry
from ._negotiated import Negotiated as Negotiated
from ._revisions import CORE_METHODS as CORE_METHODS
from ._revisions import HEADERLESS_HTTP as HEADERLESS_HTTP
from ._revisions import LATEST as LATEST
from ._revisions import REVISIONS as REVISIONS
from ._revisions import SESSION_REVISIONS as SESSION_REVISIONS
from ._revisions import STATELESS_REVISIONS as STATELESS_REVISIONS
from ._revisions import Revision as Revision
from ._revisions import negotiate as negotiate
from ._sealing import KeyRing as KeyRing
from ._sealing import SealingKey as SealingKey
from ._sealing import StateRefused as StateRefused
from ._sealing import StateSealer as StateSealer
from ._session import LOG_LEVELS as LOG_LEVELS
from ._session import MAX_CLIENT_DECLARATION_BYTES as MAX_CLIENT_DECLARATION_BYTES
from ._session import Phase as Phase
from ._session import ServerSession as ServerSession
from ._session import unanswered_reply as unanswered_reply
from ._session_events import COMPLETE as COMPLETE
from ._session_events import SERVER_INFO as SERVER_INFO
from ._session_events import CancelRequested as CancelRequested
from ._session_events import ErrorReceived as ErrorReceived
from ._session_events import Event as Event
from ._session_events import Exchange as Exchange
from ._session_events import Initialized as Initialized
from ._session_events import NotificationReceived as NotificationReceived
from ._session_events import ResponseReceived as ResponseReceived
from ._session_events import RootsChanged as RootsChanged
from ._session_events import Send as Send
from ._session_events import plain_complete as plain_complete
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
    "ALL_VERSIONS",
    "AUGMENTABLE",
    "CLIENT_INFO",
    "COMPLETE",
    "CORE_METHODS",
    "DEFAULT_MAX_LINE_BYTES",
    "HEADERLESS_HTTP",
    "HEADER_MISMATCH",
    "INPUT_REQUIRED",
    "LATEST",
    "LOG_LEVELS",
    "MAX_CLIENT_DECLARATION_BYTES",
    "MAX_INPUT_KEY_LENGTH",
    "MAX_INPUT_REQUESTS",
    "MAX_DETAILS",
    "MAX_RESOURCE_SUBSCRIPTIONS",
    "MAX_SUBSCRIPTION_BYTES",
    "MAX_TASK_ID_LENGTH",
    "MAX_URI_BYTES",
    "MISSING_CLIENT_CAPABILITY",
    "MODERN_ERRORS",
    "PROTOCOL_VERSION",
    "NAMED_BY",
    "REVISIONS",
    "SERVER_INFO",
    "SESSION_REVISIONS",
    "STATELESS_REVISIONS",
    "UNSUPPORTED_PROTOCOL_VERSION",
    "TERMINAL",
    "TRANSITIONS",
    "Batch",
    "Body",
    "CancelRequested",
    "ClientEvent",
    "ClientPhase",
    "ClientSessionCore",
    "DiscoverRefused",
    "Discovered",
    "TASK_EXTENSION_METHODS",
    "Envelope",
    "EnvelopeError",
    "ErrorReceived",
    "ErrorResponse",
    "Event",
    "Exchange",
    "FrameTooLong",
    "InitializeRefused",
    "Initialized",
    "JSONObject",
    "JSONValue",
    "KeyRing",
    "LineFramer",
    "LocalProtocolError",
    "MalformedReceived",
    "Message",
    "Negotiated",
    "Notification",
    "NotificationReceived",
    "Phase",
    "ProgressReceived",
    "ProtocolError",
    "RemoteProtocolError",
    "Request",
    "RequestId",
    "ResourceSubscriptions",
    "Response",
    "ResponseReceived",
    "Revision",
    "RootsChanged",
    "SealingKey",
    "Send",
    "ServerRequestReceived",
    "ServerSession",
    "SessionInitialized",
    "SubscriptionAcknowledged",
    "SubscriptionCancelled",
    "SubscriptionNotification",
    "UnattributedError",
    "UnexpectedResponse",
    "Snapshot",
    "TaskStatus",
    "Update",
    "acknowledgement",
    "StateRefused",
    "StateSealer",
    "TaskSupport",
    "answered_ids",
    "apply_update",
    "batch_refusal",
    "classify",
    "error_message",
    "error_message_for",
    "result_message",
    "classify_body",
    "plain_complete",
    "client_lacks",
    "converter",
    "create_task_result",
    "decode",
    "detailed_task",
    "encode",
    "has_envelope",
    "get_task_result",
    "input_required_result",
    "needed_capabilities",
    "negotiate",
    "over_limit",
    "owed_ids",
    "read_retry",
    "read_task_id",
    "read_update",
    "require_declared",
    "runs_as_task",
    "server_capability",
    "structure",
    "task_not_found",
    "unanswered_reply",
    "unowed_errors",
    "unstructure",
    "utf8_size",
    *_types_all,
    *sorted(_CLIENT_TYPES),
    "read_envelope",
    "LISTEN_FILTER_KEY",
    "STATUS_NOTIFICATION",
    "read_listen_task_ids",
    "Subscription",
    "read_filter",
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
