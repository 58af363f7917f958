# The history every replica shares through the store, so that one admin page lists what
# ended on any of them.
#
# Each replica's writer (``run``, a background task beside the admin listener) reads what
# its own ring (``METRICS.history``) and audit trail gained since its last look, once every
# ``interval`` seconds, and sends it in one round trip: ``LPUSH`` onto the deployment's
# lists ``{p}:admin-history`` and ``{p}:admin-audit``, each entry orjson bytes naming its
# replica, then ``LTRIM`` to ``size`` (and ``audit_size``) entries and ``PEXPIRE`` so that
# a deployment that stopped leaves nothing for long. A request's end does what it did
# without a store (one tuple appended to the ring): the encoding and the writing happen
# here, off its path.
#
# An entry may carry its request's ``story`` (the admin's ``shared_story`` gives it: the
# arguments bounded and redacted by the same rules as this replica's page, a few log
# lines), so that another replica's page can open the story of a request that ran here;
# a story is the first thing an entry too long sheds. Only requests whose params this
# replica still kept (``History.stories``) when the writer looked have one.
#
# What is read back is bounded before it is parsed: at most ``size`` entries of at most
# ``MAX_ENTRY_BYTES`` each; a damaged entry is skipped. A store that cannot be reached
# costs the entries written meanwhile (one warning each time it starts), never a request
# or the page: the reader says the shared part is unavailable and the page shows this
# replica's own ring.

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

import coredis
import orjson
import trio

from ..runtime import METRICS
from ..runtime.http import StoreUnavailable
from ._client import reach, store_location

if TYPE_CHECKING:
    from ..runtime import Observatory

#: what an entry's story is made of: (the entry, its request's params or None) -> the
#: story's JSON (or None: nothing to tell)
StoryOf = Callable[[Mapping[str, Any], Any], "dict[str, Any] | None"]

__all__ = [
    "HISTORY_INTERVAL",
    "MAX_ENTRY_BYTES",
    "SHARED_AUDIT",
    "SHARED_HISTORY",
    "RedisSharedHistory",
]

_log = logging.getLogger("mcpactor.store")

#: the entries of the shared history kept (the oldest go first)
SHARED_HISTORY: Final = 1000
#: the entries of the shared audit trail kept
SHARED_AUDIT: Final = 500
#: the largest entry written or read back, in bytes
MAX_ENTRY_BYTES: Final = 4 * 1024
#: seconds between two writes of a replica's new entries
HISTORY_INTERVAL: Final = 1.0
#: seconds the lists live after the last write (a stopped deployment's go then)
HISTORY_TTL: Final = 24 * 3600.0
#: seconds a read may take before the shared part is said unavailable
_READ_WITHIN: Final = 2.0
# The fields of an entry too long to share whole, dropped in this order.
_SHEDDABLE: Final = ("story", "detail", "principal", "client", "name", "target")


class RedisSharedHistory:
    """The history and audit trail of all replicas in Redis: each writes, any reads."""

    def __init__(
        self,
        client: coredis.Redis[Any],
        *,
        replica: str,
        prefix: str = "mcpactor",
        size: int = SHARED_HISTORY,
        audit_size: int = SHARED_AUDIT,
        ttl: float = HISTORY_TTL,
    ) -> None:
        if not replica:
            raise ValueError("a replica id must not be empty")
        if size < 1 or audit_size < 1:
            raise ValueError("the shared history keeps at least one entry of each kind")
        if ttl <= 0:
            raise ValueError("the shared history's ttl must be positive")
        self._client = client
        self.replica = replica
        self.size = size
        self.audit_size = audit_size
        self._ttl_ms = max(1, int(ttl * 1000))
        self._history = f"{prefix}:admin-history"
        self._audit = f"{prefix}:admin-audit"
        self._location = store_location(client)
        #: whether the last read could not reach the store
        self.unavailable = False

    def _encode(self, entries: Iterable[dict[str, Any]]) -> list[bytes]:
        # Each entry names this replica and fits MAX_ENTRY_BYTES (its longest texts shed).
        encoded = []
        for entry in entries:
            entry = {**entry, "replica": self.replica}
            data = orjson.dumps(entry)
            for field in _SHEDDABLE:
                if len(data) <= MAX_ENTRY_BYTES:
                    break
                if field in entry:
                    entry[field] = None
                    data = orjson.dumps(entry)
            if len(data) <= MAX_ENTRY_BYTES:
                encoded.append(data)
        return encoded

    async def write(
        self, ended: Sequence[dict[str, Any]], actions: Sequence[dict[str, Any]] = ()
    ) -> None:
        """Add ``ended`` (history entries) and ``actions`` (audit entries), the oldest
        first, as this replica's, and trim both lists to their sizes.

        Raises:
            StoreUnavailable: the store cannot be reached.
        """
        lists = (
            (self._history, self._encode(ended[-self.size :]), self.size),
            (self._audit, self._encode(actions[-self.audit_size :]), self.audit_size),
        )
        if not any(values for _, values, _ in lists):
            return

        async def send() -> None:
            async with self._client.pipeline(transaction=False) as pipeline:
                for key, values, size in lists:
                    if values:
                        pipeline.lpush(key, values)
                        pipeline.ltrim(key, 0, size - 1)
                        pipeline.pexpire(key, self._ttl_ms)

        await reach("shared history", self._location, send())

    async def read(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]] | None:
        """Every replica's history and audit entries, the newest first; None, with
        ``unavailable`` set, when the store cannot be reached within a moment."""
        history: Any = ()
        audit: Any = ()
        with trio.move_on_after(_READ_WITHIN) as waited:
            try:

                async def fetch() -> tuple[Any, Any]:
                    async with self._client.pipeline(transaction=False) as pipeline:
                        ended = pipeline.lrange(self._history, 0, self.size - 1)
                        actions = pipeline.lrange(self._audit, 0, self.audit_size - 1)
                    return await ended, await actions

                history, audit = await reach("shared history", self._location, fetch())
            except StoreUnavailable as exc:
                if not self.unavailable:
                    _log.warning("%s", str(exc)[:400])
                self.unavailable = True
                return None
        if waited.cancelled_caught:
            if not self.unavailable:
                _log.warning("the shared history at %s did not answer", self._location)
            self.unavailable = True
            return None
        self.unavailable = False
        return _parse(history), _parse(audit)

    async def run(
        self,
        observatory: Observatory,
        audit: Callable[[], Sequence[dict[str, Any]]] | None = None,
        interval: float = HISTORY_INTERVAL,
        *,
        story: StoryOf | None = None,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Keep this process's history (``METRICS.keep_history``) and write what it and
        ``audit()`` (the admin app's trail, if any) gained every ``interval`` seconds,
        until cancelled; ``story`` gives each entry the story shared with it.

        An outage costs the entries that ended during it, never the server.
        """
        METRICS.keep_history(sessions=observatory.session_client)
        mark: object = None
        seen: object = None
        failing = False
        try:
            task_status.started()
            while True:
                await trio.sleep(interval)
                ended, mark = observatory.ended_since(mark, params=story is not None)
                if story is not None:
                    for entry in ended:
                        told = story(entry, entry.pop("params", None))
                        if told is not None:
                            entry["story"] = told
                actions, seen = _actions_since(audit() if audit is not None else (), seen)
                try:
                    await self.write(ended, actions)
                    failing = False
                except StoreUnavailable as exc:
                    if not failing:
                        _log.warning("this replica's history is not shared: %s", str(exc)[:400])
                    failing = True
        finally:
            METRICS.drop_history()


def _actions_since(
    trail: Sequence[dict[str, Any]], seen: object
) -> tuple[list[dict[str, Any]], object]:
    # The audit entries after the one last written (each entry is its own dict).
    fresh = []
    for entry in reversed(trail):
        if entry is seen:
            break
        fresh.append(entry)
    fresh.reverse()
    return fresh, (trail[-1] if trail else seen)


def _parse(values: Iterable[object]) -> list[dict[str, Any]]:
    # An entry is trusted no more than the wire: bounded, a JSON object with its replica
    # and a time.
    found = []
    for value in values:
        if not isinstance(value, bytes | str) or len(value) > MAX_ENTRY_BYTES:
            continue
        try:
            entry = orjson.loads(value)
        except orjson.JSONDecodeError:
            continue
        if type(entry) is not dict or not isinstance(entry.get("replica"), str):
            continue
        at = entry.get("at")
        if isinstance(at, bool) or not isinstance(at, int | float):
            continue
        found.append(entry)
    return found
