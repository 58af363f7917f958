"""A bare HTTP/2 client on a trio stream (the h2 library's state machine), for tests that
need to do what a well-behaved client would not: hold a stream's body back, or never
open the flow-control window for an answer."""

from __future__ import annotations

from typing import Any

import attrs
import h2.config
import h2.connection
import h2.events
import h2.settings
import trio


@attrs.define
class Answer:
    """What came back on one stream."""

    status: int | None = None
    headers: dict[bytes, bytes] = attrs.Factory(dict)
    body: bytes = b""
    ended: bool = False
    reset: bool = False


class H2Client:
    """One HTTP/2 connection with prior knowledge (cleartext) or over TLS with ALPN h2."""

    def __init__(self, stream: trio.abc.Stream, authority: str) -> None:
        self.stream = stream
        self.authority = authority.encode()
        self.conn = h2.connection.H2Connection(
            h2.config.H2Configuration(client_side=True, header_encoding=None)
        )
        self.answers: dict[int, Answer] = {}
        #: the server closed the connection (EOF, a reset, or GOAWAY)
        self.closed = False

    async def start(self, *, window: int | None = None) -> None:
        """Send the preface and SETTINGS (``window``: the initial stream window)."""
        self.conn.initiate_connection()
        if window is not None:
            self.conn.update_settings({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: window})
        await self.flush()

    async def flush(self) -> None:
        data = self.conn.data_to_send()
        if data:
            await self.stream.send_all(data)

    async def request(
        self,
        method: str,
        path: str,
        headers: list[tuple[bytes, bytes]] | None = None,
        body: bytes | None = b"",
    ) -> int:
        """Open a stream; ``body=None`` leaves the stream open with nothing sent."""
        stream_id = self.conn.get_next_available_stream_id()
        head = [
            (b":method", method.encode()),
            (b":path", path.encode()),
            (b":scheme", b"http"),
            (b":authority", self.authority),
            *(headers or []),
        ]
        self.conn.send_headers(stream_id, head, end_stream=body == b"")
        if body:
            self.conn.send_data(stream_id, body, end_stream=True)
        self.answers[stream_id] = Answer()
        await self.flush()
        return stream_id

    async def read(self) -> bool:
        """Read once and take in what came; False once the connection is closed."""
        if self.closed:
            return False
        try:
            data = await self.stream.receive_some(65536)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            data = b""
        if not data:
            self.closed = True
            return False
        for event in self.conn.receive_data(data):
            self._take(event)
        try:
            await self.flush()
        except trio.BrokenResourceError:
            self.closed = True
        return not self.closed

    def _take(self, event: Any) -> None:
        answer = self.answers.get(getattr(event, "stream_id", 0) or 0)
        if isinstance(event, h2.events.ResponseReceived) and answer is not None:
            headers = dict(event.headers)
            answer.status = int(headers.pop(b":status"))
            answer.headers = headers
        elif isinstance(event, h2.events.DataReceived) and answer is not None:
            answer.body += event.data
            # Only the answers' bodies are let in: a window left shut stays shut.
            self.conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
        elif isinstance(event, h2.events.StreamEnded) and answer is not None:
            answer.ended = True
        elif isinstance(event, h2.events.StreamReset) and answer is not None:
            answer.reset = True
        elif isinstance(event, h2.events.ConnectionTerminated):
            self.closed = True

    async def answer(self, stream_id: int) -> Answer:
        """Read until ``stream_id`` has ended or been reset, or the connection closes."""
        answer = self.answers[stream_id]
        while not (answer.ended or answer.reset) and await self.read():
            pass
        return answer

    async def wait_closed(self) -> None:
        """Read until the server closes the connection."""
        while await self.read():
            pass
