# This process's copy of a session shared with other replicas (``HttpSession.share``).
#
# When several processes serve the same sessions, each holds a copy of a session it was
# named, adopted from the session's record (_session_store.py), and the copies keep the
# record current: the one that answers initialize writes it before the answer leaves
# (so that the client's next request finds it anywhere), and a copy writes it again when
# the log level changes. What a copy cannot act on goes to the others through the relay
# (_relay.py): a client's answer to a server→client request this copy did not send, a
# ``notifications/cancelled`` for a request not running here, and — to every copy — any
# other notification (``initialized``, roots changed). A message for the GET stream
# while no GET is attached here goes to the copy holding it.

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import Final, Protocol

import orjson
import trio

from ..._exceptions import INTERNAL_ERROR, ProtocolError
from ...protocol import (
    Body,
    ErrorResponse,
    JSONValue,
    Notification,
    Response,
    classify_body,
    decode,
)
from .._messages import RESPONSE, Outbound
from .._session_actor import SessionActor
from ._relay import MAX_RELAYED_BYTES, Relayed, RelayKind, Replicas
from ._routing import Routing
from ._session_records import SessionRecord, StoreUnavailable, principal_identity

__all__ = ["CopiedSession", "SharedCopy", "is_change_notice"]

_log = logging.getLogger("mcpactor.http")

# What a relayed message may carry, its header aside.
_MAX_RELAYED_DATA: Final = MAX_RELAYED_BYTES - 4096
# What a Server's change notices (runtime/_changes.py) are called on the wire.
_CHANGE_METHODS: Final = frozenset(
    {
        "notifications/tools/list_changed",
        "notifications/prompts/list_changed",
        "notifications/resources/list_changed",
        "notifications/resources/updated",
    }
)
_UNRECORDED: Final = (
    "the session store is unavailable, so no session can be opened now: try again later"
)


def is_change_notice(data: bytes) -> bool:
    """Whether a message for the GET stream is a list change or resource update."""
    try:
        message = orjson.loads(data)
    except orjson.JSONDecodeError:
        return False
    return type(message) is dict and message.get("method") in _CHANGE_METHODS


class CopiedSession(Protocol):
    """What a copy needs of its session (``HttpSession`` is one)."""

    actor: SessionActor
    id: str | None
    principal: object
    routing: Routing
    closing: bool

    async def feed(self, value: JSONValue | Body, *, relayed: bool = False) -> bool:
        """Hand one body to the session; False if it is closed."""


class SharedCopy:
    """One copy of a session among replicas: its record and what it relays."""

    __slots__ = (
        "_owner",
        "_record_ttl",
        "_session",
        "_to_standalone",
        "_written",
        "replicas",
        "written_at",
    )

    def __init__(
        self,
        session: CopiedSession,
        to_standalone: Callable[[bytes], Awaitable[None]],
        replicas: Replicas,
        ttl: float,
        record: SessionRecord | None,
    ) -> None:
        self._session = session
        # Sends to the GET stream attached here, never relaying it on.
        self._to_standalone = to_standalone
        #: the replicas this session is shared with
        self.replicas = replicas
        # How long the record lives after each write.
        self._record_ttl = ttl
        # What this copy last wrote to the record (log level, subscriptions); None: the
        # record is not written yet.
        self._written: tuple[str, frozenset[str]] | None = None
        #: when this copy last wrote the record (the runtime's clock)
        self.written_at = -float("inf")
        self._owner = replicas.replica_id if record is None else record.owner

    def adopt(self, record: SessionRecord) -> None:
        """Take the session's state from ``record``: this copy was named elsewhere."""
        self._session.actor.core.adopt(
            record.protocol_version, record.client_info, record.client_capabilities
        )
        self.apply_record(record)
        self._written = (record.log_level, record.subscriptions)

    def apply_record(self, record: SessionRecord) -> None:
        """Take the log level and subscriptions another copy wrote."""
        actor = self._session.actor
        actor.core.log_level = record.log_level
        current = self._subscriptions()
        for uri in current - record.subscriptions:
            actor.peer.unsubscribe(uri)
        for uri in record.subscriptions - current:
            actor.peer.subscribe(uri)
        if self._written is not None:
            self._written = (record.log_level, record.subscriptions)

    def _subscriptions(self) -> frozenset[str]:
        # The actor's peer keeps them for its change notices; a record carries a copy.
        return frozenset(self._session.actor.peer.subscriptions or ())

    def state_changed(self) -> bool:
        """Whether the subscriptions differ from what this copy last wrote."""
        written = self._written
        return written is not None and self._subscriptions() != written[1]

    def record(self) -> SessionRecord | None:
        """This copy's state as a record; None before initialize."""
        session = self._session
        negotiated = session.actor.core.negotiated
        if negotiated is None or session.id is None:
            return None
        return SessionRecord(
            id=session.id,
            protocol_version=negotiated.revision.version,
            client_capabilities=negotiated.client_capabilities,
            client_info=negotiated.client_info,
            log_level=session.actor.core.log_level,
            subscriptions=self._subscriptions(),
            principal=principal_identity(session.principal),
            owner=self._owner,
            touched_by=self.replicas.replica_id,
            last_active=time.time(),
        )

    async def share_subscriptions(self) -> None:
        """resources/(un)subscribe served here: write the record before the answer."""
        # Through the record, the copy holding the GET stream has it before the answer
        # leaves.
        if not self.state_changed():
            return
        try:
            await self.write_record()
        except StoreUnavailable as exc:
            # The next request's ``find`` writes it again.
            _log.warning(
                "could not write the subscriptions of session %s: %s", self._session.id, exc
            )

    async def write_record(self) -> bool:
        """Write this copy's record (a request was served here); False before initialize.

        Tells the other copies when the log level or subscriptions changed.
        """
        record = self.record()
        if record is None:
            return False
        state = (record.log_level, record.subscriptions)
        changed = self._written is not None and state != self._written
        self._written = state
        self.written_at = trio.current_time()
        await self.replicas.records.put(record, ttl=self._record_ttl)
        if changed:
            await self.relay(RelayKind.STATE)
        return True

    async def relay(self, kind: RelayKind, data: bytes = b"") -> None:
        """Send the other replicas a message about this session.

        If the store is unavailable the message is lost, as one to a replica that died.
        """
        session_id = self._session.id
        assert session_id is not None
        if len(data) > _MAX_RELAYED_DATA:
            _log.warning(
                "dropped a %s message of session %s: %d bytes, more than a relay carries",
                kind.value,
                session_id,
                len(data),
            )
            return
        replicas = self.replicas
        try:
            await replicas.relay.send(Relayed(kind, session_id, replicas.replica_id, data))
        except StoreUnavailable as exc:
            _log.warning(
                "could not relay a %s message of session %s: %s", kind.value, session_id, exc
            )

    async def relay_standalone(self, data: bytes) -> None:
        """Send a message for the GET stream to the copy holding it (not this one)."""
        # A change notice reached that replica's copy too, through the shared changes.
        if self.replicas.changes is not None and is_change_notice(data):
            return
        await self.relay(RelayKind.STANDALONE, bytes(memoryview(data)))

    async def share_in(self, value: JSONValue | Body) -> JSONValue | Body | None:
        """What this copy keeps of a client's message (None: nothing, it went elsewhere)."""
        body = classify_body(value)
        kind = type(body)
        core = self._session.actor.core
        if kind is Response or kind is ErrorResponse:
            assert isinstance(body, Response | ErrorResponse)
            if body.id is None or core.expects(body.id):
                return body
            await self.relay(RelayKind.CLIENT, orjson.dumps(body.to_json()))
            return None
        if kind is Notification:
            assert isinstance(body, Notification)
            if body.method == "notifications/cancelled":
                request_id = (body.params or {}).get("requestId")
                if (
                    isinstance(request_id, str | int)
                    and not isinstance(request_id, bool)
                    and request_id in core.in_flight()
                ):
                    return body
                await self.relay(RelayKind.CLIENT, orjson.dumps(body.to_json()))
                return None
            # Every copy hears the client's other notifications (initialized, roots).
            await self.relay(RelayKind.CLIENT, orjson.dumps(body.to_json()))
        return body

    async def share_out(self) -> bool:
        """After the core took a client's message: write the record if it is due.

        Due for a session just initialized here, or for a log level just changed. False
        if a session just initialized could not be recorded: no other replica would know
        it.
        """
        written = self._written
        core = self._session.actor.core
        try:
            if written is None:
                if core.negotiated is not None:
                    await self.write_record()
            elif core.log_level != written[0]:
                await self.write_record()
        except StoreUnavailable as exc:
            _log.warning("could not write the record of session %s: %s", self._session.id, exc)
            return written is not None
        return True

    @staticmethod
    def unrecorded(item: Outbound) -> Outbound:
        """The answer to initialize when the session could not be recorded."""
        request_id = item.related_request_id
        error = ErrorResponse(request_id, INTERNAL_ERROR, _UNRECORDED).to_json()
        return Outbound(RESPONSE, error, request_id)

    async def take_relayed(self, message: Relayed) -> None:
        """Act on what another replica relayed about this session."""
        session = self._session
        kind = message.kind
        if kind is RelayKind.CLIENT:
            try:
                value = decode(message.data)
            except ProtocolError:
                _log.warning("dropped a relayed client message that is not JSON")
                return
            await session.feed(value, relayed=True)
        elif kind is RelayKind.STANDALONE:
            # Only the copy holding the GET stream takes it; the others never relay it on.
            if session.routing.standalone.conn is not None and not session.closing:
                await self._to_standalone(message.data)
        elif kind is RelayKind.STATE:
            record = await self.replicas.records.get(message.session_id)
            if record is not None:
                self.apply_record(record)
