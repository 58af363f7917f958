# Session records in Redis: the SessionRecords (runtime/http/_session_records.py) that
# replicas of one server share.
#
# One key per session, ``{p}:session:{id}``, holding ``SessionRecord.encode()`` and
# expiring with the record's TTL (``SET ... PX``), so Redis forgets a session when the
# replicas would have. A record is read back whole and checked for size before it is
# parsed: Redis bounds a string at 512 MB, far beyond what a record may hold.
#
# With ``wait`` (the URL's ``?wait=N``) a write is followed, on its connection, by
# ``WAIT N`` within WAIT_TIMEOUT_MS: a record is said written only once N replicas hold
# it, so a failover that promotes one of them keeps it. Fewer acknowledgements in time
# is StoreUnavailable (the session is not started), not a record that a failover may lose.

from __future__ import annotations

import logging
from collections.abc import Awaitable
from typing import Any, Final, TypeVar

import coredis

from ..protocol import describe, describe_error
from ..runtime.http import MAX_RECORD_BYTES, SessionRecord
from ._client import reach, store_location

__all__ = ["RedisSessionRecords"]

_log = logging.getLogger("mcpactor.store")

T = TypeVar("T")

#: milliseconds a write waits for its replicas' acknowledgement (``wait``)
WAIT_TIMEOUT_MS: Final = 1000


class RedisSessionRecords:
    """SessionRecords in Redis, shared by every replica that names the same prefix."""

    def __init__(
        self, client: coredis.Redis[Any], *, prefix: str = "mcpactor", wait: int = 0
    ) -> None:
        self._client = client
        self._prefix = prefix
        #: replicas that acknowledge each write before it is said done; 0: none asked
        self.wait = wait
        self._location = store_location(client)
        #: writes, reads and removals so far (each one Redis command)
        self.operations = 0

    def _key(self, session_id: str) -> str:
        return f"{self._prefix}:session:{session_id}"

    async def _reach(self, call: Awaitable[T]) -> T:
        return await reach("session store", self._location, call)

    async def put(self, record: SessionRecord, *, ttl: float) -> None:
        """Write ``record`` (replacing any under its id), to expire ``ttl`` seconds on."""
        if not ttl > 0:
            raise ValueError(f"a record lives a positive number of seconds, got {ttl!r}")
        self.operations += 1
        key, value, px = self._key(record.id), record.encode(), max(1, round(ttl * 1000))
        if not self.wait:
            await self._reach(self._client.set(key, value, px=px))
            return
        # The WAIT goes on the write's own connection: it covers that write.
        with self._client.ensure_replication(self.wait, WAIT_TIMEOUT_MS):
            await self._reach(self._client.set(key, value, px=px))

    async def get(self, session_id: str) -> SessionRecord | None:
        """Return the record under ``session_id``; None if none, expired or damaged."""
        self.operations += 1
        raw: Any = await self._reach(self._client.get(self._key(session_id)))
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
        removed = await self._reach(self._client.delete([self._key(session_id)]))
        return removed > 0
