# Messages between replicas that serve the same sessions.
#
# Any replica may serve any request of a session (each holds a copy adopted from the
# session's record, _session_store.py), so some messages land on a replica that cannot
# act on them: a client's ``notifications/cancelled`` for a request running elsewhere, a
# client's response to a server→client request another replica sent, a notification
# for the session's GET stream while the GET is held by another replica, the end of a
# session (DELETE, expiry) that every copy must hear. Those go through a ``Relay``: one
# ``send`` hands a ``Relayed`` to every other replica (or to one, ``target``), and
# ``serve`` hands what other replicas sent to this one's ``deliver``, in order. A
# replica that cannot use a relayed message drops it and never relays it again, so
# nothing circles.
#
# A shared implementation (Redis pub/sub: one channel for all replicas, ``target``
# naming a per-replica channel) carries ``Relayed.encode()`` bytes; ``MemoryHub`` joins
# replicas that run in one trio run, for tests. One process has no relay at all, and
# then none of this is on any path.

from __future__ import annotations

import enum
import secrets
from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager
from typing import Final, Protocol

import attrs
import orjson
import trio

from .._bus import Listener
from ._session_records import MemorySessionRecords, SessionRecords

__all__ = [
    "MAX_RELAYED_BYTES",
    "MemoryHub",
    "MemoryRelay",
    "Relay",
    "RelayKind",
    "Relayed",
    "RemoteChanges",
    "Replicas",
]

#: the largest relayed message a replica takes (a client's body is bounded below this)
MAX_RELAYED_BYTES: Final = 8 * 1024 * 1024
# Messages waiting for one replica of a MemoryHub before senders wait.
_HUB_BUFFER: Final = 256
_MAX_NAME: Final = 256


class RelayKind(enum.Enum):
    """What a relayed message is for."""

    #: a message from the client (JSON), for the replica whose request or
    #: server→client request it concerns; every other notification goes to every copy
    CLIENT = "client"
    #: a message for the session's GET stream (JSON), for the replica holding it
    STANDALONE = "standalone"
    #: the session ended (DELETE, expiry): every copy ends
    CLOSED = "closed"
    #: the session's record changed (log level, subscriptions): copies read it again
    STATE = "state"


_KINDS: Final = {kind.value: kind for kind in RelayKind}


@attrs.frozen
class Relayed:
    """One message from a replica to the others, about one session."""

    kind: RelayKind
    session_id: str
    #: the replica that sent it
    origin: str
    #: the message itself (JSON), for CLIENT and STANDALONE
    data: bytes = b""
    #: the one replica it is for; None: every replica but the origin
    target: str | None = None

    def encode(self) -> bytes:
        """The message as bytes: a JSON header line, then ``data``."""
        header = orjson.dumps(
            {"k": self.kind.value, "s": self.session_id, "o": self.origin, "t": self.target}
        )
        return header + b"\n" + self.data

    @classmethod
    def decode(cls, raw: bytes) -> Relayed:
        """Read back what ``encode`` wrote.

        Raises:
            ValueError: ``raw`` is too large or not a relayed message.
        """
        if len(raw) > MAX_RELAYED_BYTES:
            raise ValueError(f"a relayed message holds at most {MAX_RELAYED_BYTES} bytes")
        header, newline, data = bytes(raw).partition(b"\n")
        if not newline or len(header) > 4 * _MAX_NAME:
            raise ValueError("a relayed message starts with a short header line")
        try:
            fields = orjson.loads(header)
        except orjson.JSONDecodeError:
            raise ValueError("a relayed message's header is not JSON") from None
        if not isinstance(fields, dict):
            raise ValueError("a relayed message's header must be a JSON object")
        kind = _KINDS.get(fields.get("k"))  # type: ignore[arg-type]
        session_id, origin, target = fields.get("s"), fields.get("o"), fields.get("t")
        if (
            kind is None
            or not isinstance(session_id, str)
            or not isinstance(origin, str)
            or not (target is None or isinstance(target, str))
            or max(len(session_id), len(origin), len(target or "")) > _MAX_NAME
        ):
            raise ValueError("a relayed message's header names no kind, session or origin")
        return cls(kind, session_id, origin, data, target)


class Relay(Protocol):
    """How one replica reaches the others."""

    #: this replica's name, unique among the replicas
    replica_id: str

    async def send(self, message: Relayed) -> None:
        """Hand ``message`` to its target, or to every other replica."""

    async def serve(
        self,
        deliver: Callable[[Relayed], Awaitable[None]],
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Call ``deliver`` with each message for this replica, in order, until cancelled.

        Reports started once messages sent from then on are received.
        """


class RemoteChanges(Protocol):
    """The change notices other replicas raised (a shared bus's remote half)."""

    def listen_remote(self) -> AbstractContextManager[Listener]:
        """Listen for the changes other replicas publish from now on."""


@attrs.frozen
class Replicas:
    """What a SessionManager shares with the other replicas: records, a relay, changes.

    With ``changes``, every replica tells its own copies of the sessions about the
    changes other replicas raise, and a copy without the session's GET stream drops a
    change notice instead of relaying it (the copy holding the GET heard it too).
    Without, a copy relays it to the GET's holder, and only copies on the replica that
    raised the change hear it.
    """

    records: SessionRecords
    relay: Relay
    changes: RemoteChanges | None = None

    @property
    def replica_id(self) -> str:
        """This replica's name."""
        return self.relay.replica_id


class MemoryHub:
    """Replicas in one trio run that share session records and relay to each other.

    For tests: ``hub.replica()`` gives each SessionManager its ``Replicas``.
    """

    def __init__(self) -> None:
        #: the records every replica of this hub shares
        self.records = MemorySessionRecords()
        self._inboxes: dict[str, trio.MemorySendChannel[Relayed]] = {}
        #: messages sent so far, by kind (tests count relay traffic with these)
        self.sent: dict[RelayKind, int] = dict.fromkeys(RelayKind, 0)

    def replica(self, name: str | None = None) -> Replicas:
        """A new replica of this hub (named at random unless ``name`` is given)."""
        return Replicas(self.records, MemoryRelay(self, name or secrets.token_hex(4)))

    async def _send(self, message: Relayed) -> None:
        self.sent[message.kind] += 1
        for name, inbox in list(self._inboxes.items()):
            if name == message.origin or (message.target is not None and name != message.target):
                continue
            try:
                await inbox.send(message)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                continue  # that replica stopped meanwhile


class MemoryRelay:
    """One replica's end of a MemoryHub."""

    def __init__(self, hub: MemoryHub, replica_id: str) -> None:
        self.hub = hub
        self.replica_id = replica_id

    async def send(self, message: Relayed) -> None:
        """Hand ``message`` to the other replicas of the hub (as bytes, like a real one)."""
        await self.hub._send(Relayed.decode(message.encode()))

    async def serve(
        self,
        deliver: Callable[[Relayed], Awaitable[None]],
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Deliver what the other replicas send, until cancelled."""
        send, receive = trio.open_memory_channel[Relayed](_HUB_BUFFER)
        inboxes = self.hub._inboxes
        if self.replica_id in inboxes:
            raise RuntimeError(f"replica {self.replica_id!r} is served already")
        inboxes[self.replica_id] = send
        try:
            async with receive:
                task_status.started()
                async for message in receive:
                    await deliver(message)
        finally:
            if inboxes.get(self.replica_id) is send:
                del inboxes[self.replica_id]
            send.close()
