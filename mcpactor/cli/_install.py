"""``mcpactor install``: write a server into a desktop or editor client's configuration.

The target is loaded first, as ``mcpactor serve`` loads it, and one that does not load
is refused with the reason (nothing is written). The entry then starts the server one
of three ways (``--launch``):

- ``venv`` (the default): this interpreter, ``python -m mcpactor serve TARGET``: the
  environment that was just shown to load the target, nothing else needed. It names this
  virtual environment's path, so moving or recreating it breaks the entry.
- ``uvx``: ``uvx --from mcpactor [--with REQ...] mcpactor serve TARGET``: uv builds (and
  caches) an environment of its own; nothing of this one is named.
- ``uv-run``: ``uv run [--project DIR] --with mcpactor [--with REQ...] mcpactor serve
  TARGET``: the same, in the environment of the project the target belongs to (the
  nearest ``pyproject.toml``), so its dependencies come along.

Each client keeps its stdio servers in a file of its own, under a key of its own; the
formats, as each documents them, are the ``CLIENTS`` table's (its ``doc`` is the page).
Writing follows ``_client_files``: the entry of that name is created or updated, every
other entry, key and comment is kept, a file that would not change is not written, a
file that is not a configuration is an error and left as it is, and the new text goes
to a temporary file beside it, renamed over it.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final, NamedTuple

__all__ = ["CLIENTS", "Launch", "add_install_parser", "client_entry", "install"]


class Client(NamedTuple):
    """Where one client keeps its stdio servers, and how it writes one."""

    #: its name, for messages
    title: str
    #: ``json`` (strict), ``jsonc`` (comments and trailing commas allowed), ``yaml``, ``toml``
    format: str
    #: the top-level key holding the servers
    key: str
    #: the entry's shape: ``plain`` ({command, args, env}), ``typed`` (with type: stdio),
    #: ``zed`` (with source: custom), ``goose`` (Goose's extension)
    shape: str
    #: the scopes it has, the default first (none: it has no file of its own)
    scopes: tuple[str, ...]
    #: where the client documents the file and the format
    doc: str


CLIENTS: Final = {
    # modelcontextprotocol.io/docs/develop/connect-local-servers
    "claude-desktop": Client(
        "Claude Desktop",
        "json",
        "mcpServers",
        "plain",
        ("user",),
        "https://modelcontextprotocol.io/docs/develop/connect-local-servers",
    ),
    "claude-code": Client(
        "Claude Code",
        "json",
        "mcpServers",
        "typed",
        ("project", "user"),
        "https://code.claude.com/docs/en/mcp",
    ),
    "cursor": Client(
        "Cursor", "json", "mcpServers", "plain", ("user", "project"), "https://cursor.com/docs/mcp"
    ),
    "vscode": Client(
        "VS Code",
        "jsonc",
        "servers",
        "typed",
        ("project",),
        "https://code.visualstudio.com/docs/copilot/reference/mcp-configuration",
    ),
    "gemini-cli": Client(
        "Gemini CLI",
        "jsonc",
        "mcpServers",
        "plain",
        ("user", "project"),
        "https://geminicli.com/docs/tools/mcp-server",
    ),
    "goose": Client(
        "Goose",
        "yaml",
        "extensions",
        "goose",
        ("user",),
        "https://block.github.io/goose/docs/guides/config-files",
    ),
    "windsurf": Client(
        "Windsurf",
        "json",
        "mcpServers",
        "plain",
        ("user",),
        "https://docs.windsurf.com/windsurf/cascade/mcp",
    ),
    "zed": Client(
        "Zed", "jsonc", "context_servers", "zed", ("user",), "https://zed.dev/docs/ai/mcp"
    ),
    "codex": Client(
        "Codex",
        "toml",
        "mcp_servers",
        "plain",
        ("user", "project"),
        "https://developers.openai.com/codex/mcp",
    ),
    "kiro": Client(
        "Kiro",
        "json",
        "mcpServers",
        "plain",
        ("user", "project"),
        "https://kiro.dev/docs/mcp/configuration",
    ),
    # The mcpServers object most clients read (Claude Desktop's), printed; written only
    # to a file --config-file names.
    "generic": Client("a client", "json", "mcpServers", "plain", (), ""),
}

#: how the entry starts the server; the default first
LAUNCHES: Final = ("venv", "uvx", "uv-run")


class Launch(NamedTuple):
    """The command line (and environment) that starts the server."""

    command: str
    args: list[str]
    env: dict[str, str]


def add_install_parser(commands: Any, add_global_arguments: Callable[..., None]) -> None:
    """Add ``install`` to ``commands``; ``add_global_arguments`` adds the common options.

    The adder is the command line module's, passed in so this module does not import it.
    """
    names = ", ".join(CLIENTS)
    install = commands.add_parser(
        "install",
        help="add a server to a client's configuration (Claude, Cursor, VS Code, Gemini CLI, "
        "Goose, Windsurf, Zed, Codex, Kiro) or print its entry",
        description="Load TARGET as `mcpactor serve` would, then write it into CLIENT's "
        "configuration as a stdio server (generic: print an mcpServers entry). Running it "
        "again updates the entry; other entries, keys and comments are kept.",
    )
    add_global_arguments(install, command=True)
    install.add_argument("client", choices=list(CLIENTS), metavar="CLIENT", help=names)
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
        "--launch",
        choices=LAUNCHES,
        default="venv",
        help="how the client starts the server: venv (this Python, the default), uvx or "
        "uv-run (uv's environment, naming no virtual environment)",
    )
    install.add_argument(
        "--from",
        dest="from_spec",
        default="mcpactor",
        metavar="REQUIREMENT",
        help="uvx and uv-run: where uv gets mcpactor (a requirement such as "
        "'mcpactor==0.2.0', or a path; default: mcpactor)",
    )
    install.add_argument(
        "--with",
        dest="with_specs",
        action="append",
        default=[],
        metavar="REQUIREMENT",
        help="uvx and uv-run: another package the server needs; repeatable (a plugin's "
        "distribution is added by itself)",
    )
    install.add_argument(
        "--scope",
        choices=("user", "project"),
        help="which of the client's files: user (the default, but for claude-code) or "
        "project (a file in the current directory)",
    )
    install.add_argument(
        "--config-file", metavar="PATH", help="the client's configuration file to write"
    )
    output = install.add_mutually_exclusive_group()
    output.add_argument(
        "--dry-run", action="store_true", help="print the resulting file instead of writing it"
    )
    output.add_argument(
        "--print",
        dest="print_entry",
        action="store_true",
        help="print the entry alone, in the client's format, and write nothing",
    )
    install.add_argument(
        "--no-check",
        action="store_true",
        help="write the entry without loading the target first (for a target whose "
        "dependencies only the launched environment has)",
    )


def install(args: argparse.Namespace) -> int:
    """Run ``mcpactor install`` as ``args`` say; return the exit status."""
    from .._exceptions import ConfigError

    client = CLIENTS[args.client]
    scope = args.scope or (client.scopes[0] if client.scopes else None)
    if args.scope is not None and args.scope not in client.scopes:
        raise ConfigError(f"--scope: {args.client} has no {args.scope} scope")
    if args.launch == "venv" and (args.with_specs or args.from_spec != "mcpactor"):
        raise ConfigError("--with and --from go with --launch uvx or uv-run")
    env = _pairs(args.env)
    if not args.no_check:
        try:
            check_targets(args.targets)
        except Exception:
            print(
                "mcpactor: install: the target does not load; nothing was written", file=sys.stderr
            )
            raise
    directory = _module_directory(args.targets)
    if directory is not None:
        # The client's working directory is its own: the module is found through this.
        env.setdefault("PYTHONPATH", directory)
    name = args.name or default_name(args.targets)
    launch = launch_for(args.launch, args.targets, env, args.from_spec, args.with_specs)
    entry = client_entry(args.client, name, launch)
    if args.print_entry or (args.client == "generic" and not args.config_file):
        sys.stdout.write(snippet(args.client, name, entry))
        return 0
    assert scope is not None or args.config_file
    path = Path(args.config_file) if args.config_file else config_path(args.client, scope or "")
    text = path.read_text(encoding="utf-8") if path.exists() else None
    updated = updated_config(args.client, text, name, entry, source=path, env_given=bool(env))
    if args.dry_run:
        sys.stdout.write(updated)
        return 0
    if updated == text:
        print(f"mcpactor: {path}: {name!r} is already there, unchanged", file=sys.stderr)
        return 0
    write_atomically(path, updated)
    print(
        f"mcpactor: {path}: wrote {name!r} ({args.client}, --launch {args.launch})",
        file=sys.stderr,
    )
    return 0


def check_targets(targets: Sequence[str]) -> None:
    """Load ``targets`` as ``mcpactor serve`` would, raising what it would raise."""
    from ._serve import _served_server

    served = argparse.Namespace(
        targets=list(targets), prefix=[], max_concurrent=[], no_prefix=False, strict=True
    )
    _served_server(served, None)


def config_path(client: str, scope: str) -> Path:
    """The configuration file of ``client`` at ``scope`` on this system."""
    home = Path.home()
    cwd = Path.cwd()
    if client == "claude-desktop":
        return _app_config("Claude") / "claude_desktop_config.json"
    if client == "claude-code":
        return home / ".claude.json" if scope == "user" else cwd / ".mcp.json"
    if client == "cursor":
        return (home if scope == "user" else cwd) / ".cursor" / "mcp.json"
    if client == "vscode":
        return cwd / ".vscode" / "mcp.json"
    if client == "gemini-cli":
        return (home if scope == "user" else cwd) / ".gemini" / "settings.json"
    if client == "goose":
        if sys.platform == "win32":
            return _appdata() / "Block" / "goose" / "config" / "config.yaml"
        return _xdg_config() / "goose" / "config.yaml"
    if client == "windsurf":
        return home / ".codeium" / "windsurf" / "mcp_config.json"
    if client == "zed":
        # Zed keeps its settings in ~/.config/zed on macOS too.
        if sys.platform == "win32":
            return _appdata() / "Zed" / "settings.json"
        return _xdg_config() / "zed" / "settings.json"
    if client == "codex":
        if scope == "project":
            return cwd / ".codex" / "config.toml"
        codex_home = os.environ.get("CODEX_HOME")
        return (Path(codex_home) if codex_home else home / ".codex") / "config.toml"
    assert client == "kiro", client
    return (home if scope == "user" else cwd) / ".kiro" / "settings" / "mcp.json"


def _app_config(name: str) -> Path:
    # A desktop application's folder: macOS's Application Support, Windows' APPDATA, XDG.
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / name
    if sys.platform == "win32":
        return _appdata() / name
    return _xdg_config() / name


def _appdata() -> Path:
    return Path(os.environ.get("APPDATA") or Path.home() / "AppData" / "Roaming")


def _xdg_config() -> Path:
    return Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")


def default_name(targets: Sequence[str]) -> str:
    """The entry's name: the name ``serve`` gives its one target, else ``mcpactor``."""
    if len(targets) != 1:
        return "mcpactor"
    from ..config import target_configs

    (config,) = target_configs(targets, plugins=[targets[0]] if _is_plugin(targets[0]) else [])
    return config.name


def _is_plugin(target: str) -> bool:
    from ..plugins import plugin_names

    return target in plugin_names()


def serve_args(targets: Sequence[str]) -> list[str]:
    """``serve TARGET...``, with file targets made absolute.

    The client starts the server in a directory of its own choosing, so a path is made
    absolute here; a plugin or a module importable from anywhere is kept as it is.
    """
    words = ["serve"]
    for target in targets:
        spec, colon, attr = target.partition(":")
        if "://" not in target and (spec.endswith(".py") or "/" in spec or os.sep in spec):
            target = str(Path(spec).resolve()) + colon + attr
        words.append(target)
    return words


def launch_for(
    how: str,
    targets: Sequence[str],
    env: Mapping[str, str],
    from_spec: str = "mcpactor",
    with_specs: Sequence[str] = (),
) -> Launch:
    """The command line that starts ``targets`` the way ``how`` (one of ``LAUNCHES``) says."""
    serve = serve_args(targets)
    if how == "venv":
        return Launch(sys.executable, ["-m", "mcpactor", *serve], dict(env))
    requirements = [*_plugin_distributions(targets), *with_specs]
    withs = [word for requirement in requirements for word in ("--with", requirement)]
    if how == "uvx":
        return Launch("uvx", ["--from", from_spec, *withs, "mcpactor", *serve], dict(env))
    assert how == "uv-run", how
    project = _project_of(targets)
    where = ["--project", str(project)] if project is not None else []
    return Launch(
        "uv", ["run", *where, "--with", from_spec, *withs, "mcpactor", *serve], dict(env)
    )


def _plugin_distributions(targets: Sequence[str]) -> list[str]:
    # A plugin's distribution, for uv to install beside mcpactor.
    from ..plugins import GROUP, _entry_points

    found: list[str] = []
    entries = {entry.name: entry for entry in _entry_points(GROUP)}
    for target in targets:
        entry = entries.get(target)
        if entry is not None:
            distribution, _ = entry.identify()
            if distribution and distribution not in found:
                found.append(distribution)
    return found


def _project_of(targets: Sequence[str]) -> Path | None:
    # The directory of the nearest pyproject.toml above the first file target (or the
    # current directory, for a module).
    start = Path.cwd()
    for target in targets:
        spec = target.partition(":")[0]
        if "://" not in target and (spec.endswith(".py") or "/" in spec):
            start = Path(spec).resolve().parent
            break
    for directory in (start, *start.parents):
        if (directory / "pyproject.toml").is_file():
            return directory
    return None


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


def client_entry(client: str, name: str, launch: Launch) -> dict[str, Any]:
    """``client``'s entry for the stdio server ``launch`` starts, named ``name``."""
    shape = CLIENTS[client].shape
    if shape == "goose":
        # Goose's stdio extension; its type, name and enabled flag sit beside the command.
        served = launch.args[launch.args.index("serve") + 1 :]
        return {
            "type": "stdio",
            "name": name,
            "description": f"mcpactor serve {' '.join(served)}",
            "enabled": True,
            "cmd": launch.command,
            "args": list(launch.args),
            "envs": dict(launch.env),
            "env_keys": [],
            "timeout": 300,
        }
    entry: dict[str, Any] = {}
    if shape == "typed":
        entry["type"] = "stdio"
    elif shape == "zed":
        entry["source"] = "custom"
    entry["command"] = launch.command
    entry["args"] = list(launch.args)
    entry["env"] = dict(launch.env)
    return entry


def snippet(client: str, name: str, entry: Mapping[str, Any]) -> str:
    """The entry alone under its key, as the client's file would hold it."""
    from ._client_files import set_json_entry, set_toml_entry, set_yaml_entry

    spec = CLIENTS[client]
    nowhere = Path(f"<{client}>")
    if spec.format == "toml":
        return set_toml_entry(None, spec.key, name, entry, source=nowhere, env_given=True)
    if spec.format == "yaml":
        return set_yaml_entry(None, spec.key, name, entry, source=nowhere, env_given=True)
    return set_json_entry(None, spec.key, name, entry, source=nowhere, jsonc=False, env_given=True)


def updated_config(
    client: str,
    text: str | None,
    name: str,
    entry: Mapping[str, Any],
    *,
    source: Path,
    env_given: bool = True,
) -> str:
    """``text`` (``client``'s file, or None for none) with ``entry`` as the server ``name``.

    An existing entry keeps the keys it has that ``entry`` does not set, and its
    environment unless ``env_given``.

    Raises:
        ConfigError: ``text`` is not a configuration of that format, or cannot be
            changed without losing something (the message names the file and line).
    """
    from ._client_files import set_json_entry, set_toml_entry, set_yaml_entry

    spec = CLIENTS[client]
    if spec.format == "toml":
        return set_toml_entry(text, spec.key, name, entry, source=source, env_given=env_given)
    if spec.format == "yaml":
        return set_yaml_entry(text, spec.key, name, entry, source=source, env_given=env_given)
    return set_json_entry(
        text,
        spec.key,
        name,
        entry,
        source=source,
        jsonc=spec.format == "jsonc",
        env_given=env_given,
    )


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
