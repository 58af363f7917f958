# The built-in server's connections over TLS: the same connection, through
# trio.SSLStream (which checkpoints on every call).

from __future__ import annotations

import contextlib
import logging
import socket

import trio

from ._connection import LINGER_SECONDS, READ_SIZE, Connection, ServerState, peer

__all__ = ["TlsConnection"]

_log = logging.getLogger("mcpactor.http.server")


class TlsConnection(Connection):
    """The same connection over trio.SSLStream (which checkpoints on every call)."""

    # The handshake happens on the first read, under the keep-alive deadline like any
    # wait for a request.

    def __init__(self, server: ServerState, sock: socket.socket) -> None:
        super().__init__(server, sock)
        assert self.config.ssl_context is not None
        self.transport = trio.SocketStream(trio.socket.from_stdlib_socket(sock))
        self.stream = trio.SSLStream(
            self.transport, self.config.ssl_context, server_side=True, https_compatible=True
        )
        # Decrypted bytes may wait inside the stream while the socket is not readable.
        self.wait_first = False
        self.scheme = "https"
        self.ws_scheme = "wss"

    async def _read(self) -> bytes:
        try:
            return bytes(await self.stream.receive_some(READ_SIZE))
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            # A failed handshake or a client gone: the end of the connection either way.
            return b""

    async def _write(self, data: bytes) -> None:
        if self.broken:
            return
        try:
            with trio.move_on_after(self.config.write_timeout):
                await self.stream.send_all(data)
                return
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            self.broken = True
            return
        self._abort("a write timed out: the client does not read")

    def _abort(self, why: str) -> None:
        _log.info("dropping the connection of %s: %s", peer(self.client), why)
        self.broken = True
        with contextlib.suppress(OSError):
            self.transport.socket.shutdown(socket.SHUT_RDWR)

    async def _close(self) -> None:
        server = self.server
        server.idle.discard(self)
        server.deadlines.pop(self, None)
        # close_notify, without waiting for the client's (https_compatible).
        with trio.move_on_after(LINGER_SECONDS):
            await self.stream.aclose()
        self.transport.socket.close()
