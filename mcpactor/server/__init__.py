"""What users write servers with: ``Server``, ``Context`` and result helpers."""

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..protocol import describe
from ._caching import CacheHint as CacheHint
from ._context import Context as Context
from ._context import Peer as Peer
from ._context import SessionTaskHost as SessionTaskHost
from ._execution import HandlerTimeout as HandlerTimeout
from ._execution import Offload as Offload
from ._execution import TaskMetadata as TaskMetadata
from ._execution import function_path as function_path
from ._extensions import CustomMethod as CustomMethod
from ._extensions import CustomNotification as CustomNotification
from ._extensions import Extension as Extension
from ._extensions import Extensions as Extensions
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
from ._rounds import InputNeeded as InputNeeded
from ._rounds import InputRequired as InputRequired
from ._rounds import Rounds as Rounds
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

if TYPE_CHECKING:
    from ._compose import Mount as Mount
    from ._compose import MountStatistics as MountStatistics

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

#: mcpactor's own extensions, by identifier: what makes each with its defaults
BUILTIN_EXTENSIONS: dict[str, Callable[[], Extension]] = {
    TOOL_MANIFESTS: tool_manifests,
    TOOL_SEARCH: tool_search,
}

# Composition is loaded when a server first mounts another: its names on first use.
_COMPOSE_NAMES = frozenset({"Mount", "MountStatistics"})


def __getattr__(name: str) -> Any:
    if name in _COMPOSE_NAMES:
        from . import _compose

        return getattr(_compose, name)
    raise AttributeError(f"module {__name__!r} has no attribute {describe(name)}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
