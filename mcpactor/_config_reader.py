# Reading typed values out of a TOML table: each check names the full key of the value
# that is wrong (``servers.docs.prefix``) and the file it is in, and unknown keys are
# errors, since a typo must not be silently ignored.

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from ._exceptions import ConfigError

__all__ = ["NOT_A_NAME", "Reader"]

#: what a server name or prefix may not contain
NOT_A_NAME: Final = re.compile(r"[^A-Za-z0-9_.\-]+")


class Reader:
    """Reads values out of one table, and names the full key in every error."""

    def __init__(self, source: Path, prefix: str) -> None:
        self.source = source
        self.prefix = prefix
        self.directory = source.parent

    def nested(self, key: str) -> Reader:
        return Reader(self.source, self._key(key))

    def _key(self, key: str) -> str:
        shown = key if NOT_A_NAME.sub("", key) == key and "." not in key else f'"{key}"'
        return f"{self.prefix}.{shown}" if self.prefix else shown

    def error(self, key: str, expected: str, got: Any) -> ConfigError:
        return ConfigError(f"{self.source}: {self._key(key)}: {expected}, got {got!r}")

    def known(self, table: Mapping[str, Any], keys: set[str]) -> None:
        for key in table:
            if key not in keys:
                raise ConfigError(
                    f"{self.source}: {self._key(key)}: unknown key; "
                    f"expected one of {', '.join(sorted(keys))}"
                )

    def optional(self, table: Mapping[str, Any], key: str, kind: Any, default: Any = None) -> Any:
        if key not in table:
            return default
        value = table[key]
        # A TOML boolean is not a number here, whatever Python thinks.
        wrong_bool = isinstance(value, bool) and kind is not bool
        if not isinstance(value, kind) or wrong_bool:
            names = kind if isinstance(kind, tuple) else (kind,)
            expected = " or ".join(_TYPE_NAMES.get(k, k.__name__) for k in names)
            raise self.error(key, f"expected {expected}", value)
        return value

    def seconds(self, table: Mapping[str, Any], key: str) -> float | None:
        value = self.optional(table, key, (int, float))
        # TOML has inf and nan; neither is a duration.
        if value is not None and not (math.isfinite(value) and value > 0):
            raise self.error(key, "expected a positive number of seconds", value)
        return float(value) if value is not None else None

    def choice(
        self, table: Mapping[str, Any], key: str, options: Sequence[str], default: str
    ) -> str:
        value = self.optional(table, key, str, default)
        if value not in options:
            raise self.error(key, f"expected one of {', '.join(map(repr, options))}", value)
        return str(value)

    def table(self, table: Mapping[str, Any], key: str) -> Mapping[str, Any]:
        value = table.get(key, {})
        if not isinstance(value, dict):
            raise self.error(key, "expected a table", value)
        return value

    def strings(self, table: Mapping[str, Any], key: str) -> dict[str, str]:
        value = self.table(table, key)
        for name, item in value.items():
            if not isinstance(item, str):
                raise self.nested(key).error(name, "expected a string", item)
        return dict(value)

    def string_list(self, table: Mapping[str, Any], key: str) -> tuple[str, ...] | None:
        if key not in table:
            return None
        value = table[key]
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise self.error(key, "expected a list of strings", value)
        return tuple(value)


_TYPE_NAMES: Final[Mapping[Any, str]] = {
    str: "a string",
    int: "an integer",
    float: "a number",
    bool: "true or false",
}
