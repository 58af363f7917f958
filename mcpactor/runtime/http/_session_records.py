# What replicas of one server share about a session: its record, and where records live.
#
# See _session_store.py for how the live table and the records work together; this module
# holds the records alone, so that the session (_http_session.py) and the relay
# (_relay.py) can use them without importing the live table, which names the session.

from __future__ import annotations

from typing import Final, Protocol

import attrs
import orjson
import trio

from ..._exceptions import MCPActorError
from ...protocol import (
    MAX_CLIENT_DECLARATION_BYTES,
    MAX_RESOURCE_SUBSCRIPTIONS,
    MAX_SUBSCRIPTION_BYTES,
    JSONObject,
    RemoteProtocolError,
    ResourceSubscriptions,
)

__all__ = [
    "MAX_RECORD_BYTES",
    "MemorySessionRecords",
    "SessionRecord",
    "SessionRecords",
    "StoreUnavailable",
    "principal_identity",
]

# What a record's texts may hold, at most: past this a record is refused as damaged.
_MAX_TEXT: Final = 4096
#: the largest encoded record read back from a shared store: room for the largest record
#: a session can write — its subscriptions at their limits, written with JSON escapes
#: (six bytes a character at worst), the client's declaration and the texts
MAX_RECORD_BYTES: Final = (
    6 * MAX_SUBSCRIPTION_BYTES
    + 3 * MAX_RESOURCE_SUBSCRIPTIONS
    + MAX_CLIENT_DECLARATION_BYTES
    + 6 * 6 * _MAX_TEXT
    + 4096
)


class StoreUnavailable(MCPActorError, ConnectionError):
    """A store shared between replicas cannot be reached now (it may be again later).

    Shared implementations of SessionRecords and Relay raise it for every failure to
    reach their store, so that a request that needs the store fails with a clear error
    and the process stays up.
    """


def principal_identity(principal: object) -> str | None:
    """The text that binds a session to its caller across replicas; None for no caller.

    A principal with an ``identity`` (``mcpactor.auth.Principal``: issuer, subject,
    client) gives that; a string, number or bool is its own identity; anything else is
    named by its type and ``repr``, which must then be the same in every replica.
    """
    if principal is None:
        return None
    identity = getattr(principal, "identity", None)
    if isinstance(identity, str):
        return "id:" + identity
    if isinstance(principal, str):
        return "str:" + principal
    if isinstance(principal, bool | int | float):
        return f"{type(principal).__name__}:{principal!r}"
    kind = type(principal)
    return f"{kind.__module__}.{kind.__qualname__}:{principal!r}"


def _text(value: object, name: str) -> str:
    if not isinstance(value, str) or len(value) > _MAX_TEXT:
        raise ValueError(f"a session record's {name!r} must be a short string")
    return value


@attrs.frozen(kw_only=True)
class SessionRecord:
    """What any replica needs to serve a session: its negotiated state and identity."""

    #: the session id (``Mcp-Session-Id``)
    id: str
    #: the negotiated protocol revision
    protocol_version: str
    #: what the client declared in ``initialize``
    client_capabilities: JSONObject = attrs.field(factory=dict)
    client_info: JSONObject | None = None
    #: the level ``logging/setLevel`` chose
    log_level: str = "info"
    #: resource URIs the client subscribed to
    subscriptions: frozenset[str] = frozenset()
    #: ``principal_identity`` of who opened it (None: no authentication)
    principal: str | None = None
    #: the replica that opened the session
    owner: str = ""
    #: the replica that wrote this record, on a request it served
    touched_by: str = ""
    #: when it was written (seconds since the epoch, informational)
    last_active: float = 0.0

    def encode(self) -> bytes:
        """The record as JSON, for a shared store."""
        return orjson.dumps(
            {
                "id": self.id,
                "protocolVersion": self.protocol_version,
                "clientCapabilities": self.client_capabilities,
                "clientInfo": self.client_info,
                "logLevel": self.log_level,
                "subscriptions": sorted(self.subscriptions),
                "principal": self.principal,
                "owner": self.owner,
                "touchedBy": self.touched_by,
                "lastActive": self.last_active,
            }
        )

    @classmethod
    def decode(cls, raw: bytes) -> SessionRecord:
        """Read back what ``encode`` wrote.

        Raises:
            ValueError: ``raw`` is too large or not a session record.
        """
        if len(raw) > MAX_RECORD_BYTES:
            raise ValueError(f"a session record holds at most {MAX_RECORD_BYTES} bytes")
        try:
            value = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise ValueError(f"a session record is not JSON: {exc}") from None
        if not isinstance(value, dict):
            raise ValueError("a session record must be a JSON object")
        capabilities = value.get("clientCapabilities")
        info = value.get("clientInfo")
        subscriptions = value.get("subscriptions")
        principal = value.get("principal")
        last_active = value.get("lastActive")
        if not isinstance(capabilities, dict):
            raise ValueError("a session record's 'clientCapabilities' must be an object")
        if info is not None and not isinstance(info, dict):
            raise ValueError("a session record's 'clientInfo' must be an object or null")
        if not isinstance(subscriptions, list) or len(subscriptions) > MAX_RESOURCE_SUBSCRIPTIONS:
            raise ValueError("a session record's 'subscriptions' must be a list of URIs")
        # A session holds no more than this: the record's are taken as they would be.
        subscribed = ResourceSubscriptions()
        try:
            for uri in subscriptions:
                subscribed.add(uri)
        except RemoteProtocolError as exc:
            raise ValueError(f"a session record's 'subscriptions': {exc.message}") from None
        if isinstance(last_active, bool) or not isinstance(last_active, int | float):
            raise ValueError("a session record's 'lastActive' must be a number")
        return cls(
            id=_text(value.get("id"), "id"),
            protocol_version=_text(value.get("protocolVersion"), "protocolVersion"),
            client_capabilities=capabilities,
            client_info=info,
            log_level=_text(value.get("logLevel"), "logLevel"),
            subscriptions=frozenset(subscribed),
            principal=None if principal is None else _text(principal, "principal"),
            owner=_text(value.get("owner"), "owner"),
            touched_by=_text(value.get("touchedBy"), "touchedBy"),
            last_active=float(last_active),
        )


class SessionRecords(Protocol):
    """The session records replicas share, each kept ``ttl`` seconds after its last write."""

    async def put(self, record: SessionRecord, *, ttl: float) -> None:
        """Write ``record`` (replacing any under its id), to expire ``ttl`` seconds on."""

    async def get(self, session_id: str) -> SessionRecord | None:
        """Return the record under ``session_id``; None if there is none or it expired."""

    async def remove(self, session_id: str) -> bool:
        """Delete the record under ``session_id``; whether there was one."""


class MemorySessionRecords:
    """SessionRecords in this process's memory, for replicas that share one trio run.

    Expiry follows the trio clock, so a test's ``MockClock`` moves it.
    """

    def __init__(self) -> None:
        self._records: dict[str, tuple[SessionRecord, float]] = {}
        #: writes, reads and removals so far (tests count store traffic with these)
        self.operations = 0

    async def put(self, record: SessionRecord, *, ttl: float) -> None:
        """Write ``record``, to expire ``ttl`` seconds from now."""
        await trio.lowlevel.checkpoint()
        self.operations += 1
        self._records[record.id] = (record, trio.current_time() + ttl)

    async def get(self, session_id: str) -> SessionRecord | None:
        """Return the record under ``session_id`` unless it expired."""
        await trio.lowlevel.checkpoint()
        self.operations += 1
        entry = self._records.get(session_id)
        if entry is None:
            return None
        record, expires = entry
        if trio.current_time() >= expires:
            del self._records[session_id]
            return None
        return record

    async def remove(self, session_id: str) -> bool:
        """Delete the record under ``session_id``; whether there was a live one."""
        await trio.lowlevel.checkpoint()
        self.operations += 1
        entry = self._records.pop(session_id, None)
        return entry is not None and trio.current_time() < entry[1]

    def __len__(self) -> int:
        """Return how many records are held (expired ones included until read)."""
        return len(self._records)
