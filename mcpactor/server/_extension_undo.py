# Undoing what enabling an extension registered, when its ``setup`` fails: every table
# and list it may add to is put back as it was, so a refused extension leaves nothing.

from __future__ import annotations

from typing import Any

__all__ = ["Undo"]


class Undo:
    """Puts a server's registrations back as they were if the block raises."""

    def __init__(self, server: Any) -> None:
        self._server = server

    def __enter__(self) -> None:
        server = self._server
        registry = server._registry
        extensions = server.extensions
        self._tables: list[tuple[dict[Any, Any], set[Any]]] = [
            (table, set(table))
            for table in (
                registry.tools,
                registry.resources,
                registry.templates,
                registry.prompts,
                registry.completers,
                server._methods,
                extensions._enabled,
                extensions.requests,
                extensions.notifications,
            )
        ]
        self._lists: list[tuple[list[Any], int]] = [
            (server._lifespans.others, len(server._lifespans.others)),
            (server.roots_changed_hooks, len(server.roots_changed_hooks)),
        ]

    def __exit__(self, kind: type[BaseException] | None, *rest: object) -> None:
        if kind is None:
            return
        for table, before in self._tables:
            for key in [k for k in table if k not in before]:
                del table[key]
        for items, length in self._lists:
            del items[length:]
        for family in ("tools", "resources", "prompts"):
            self._server._changes.list_changed(family)
