"""Stores shared by the processes and replicas serving one deployment (Redis)."""

from ._bus import RedisBus as RedisBus
from ._bus import open_redis_bus as open_redis_bus
from ._events import RedisEventStore as RedisEventStore
from ._relay import RedisRelay as RedisRelay
from ._sessions import RedisSessionRecords as RedisSessionRecords
from ._url import StoreURL as StoreURL
from ._url import parse_store_url as parse_store_url

__all__ = [
    "RedisBus",
    "RedisEventStore",
    "RedisRelay",
    "RedisSessionRecords",
    "StoreURL",
    "open_redis_bus",
    "parse_store_url",
]
