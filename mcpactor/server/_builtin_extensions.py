# mcpactor's own extensions, by identifier, for ``--extension`` and ``mcpactor.toml``:
# each named one is made with its defaults (installed ones come from entry points).

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from ._extensions import Extension
from ._tool_manifests import TOOL_MANIFESTS, tool_manifests
from ._tool_search import TOOL_SEARCH, tool_search

__all__ = ["BUILTIN_EXTENSIONS"]

#: mcpactor's own extensions, by identifier: what makes each with its defaults
BUILTIN_EXTENSIONS: Final[dict[str, Callable[[], Extension]]] = {
    TOOL_MANIFESTS: tool_manifests,
    TOOL_SEARCH: tool_search,
}
