"""Names a package exports but imports on first use, so that start-up reads only what it runs.

``mcpactor --version`` imports no server, and a stdio server imports no client: each
package's ``__init__`` lists its public names in a table (name → the module defining it)
and answers them from its module ``__getattr__``. The names stay importable as before
(``from mcpactor.protocol import ClientSessionCore``), and type checkers read them from
the ``TYPE_CHECKING`` imports beside the table.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from typing import Any


def exports(
    package: str, namespace: dict[str, Any], table: Mapping[str, tuple[str, str]]
) -> Callable[[str], Any]:
    """A module ``__getattr__`` that imports table's names on first use and keeps them."""

    def __getattr__(name: str) -> Any:
        where = table.get(name)
        if where is None:
            # bounded: a name may come from anywhere (getattr with a string read in)
            raise AttributeError(f"module {package!r} has no attribute {name[:200]!r}")
        module, attribute = where
        level = len(module) - len(module.lstrip("."))
        # A module loaded already (most are, once start-up is under way) is read as it
        # is: the import machinery would only find it there, a few µs per name.
        found = sys.modules.get(package + module) if level == 1 else None
        if found is None:
            # The import statement's own path (not importlib.import_module), so that
            # ``python -X importtime`` reports these imports as it does every other.
            found = __import__(module[level:], namespace, None, (attribute,), level)
        value = getattr(found, attribute)
        # Kept in the package's namespace: the next lookup does not come here.
        namespace[name] = value
        return value

    return __getattr__
