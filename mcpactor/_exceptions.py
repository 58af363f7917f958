"""The exception tree of mcpactor.

Every error a handler, the protocol core or a transport can raise is one of these;
``ProtocolError`` and ``RequestError`` carry the JSON-RPC code the peer will see.
"""

from __future__ import annotations

from typing import Any, Final

__all__ = [
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "REQUEST_TIMEOUT",
    "RESOURCE_NOT_FOUND",
    "URL_ELICITATION_REQUIRED",
    "CapabilityError",
    "ConfigError",
    "ExtensionError",
    "LocalProtocolError",
    "MCPActorError",
    "PluginError",
    "ProtocolError",
    "RemoteProtocolError",
    "RequestError",
    "SchemaError",
    "ToolError",
    "TransportBroken",
    "TransportClosed",
    "TransportError",
]

PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
METHOD_NOT_FOUND: Final = -32601
INVALID_PARAMS: Final = -32602
INTERNAL_ERROR: Final = -32603
RESOURCE_NOT_FOUND: Final = -32002
URL_ELICITATION_REQUIRED: Final = -32042
# Not a spec code: the server gave up waiting for the client's answer.
REQUEST_TIMEOUT: Final = -32001


class MCPActorError(Exception):
    """Base class of every error raised by mcpactor."""


class ProtocolError(MCPActorError):
    """A message broke the protocol; ``code`` and ``data`` say how, for the peer."""

    code: int
    data: Any

    def __init__(
        self,
        message: str,
        *,
        code: int = INVALID_REQUEST,
        data: Any = None,
        request_id: str | int | None = None,
    ) -> None:
        if type(self) is ProtocolError:
            raise TypeError(
                "ProtocolError is abstract: raise LocalProtocolError or RemoteProtocolError"
            )
        super().__init__(message)
        self.message = message
        self.code = code
        self.data = data
        # The id of the request this error answers, when one could be read.
        self.request_id = request_id

    def to_error(self) -> dict[str, Any]:
        """Return the JSON-RPC ``error`` object for this failure."""
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


class LocalProtocolError(ProtocolError):
    """We were about to send something the protocol forbids (our bug or a handler's)."""


class RemoteProtocolError(ProtocolError):
    """The peer sent something the protocol forbids; it gets an error, the session lives."""


class CapabilityError(LocalProtocolError):
    """The client did not declare the capability a server→client request needs."""


class RequestError(MCPActorError):
    """Raised by a handler to answer its request with a specific JSON-RPC error."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def to_error(self) -> dict[str, Any]:
        """Return the JSON-RPC ``error`` object for this failure."""
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


class ToolError(MCPActorError):
    """Raised by a tool to fail with ``isError: true`` and this message as its text."""


class SchemaError(MCPActorError, ValueError):
    """A handler's signature or schema cannot be served (raised at registration)."""


class TransportError(MCPActorError):
    """The byte stream under a session failed."""


class TransportClosed(TransportError):
    """We closed the transport; nothing more can be sent or received."""


class TransportBroken(TransportError):
    """The peer went away or the stream broke."""


class PluginError(MCPActorError):
    """A plugin could not be loaded or mounted; names the entry point and distribution."""

    def __init__(
        self, message: str, *, entry_point: str | None = None, distribution: str | None = None
    ) -> None:
        super().__init__(message)
        self.entry_point = entry_point
        self.distribution = distribution


class ExtensionError(PluginError):
    """An extension cannot be enabled, or its requirements are not met; names it."""


class ConfigError(MCPActorError, ValueError):
    """A configuration file (or option) is wrong; the message names the key."""
