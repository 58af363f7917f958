"""Transports: bytes in and out of session actors."""

from .http import EventStore as EventStore
from .http import HttpOptions as HttpOptions
from .http import McpHttpApp as McpHttpApp
from .http import MemoryEventStore as MemoryEventStore
from .http import open_http_app as open_http_app
from .http import serve_app as serve_app
from .http import serve_http as serve_http
from .stdio import serve_stdio as serve_stdio
from .stdio import serve_streams as serve_streams

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
