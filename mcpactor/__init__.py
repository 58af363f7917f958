"""mcpactor: Model Context Protocol servers on trio.

Write a server with ``Server`` and its decorators, run it with ``mcpactor serve``.
"""

import contextlib
from typing import TYPE_CHECKING, Any

from ._exceptions import CapabilityError as CapabilityError
from ._exceptions import ExtensionError as ExtensionError
from ._exceptions import LocalProtocolError as LocalProtocolError
from ._exceptions import MCPActorError as MCPActorError
from ._exceptions import PluginError as PluginError
from ._exceptions import ProtocolError as ProtocolError
from ._exceptions import RemoteProtocolError as RemoteProtocolError
from ._exceptions import RequestError as RequestError
from ._exceptions import SchemaError as SchemaError
from ._exceptions import ToolError as ToolError
from ._exceptions import TransportBroken as TransportBroken
from ._exceptions import TransportClosed as TransportClosed
from ._exceptions import TransportError as TransportError
from ._version import __version__ as __version__
from .protocol import Annotations as Annotations
from .protocol import AudioContent as AudioContent
from .protocol import BlobResourceContents as BlobResourceContents
from .protocol import CallToolResult as CallToolResult
from .protocol import Completion as Completion
from .protocol import EmbeddedResource as EmbeddedResource
from .protocol import GetPromptResult as GetPromptResult
from .protocol import Icon as Icon
from .protocol import ImageContent as ImageContent
from .protocol import PromptMessage as PromptMessage
from .protocol import ResourceLink as ResourceLink
from .protocol import TextContent as TextContent
from .protocol import TextResourceContents as TextResourceContents
from .protocol import ToolAnnotations as ToolAnnotations
from .runtime import SessionOptions as SessionOptions
from .runtime import TaskOptions as TaskOptions
from .runtime import check_cancelled as check_cancelled
from .server import Audio as Audio
from .server import CacheHint as CacheHint
from .server import Context as Context
from .server import CustomMethod as CustomMethod
from .server import CustomNotification as CustomNotification
from .server import Extension as Extension
from .server import Header as Header
from .server import Image as Image
from .server import InputRequired as InputRequired
from .server import Server as Server
from .server import tool_manifests as tool_manifests
from .server import tool_search as tool_search

if TYPE_CHECKING:
    from .protocol import CreateMessageResult as CreateMessageResult
    from .protocol import ElicitResult as ElicitResult
    from .protocol import Root as Root
    from .protocol import SamplingMessage as SamplingMessage

__all__ = [
    "Annotations",
    "Audio",
    "AudioContent",
    "BlobResourceContents",
    "CacheHint",
    "CallToolResult",
    "CapabilityError",
    "Completion",
    "Context",
    "CreateMessageResult",
    "CustomMethod",
    "CustomNotification",
    "ElicitResult",
    "EmbeddedResource",
    "Extension",
    "ExtensionError",
    "GetPromptResult",
    "Header",
    "Icon",
    "Image",
    "ImageContent",
    "InputRequired",
    "LocalProtocolError",
    "MCPActorError",
    "PluginError",
    "PromptMessage",
    "ProtocolError",
    "RemoteProtocolError",
    "RequestError",
    "ResourceLink",
    "Root",
    "SamplingMessage",
    "SchemaError",
    "Server",
    "SessionOptions",
    "TaskOptions",
    "TextContent",
    "TextResourceContents",
    "ToolAnnotations",
    "ToolError",
    "TransportBroken",
    "TransportClosed",
    "TransportError",
    "__version__",
    "check_cancelled",
    "tool_manifests",
    "tool_search",
]

# The types of server→client requests load on first use (see protocol/_client_types.py).
_CLIENT_TYPES = frozenset({"CreateMessageResult", "ElicitResult", "Root", "SamplingMessage"})


def _fix_module_names() -> None:
    # Show public names under the module users import them from (as trio does), so
    # reprs, docs and pickles do not leak private module paths.
    for name in __all__:
        if name in _CLIENT_TYPES:
            continue  # not loaded yet; they set their own __module__
        obj = globals()[name]
        module = getattr(obj, "__module__", "")
        if (
            isinstance(module, str)
            and module.startswith("mcpactor.")
            and hasattr(obj, "__qualname__")
        ):
            with contextlib.suppress(AttributeError, TypeError):
                obj.__module__ = __name__


_fix_module_names()


def __getattr__(name: str) -> Any:
    if name in _CLIENT_TYPES:
        from . import protocol

        return getattr(protocol, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
