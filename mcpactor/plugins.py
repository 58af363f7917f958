"""Plugin discovery: the ``mcpactor.servers`` entry-point group.

A plugin is a distribution whose metadata names a ``Server`` object::

    [project.entry-points."mcpactor.servers"]
    clock = "mcpactor_clock:server"

``discover()`` loads every plugin (or the ones named) and reports each, loaded or not: a
plugin that fails to import, names something that is not a Server, or reuses a name
another distribution took is a ``PluginError`` in its report, and the others load
regardless. ``load_plugin(name)`` is the strict form for one plugin.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Iterable, Sequence
from typing import Final

import attrs

from ._exceptions import PluginError
from .server import Server

__all__ = ["GROUP", "Plugin", "discover", "load_plugin", "plugin_names"]

#: the entry-point group plugins register their Server under
GROUP: Final = "mcpactor.servers"


@attrs.frozen
class Plugin:
    """One entry point of the ``mcpactor.servers`` group, loaded or not."""

    #: the entry point's name: how ``mcpactor serve`` and the config file name it
    name: str
    #: what it points at, ``module:attr``
    value: str
    #: the distribution that declares it, and its version (None if unknown)
    distribution: str | None
    version: str | None
    #: the Server, when it loaded
    server: Server | None = None
    #: why it did not load
    error: PluginError | None = None

    @property
    def loaded(self) -> bool:
        """Whether the plugin loaded (``server`` is set)."""
        return self.server is not None

    @property
    def origin(self) -> str:
        """``distribution version``, for messages and listings."""
        if self.distribution is None:
            return "an unknown distribution"
        return f"{self.distribution} {self.version}" if self.version else self.distribution


def _entry_points(group: str) -> list[importlib.metadata.EntryPoint]:
    return list(importlib.metadata.entry_points(group=group))


def plugin_names(*, group: str = GROUP) -> list[str]:
    """Return the names of the installed plugins, without importing any of them."""
    return sorted({entry.name for entry in _entry_points(group)})


def discover(names: Iterable[str] | None = None, *, group: str = GROUP) -> list[Plugin]:
    """Load the installed plugins (all, or those in ``names``) and report on each.

    Never raises for a broken plugin: its ``Plugin.error`` says what went wrong. A name
    in ``names`` that no distribution declares is reported the same way. Plugins come in
    the order of ``names``, else sorted by name.
    """
    entries = _entry_points(group)
    wanted = list(dict.fromkeys(names)) if names is not None else None
    plugins: dict[str, Plugin] = {}
    doubled: set[str] = set()
    for entry in entries:
        if (wanted is not None and entry.name not in wanted) or entry.name in doubled:
            continue
        first = plugins.get(entry.name)
        if first is not None:
            # Which one was meant cannot be known: neither is served, and both are named.
            doubled.add(entry.name)
            plugins[entry.name] = attrs.evolve(first, server=None, error=_duplicate(first, entry))
            continue
        plugins[entry.name] = _load(entry)
    if wanted is None:
        return [plugins[name] for name in sorted(plugins)]
    return [plugins.get(name) or _missing(name, group) for name in wanted]


def load_plugin(name: str, *, group: str = GROUP) -> Server:
    """Load the plugin ``name`` and return its Server.

    Raises:
        PluginError: it is not installed, does not load, or is declared twice.
    """
    (plugin,) = discover([name], group=group)
    if plugin.error is not None:
        raise plugin.error
    assert plugin.server is not None
    return plugin.server


def _identify(entry: importlib.metadata.EntryPoint) -> tuple[str | None, str | None]:
    dist = entry.dist
    if dist is None:
        return None, None
    metadata = dist.metadata
    # Asking for a missing key is deprecated (3.12): check first.
    found = {key: metadata[key] for key in ("Name", "Version") if key in metadata}
    return found.get("Name"), found.get("Version")


def _load(entry: importlib.metadata.EntryPoint) -> Plugin:
    distribution, version = _identify(entry)
    plugin = Plugin(entry.name, entry.value, distribution, version)
    try:
        obj = entry.load()
    except Exception as exc:
        cause = f"importing it raised {type(exc).__name__}: {exc}"
        return attrs.evolve(plugin, error=_error(plugin, "failed to load", cause, exc))
    if not isinstance(obj, Server):
        cause = f"expected a mcpactor.Server, got {type(obj).__name__} {_short(obj)}"
        return attrs.evolve(plugin, error=_error(plugin, "is not a Server", cause))
    return attrs.evolve(plugin, server=obj)


def _error(plugin: Plugin, what: str, cause: str, exc: BaseException | None = None) -> PluginError:
    message = "\n".join(
        [
            f"plugin {plugin.name!r} {what}",
            f"  entry point: {plugin.name} = {plugin.value} (group {GROUP})",
            f"  distribution: {plugin.origin}",
            f"  cause: {cause}",
        ]
    )
    error = PluginError(message, entry_point=plugin.name, distribution=plugin.distribution)
    if exc is not None:
        error.__cause__ = exc
    return error


def _duplicate(first: Plugin, entry: importlib.metadata.EntryPoint) -> PluginError:
    distribution, version = _identify(entry)
    other = Plugin(entry.name, entry.value, distribution, version)
    cause = (
        f"{other.origin} also declares {entry.name} = {entry.value}; "
        "uninstall one of them, or serve the other as module:attr"
    )
    return _error(first, "is declared twice", cause)


def _missing(name: str, group: str) -> Plugin:
    plugin = Plugin(name, "", None, None)
    installed = plugin_names(group=group)
    message = "\n".join(
        [
            f"plugin {name!r} is not installed",
            f"  no distribution declares {name!r} in the entry-point group {group}",
            f"  installed plugins: {', '.join(installed) if installed else 'none'}",
        ]
    )
    return attrs.evolve(plugin, error=PluginError(message, entry_point=name))


def _short(obj: object) -> str:
    text = repr(obj)
    return f"({text[:60]}…)" if len(text) > 60 else f"({text})"


def _listing(plugins: Sequence[Plugin]) -> list[dict[str, object]]:
    # The rows of ``mcpactor plugins``: name, distribution, version, counts, error.
    rows: list[dict[str, object]] = []
    for plugin in plugins:
        row: dict[str, object] = {
            "name": plugin.name,
            "value": plugin.value,
            "distribution": plugin.distribution,
            "version": plugin.version,
        }
        if plugin.server is not None:
            catalog = plugin.server._catalog()
            row["tools"] = len(catalog.tools)
            row["resources"] = len(catalog.resources) + len(catalog.templates)
            row["prompts"] = len(catalog.prompts)
        row["error"] = str(plugin.error) if plugin.error is not None else None
        rows.append(row)
    return rows
