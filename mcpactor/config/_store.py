# The ``[store]`` table of the deployment file: the Redis store replicas share.
#
# ``url`` is what ``--store`` takes (store/_url.py) and ``prefix`` what
# ``--store-prefix`` takes; the flags win over the file. The URL may hold a password, so
# no error shows it: the URL's own errors mask it, and this table's name only the key.

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

import attrs

from .._exceptions import ConfigError
from ..store import StoreURL, parse_store_url
from ._reader import Reader

__all__ = ["DEFAULT_PREFIX", "StoreConfig", "prefix_problem", "read_store_config"]

#: the key prefix of every replica that names none
DEFAULT_PREFIX: Final = "mcpactor"
# Key and channel names are built from it: letters, digits and a few separators.
_PREFIX: Final = re.compile(r"[A-Za-z0-9_.:\-]{1,64}")


@attrs.frozen
class StoreConfig:
    """The ``[store]`` table; ``url`` None means the file names no store."""

    url: StoreURL | None = None
    #: the start of every key and channel; replicas of one deployment share it
    prefix: str | None = None


def prefix_problem(prefix: str) -> str | None:
    """Why ``prefix`` cannot start the store's key names; None if it can."""
    if _PREFIX.fullmatch(prefix) is None:
        return "expected 1 to 64 letters, digits or '_.:-'"
    return None


def read_store_config(reader: Reader, table: Mapping[str, Any]) -> StoreConfig:
    """Check and convert the ``[store]`` table."""
    reader.known(table, {"url", "prefix"})
    text = reader.optional(table, "url", str)
    url = None
    if text is not None:
        try:
            url = parse_store_url(text)
        except ConfigError as exc:
            # The URL's error masks its password; the value is not repeated.
            raise ConfigError(
                f"{reader.source}: {reader._key('url')}: {exc}{reader._line(reader._key('url'))}"
            ) from None
    prefix = reader.optional(table, "prefix", str)
    if prefix is not None:
        problem = prefix_problem(prefix)
        if problem is not None:
            raise reader.error("prefix", problem, prefix[:80])
    return StoreConfig(url=url, prefix=prefix)
