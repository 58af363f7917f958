"""Transports: bytes in and out of session actors."""

from typing import TYPE_CHECKING, Any

from .stdio import serve_stdio as serve_stdio
from .stdio import serve_streams as serve_streams

if TYPE_CHECKING:
    from .http import EventStore as EventStore
    from .http import HttpOptions as HttpOptions
    from .http import McpHttpApp as McpHttpApp
    from .http import MemoryEventStore as MemoryEventStore
    from .http import open_http_app as open_http_app
    from .http import serve_app as serve_app
    from .http import serve_http as serve_http

__all__ = [
    "EventStore",
    "HttpOptions",
    "McpHttpApp",
    "MemoryEventStore",
    "open_http_app",
    "serve_app",
    "serve_http",
    "serve_stdio",
    "serve_streams",
]

# A stdio server never loads the HTTP stack: its names are imported on first use.
_HTTP_NAMES = frozenset(__all__) - {"serve_stdio", "serve_streams"}


def __getattr__(name: str) -> Any:
    if name in _HTTP_NAMES:
        from . import http

        return getattr(http, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
