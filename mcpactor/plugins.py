"""Plugin discovery: the ``mcpactor.servers`` entry-point group.

A plugin is a distribution whose metadata names a ``Server`` object::

    [project.entry-points."mcpactor.servers"]
    clock = "mcpactor_clock:server"

Extensions (SEP-2133) are packaged the same way, in a group of their own, and are enabled
only when named (``mcpactor.toml``'s ``extensions``, ``mcpactor serve --extension``)::

    [project.entry-points."mcpactor.extensions"]
    search = "mcpactor_search:extension"

``load_extensions(identifiers)`` finds them by the identifier of the ``Extension`` each
entry point gives (an ``Extension``, or a callable returning one).

``discover()`` loads every plugin (or the ones named) and reports each, loaded or not: a
plugin that fails to import, names something that is not a Server, or reuses a name
another distribution took is a ``PluginError`` in its report, and the others load
regardless. ``load_plugin(name)`` is the strict form for one plugin.

Finding the entry points is on the start-up path of every ``mcpactor serve``. Importing
``importlib.metadata`` and walking every installed distribution through it costs tens of
milliseconds, so the group is first read straight from the ``entry_points.txt`` files of
the metadata directories on ``sys.path`` — the same files, searched in the same order,
duplicates of a distribution skipped the same way. Where ``sys.path`` holds something
only ``importlib.metadata`` can search (a zip or an egg, or a finder with distributions
of its own), discovery goes through it instead.
"""

from __future__ import annotations

import functools
import importlib
import os
import re
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Final

import attrs

from ._exceptions import ConfigError, PluginError
from .server import Server

if TYPE_CHECKING:
    import importlib.metadata

    # Extension values load with the first extension asked for (``installed_extensions``).
    from .server import Extension

__all__ = [
    "EXTENSIONS_GROUP",
    "GROUP",
    "Plugin",
    "discover",
    "installed_extensions",
    "load_extensions",
    "load_plugin",
    "plugin_names",
]

#: the entry-point group plugins register their Server under
GROUP: Final = "mcpactor.servers"
#: the entry-point group extensions register their ``Extension`` (or a factory) under
EXTENSIONS_GROUP: Final = "mcpactor.extensions"


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


class _Entry:
    """One entry point of the group, as its distribution's metadata declares it."""

    __slots__ = ("identify", "load", "name", "value")

    def __init__(
        self,
        name: str,
        value: str,
        identify: Callable[[], tuple[str | None, str | None]],
        load: Callable[[], object],
    ) -> None:
        self.name = name
        self.value = value
        #: the declaring distribution's name and version, read when needed
        self.identify = identify
        #: import what ``value`` names
        self.load = load


def _entry_points(group: str) -> list[_Entry]:
    entries = _scan(group)
    if entries is not None:
        return entries
    import importlib.metadata

    return [
        _Entry(entry.name, entry.value, functools.partial(_identify, entry), entry.load)
        for entry in importlib.metadata.entry_points(group=group)
    ]


# --- the quick scan: importlib.metadata's search, for the one file it needs ------------

_METADATA_DIRS: Final = (".dist-info", ".egg-info")
_VALUE: Final = re.compile(
    r"(?P<module>[\w.]+)\s*(:\s*(?P<attr>[\w.]+)\s*)?((?P<extras>\[.*\])\s*)?$"
)
_UNREADABLE: Final = (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError)


def _scan(group: str) -> list[_Entry] | None:
    """The group's entry points, from the metadata directories on ``sys.path``.

    None when only ``importlib.metadata`` can tell: a path entry is a file (a zip) or an
    egg, a finder on ``sys.meta_path`` brings distributions of its own, or a file is not
    what the scan understands (importlib.metadata then reports it as it always did).
    """
    from importlib.machinery import PathFinder

    for finder in sys.meta_path:
        if finder is not PathFinder and getattr(finder, "find_distributions", None):
            return None
    seen: set[str] = set()
    entries: list[_Entry] = []
    for root in sys.path:
        if not isinstance(root, str) or root.lower().endswith(".egg"):
            return None
        try:
            children = os.listdir(root or ".")
        except OSError:
            if os.path.isfile(root):
                return None
            continue
        # Like importlib.metadata: directories grouped by normalised distribution name
        # in listing order; the first of a name on sys.path is the one that counts.
        by_name: dict[str, list[str]] = {}
        for child in children:
            low = child.lower()
            if low.endswith(_METADATA_DIRS):
                if not child.endswith(_METADATA_DIRS):
                    return None  # importlib.metadata names these from their METADATA
                key = _normalize(low.rpartition(".")[0].partition("-")[0])
                by_name.setdefault(key, []).append(child)
        for key, found in by_name.items():
            if key in seen:
                continue
            seen.add(key)
            path = os.path.join(root, found[0])
            try:
                with open(os.path.join(path, "entry_points.txt"), encoding="utf-8") as file:
                    text = file.read()
            except _UNREADABLE:
                continue
            except (OSError, UnicodeDecodeError):
                return None
            declared = _declared(text, group)
            if declared is None:
                return None
            identify = functools.partial(_identify_path, path)
            entries.extend(
                _Entry(name, value, identify, functools.partial(_load_value, value))
                for name, value in declared
            )
    return entries


def _normalize(name: str) -> str:
    # PEP 503, with dashes as underscores (importlib.metadata's ``Prepared.normalize``)
    return re.sub(r"[-_.]+", "-", name).lower().replace("-", "_")


def _declared(text: str, group: str) -> list[tuple[str, str]] | None:
    """The ``name = value`` pairs of ``[group]`` in entry_points.txt; None if malformed."""
    pairs: list[tuple[str, str]] = []
    section = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line.strip("[]")
            continue
        if section is None:
            continue
        name, equals, value = line.partition("=")
        if not equals or (section == group and _VALUE.match(value.strip()) is None):
            return None
        if section == group:
            pairs.append((name.strip(), value.strip()))
    return pairs


def _identify_path(path: str) -> tuple[str | None, str | None]:
    # The Name and Version headers of METADATA (PKG-INFO for an .egg-info).
    found: dict[str, str] = {}
    for filename in ("METADATA", "PKG-INFO"):
        try:
            with open(os.path.join(path, filename), encoding="utf-8") as file:
                text = file.read()
        except _UNREADABLE:
            continue
        for line in text.partition("\n\n")[0].splitlines():
            key, colon, value = line.partition(":")
            if colon and key.lower() in ("name", "version"):
                found.setdefault(key.lower(), value.strip())
        break
    return found.get("name"), found.get("version")


def _load_value(value: str) -> object:
    # What importlib.metadata.EntryPoint.load does: import the module, follow the attributes.
    match = _VALUE.match(value)
    assert match is not None  # _declared checked it
    module = importlib.import_module(match.group("module"))
    names = filter(None, (match.group("attr") or "").split("."))
    return functools.reduce(getattr, names, module)


def plugin_names(*, group: str = GROUP) -> list[str]:
    """Return the names of the installed plugins, without importing any of them."""
    return sorted({entry.name for entry in _entry_points(group)})


def discover(names: Iterable[str] | None = None, *, group: str = GROUP) -> list[Plugin]:
    """Load the installed plugins (all, or those in ``names``) and report on each.

    Never raises for a broken plugin: its ``Plugin.error`` says what went wrong. A name
    in ``names`` that no distribution declares is reported the same way. Plugins come in
    the order of ``names``, else sorted by name.
    """
    return _discover_in(_entry_points(group), names, group)


def _discover_in(
    entries: Sequence[_Entry], names: Iterable[str] | None, group: str
) -> list[Plugin]:
    # ``discover`` over entry points already read: a caller that needs the names first
    # (``mcpactor serve NAME``) reads the metadata once, not twice.
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
    return _load_plugin_in(_entry_points(group), name, group)


def _load_plugin_in(entries: Sequence[_Entry], name: str, group: str) -> Server:
    # ``load_plugin`` over entry points already read (see ``_discover_in``).
    (plugin,) = _discover_in(entries, [name], group)
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


def _load(entry: _Entry) -> Plugin:
    distribution, version = entry.identify()
    plugin = Plugin(entry.name, entry.value, distribution, version)
    try:
        obj = entry.load()
    except Exception as exc:
        cause = f"importing it raised {_describe_failure(exc)}"
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


def _duplicate(first: Plugin, entry: _Entry) -> PluginError:
    distribution, version = entry.identify()
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


# --- telling what failed, and where --------------------------------------------------


@functools.cache
def _machinery() -> tuple[tuple[str, ...], str, tuple[str, ...]]:
    # Frames in these directories are the machinery around the code that failed, not it:
    # mcpactor's and trio's, and the standard library's except what is installed in it
    # (a site-packages inside the standard library's directory holds plugins). Read on
    # the first failure only: sysconfig is not on the start-up path.
    import sysconfig

    import trio

    paths = sysconfig.get_paths()
    ours = (
        os.path.dirname(os.path.abspath(__file__)) + os.sep,
        os.path.dirname(os.path.abspath(trio.__file__)) + os.sep,
    )
    installed = tuple({os.path.abspath(paths[key]) + os.sep for key in ("purelib", "platlib")})
    return ours, os.path.abspath(paths["stdlib"]) + os.sep, installed


#: the longest exception message repeated in a one-line report
_MESSAGE_CHARS: Final = 300


def _describe_failure(exc: BaseException) -> str:
    """What went wrong and where, in one line: ``Type: message (file:line, in function)``.

    A syntax error is placed by its own file and line (``file:line: SyntaxError: msg``);
    another error by the innermost frame of its traceback outside mcpactor, trio and the
    standard library: the user's code that raised, or that called what raised.
    """
    name = type(exc).__name__
    if isinstance(exc, SyntaxError):
        where = _shown_path(exc.filename) if exc.filename else "<unknown>"
        line = f":{exc.lineno}" if exc.lineno else ""
        return f"{where}{line}: {name}: {_one_line(exc.msg or '')}"
    text = _one_line(str(exc))
    what = f"{name}: {text}" if text else name
    frame = _culprit_frame(exc)
    if frame is None:
        return what
    filename, lineno, function = frame
    return f"{what} ({_shown_path(filename)}:{lineno}, in {function})"


def _one_line(text: str) -> str:
    first, newline, _ = text.strip().partition("\n")
    if len(first) > _MESSAGE_CHARS:
        return first[:_MESSAGE_CHARS] + "…"
    return first + (" …" if newline else "")


def _culprit_frame(exc: BaseException) -> tuple[str, int, str] | None:
    import traceback

    found = None
    last = None
    for frame, lineno in traceback.walk_tb(exc.__traceback__):
        filename = frame.f_code.co_filename
        last = (filename, lineno, frame.f_code.co_name)
        if filename.startswith("<") or _is_machinery(os.path.abspath(filename)):
            continue
        found = last
    return found or last


def _is_machinery(path: str) -> bool:
    ours, stdlib, installed = _machinery()
    if path.startswith(ours):
        return True
    return path.startswith(stdlib) and not path.startswith(installed)


def _shown_path(path: str) -> str:
    # Relative to the current directory when it is below it: what the user typed.
    try:
        relative = os.path.relpath(path)
    except ValueError:  # another drive, on Windows
        return path
    return path if relative.startswith(os.pardir) else relative


# --- extensions ------------------------------------------------------------------------


def installed_extensions(*, group: str = EXTENSIONS_GROUP) -> dict[str, Extension]:
    """Every installed extension by its identifier, loaded (none of them enabled).

    Raises:
        PluginError: an entry point does not load, gives no Extension, or two give the
            same identifier (the message names the entry points and distributions).
    """
    from .server import Extension

    found: dict[str, tuple[Extension, str]] = {}
    for entry in _entry_points(group):
        distribution, version = entry.identify()
        origin = f"{distribution} {version}" if distribution and version else distribution
        where = (
            f"{entry.name} = {entry.value} (group {group}, {origin or 'an unknown distribution'})"
        )
        try:
            obj = entry.load()
            extension = obj if isinstance(obj, Extension) else obj() if callable(obj) else obj
        except Exception as exc:
            raise PluginError(
                f"extension entry point {where} failed to load: {_describe_failure(exc)}",
                entry_point=entry.name,
                distribution=distribution,
            ) from exc
        if not isinstance(extension, Extension):
            raise PluginError(
                f"extension entry point {where} gives {type(extension).__name__} "
                f"{_short(extension)}, not a mcpactor.Extension (or a callable returning one)",
                entry_point=entry.name,
                distribution=distribution,
            )
        first = found.get(extension.identifier)
        if first is not None and first[0] is not extension:
            raise PluginError(
                f"two installed extensions are {extension.identifier}: {first[1]} and {where}",
                entry_point=entry.name,
                distribution=distribution,
            )
        found[extension.identifier] = (extension, where)
    return {identifier: extension for identifier, (extension, _) in sorted(found.items())}


def load_extensions(
    identifiers: Iterable[str], *, group: str = EXTENSIONS_GROUP, source: str = "enabled"
) -> list[Extension]:
    """The installed extensions of ``identifiers``, in that order (duplicates once).

    ``source`` says where they were named (for the message of an unknown one).

    Raises:
        ConfigError: one is not installed (the message lists the installed ones).
        PluginError: an installed extension does not load.
    """
    wanted = list(dict.fromkeys(identifiers))
    if not wanted:
        return []
    installed = installed_extensions(group=group)
    unknown = [identifier for identifier in wanted if identifier not in installed]
    if unknown:
        listed = ", ".join(installed) if installed else "none"
        raise ConfigError(
            f"{source}: extension {', '.join(map(repr, unknown))} is not installed "
            f"(installed extensions: {listed})"
        )
    return [installed[identifier] for identifier in wanted]
