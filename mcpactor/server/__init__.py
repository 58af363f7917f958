"""What users write servers with: ``Server``, ``Context`` and result helpers."""

from typing import TYPE_CHECKING, Final

from .._lazy import exports

if TYPE_CHECKING:
    from ._builtin_extensions import BUILTIN_EXTENSIONS as BUILTIN_EXTENSIONS
    from ._caching import CacheHint as CacheHint
    from ._compose import Mount as Mount
    from ._compose import MountStatistics as MountStatistics
    from ._context import Context as Context
    from ._context import Peer as Peer
    from ._context import SessionTaskHost as SessionTaskHost
    from ._execution import HandlerTimeout as HandlerTimeout
    from ._execution import Offload as Offload
    from ._execution import TaskMetadata as TaskMetadata
    from ._execution import function_path as function_path
    from ._extension_set import Extensions as Extensions
    from ._extensions import CustomMethod as CustomMethod
    from ._extensions import CustomNotification as CustomNotification
    from ._extensions import Extension as Extension
    from ._extensions import check_identifier as check_identifier
    from ._headers import Header as Header
    from ._headers import check_param_headers as check_param_headers
    from ._headers import check_standard_headers as check_standard_headers
    from ._middleware import NO_ANSWER as NO_ANSWER
    from ._middleware import Call as Call
    from ._middleware import InputRequiredResult as InputRequiredResult
    from ._middleware import LogMessage as LogMessage
    from ._middleware import Message as Message
    from ._middleware import Middleware as Middleware
    from ._middleware import MiddlewareChain as MiddlewareChain
    from ._middleware import Next as Next
    from ._middleware import Notice as Notice
    from ._middleware import Progress as Progress
    from ._middleware import Result as Result
    from ._middleware import Terminal as Terminal
    from ._middleware import notice_of as notice_of
    from ._registered import adapt_tool_result as adapt_tool_result
    from ._registry import Catalog as Catalog
    from ._results import Audio as Audio
    from ._results import Image as Image
    from ._results import adapt_content as adapt_content
    from ._results import error_result as error_result
    from ._round_answers import Rounds as Rounds
    from ._rounds import InputNeeded as InputNeeded
    from ._rounds import InputRequired as InputRequired
    from ._server import Server as Server
    from ._server import ServerListener as ServerListener
    from ._stateless import ask_in_result as ask_in_result
    from ._stateless import called_tool as called_tool
    from ._stateless import direct_methods as direct_methods
    from ._stateless import finish_stateless as finish_stateless
    from ._stateless import serve_stateless as serve_stateless
    from ._tasks import TaskHost as TaskHost
    from ._tasks import TaskState as TaskState
    from ._tasks import encode_cursor as encode_cursor
    from ._tasks import failure_message as failure_message
    from ._tasks import isoformat as isoformat
    from ._tasks import with_related_task as with_related_task
    from ._tool_manifests import TOOL_MANIFESTS as TOOL_MANIFESTS
    from ._tool_manifests import tool_digest as tool_digest
    from ._tool_manifests import tool_manifests as tool_manifests
    from ._tool_search import TOOL_SEARCH as TOOL_SEARCH
    from ._tool_search import ToolSearch as ToolSearch
    from ._tool_search import tool_search as tool_search
    from ._transform import ArgTransform as ArgTransform
    from ._transform import ToolTransform as ToolTransform
    from ._uritemplate import UriTemplate as UriTemplate
    from ._uritemplate import UriTemplateError as UriTemplateError

#: public name -> (module, name there): imported on first use (see mcpactor/_lazy.py)
_LAZY: Final = {
    "CacheHint": ("._caching", "CacheHint"),
    "Context": ("._context", "Context"),
    "Peer": ("._context", "Peer"),
    "SessionTaskHost": ("._context", "SessionTaskHost"),
    "HandlerTimeout": ("._execution", "HandlerTimeout"),
    "Offload": ("._execution", "Offload"),
    "TaskMetadata": ("._execution", "TaskMetadata"),
    "function_path": ("._execution", "function_path"),
    "CustomMethod": ("._extensions", "CustomMethod"),
    "CustomNotification": ("._extensions", "CustomNotification"),
    "Extension": ("._extensions", "Extension"),
    "Extensions": ("._extension_set", "Extensions"),
    "check_identifier": ("._extensions", "check_identifier"),
    "Header": ("._headers", "Header"),
    "check_param_headers": ("._headers", "check_param_headers"),
    "check_standard_headers": ("._headers", "check_standard_headers"),
    "NO_ANSWER": ("._middleware", "NO_ANSWER"),
    "Call": ("._middleware", "Call"),
    "InputRequiredResult": ("._middleware", "InputRequiredResult"),
    "LogMessage": ("._middleware", "LogMessage"),
    "Message": ("._middleware", "Message"),
    "Middleware": ("._middleware", "Middleware"),
    "MiddlewareChain": ("._middleware", "MiddlewareChain"),
    "Next": ("._middleware", "Next"),
    "Notice": ("._middleware", "Notice"),
    "Progress": ("._middleware", "Progress"),
    "Result": ("._middleware", "Result"),
    "Terminal": ("._middleware", "Terminal"),
    "notice_of": ("._middleware", "notice_of"),
    "adapt_tool_result": ("._registered", "adapt_tool_result"),
    "Catalog": ("._registry", "Catalog"),
    "Audio": ("._results", "Audio"),
    "Image": ("._results", "Image"),
    "adapt_content": ("._results", "adapt_content"),
    "error_result": ("._results", "error_result"),
    "InputNeeded": ("._rounds", "InputNeeded"),
    "InputRequired": ("._rounds", "InputRequired"),
    "Rounds": ("._round_answers", "Rounds"),
    "Server": ("._server", "Server"),
    "ServerListener": ("._server", "ServerListener"),
    "ask_in_result": ("._stateless", "ask_in_result"),
    "called_tool": ("._stateless", "called_tool"),
    "direct_methods": ("._stateless", "direct_methods"),
    "finish_stateless": ("._stateless", "finish_stateless"),
    "serve_stateless": ("._stateless", "serve_stateless"),
    "TaskHost": ("._tasks", "TaskHost"),
    "TaskState": ("._tasks", "TaskState"),
    "encode_cursor": ("._tasks", "encode_cursor"),
    "failure_message": ("._tasks", "failure_message"),
    "isoformat": ("._tasks", "isoformat"),
    "with_related_task": ("._tasks", "with_related_task"),
    "BUILTIN_EXTENSIONS": ("._builtin_extensions", "BUILTIN_EXTENSIONS"),
    "TOOL_MANIFESTS": ("._tool_manifests", "TOOL_MANIFESTS"),
    "tool_digest": ("._tool_manifests", "tool_digest"),
    "tool_manifests": ("._tool_manifests", "tool_manifests"),
    "TOOL_SEARCH": ("._tool_search", "TOOL_SEARCH"),
    "ToolSearch": ("._tool_search", "ToolSearch"),
    "tool_search": ("._tool_search", "tool_search"),
    "ArgTransform": ("._transform", "ArgTransform"),
    "ToolTransform": ("._transform", "ToolTransform"),
    "UriTemplate": ("._uritemplate", "UriTemplate"),
    "UriTemplateError": ("._uritemplate", "UriTemplateError"),
    # composition, loaded when a server first mounts another
    "Mount": ("._compose", "Mount"),
    "MountStatistics": ("._compose", "MountStatistics"),
}

__all__ = [
    "BUILTIN_EXTENSIONS",
    "NO_ANSWER",
    "TOOL_MANIFESTS",
    "TOOL_SEARCH",
    "ArgTransform",
    "Audio",
    "CacheHint",
    "Call",
    "Catalog",
    "Context",
    "CustomMethod",
    "CustomNotification",
    "Extension",
    "Extensions",
    "HandlerTimeout",
    "Header",
    "Image",
    "InputNeeded",
    "InputRequired",
    "InputRequiredResult",
    "LogMessage",
    "Message",
    "Middleware",
    "MiddlewareChain",
    "Mount",
    "MountStatistics",
    "Next",
    "Notice",
    "Offload",
    "Peer",
    "Progress",
    "Result",
    "Rounds",
    "Server",
    "ServerListener",
    "SessionTaskHost",
    "TaskHost",
    "TaskMetadata",
    "TaskState",
    "Terminal",
    "ToolSearch",
    "ToolTransform",
    "UriTemplate",
    "UriTemplateError",
    "adapt_content",
    "adapt_tool_result",
    "ask_in_result",
    "called_tool",
    "check_identifier",
    "check_param_headers",
    "check_standard_headers",
    "direct_methods",
    "encode_cursor",
    "error_result",
    "failure_message",
    "finish_stateless",
    "function_path",
    "isoformat",
    "notice_of",
    "serve_stateless",
    "tool_digest",
    "tool_manifests",
    "tool_search",
    "with_related_task",
]

__getattr__ = exports(__name__, globals(), _LAZY)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
