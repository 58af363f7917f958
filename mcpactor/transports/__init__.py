"""Transports: bytes in and out of session actors."""

from typing import TYPE_CHECKING, Any

from .stdio import serve_stdio as serve_stdio
from .stdio import serve_streams as serve_streams

if TYPE_CHECKING:
    from ._asgi import http_error_body as http_error_body
    from ._forwarded import FORWARDED_HEADERS as FORWARDED_HEADERS
    from ._forwarded import parse_networks as parse_networks
    from ._http_options import _LIMITS as HTTP_LIMIT_OPTIONS
    from ._http_options import _POSITIVE_SECONDS as HTTP_TIMEOUT_OPTIONS
    from ._server_card import ServerCardOptions as ServerCardOptions
    from ._server_card import server_card as server_card
    from ._sse import message_event as message_event
    from .http import EventStore as EventStore
    from .http import HttpOptions as HttpOptions
    from .http import McpHttpApp as McpHttpApp
    from .http import MemoryEventStore as MemoryEventStore
    from .http import Readiness as Readiness
    from .http import open_http_app as open_http_app
    from .http import serve_app as serve_app
    from .http import serve_http as serve_http

__all__ = [
    "FORWARDED_HEADERS",
    "HTTP_LIMIT_OPTIONS",
    "HTTP_TIMEOUT_OPTIONS",
    "EventStore",
    "HttpOptions",
    "McpHttpApp",
    "MemoryEventStore",
    "Readiness",
    "ServerCardOptions",
    "http_error_body",
    "message_event",
    "open_http_app",
    "parse_networks",
    "serve_app",
    "serve_http",
    "serve_stdio",
    "serve_streams",
    "server_card",
]

# A stdio server never loads the HTTP stack: its names are imported on first use.
_HTTP_NAMES = frozenset(__all__) - {"serve_stdio", "serve_streams"}
#: what the command line and the deployment file check HTTP options with, and the SSE and
#: ASGI pieces its development front uses: from their modules, without the HTTP stack
_OPTION_NAMES = {
    "http_error_body": ("._asgi", "http_error_body"),
    "message_event": ("._sse", "message_event"),
    "FORWARDED_HEADERS": ("._forwarded", "FORWARDED_HEADERS"),
    "parse_networks": ("._forwarded", "parse_networks"),
    "HTTP_LIMIT_OPTIONS": ("._http_options", "_LIMITS"),
    "HTTP_TIMEOUT_OPTIONS": ("._http_options", "_POSITIVE_SECONDS"),
    "ServerCardOptions": ("._server_card", "ServerCardOptions"),
    "server_card": ("._server_card", "server_card"),
}


def __getattr__(name: str) -> Any:
    if name in _OPTION_NAMES:
        import importlib

        module, attribute = _OPTION_NAMES[name]
        return getattr(importlib.import_module(module, __name__), attribute)
    if name in _HTTP_NAMES:
        from . import http

        return getattr(http, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
