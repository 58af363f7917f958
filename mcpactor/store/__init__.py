"""Stores shared by the processes and replicas serving one deployment (Redis)."""

from ._relay import RedisRelay as RedisRelay
from ._sessions import RedisSessionRecords as RedisSessionRecords
from ._url import StoreURL as StoreURL
from ._url import parse_store_url as parse_store_url

__all__ = ["RedisRelay", "RedisSessionRecords", "StoreURL", "parse_store_url"]
