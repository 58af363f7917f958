"""``mcpactor install``: write a server into a desktop or editor client's configuration.

Each client keeps its stdio servers in a JSON file, under a key of its own; the entry
runs this interpreter (``sys.executable -m mcpactor serve TARGET``), so the client
starts the server in the environment that has mcpactor and the server's dependencies.
The formats, as each client documents them:

- Claude Desktop: ``claude_desktop_config.json``, ``mcpServers.NAME: {command, args,
  env}``, in ``~/Library/Application Support/Claude/`` (macOS), ``%APPDATA%\\Claude\\``
  (Windows), ``~/.config/Claude/`` elsewhere (the MCP quickstart for Claude Desktop).
- Claude Code: ``.mcp.json`` in the project (project scope) or ``~/.claude.json`` (user
  scope), ``mcpServers.NAME: {type: "stdio", command, args, env}`` (Claude Code's MCP
  page).
- Cursor: ``~/.cursor/mcp.json`` (global) or ``.cursor/mcp.json`` (project),
  ``mcpServers.NAME: {command, args, env}`` (Cursor's MCP page).
- VS Code: ``.vscode/mcp.json`` in the workspace, ``servers.NAME: {type: "stdio",
  command, args, env}`` (VS Code's MCP configuration reference).

Writing is idempotent: the entry of that name is created or updated, every other entry
and key is kept, the file's indentation is kept, and a file that would not change is not
written. A file that is not a JSON object is an error and is left as it is. The new text
goes to a temporary file beside it, renamed over it.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final, NamedTuple

__all__ = ["CLIENTS", "add_install_parser", "install"]


class Client(NamedTuple):
    """Where one client keeps its servers, and how it writes one."""

    #: the top-level key holding the servers
    key: str
    #: the entry's ``type``, where the client's format has one
    kind: str | None
    #: the scopes it has, the default first
    scopes: tuple[str, ...]


CLIENTS: Final = {
    "claude-desktop": Client("mcpServers", None, ("user",)),
    "claude-code": Client("mcpServers", "stdio", ("project", "user")),
    "cursor": Client("mcpServers", None, ("user", "project")),
    "vscode": Client("servers", "stdio", ("project",)),
}


def add_install_parser(commands: Any, add_global_arguments: Callable[..., None]) -> None:
    """Add ``install`` to ``commands``; ``add_global_arguments`` adds the common options.

    The adder is the command line module's, passed in so this module does not import it.
    """
    install = commands.add_parser(
        "install",
        help="add a server to Claude Desktop, Claude Code, Cursor or VS Code",
        description="Write TARGET into CLIENT's configuration as a stdio server run by this "
        "Python (python -m mcpactor serve TARGET). Running it again updates the entry; "
        "other entries and keys are kept.",
    )
    add_global_arguments(install, command=True)
    install.add_argument(
        "client", choices=sorted(CLIENTS), metavar="CLIENT", help=", ".join(sorted(CLIENTS))
    )
    install.add_argument(
        "targets",
        nargs="+",
        metavar="TARGET",
        help="what `mcpactor serve` takes: a plugin's name, package.module[:attr], "
        "path/to/server.py[:attr]; several are served as one",
    )
    install.add_argument("--name", help="the entry's name (default: after the target)")
    install.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an environment variable of the server; repeatable",
    )
    install.add_argument(
        "--scope",
        choices=("user", "project"),
        help="claude-code: project (.mcp.json, the default) or user (~/.claude.json); "
        "cursor: user (~/.cursor/mcp.json, the default) or project (.cursor/mcp.json)",
    )
    install.add_argument(
        "--config-file", metavar="PATH", help="the client's configuration file to write"
    )
    install.add_argument(
        "--dry-run", action="store_true", help="print the resulting file instead of writing it"
    )


def install(args: argparse.Namespace) -> int:
    """Run ``mcpactor install`` as ``args`` say; return the exit status."""
    from .._exceptions import ConfigError

    client = CLIENTS[args.client]
    scope = args.scope or client.scopes[0]
    if scope not in client.scopes:
        raise ConfigError(f"--scope: {args.client} has no {scope} scope")
    path = Path(args.config_file) if args.config_file else config_path(args.client, scope)
    env = _pairs(args.env)
    directory = _module_directory(args.targets)
    if directory is not None:
        # The client's working directory is its own: the module is found through this.
        env.setdefault("PYTHONPATH", directory)
    name = args.name or default_name(args.targets)
    entry = server_entry(client, serve_args(args.targets), env)
    text = path.read_text(encoding="utf-8") if path.exists() else None
    updated = updated_config(text, client.key, name, entry, source=path, env_given=bool(env))
    if args.dry_run:
        sys.stdout.write(updated)
        return 0
    if updated == text:
        print(f"mcpactor: {path}: {name!r} is already there, unchanged", file=sys.stderr)
        return 0
    write_atomically(path, updated)
    print(f"mcpactor: {path}: wrote {name!r} ({args.client})", file=sys.stderr)
    return 0


def config_path(client: str, scope: str) -> Path:
    """The configuration file of ``client`` at ``scope`` on this system."""
    home = Path.home()
    if client == "claude-desktop":
        if sys.platform == "darwin":
            return home / "Library" / "Application Support" / "Claude" / _DESKTOP
        if sys.platform == "win32":
            appdata = os.environ.get("APPDATA") or str(home / "AppData" / "Roaming")
            return Path(appdata) / "Claude" / _DESKTOP
        config = os.environ.get("XDG_CONFIG_HOME") or str(home / ".config")
        return Path(config) / "Claude" / _DESKTOP
    if client == "claude-code":
        return home / ".claude.json" if scope == "user" else Path.cwd() / ".mcp.json"
    if client == "cursor":
        base = home if scope == "user" else Path.cwd()
        return base / ".cursor" / "mcp.json"
    return Path.cwd() / ".vscode" / "mcp.json"


_DESKTOP: Final = "claude_desktop_config.json"


def default_name(targets: Sequence[str]) -> str:
    """The entry's name: the name ``serve`` gives its one target, else ``mcpactor``."""
    if len(targets) != 1:
        return "mcpactor"
    from .._config import target_configs

    (config,) = target_configs(targets, plugins=[targets[0]] if _is_plugin(targets[0]) else [])
    return config.name


def _is_plugin(target: str) -> bool:
    from ..plugins import plugin_names

    return target in plugin_names()


def serve_args(targets: Sequence[str]) -> list[str]:
    """``-m mcpactor serve TARGET...``, with file targets made absolute.

    The client starts the server in a directory of its own choosing, so a path is made
    absolute here; a plugin or a module importable from anywhere is kept as it is.
    """
    words = ["-m", "mcpactor", "serve"]
    for target in targets:
        spec, colon, attr = target.partition(":")
        if "://" not in target and (spec.endswith(".py") or "/" in spec or os.sep in spec):
            target = str(Path(spec).resolve()) + colon + attr
        words.append(target)
    return words


def _module_directory(targets: Sequence[str]) -> str | None:
    # The current directory, if a module target is found there (and not installed).
    from ._dev import _find_module

    cwd = Path.cwd()
    for target in targets:
        spec = target.partition(":")[0]
        if "://" in target or spec.endswith(".py") or "/" in spec or _is_plugin(target):
            continue
        origin = _find_module(spec.partition(".")[0])
        if origin is not None and origin.is_relative_to(cwd):
            return str(cwd)
    return None


def server_entry(client: Client, args: Sequence[str], env: Mapping[str, str]) -> dict[str, Any]:
    """The client's entry for a stdio server run by this interpreter with ``args``."""
    entry: dict[str, Any] = {}
    if client.kind is not None:
        entry["type"] = client.kind
    entry["command"] = sys.executable
    entry["args"] = list(args)
    entry["env"] = dict(env)
    return entry


def updated_config(
    text: str | None,
    key: str,
    name: str,
    entry: Mapping[str, Any],
    *,
    source: Path,
    env_given: bool = True,
) -> str:
    """``text`` (a client's JSON file, or None for none) with ``entry`` under ``key.name``.

    An existing entry keeps the keys it has that ``entry`` does not set, and its ``env``
    unless ``env_given``.

    Raises:
        ConfigError: ``text`` is not JSON, not an object, or ``key`` holds no object.
    """
    import json

    from .._exceptions import ConfigError

    indent: int | str = 2
    if text is None or not text.strip():
        data: Any = {}
    else:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(
                f"{source}:{exc.lineno}:{exc.colno}: not valid JSON ({exc.msg}); the file is "
                "left as it is: fix it, or give another with --config-file"
            ) from None
        except RecursionError:
            raise ConfigError(f"{source}: nested too deeply; the file is left as it is") from None
        if not isinstance(data, dict):
            raise ConfigError(
                f"{source}: expected a JSON object, got {type(data).__name__}; the file is "
                "left as it is"
            )
        indent = _indent(text)
    servers = data.setdefault(key, {})
    if not isinstance(servers, dict):
        raise ConfigError(
            f"{source}: {key}: expected an object of servers, got {type(servers).__name__}; "
            "the file is left as it is"
        )
    old = servers.get(name)
    new = dict(old) if isinstance(old, dict) else {}
    for field, value in entry.items():
        if field == "env" and not env_given and isinstance(new.get("env"), dict):
            continue
        new[field] = value
    servers[name] = new
    return json.dumps(data, indent=indent, ensure_ascii=False) + "\n"


def _indent(text: str) -> int | str:
    # The first indented line says how the file is indented.
    for line in text.splitlines()[1:]:
        stripped = line.lstrip(" \t")
        if stripped and len(stripped) < len(line):
            prefix = line[: len(line) - len(stripped)]
            return len(prefix) if set(prefix) == {" "} else prefix
    return 2


def write_atomically(path: Path, text: str) -> None:
    """Write ``text`` to a temporary file beside ``path``, then rename it over ``path``."""
    import tempfile

    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o7777 if path.exists() else None
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        if mode is not None:
            os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


def _pairs(items: Sequence[str]) -> dict[str, str]:
    from .._exceptions import ConfigError

    pairs: dict[str, str] = {}
    for item in items:
        key, equals, value = item.partition("=")
        if not equals or not key:
            raise ConfigError(f"--env expects KEY=VALUE, got {item!r}")
        pairs[key] = value
    return pairs
