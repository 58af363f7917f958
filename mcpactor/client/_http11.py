# A small HTTP/1.1 client on trio and h11: what the Streamable HTTP connection rides on.
#
# h11 holds the protocol state of each connection; this module moves its bytes over
# ``trio.open_tcp_stream`` (wrapped in a ``trio.SSLStream`` for https). A connection
# carries one request at a time. A response read to its end hands the connection back
# to the pool for the next request (keep-alive); one left unread — an SSE stream the
# caller stopped reading, a cancelled call — closes it, since h11 cannot skip a body.
#
# A server may close an idle kept-alive connection at any moment (hypercorn does after a
# few seconds). An idle connection with something to read has been closed (or spoiled)
# by the server and is dropped before reuse. A request that cannot be written on a
# reused connection is sent again on a fresh one: the server never got all of it. Once
# written, a request is never sent again — the server may be serving it — so a failure
# after that is the caller's, as is any failure on a fresh connection.
#
# Every foreign failure (OSError, trio's Broken/Closed, h11's ProtocolError, ssl errors)
# leaves this module as ``TransportBroken``.

from __future__ import annotations

import contextlib
import ssl
import urllib.parse
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Final, final

import attrs
import h11
import trio

from .._exceptions import TransportBroken
from .._version import __version__
from ..protocol import describe

__all__ = ["HttpPool", "HttpResponse", "Url"]

_READ_SIZE: Final = 65536
_USER_AGENT: Final = f"mcpactor/{__version__}"


@attrs.frozen
class Url:
    """An http(s) URL taken apart: where to connect and what to ask for."""

    scheme: str
    host: str
    port: int
    #: path and query, as sent in the request line
    target: str

    @classmethod
    def parse(cls, url: str) -> Url:
        """Split ``url``.

        Raises:
            ValueError: not an http:// or https:// URL with a host.
        """
        parts = urllib.parse.urlsplit(url)
        scheme = parts.scheme.lower()
        if scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"expected an http:// or https:// URL, got {describe(url)}")
        port = parts.port or (443 if scheme == "https" else 80)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        return cls(scheme, parts.hostname, port, target)

    @property
    def authority(self) -> str:
        """The Host header: the host, and the port unless it is the scheme's default."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        default = 443 if self.scheme == "https" else 80
        return host if self.port == default else f"{host}:{self.port}"

    def __str__(self) -> str:
        return f"{self.scheme}://{self.authority}{self.target}"


@contextlib.contextmanager
def _broken(what: str) -> Iterator[None]:
    # The edge where foreign exceptions become ours.
    try:
        yield
    except (
        OSError,
        trio.BrokenResourceError,
        trio.ClosedResourceError,
        h11.ProtocolError,
    ) as exc:
        reason = str(exc) or type(exc).__name__
        raise TransportBroken(f"{what}: {reason}") from exc


class _Connection:
    __slots__ = ("counted", "h11", "origin", "stream")

    def __init__(
        self, origin: tuple[str, str, int], stream: trio.abc.Stream, *, counted: bool
    ) -> None:
        self.origin = origin
        self.stream = stream
        self.h11 = h11.Connection(h11.CLIENT)
        #: holds one of the pool's ``max_connections`` slots
        self.counted = counted

    async def next_event(self) -> object:
        while True:
            event = self.h11.next_event()
            if event is not h11.NEED_DATA:
                return event
            # b"" at end of input: h11 then reports ConnectionClosed or an error.
            self.h11.receive_data(bytes(await self.stream.receive_some(_READ_SIZE)))

    def reusable(self) -> bool:
        return self.h11.our_state is h11.DONE and self.h11.their_state is h11.DONE

    def closed_by_peer(self) -> bool:
        # Idle, nothing is due: anything readable is an end of stream or junk.
        stream = self.stream
        if isinstance(stream, trio.SSLStream):
            stream = stream.transport_stream
        return isinstance(stream, trio.SocketStream) and stream.socket.is_readable()


@final
class HttpResponse:
    """A response whose head has arrived; its body is read with ``receive_some``."""

    def __init__(self, connection: _Connection, head: h11.Response, what: str) -> None:
        self._connection = connection
        self._what = what
        #: the status code
        self.status: int = head.status_code
        #: headers by lowercase name; repeated ones joined with ", "
        self.headers: dict[str, str] = {}
        for raw_name, raw_value in head.headers:
            name = raw_name.decode("latin-1")
            value = raw_value.decode("latin-1")
            known = self.headers.get(name)
            self.headers[name] = value if known is None else f"{known}, {value}"
        #: the whole body has been read
        self.complete = False

    @property
    def content_type(self) -> str:
        """The media type, lowercase, without parameters."""
        return self.headers.get("content-type", "").partition(";")[0].strip().lower()

    async def receive_some(self) -> bytes:
        """The next piece of the body; b"" once it is complete.

        Raises:
            TransportBroken: the connection failed before the body was complete.
        """
        if self.complete:
            return b""
        with _broken(self._what):
            while True:
                event = await self._connection.next_event()
                if type(event) is h11.Data:
                    if event.data:
                        return bytes(event.data)
                    continue
                if type(event) is h11.EndOfMessage:
                    self.complete = True
                    return b""
                raise TransportBroken(f"{self._what}: the body ended early ({event!r})")

    async def read(self, limit: int) -> bytes:
        """The rest of the body, at most ``limit`` bytes.

        Raises:
            TransportBroken: the connection failed, or the body is longer than ``limit``.
        """
        parts: list[bytes] = []
        size = 0
        while chunk := await self.receive_some():
            size += len(chunk)
            if size > limit:
                raise TransportBroken(f"{self._what}: the body exceeds {limit} bytes")
            parts.append(chunk)
        return b"".join(parts)


@final
class HttpPool:
    """Kept-alive HTTP/1.1 connections, opened on demand, at most ``max_connections``.

    ``ssl_context`` is used for https (default: ``ssl.create_default_context()``).
    A request made with ``bounded=False`` never waits for a slot: for short requests
    that others may be waiting on (a client's answer to a server whose streams hold
    every slot), which must not queue behind them.
    """

    def __init__(
        self,
        *,
        ssl_context: ssl.SSLContext | None = None,
        max_connections: int = 100,
        max_idle: int = 8,
    ) -> None:
        self._ssl_context = ssl_context
        self._slots = trio.Semaphore(max_connections)
        self._max_idle = max_idle
        self._idle: list[_Connection] = []
        self._closed = False

    async def __aenter__(self) -> HttpPool:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the idle connections; busy ones close when their response is done."""
        self._closed = True
        idle, self._idle = self._idle, []
        for connection in idle:
            await self._discard(connection)

    @contextlib.asynccontextmanager
    async def request(
        self,
        method: str,
        url: Url,
        headers: Sequence[tuple[str, str]],
        body: bytes = b"",
        *,
        sent: Callable[[], None] | None = None,
        bounded: bool = True,
    ) -> AsyncIterator[HttpResponse]:
        """Send a request and yield its response once the head has arrived.

        ``sent`` is called once the request is on the wire, before its answer. Leaving
        the block with the body read to its end keeps the connection for reuse. A
        ``host`` or ``user-agent`` in ``headers`` replaces the one sent by default (a
        proxy passes on its client's).

        Raises:
            TransportBroken: the server could not be reached or the connection failed.
        """
        what = f"{method} {url}"
        given = {name.lower() for name, _ in headers}
        all_headers = [
            *((("host", url.authority),) if "host" not in given else ()),
            *((("user-agent", _USER_AGENT),) if "user-agent" not in given else ()),
            *headers,
        ]
        if body or method == "POST":
            all_headers.append(("content-length", str(len(body))))
        request = h11.Request(method=method, target=url.target, headers=all_headers)
        origin = (url.scheme, url.host, url.port)
        told = sent is None

        def on_sent() -> None:
            nonlocal told
            if not told:
                told = True
                assert sent is not None
                sent()

        connection, head = await self._send(url, origin, request, body, on_sent, what, bounded)
        response = HttpResponse(connection, head, what)
        try:
            yield response
        finally:
            if response.complete and connection.reusable() and not self._closed:
                connection.h11.start_next_cycle()
                self._idle.append(connection)
                evicted = self._idle.pop(0) if len(self._idle) > self._max_idle else None
            else:
                evicted = connection
            if evicted is not None:
                with trio.CancelScope(shield=True):
                    await self._discard(evicted)

    async def _send(
        self,
        url: Url,
        origin: tuple[str, str, int],
        request: h11.Request,
        body: bytes,
        sent: Callable[[], None],
        what: str,
        bounded: bool,
    ) -> tuple[_Connection, h11.Response]:
        while True:
            connection = self._take_idle(origin)
            if connection is not None and connection.closed_by_peer():
                with trio.CancelScope(shield=True):
                    await self._discard(connection)
                continue
            fresh = connection is None
            if connection is None:
                connection = await self._connect(url, what, bounded)
            try:
                with _broken(what):
                    await self._write(connection, request, body)
            except TransportBroken:
                with trio.CancelScope(shield=True):
                    await self._discard(connection)
                if fresh:
                    raise
                continue  # a connection the server had closed: the request never got there
            except BaseException:
                with trio.CancelScope(shield=True):
                    await self._discard(connection)
                raise
            sent()
            try:
                with _broken(what):
                    return connection, await self._read_head(connection)
            except BaseException:
                with trio.CancelScope(shield=True):
                    await self._discard(connection)
                raise

    async def _write(self, connection: _Connection, request: h11.Request, body: bytes) -> None:
        state = connection.h11
        data = state.send(request) or b""
        if body:
            data += state.send(h11.Data(data=body)) or b""
        data += state.send(h11.EndOfMessage()) or b""
        await connection.stream.send_all(data)

    async def _read_head(self, connection: _Connection) -> h11.Response:
        while True:
            event = await connection.next_event()
            if type(event) is h11.InformationalResponse:
                continue  # 100 Continue and the like
            if type(event) is h11.Response:
                return event
            raise TransportBroken(f"the server answered with {event!r} instead of a response")

    def _take_idle(self, origin: tuple[str, str, int]) -> _Connection | None:
        for index in range(len(self._idle) - 1, -1, -1):
            connection = self._idle[index]
            if connection.origin == origin:
                del self._idle[index]
                return connection
        return None

    async def _connect(self, url: Url, what: str, bounded: bool) -> _Connection:
        if bounded:
            await self._slots.acquire()
        try:
            with _broken(what):
                tcp = await trio.open_tcp_stream(url.host, url.port)
                stream: trio.abc.Stream = tcp
                if url.scheme == "https":
                    context = self._ssl_context or ssl.create_default_context()
                    tls = trio.SSLStream(
                        tcp, context, server_hostname=url.host, https_compatible=True
                    )
                    try:
                        await tls.do_handshake()
                    except BaseException:
                        await trio.aclose_forcefully(tcp)
                        raise
                    stream = tls
        except BaseException:
            if bounded:
                self._slots.release()
            raise
        return _Connection((url.scheme, url.host, url.port), stream, counted=bounded)

    async def _discard(self, connection: _Connection) -> None:
        try:
            await trio.aclose_forcefully(connection.stream)
        finally:
            if connection.counted:
                self._slots.release()
