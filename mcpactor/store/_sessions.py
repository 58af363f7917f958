# Session records in Redis: the SessionRecords (runtime/http/_session_records.py) that
# replicas of one server share.
#
# One key per session, ``{p}:session:{id}``, holding ``SessionRecord.encode()`` and
# expiring with the record's TTL (``SET ... PX``), so Redis forgets a session when the
# replicas would have. A record is read back whole and checked for size before it is
# parsed: Redis bounds a string at 512 MB, far beyond what a record may hold.

from __future__ import annotations

import logging
from typing import Any, Final

import coredis
import coredis.exceptions

from ..protocol import describe, describe_error
from ..runtime.http._session_records import (
    MAX_RECORD_BYTES,
    SessionRecord,
    StoreUnavailable,
)

__all__ = ["RedisSessionRecords"]

_log = logging.getLogger("mcpactor.store")

# What a failure to reach the store looks like: coredis's own errors (a lost or refused
# connection, a server that answers with an error) and the sockets' beneath them.
_UNREACHABLE: Final = (coredis.exceptions.RedisError, OSError, TimeoutError)
# How much of the store's location an error message shows.
_MAX_LOCATION: Final = 200


def store_location(client: coredis.Redis[Any]) -> str:
    """Where ``client`` connects (host:port or socket path, never a password), bounded."""
    location = str(getattr(client.connection_pool, "location", "") or "redis")
    return location[:_MAX_LOCATION]


def unavailable(what: str, location: str, exc: BaseException) -> StoreUnavailable:
    """The StoreUnavailable for ``exc``, naming the store and the failure (bounded)."""
    return StoreUnavailable(f"the {what} at {location} cannot be reached: {describe_error(exc)}")


class RedisSessionRecords:
    """SessionRecords in Redis, shared by every replica that names the same prefix."""

    def __init__(self, client: coredis.Redis[Any], *, prefix: str = "mcpactor") -> None:
        self._client = client
        self._prefix = prefix
        self._location = store_location(client)
        #: writes, reads and removals so far (each one Redis command)
        self.operations = 0

    def _key(self, session_id: str) -> str:
        return f"{self._prefix}:session:{session_id}"

    def _unavailable(self, exc: BaseException) -> StoreUnavailable:
        return unavailable("session store", self._location, exc)

    async def put(self, record: SessionRecord, *, ttl: float) -> None:
        """Write ``record`` (replacing any under its id), to expire ``ttl`` seconds on."""
        if not ttl > 0:
            raise ValueError(f"a record lives a positive number of seconds, got {ttl!r}")
        self.operations += 1
        try:
            await self._client.set(
                self._key(record.id), record.encode(), px=max(1, round(ttl * 1000))
            )
        except _UNREACHABLE as exc:
            raise self._unavailable(exc) from None

    async def get(self, session_id: str) -> SessionRecord | None:
        """Return the record under ``session_id``; None if none, expired or damaged."""
        self.operations += 1
        try:
            raw: Any = await self._client.get(self._key(session_id))
        except _UNREACHABLE as exc:
            raise self._unavailable(exc) from None
        if raw is None:
            return None
        if isinstance(raw, str):
            raw = raw.encode()
        if len(raw) > MAX_RECORD_BYTES:
            _log.warning(
                "session %s: a record of %d bytes in Redis was ignored (at most %d)",
                describe(session_id),
                len(raw),
                MAX_RECORD_BYTES,
            )
            return None
        try:
            record = SessionRecord.decode(raw)
        except ValueError as exc:
            # Not a record this code wrote: the session is unknown here, said once here.
            _log.warning(
                "session %s: unreadable record in Redis: %s",
                describe(session_id),
                describe_error(exc),
            )
            return None
        if record.id != session_id:
            _log.warning(
                "session %s: the record in Redis names another session", describe(session_id)
            )
            return None
        return record

    async def remove(self, session_id: str) -> bool:
        """Delete the record under ``session_id``; whether there was one."""
        self.operations += 1
        try:
            removed = await self._client.delete([self._key(session_id)])
        except _UNREACHABLE as exc:
            raise self._unavailable(exc) from None
        return removed > 0
