"""Transports: bytes in and out of session actors."""

from .stdio import serve_stdio as serve_stdio
from .stdio import serve_streams as serve_streams

__all__ = ["serve_stdio", "serve_streams"]
