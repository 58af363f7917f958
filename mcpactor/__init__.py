"""mcpactor: Model Context Protocol servers on trio.

Write a server with ``Server`` and its decorators, run it with ``mcpactor serve``.
"""

import contextlib
from typing import TYPE_CHECKING, Any, Final

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
from ._lazy import exports
from ._version import __version__ as __version__

if TYPE_CHECKING:
    from .protocol import Annotations as Annotations
    from .protocol import AudioContent as AudioContent
    from .protocol import BlobResourceContents as BlobResourceContents
    from .protocol import CallToolResult as CallToolResult
    from .protocol import Completion as Completion
    from .protocol import CreateMessageResult as CreateMessageResult
    from .protocol import ElicitResult as ElicitResult
    from .protocol import EmbeddedResource as EmbeddedResource
    from .protocol import GetPromptResult as GetPromptResult
    from .protocol import Icon as Icon
    from .protocol import ImageContent as ImageContent
    from .protocol import PromptMessage as PromptMessage
    from .protocol import ResourceLink as ResourceLink
    from .protocol import Root as Root
    from .protocol import SamplingMessage as SamplingMessage
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

#: the names defined below the top level, each imported on first use: ``import mcpactor``
#: (and so ``mcpactor --version``) reads no server, runtime or trio until one is asked for
_LAZY: Final = {
    "Annotations": (".protocol", "Annotations"),
    "AudioContent": (".protocol", "AudioContent"),
    "BlobResourceContents": (".protocol", "BlobResourceContents"),
    "CallToolResult": (".protocol", "CallToolResult"),
    "Completion": (".protocol", "Completion"),
    "EmbeddedResource": (".protocol", "EmbeddedResource"),
    "GetPromptResult": (".protocol", "GetPromptResult"),
    "Icon": (".protocol", "Icon"),
    "ImageContent": (".protocol", "ImageContent"),
    "PromptMessage": (".protocol", "PromptMessage"),
    "ResourceLink": (".protocol", "ResourceLink"),
    "TextContent": (".protocol", "TextContent"),
    "TextResourceContents": (".protocol", "TextResourceContents"),
    "ToolAnnotations": (".protocol", "ToolAnnotations"),
    "SessionOptions": (".runtime", "SessionOptions"),
    "TaskOptions": (".runtime", "TaskOptions"),
    "check_cancelled": (".runtime", "check_cancelled"),
    "Audio": (".server", "Audio"),
    "CacheHint": (".server", "CacheHint"),
    "Context": (".server", "Context"),
    "CustomMethod": (".server", "CustomMethod"),
    "CustomNotification": (".server", "CustomNotification"),
    "Extension": (".server", "Extension"),
    "Header": (".server", "Header"),
    "Image": (".server", "Image"),
    "InputRequired": (".server", "InputRequired"),
    "Server": (".server", "Server"),
    "tool_manifests": (".server", "tool_manifests"),
    "tool_search": (".server", "tool_search"),
    "CreateMessageResult": (".protocol", "CreateMessageResult"),
    "ElicitResult": (".protocol", "ElicitResult"),
    "Root": (".protocol", "Root"),
    "SamplingMessage": (".protocol", "SamplingMessage"),
}

#: the subpackages ``import mcpactor`` brought in when it imported everything, still
#: reachable as its attributes (``mcpactor.server.Server``)
_SUBPACKAGES: Final = frozenset({"auth", "protocol", "runtime", "server"})

_import = exports(__name__, globals(), _LAZY)


def _public_module(obj: Any) -> Any:
    # Show public names under the module users import them from (as trio does), so
    # reprs, docs and pickles do not leak private module paths.
    module = getattr(obj, "__module__", "")
    if isinstance(module, str) and module.startswith("mcpactor.") and hasattr(obj, "__qualname__"):
        with contextlib.suppress(AttributeError, TypeError):
            obj.__module__ = __name__
    return obj


for _name in __all__:
    if _name not in _LAZY:  # the exceptions, defined in a private module of this package
        _public_module(globals()[_name])
del _name


def __getattr__(name: str) -> Any:
    if name in _SUBPACKAGES:
        __import__(f"{__name__}.{name}")  # which binds it here
        return globals()[name]
    return _public_module(_import(name))


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
