# Reading typed values out of a TOML table: each check names the full key of the value
# that is wrong (``servers.docs.prefix``), the file it is in and the line of the key in
# it, and unknown keys are errors, since a typo must not be silently ignored.
#
# tomllib gives values without positions, so the line is found again in the file's text
# when an error is raised: the table headers and ``key =`` lines are matched against the
# full key (a key inside an inline table or a multi-line value is named by the line of
# the key holding it).

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence, Set
from pathlib import Path
from typing import Any, Final

from .._exceptions import ConfigError

__all__ = ["NOT_A_NAME", "Reader", "key_parts", "line_of"]

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
        full = self._key(key)
        return ConfigError(f"{self.source}: {full}: {expected}, got {got!r}{self._line(full)}")

    def known(self, table: Mapping[str, Any], keys: Set[str]) -> None:
        for key in table:
            if key not in keys:
                full = self._key(key)
                raise ConfigError(
                    f"{self.source}: {full}: unknown key; "
                    f"expected one of {', '.join(sorted(keys))}{self._line(full)}"
                )

    def _line(self, full_key: str) -> str:
        line = line_of(self.source, full_key)
        return f" (line {line})" if line is not None else ""

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

    def reference(self, table: Mapping[str, Any], key: str) -> str | None:
        """A ``module:function`` value; a ``path/file.py:function`` path is the file's."""
        value = self.optional(table, key, str)
        if value is None:
            return None
        spec, colon, function = value.partition(":")
        if not colon or not spec or not function:
            raise self.error(key, "expected 'module:function'", value)
        if spec.endswith(".py") or "/" in spec:
            return f"{self.directory / spec}:{function}"
        return str(value)

    def string_list(self, table: Mapping[str, Any], key: str) -> tuple[str, ...] | None:
        if key not in table:
            return None
        value = table[key]
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise self.error(key, "expected a list of strings", value)
        return tuple(value)


#: a TOML table header, ``[a.b]`` or ``[[a.b]]``, and what follows it
_HEADER: Final = re.compile(r"^\[\[?\s*(?P<key>[^\]]*?)\s*\]\]?\s*(#.*)?$")
#: one part of a dotted key: quoted, or bare
_PART: Final = re.compile(r'"((?:[^"\\]|\\.)*)"|\'([^\']*)\'|([A-Za-z0-9_\-]+)')


def key_parts(key: str) -> tuple[str, ...]:
    """The parts of a dotted TOML key, quotes removed (``a."b.c"`` is ``a``, ``b.c``)."""
    return tuple(m.group(1) or m.group(2) or m.group(3) or "" for m in _PART.finditer(key))


def line_of(source: Path, full_key: str) -> int | None:
    """The number of the line that sets ``full_key`` in ``source``, or None if not found."""
    try:
        text = source.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    wanted = key_parts(full_key)
    table: tuple[str, ...] = ()
    holder: int | None = None
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        header = _HEADER.match(line) if line.startswith("[") else None
        if header is not None:
            table = key_parts(header.group("key"))
            if table == wanted:
                return number
            continue
        name, equals, _ = line.partition("=")
        if not equals:
            continue
        full = table + key_parts(name)
        if full == wanted:
            return number
        if full and wanted[: len(full)] == full and holder is None:
            # The key is inside this one's value (an inline table, a list of tables).
            holder = number
    return holder


_TYPE_NAMES: Final[Mapping[Any, str]] = {
    str: "a string",
    int: "an integer",
    float: "a number",
    bool: "true or false",
}
