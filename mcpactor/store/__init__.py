"""Stores shared by the processes and replicas serving one deployment (Redis)."""

from ._url import StoreURL as StoreURL
from ._url import parse_store_url as parse_store_url

__all__ = ["StoreURL", "parse_store_url"]
