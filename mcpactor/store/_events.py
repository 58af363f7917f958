# SSE event logs in Redis: the EventStore (runtime/http/_event_store.py) of several replicas.
#
# Keys, under a prefix (``mcpactor`` by default):
#
# - ``{p}:events:{session}:{stream}``: a Redis stream per SSE stream of a session, one
#   entry per event (field ``d``: the message bytes, empty for a priming event), trimmed
#   to ``max_events_per_stream`` and ``max_bytes_per_stream`` on every append and
#   expiring ``ttl`` seconds after its last append.
# - ``{p}:event-streams:{session}``: the set of a session's stream ids, so that
#   ``forget_session`` finds every key; it expires with the newest of them.
# - ``{p}:event-owed:{session}:{stream}``: the JSON array of the request ids a leased
#   stream owes answers to; it expires with the events.
# - ``{p}:event-lease:{session}:{stream}``: a stream's lease while its requests run
#   (runtime/http/_leases.py). Both are written with the stream's first event, in the
#   same script; the lease is renewed (PEXPIRE, which never brings a lapsed lease back)
#   and dropped (DEL) by one pipeline of the replica running the requests every third of
#   a lease.
#
# An append is one Lua script (_event_scripts.py: XADD, the expiries, the set of streams,
# for a first event its lease, and the byte counts): one command, so that an event, its
# lease and its bytes are written together. The bounds are MemoryEventStore's: past a
# session's bytes the oldest events of its oldest streams go, past the total those of
# the sessions holding the most; each stream's newest event is always kept.
#
# An event id is ``{stream}.{entry}.{tag}``: the stream, the Redis entry id (``ms-seq``,
# increasing even across a key that expired and came back) and a short digest of the
# session. Any replica can resolve it with the session id alone. It arrives as a
# client's ``Last-Event-ID``, so it is parsed bounded and strictly; an id of another
# session (wrong tag), one never written, or one already trimmed away is unknown (None):
# a client that fell further behind than the bound learns that it lost events instead
# of being handed a log with a hole in it.
#
# Every call is a round trip, so ``append_now`` and ``forget_stream_now`` keep the base
# class's answers ("wait for the async one"). ``wait_after`` blocks in XREAD, on a
# connection of its own (coredis gives a blocking command one), so it holds up no other
# command. Any failure to reach Redis is ``StoreUnavailable``.

from __future__ import annotations

import base64
import contextlib
import hashlib
import re
from collections.abc import Collection, Iterator, Sequence
from typing import Any, Final

import attrs
import coredis
import orjson

from ..protocol import RequestId, describe_error
from ..runtime.http import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_BYTES_PER_SESSION,
    DEFAULT_MAX_BYTES_PER_STREAM,
    DEFAULT_MAX_EVENTS_PER_STREAM,
    EventStore,
    Replay,
    StoreUnavailable,
    StreamKey,
    StreamLease,
)
from ._client import UNREACHABLE
from ._event_scripts import APPEND, FORGET_SESSION, FORGET_STREAM

__all__ = [
    "MAX_BLOCK",
    "MAX_EVENT_ID_LENGTH",
    "MAX_LEASED_IDS_BYTES",
    "RedisEventStore",
    "RedisEventStoreStatistics",
]

#: the longest ``Last-Event-ID`` looked at; anything longer is unknown
MAX_EVENT_ID_LENGTH: Final = 256
#: the longest one ``wait_after`` blocks in Redis, in seconds (below the read timeout)
MAX_BLOCK: Final = 5.0
#: the most bytes of request ids a lease records (more: the stream is not leased)
MAX_LEASED_IDS_BYTES: Final = 64 * 1024

# A canonical Redis entry id, as XADD returns it (no leading zeros, ASCII digits only).
_ENTRY: Final = re.compile(r"(?:0|[1-9][0-9]{0,19})-(?:0|[1-9][0-9]{0,19})", re.ASCII)
_FIELD: Final = b"d"


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def session_tag(session_id: str) -> str:
    """The short digest of ``session_id`` that the session's event ids carry."""
    digest = hashlib.blake2b(session_id.encode(), digest_size=6).digest()
    return base64.urlsafe_b64encode(digest).decode()


@attrs.frozen
class RedisEventStoreStatistics:
    """What a RedisEventStore has done since it was made (its events are in Redis)."""

    #: round trips to Redis, failed ones included
    operations: int
    #: round trips that failed (each raised StoreUnavailable)
    failures: int
    #: events appended
    appends: int
    #: ``replay_after`` calls that found their event
    replays: int


class RedisEventStore(EventStore):
    """An EventStore in Redis streams, shared by every replica naming the same prefix.

    Bounded as a MemoryEventStore is, over all the replicas: a stream keeps at most
    ``max_events_per_stream`` events and ``max_bytes_per_stream`` bytes, a session's
    streams together ``max_bytes_per_session``, all sessions ``max_bytes`` (past it down
    to nine tenths, the sessions holding the most first). The newest event of every
    stream is always kept; a client resuming from before what was dropped is told its
    id is unknown.
    """

    def __init__(
        self,
        client: coredis.Redis[Any],
        *,
        prefix: str = "mcpactor",
        max_events_per_stream: int = DEFAULT_MAX_EVENTS_PER_STREAM,
        max_bytes_per_stream: int = DEFAULT_MAX_BYTES_PER_STREAM,
        max_bytes_per_session: int = DEFAULT_MAX_BYTES_PER_SESSION,
        max_bytes: int = DEFAULT_MAX_BYTES,
        ttl: float = 3600.0,
    ) -> None:
        for name, value in (
            ("max_events_per_stream", max_events_per_stream),
            ("max_bytes_per_stream", max_bytes_per_stream),
            ("max_bytes_per_session", max_bytes_per_session),
            ("max_bytes", max_bytes),
        ):
            if value < 1:
                raise ValueError(f"{name} must be at least 1, got {value!r}")
        if not ttl > 0:
            raise ValueError(f"a ttl is a positive number of seconds, got {ttl!r}")
        self.max_events_per_stream = max_events_per_stream
        self.max_bytes_per_stream = max_bytes_per_stream
        self.max_bytes_per_session = max_bytes_per_session
        self.max_bytes = max_bytes
        self.ttl = ttl
        self._client = client
        self._prefix = prefix
        self._ttl_ms = max(1, round(ttl * 1000))
        self._append_script = client.register_script(APPEND)
        self._forget_stream_script = client.register_script(FORGET_STREAM)
        self._forget_session_script = client.register_script(FORGET_SESSION)
        # What every script is told first: the bounds, the ttl and the prefix.
        self._settings = (
            f"{max_bytes} {self._ttl_ms} {max_events_per_stream} {max_bytes_per_stream}"
            f" {max_bytes_per_session} {prefix}"
        )
        self._operations = 0
        self._failures = 0
        self._appends = 0
        self._replays = 0

    # --- keys ---------------------------------------------------------------------

    def _stream_key(self, session_id: str, stream_id: str) -> str:
        return f"{self._prefix}:events:{session_id}:{stream_id}"

    def _streams_key(self, session_id: str) -> str:
        return f"{self._prefix}:event-streams:{session_id}"

    def _owed_key(self, session_id: str, stream_id: str) -> str:
        return f"{self._prefix}:event-owed:{session_id}:{stream_id}"

    def _lease_key(self, session_id: str, stream_id: str) -> str:
        return f"{self._prefix}:event-lease:{session_id}:{stream_id}"

    def _bytes_key(self, session_id: str) -> str:
        return f"{self._prefix}:event-bytes:{session_id}"

    @contextlib.contextmanager
    def _round_trip(self, what: str) -> Iterator[None]:
        # One counted operation; Redis's failures become the store's one error.
        self._operations += 1
        try:
            yield
        except UNREACHABLE as exc:
            self._failures += 1
            raise StoreUnavailable(f"cannot {what} in Redis: {describe_error(exc)}") from exc

    # --- the EventStore -------------------------------------------------------------

    async def append(self, session_id: str, stream_id: str, data: bytes) -> str:
        """Store one event of a stream; return its event id (``<stream>.<entry>.<tag>``)."""
        return await self._append(session_id, stream_id, data, None, 0.0)

    async def append_leased(
        self,
        session_id: str,
        stream_id: str,
        data: bytes,
        requests: Sequence[RequestId],
        seconds: float,
    ) -> str:
        """Store a request stream's first event and take its lease, in one transaction."""
        ids = orjson.dumps(list(requests))
        if len(ids) > MAX_LEASED_IDS_BYTES:
            return await self.append(session_id, stream_id, data)
        return await self._append(session_id, stream_id, data, ids, seconds)

    async def _append(
        self, session_id: str, stream_id: str, data: bytes, ids: bytes | None, seconds: float
    ) -> str:
        if "." in stream_id or not stream_id:
            # The id's parts are split at dots: a stream id must not hold one.
            raise ValueError(f"a stream id is non-empty and has no '.', got {stream_id!r}")
        with self._round_trip("append an event"):
            entry: Any = await self._append_script(
                keys=[
                    self._stream_key(session_id, stream_id),
                    self._streams_key(session_id),
                    self._owed_key(session_id, stream_id),
                    self._lease_key(session_id, stream_id),
                    self._bytes_key(session_id),
                ],
                args=[
                    self._settings,
                    session_id,
                    stream_id,
                    data,
                    b"" if ids is None else ids,
                    str(_ms(seconds)),
                ],
            )
        self._appends += 1
        return f"{stream_id}.{_text(entry)}.{session_tag(session_id)}"

    async def renew_leases(
        self, held: Collection[StreamKey], released: Collection[StreamKey], seconds: float
    ) -> None:
        """Hold the leases of ``held`` ``seconds`` more and drop those of ``released``.

        One pipeline; a lease that lapsed stays lapsed.
        """
        if not held and not released:
            return
        lease_ms = _ms(seconds)
        with self._round_trip("renew leases"):
            async with self._client.pipeline(transaction=False) as pipeline:
                for session_id, stream_id in held:
                    pipeline.pexpire(self._lease_key(session_id, stream_id), lease_ms)
                if released:
                    pipeline.delete([self._lease_key(*key) for key in released])

    async def lease(self, session_id: str, stream_id: str) -> StreamLease | None:
        """The lease of a stream; None if none was taken (or what is stored is damaged)."""
        with self._round_trip("read a lease"):
            async with self._client.pipeline(transaction=False) as pipeline:
                held = pipeline.exists([self._lease_key(session_id, stream_id)])
                owed = pipeline.get(self._owed_key(session_id, stream_id))
            found, raw = await held, await owed
        requests = _request_ids(raw)
        if requests is None:
            return None
        return StreamLease(requests, bool(found))

    def _parse(self, session_id: str, event_id: str) -> tuple[str, str] | None:
        # (stream id, entry id) of one of this session's event ids; None if it is not one.
        if len(event_id) > MAX_EVENT_ID_LENGTH:
            return None
        rest, _, tag = event_id.rpartition(".")
        stream_id, _, entry = rest.rpartition(".")
        if not stream_id or tag != session_tag(session_id) or not _ENTRY.fullmatch(entry):
            return None
        return stream_id, entry

    def _events(self, session_id: str, stream_id: str, items: Any) -> list[tuple[str, bytes]]:
        tail = "." + session_tag(session_id)
        events = []
        for item in items:
            fields = item.field_values
            # A client that decodes responses hands back text keys and values.
            data = fields.get(_FIELD, fields.get("d"))
            if isinstance(data, str):
                data = data.encode()
            if isinstance(data, bytes):
                events.append((f"{stream_id}.{_text(item.identifier)}{tail}", data))
        return events

    async def replay_after(self, session_id: str, event_id: str) -> Replay | None:
        """Return the events after ``event_id`` on its stream; None if it is unknown."""
        parsed = self._parse(session_id, event_id)
        if parsed is None:
            return None
        return await self._replay(session_id, *parsed)

    async def _replay(self, session_id: str, stream_id: str, entry: str) -> Replay | None:
        with self._round_trip("replay events"):
            # From the event itself (inclusive), to tell a live id from a trimmed one.
            found = await self._client.xrange(
                self._stream_key(session_id, stream_id),
                entry,
                "+",
                count=self.max_events_per_stream + 1,
            )
        if not found or _text(found[0].identifier) != entry:
            return None
        self._replays += 1
        return Replay(stream_id, self._events(session_id, stream_id, found[1:]))

    async def wait_after(self, session_id: str, event_id: str, timeout: float) -> Replay | None:
        """Like ``replay_after``, waiting up to ``timeout`` seconds (XREAD BLOCK) for an event.

        A wait is cut to ``MAX_BLOCK`` seconds, below the client's read timeout.
        """
        parsed = self._parse(session_id, event_id)
        if parsed is None:
            return None
        stream_id, entry = parsed
        replay = await self._replay(session_id, stream_id, entry)
        if replay is None or replay.events or timeout <= 0:
            return replay
        key = self._stream_key(session_id, stream_id)
        block = max(1, round(min(timeout, MAX_BLOCK) * 1000))
        with self._round_trip("wait for events"):
            found = await self._client.xread(
                {key: entry}, count=self.max_events_per_stream, block=block
            )
        if not found:
            # Nothing came; the stream may also be gone meanwhile (then None).
            return await self._replay(session_id, stream_id, entry)
        items = next(iter(found.values()), ())
        return Replay(stream_id, self._events(session_id, stream_id, items))

    async def forget_stream(self, session_id: str, stream_id: str) -> None:
        """Drop what is stored for one stream."""
        with self._round_trip("forget a stream"):
            await self._forget_stream_script(
                keys=[
                    self._stream_key(session_id, stream_id),
                    self._owed_key(session_id, stream_id),
                    self._lease_key(session_id, stream_id),
                    self._streams_key(session_id),
                    self._bytes_key(session_id),
                ],
                args=[self._settings, session_id, stream_id],
            )

    async def forget_session(self, session_id: str) -> None:
        """Drop what is stored for every stream of a session."""
        streams = self._streams_key(session_id)
        with self._round_trip("list a session's streams"):
            members = await self._client.smembers(streams)
        keys = [
            key(session_id, _text(member))
            for member in members
            for key in (self._stream_key, self._owed_key, self._lease_key)
        ]
        with self._round_trip("forget a session"):
            await self._forget_session_script(
                keys=[*keys, streams, self._bytes_key(session_id)],
                args=[self._settings, session_id],
            )

    def statistics(self) -> RedisEventStoreStatistics:
        """Return the counts of operations, failures, appends and replays so far."""
        return RedisEventStoreStatistics(
            self._operations, self._failures, self._appends, self._replays
        )


def _ms(seconds: float) -> int:
    return max(1, round(seconds * 1000))


def _request_ids(raw: object) -> tuple[RequestId, ...] | None:
    # The request ids a lease recorded, read back bounded; None if absent or damaged.
    if isinstance(raw, str):
        raw = raw.encode()
    if not isinstance(raw, bytes) or len(raw) > MAX_LEASED_IDS_BYTES:
        return None
    try:
        ids = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    if type(ids) is not list or not all(type(i) is int or type(i) is str for i in ids):
        return None
    return tuple(ids)
