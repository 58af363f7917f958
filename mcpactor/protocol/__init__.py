"""The sans-io MCP protocol core: JSON-RPC framing, revisions, wire types and sessions."""

from typing import TYPE_CHECKING, Final

from .._exceptions import LocalProtocolError as LocalProtocolError
from .._exceptions import ProtocolError as ProtocolError
from .._exceptions import RemoteProtocolError as RemoteProtocolError
from .._lazy import exports

if TYPE_CHECKING:
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
    from ._convert import wire_classes_loaded as wire_classes_loaded
    from ._envelope import Envelope as Envelope
    from ._envelope import has_envelope as has_envelope
    from ._envelope import read_envelope as read_envelope
    from ._ext_tasks import Snapshot as Snapshot
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
    from ._mrtr import client_lacks as client_lacks
    from ._mrtr import input_required_result as input_required_result
    from ._mrtr import needed_capabilities as needed_capabilities
    from ._mrtr import read_retry as read_retry
    from ._names import ALL_VERSIONS as ALL_VERSIONS
    from ._names import AUGMENTABLE as AUGMENTABLE
    from ._names import CLIENT_INFO as CLIENT_INFO
    from ._names import HEADER_MISMATCH as HEADER_MISMATCH
    from ._names import INPUT_REQUIRED as INPUT_REQUIRED
    from ._names import LISTEN_FILTER_KEY as LISTEN_FILTER_KEY
    from ._names import MAX_INPUT_KEY_LENGTH as MAX_INPUT_KEY_LENGTH
    from ._names import MAX_INPUT_REQUESTS as MAX_INPUT_REQUESTS
    from ._names import MAX_TASK_ID_LENGTH as MAX_TASK_ID_LENGTH
    from ._names import METHODS as TASK_EXTENSION_METHODS
    from ._names import MISSING_CLIENT_CAPABILITY as MISSING_CLIENT_CAPABILITY
    from ._names import NAMED_BY as NAMED_BY
    from ._names import PROTOCOL_VERSION as PROTOCOL_VERSION
    from ._names import STATUS_NOTIFICATION as STATUS_NOTIFICATION
    from ._names import TERMINAL as TERMINAL
    from ._names import TRANSITIONS as TRANSITIONS
    from ._names import UNSUPPORTED_PROTOCOL_VERSION as UNSUPPORTED_PROTOCOL_VERSION
    from ._names import EnvelopeError as EnvelopeError
    from ._names import TaskStatus as TaskStatus
    from ._names import TaskSupport as TaskSupport
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
    from ._too_long import FrameTooLong as FrameTooLong

#: public name -> (module, name there): imported on first use (see mcpactor/_lazy.py)
_LAZY: Final = {
    "MAX_DEPTH": ("._bounded", "MAX_DEPTH"),
    "MAX_DETAILS": ("._bounded", "MAX_DETAILS"),
    "bounded_value": ("._bounded", "bounded_value"),
    "clip": ("._bounded", "clip"),
    "clip_all": ("._bounded", "clip_all"),
    "describe": ("._bounded", "describe"),
    "describe_error": ("._bounded", "describe_error"),
    "error_text": ("._bounded", "error_text"),
    "exceeds_depth": ("._bounded", "exceeds_depth"),
    "over_limit": ("._bounded", "over_limit"),
    "utf8_size": ("._bounded", "utf8_size"),
    "MODERN_ERRORS": ("._client_session", "MODERN_ERRORS"),
    "ClientEvent": ("._client_session", "ClientEvent"),
    "ClientPhase": ("._client_session", "ClientPhase"),
    "ClientSessionCore": ("._client_session", "ClientSessionCore"),
    "Discovered": ("._client_session", "Discovered"),
    "DiscoverRefused": ("._client_session", "DiscoverRefused"),
    "InitializeRefused": ("._client_session", "InitializeRefused"),
    "MalformedReceived": ("._client_session", "MalformedReceived"),
    "ProgressReceived": ("._client_session", "ProgressReceived"),
    "ServerRequestReceived": ("._client_session", "ServerRequestReceived"),
    "SessionInitialized": ("._client_session", "SessionInitialized"),
    "SubscriptionAcknowledged": ("._client_session", "SubscriptionAcknowledged"),
    "SubscriptionCancelled": ("._client_session", "SubscriptionCancelled"),
    "SubscriptionNotification": ("._client_session", "SubscriptionNotification"),
    "UnattributedError": ("._client_session", "UnattributedError"),
    "UnexpectedResponse": ("._client_session", "UnexpectedResponse"),
    "structure": ("._convert", "structure"),
    "unstructure": ("._convert", "unstructure"),
    "wire_classes_loaded": ("._convert", "wire_classes_loaded"),
    "ALL_VERSIONS": ("._names", "ALL_VERSIONS"),
    "CLIENT_INFO": ("._names", "CLIENT_INFO"),
    "HEADER_MISMATCH": ("._names", "HEADER_MISMATCH"),
    "MISSING_CLIENT_CAPABILITY": ("._names", "MISSING_CLIENT_CAPABILITY"),
    "PROTOCOL_VERSION": ("._names", "PROTOCOL_VERSION"),
    "UNSUPPORTED_PROTOCOL_VERSION": ("._names", "UNSUPPORTED_PROTOCOL_VERSION"),
    "Envelope": ("._envelope", "Envelope"),
    "EnvelopeError": ("._names", "EnvelopeError"),
    "has_envelope": ("._envelope", "has_envelope"),
    "read_envelope": ("._envelope", "read_envelope"),
    "AUGMENTABLE": ("._names", "AUGMENTABLE"),
    "LISTEN_FILTER_KEY": ("._names", "LISTEN_FILTER_KEY"),
    "MAX_TASK_ID_LENGTH": ("._names", "MAX_TASK_ID_LENGTH"),
    "TASK_EXTENSION_METHODS": ("._names", "METHODS"),
    "NAMED_BY": ("._names", "NAMED_BY"),
    "STATUS_NOTIFICATION": ("._names", "STATUS_NOTIFICATION"),
    "TERMINAL": ("._names", "TERMINAL"),
    "TRANSITIONS": ("._names", "TRANSITIONS"),
    "Snapshot": ("._ext_tasks", "Snapshot"),
    "TaskStatus": ("._names", "TaskStatus"),
    "TaskSupport": ("._names", "TaskSupport"),
    "Update": ("._ext_tasks", "Update"),
    "acknowledgement": ("._ext_tasks", "acknowledgement"),
    "apply_update": ("._ext_tasks", "apply_update"),
    "create_task_result": ("._ext_tasks", "create_task_result"),
    "detailed_task": ("._ext_tasks", "detailed_task"),
    "get_task_result": ("._ext_tasks", "get_task_result"),
    "read_listen_task_ids": ("._ext_tasks", "read_listen_task_ids"),
    "read_task_id": ("._ext_tasks", "read_task_id"),
    "read_update": ("._ext_tasks", "read_update"),
    "require_declared": ("._ext_tasks", "require_declared"),
    "runs_as_task": ("._ext_tasks", "runs_as_task"),
    "server_capability": ("._ext_tasks", "server_capability"),
    "task_not_found": ("._ext_tasks", "task_not_found"),
    "DEFAULT_MAX_LINE_BYTES": ("._framing", "DEFAULT_MAX_LINE_BYTES"),
    "FrameTooLong": ("._too_long", "FrameTooLong"),
    "LineFramer": ("._framing", "LineFramer"),
    "Batch": ("._jsonrpc", "Batch"),
    "Body": ("._jsonrpc", "Body"),
    "ErrorResponse": ("._jsonrpc", "ErrorResponse"),
    "JSONObject": ("._jsonrpc", "JSONObject"),
    "JSONValue": ("._jsonrpc", "JSONValue"),
    "Message": ("._jsonrpc", "Message"),
    "Notification": ("._jsonrpc", "Notification"),
    "Request": ("._jsonrpc", "Request"),
    "RequestId": ("._jsonrpc", "RequestId"),
    "Response": ("._jsonrpc", "Response"),
    "answered_ids": ("._jsonrpc", "answered_ids"),
    "batch_refusal": ("._jsonrpc", "batch_refusal"),
    "classify": ("._jsonrpc", "classify"),
    "classify_body": ("._jsonrpc", "classify_body"),
    "decode": ("._jsonrpc", "decode"),
    "encode": ("._jsonrpc", "encode"),
    "error_message": ("._jsonrpc", "error_message"),
    "error_message_for": ("._jsonrpc", "error_message_for"),
    "owed_ids": ("._jsonrpc", "owed_ids"),
    "result_message": ("._jsonrpc", "result_message"),
    "serialize": ("._jsonrpc", "serialize"),
    "unowed_errors": ("._jsonrpc", "unowed_errors"),
    "MAX_RESOURCE_SUBSCRIPTIONS": ("._listen", "MAX_RESOURCE_SUBSCRIPTIONS"),
    "MAX_SUBSCRIPTION_BYTES": ("._listen", "MAX_SUBSCRIPTION_BYTES"),
    "MAX_URI_BYTES": ("._listen", "MAX_URI_BYTES"),
    "ResourceSubscriptions": ("._listen", "ResourceSubscriptions"),
    "Subscription": ("._listen", "Subscription"),
    "read_filter": ("._listen", "read_filter"),
    "INPUT_REQUIRED": ("._names", "INPUT_REQUIRED"),
    "MAX_INPUT_KEY_LENGTH": ("._names", "MAX_INPUT_KEY_LENGTH"),
    "MAX_INPUT_REQUESTS": ("._names", "MAX_INPUT_REQUESTS"),
    "client_lacks": ("._mrtr", "client_lacks"),
    "input_required_result": ("._mrtr", "input_required_result"),
    "needed_capabilities": ("._mrtr", "needed_capabilities"),
    "read_retry": ("._mrtr", "read_retry"),
    "Negotiated": ("._negotiated", "Negotiated"),
    "CORE_METHODS": ("._revisions", "CORE_METHODS"),
    "HEADERLESS_HTTP": ("._revisions", "HEADERLESS_HTTP"),
    "LATEST": ("._revisions", "LATEST"),
    "REVISIONS": ("._revisions", "REVISIONS"),
    "SESSION_REVISIONS": ("._revisions", "SESSION_REVISIONS"),
    "STATELESS_REVISIONS": ("._revisions", "STATELESS_REVISIONS"),
    "Revision": ("._revisions", "Revision"),
    "negotiate": ("._revisions", "negotiate"),
    "KeyRing": ("._sealing", "KeyRing"),
    "SealingKey": ("._sealing", "SealingKey"),
    "StateRefused": ("._sealing", "StateRefused"),
    "StateSealer": ("._sealing", "StateSealer"),
    "LOG_LEVELS": ("._session", "LOG_LEVELS"),
    "MAX_CLIENT_DECLARATION_BYTES": ("._session", "MAX_CLIENT_DECLARATION_BYTES"),
    "Phase": ("._session", "Phase"),
    "ServerSession": ("._session", "ServerSession"),
    "unanswered_reply": ("._session", "unanswered_reply"),
    "COMPLETE": ("._session_events", "COMPLETE"),
    "SERVER_INFO": ("._session_events", "SERVER_INFO"),
    "CancelRequested": ("._session_events", "CancelRequested"),
    "ErrorReceived": ("._session_events", "ErrorReceived"),
    "Event": ("._session_events", "Event"),
    "Exchange": ("._session_events", "Exchange"),
    "Initialized": ("._session_events", "Initialized"),
    "NotificationReceived": ("._session_events", "NotificationReceived"),
    "ResponseReceived": ("._session_events", "ResponseReceived"),
    "RootsChanged": ("._session_events", "RootsChanged"),
    "Send": ("._session_events", "Send"),
    "plain_complete": ("._session_events", "plain_complete"),
    "WRAPPED_RESULT": ("._names", "WRAPPED_RESULT"),
    "Annotations": ("._types", "Annotations"),
    "AudioContent": ("._types", "AudioContent"),
    "BlobResourceContents": ("._types", "BlobResourceContents"),
    "CallToolResult": ("._types", "CallToolResult"),
    "Completion": ("._described", "Completion"),
    "ContentBlock": ("._types", "ContentBlock"),
    "EmbeddedResource": ("._types", "EmbeddedResource"),
    "GetPromptResult": ("._types", "GetPromptResult"),
    "Icon": ("._types", "Icon"),
    "ImageContent": ("._types", "ImageContent"),
    "Implementation": ("._described", "Implementation"),
    "PromptMessage": ("._types", "PromptMessage"),
    "ResourceContents": ("._types", "ResourceContents"),
    "ResourceLink": ("._types", "ResourceLink"),
    "Role": ("._types", "Role"),
    "TextContent": ("._types", "TextContent"),
    "TextResourceContents": ("._types", "TextResourceContents"),
    "ToolAnnotations": ("._described", "ToolAnnotations"),
    # the wire types of server→client requests (see _client_types.py)
    "CreateMessageResult": ("._client_types", "CreateMessageResult"),
    "ElicitResult": ("._client_types", "ElicitResult"),
    "ModelHint": ("._client_types", "ModelHint"),
    "ModelPreferences": ("._client_types", "ModelPreferences"),
    "Root": ("._client_types", "Root"),
    "SamplingMessage": ("._client_types", "SamplingMessage"),
    # built on first use (see _convert.py)
    "converter": ("._convert", "converter"),
}

if TYPE_CHECKING:
    from ._client_types import CreateMessageResult as CreateMessageResult
    from ._client_types import ElicitResult as ElicitResult
    from ._client_types import ModelHint as ModelHint
    from ._client_types import ModelPreferences as ModelPreferences
    from ._client_types import Root as Root
    from ._client_types import SamplingMessage as SamplingMessage
    from ._convert import converter as converter
    from ._described import Completion as Completion
    from ._described import Implementation as Implementation
    from ._described import ToolAnnotations as ToolAnnotations
    from ._names import WRAPPED_RESULT as WRAPPED_RESULT
    from ._types import Annotations as Annotations
    from ._types import AudioContent as AudioContent
    from ._types import BlobResourceContents as BlobResourceContents
    from ._types import CallToolResult as CallToolResult
    from ._types import ContentBlock as ContentBlock
    from ._types import EmbeddedResource as EmbeddedResource
    from ._types import GetPromptResult as GetPromptResult
    from ._types import Icon as Icon
    from ._types import ImageContent as ImageContent
    from ._types import PromptMessage as PromptMessage
    from ._types import ResourceContents as ResourceContents
    from ._types import ResourceLink as ResourceLink
    from ._types import Role as Role
    from ._types import TextContent as TextContent
    from ._types import TextResourceContents as TextResourceContents

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
    "LISTEN_FILTER_KEY",
    "LOG_LEVELS",
    "MAX_CLIENT_DECLARATION_BYTES",
    "MAX_DETAILS",
    "MAX_INPUT_KEY_LENGTH",
    "MAX_INPUT_REQUESTS",
    "MAX_RESOURCE_SUBSCRIPTIONS",
    "MAX_SUBSCRIPTION_BYTES",
    "MAX_TASK_ID_LENGTH",
    "MAX_URI_BYTES",
    "MISSING_CLIENT_CAPABILITY",
    "MODERN_ERRORS",
    "NAMED_BY",
    "PROTOCOL_VERSION",
    "REVISIONS",
    "SERVER_INFO",
    "SESSION_REVISIONS",
    "STATELESS_REVISIONS",
    "STATUS_NOTIFICATION",
    "TASK_EXTENSION_METHODS",
    "TERMINAL",
    "TRANSITIONS",
    "UNSUPPORTED_PROTOCOL_VERSION",
    "WRAPPED_RESULT",
    "Annotations",
    "AudioContent",
    "Batch",
    "BlobResourceContents",
    "Body",
    "CallToolResult",
    "CancelRequested",
    "ClientEvent",
    "ClientPhase",
    "ClientSessionCore",
    "Completion",
    "ContentBlock",
    "CreateMessageResult",
    "DiscoverRefused",
    "Discovered",
    "ElicitResult",
    "EmbeddedResource",
    "Envelope",
    "EnvelopeError",
    "ErrorReceived",
    "ErrorResponse",
    "Event",
    "Exchange",
    "FrameTooLong",
    "GetPromptResult",
    "Icon",
    "ImageContent",
    "Implementation",
    "InitializeRefused",
    "Initialized",
    "JSONObject",
    "JSONValue",
    "KeyRing",
    "LineFramer",
    "LocalProtocolError",
    "MalformedReceived",
    "Message",
    "ModelHint",
    "ModelPreferences",
    "Negotiated",
    "Notification",
    "NotificationReceived",
    "Phase",
    "ProgressReceived",
    "PromptMessage",
    "ProtocolError",
    "RemoteProtocolError",
    "Request",
    "RequestId",
    "ResourceContents",
    "ResourceLink",
    "ResourceSubscriptions",
    "Response",
    "ResponseReceived",
    "Revision",
    "Role",
    "Root",
    "RootsChanged",
    "SamplingMessage",
    "SealingKey",
    "Send",
    "ServerRequestReceived",
    "ServerSession",
    "SessionInitialized",
    "Snapshot",
    "StateRefused",
    "StateSealer",
    "Subscription",
    "SubscriptionAcknowledged",
    "SubscriptionCancelled",
    "SubscriptionNotification",
    "TaskStatus",
    "TaskSupport",
    "TextContent",
    "TextResourceContents",
    "ToolAnnotations",
    "UnattributedError",
    "UnexpectedResponse",
    "Update",
    "acknowledgement",
    "answered_ids",
    "apply_update",
    "batch_refusal",
    "classify",
    "classify_body",
    "client_lacks",
    "converter",
    "create_task_result",
    "decode",
    "detailed_task",
    "encode",
    "error_message",
    "error_message_for",
    "get_task_result",
    "has_envelope",
    "input_required_result",
    "needed_capabilities",
    "negotiate",
    "over_limit",
    "owed_ids",
    "plain_complete",
    "read_envelope",
    "read_filter",
    "read_listen_task_ids",
    "read_retry",
    "read_task_id",
    "read_update",
    "require_declared",
    "result_message",
    "runs_as_task",
    "server_capability",
    "structure",
    "task_not_found",
    "unanswered_reply",
    "unowed_errors",
    "unstructure",
    "utf8_size",
    "wire_classes_loaded",
]


__getattr__ = exports(__name__, globals(), _LAZY)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
