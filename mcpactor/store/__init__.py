"""Stores shared by the processes and replicas serving one deployment (Redis).

The Redis classes need the ``redis`` extra (coredis) and load on first use; the store's
URL is read without it, so that the command line and the config file can check a
``--store`` URL, and a server without a store never imports coredis.
"""

from typing import TYPE_CHECKING, Any

from ._url import StoreURL as StoreURL
from ._url import parse_store_url as parse_store_url

if TYPE_CHECKING:
    from ._bus import RedisBus as RedisBus
    from ._bus import open_redis_bus as open_redis_bus
    from ._events import RedisEventStore as RedisEventStore
    from ._history import RedisSharedHistory as RedisSharedHistory
    from ._open import SharedStore as SharedStore
    from ._open import open_shared_store as open_shared_store
    from ._relay import RedisRelay as RedisRelay
    from ._sessions import RedisSessionRecords as RedisSessionRecords
    from ._summaries import RedisReplicaSummaries as RedisReplicaSummaries
    from ._summaries import replica_summary as replica_summary

__all__ = [
    "RedisBus",
    "RedisEventStore",
    "RedisRelay",
    "RedisReplicaSummaries",
    "RedisSessionRecords",
    "RedisSharedHistory",
    "SharedStore",
    "StoreURL",
    "open_redis_bus",
    "open_shared_store",
    "parse_store_url",
    "replica_summary",
]

#: what needs coredis, by the module that holds it
_LAZY = {
    "RedisBus": "._bus",
    "open_redis_bus": "._bus",
    "RedisEventStore": "._events",
    "SharedStore": "._open",
    "open_shared_store": "._open",
    "RedisRelay": "._relay",
    "RedisSessionRecords": "._sessions",
    "RedisSharedHistory": "._history",
    "RedisReplicaSummaries": "._summaries",
    "replica_summary": "._summaries",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
