"""``mcpactor new``: start a server file or a plugin distribution that passes its own checks.

Each kind of project is a list of templates (package data under ``_templates/``, read
with ``importlib.resources`` so that it works from an installed wheel) and where each one
goes. A template's text and its destination hold ``{{key}}`` fields, filled in from the
project's names; nothing else in them is special, so a template reads as the file it
makes. A kind added later (an extension package) is one more entry in ``KINDS``.

Everything is checked and rendered before anything is written: a bad name, a folder that
is not empty or a path that is a file is an error that writes nothing. A new folder is
written beside its destination and renamed into place, so a failure leaves nothing half
made.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.machinery
import importlib.resources
import importlib.util
import keyword
import os
import re
import shutil
import sys
import tempfile
import textwrap
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final, NamedTuple

from .._exceptions import ConfigError
from .._version import __version__

__all__ = ["KINDS", "Kind", "add_new_parser", "new", "project_names", "render"]


class Kind(NamedTuple):
    """One kind of project ``mcpactor new`` makes."""

    #: what ``--help`` says of it
    help: str
    #: (template under ``_templates/``, or None for an empty file; its destination)
    files: tuple[tuple[str | None, str], ...]
    #: what to do next, printed after the project is written
    next_steps: str


KINDS: Final = {
    "server": Kind(
        help="a server in one file, with its test and the settings of pytest, ruff and mypy",
        files=(
            ("server/server.py.tmpl", "{{module}}.py"),
            ("server/test.py.tmpl", "test_{{module}}.py"),
            ("server/pyproject.toml.tmpl", "pyproject.toml"),
            ("server/README.md.tmpl", "README.md"),
            ("common/gitignore.tmpl", ".gitignore"),
        ),
        next_steps="""\
  cd {{directory}}
  mcpactor serve {{module}}.py             # serve it over stdio
  pip install pytest pytest-trio && python -m pytest
""",
    ),
    "plugin": Kind(
        help="a distribution to publish: entry point, console script, tests, LICENSE, "
        "README and server.json for the MCP registry",
        files=(
            ("plugin/pyproject.toml.tmpl", "pyproject.toml"),
            ("plugin/README.md.tmpl", "README.md"),
            ("plugin/LICENSE.tmpl", "LICENSE"),
            ("plugin/server.json.tmpl", "server.json"),
            ("common/gitignore.tmpl", ".gitignore"),
            ("plugin/__init__.py.tmpl", "src/{{module}}/__init__.py"),
            ("plugin/__main__.py.tmpl", "src/{{module}}/__main__.py"),
            (None, "src/{{module}}/py.typed"),
            ("plugin/test.py.tmpl", "tests/test_{{module}}.py"),
        ),
        next_steps="""\
  cd {{directory}}
  python3 -m venv .venv && . .venv/bin/activate
  pip install -e '.[dev]'
  python -m pytest && ruff check . && mypy && python -m build
  {{distribution}}                  # serve it over stdio, as `uvx {{distribution}}` will
""",
    ),
}

#: lowercase letters and digits, words joined by one '-' or '_', starting with a letter
_NAME: Final = re.compile(r"[a-z][a-z0-9]*(?:[-_][a-z0-9]+)*")
_MAX_NAME: Final = 40
#: the registry's namespace: a reverse-DNS name (``io.github.USER``, ``com.example``)
_NAMESPACE: Final = re.compile(r"[a-zA-Z0-9-]+(?:\.[a-zA-Z0-9-]+)+")
#: what a plugin's distribution name may start with, left out of the plugin's own name
_PREFIX: Final = "mcpactor-"
_DEFAULT_NAMESPACE: Final = "io.github.your-name"
#: the registry's limit on ``description``
_MAX_DESCRIPTION: Final = 100
_FIELD: Final = re.compile(r"\{\{(\w+)\}\}")


def add_new_parser(commands: Any, add_global_arguments: Callable[..., None]) -> None:
    """Add ``new`` to ``commands``; ``add_global_arguments`` adds the common options."""
    new_parser = commands.add_parser(
        "new",
        help="start a new server file or plugin distribution",
        description="Write a new project into DIRECTORY (default: ./NAME), which must be new "
        "or empty. Its tests, ruff, mypy --strict and (for a plugin) python -m build pass "
        "as it is written. " + " ".join(f"{name}: {kind.help}." for name, kind in KINDS.items()),
    )
    add_global_arguments(new_parser, command=True)
    new_parser.add_argument("kind", choices=list(KINDS), metavar="KIND", help=", ".join(KINDS))
    new_parser.add_argument(
        "name",
        metavar="NAME",
        help="a plugin's distribution name (mcpactor-weather: the plugin is weather, the "
        "package mcpactor_weather, the console script mcpactor-weather) or a server's "
        "module name; lowercase letters, digits, '-' and '_'",
    )
    new_parser.add_argument(
        "directory", nargs="?", metavar="DIRECTORY", help="where to write it (default: ./NAME)"
    )
    new_parser.add_argument(
        "--namespace",
        default=_DEFAULT_NAMESPACE,
        help="the MCP registry namespace of server.json's name and the README's mcp-name "
        f"line, e.g. io.github.YOUR-GITHUB-USER (default: {_DEFAULT_NAMESPACE})",
    )
    new_parser.add_argument("--author", help="the copyright holder in LICENSE and pyproject.toml")
    new_parser.add_argument(
        "--description",
        help=f"one line on what it does, at most {_MAX_DESCRIPTION} characters",
    )


def new(args: argparse.Namespace) -> int:
    """Run ``mcpactor new`` as ``args`` say; return the exit status."""
    kind = KINDS[args.kind]
    names = project_names(
        args.kind,
        args.name,
        namespace=args.namespace,
        author=args.author,
        description=args.description,
    )
    directory = Path(args.directory if args.directory is not None else args.name)
    _check_destination(directory)
    files = render(kind, names)
    _write(directory, files)
    shown = str(directory)
    print(f"mcpactor new: wrote the {args.kind} {args.name!r} into {shown}{os.sep}:")
    for path in sorted(files):
        print(f"  {path}")
    print("Next:")
    print(_fill(kind.next_steps, {**names, "directory": shown}), end="")
    return 0


def project_names(
    kind: str,
    name: str,
    *,
    namespace: str = _DEFAULT_NAMESPACE,
    author: str | None = None,
    description: str | None = None,
) -> dict[str, str]:
    """The fields of the templates for the project ``name`` of ``kind``.

    Raises:
        ConfigError: a name, the namespace, the author or the description is unusable,
            saying which and why.
    """
    _check_name(name)
    module = name.replace("-", "_")
    plugin = name.removeprefix(_PREFIX) if kind == "plugin" else name
    if kind == "plugin":
        _check_plugin_name(plugin)
    if not _NAMESPACE.fullmatch(namespace):
        raise ConfigError(
            f"--namespace: expected a reverse-DNS name such as io.github.alice, got {namespace!r}"
        )
    title = " ".join(word.capitalize() for word in re.split(r"[-_]", plugin))
    if description is None:
        description = "An MCP server that greets people by name"
    _check_text("--description", description)
    # Each file ends the sentence as its format does (or not, in server.json).
    description = description.strip().rstrip(".")
    if not description:
        raise ConfigError("--description: expected a sentence, got nothing but full stops")
    if len(description) > _MAX_DESCRIPTION:
        raise ConfigError(
            f"--description: the MCP registry takes at most {_MAX_DESCRIPTION} characters, "
            f"got {len(description)}"
        )
    if author is None:
        author = f"The {name} authors"
    _check_text("--author", author)
    major, minor = (int(part) for part in __version__.split(".")[:2])
    return {
        "distribution": name,
        "module": module,
        "plugin": plugin,
        # a URI scheme has no '_'
        "scheme": plugin.replace("_", "-"),
        "title": title,
        "description": description,
        # the first lines of a module's docstring, after its opening quotes
        "docstring": textwrap.fill(
            description + ".",
            width=99,
            initial_indent='"""',
            break_long_words=False,
        ).removeprefix('"""'),
        "author": author,
        "year": str(datetime.date.today().year),
        "registry_name": f"{namespace}/{plugin}",
        "mcpactor_requirement": f"mcpactor>={__version__},<{major}.{minor + 1}",
    }


def render(kind: Kind, names: Mapping[str, str]) -> dict[str, str]:
    """Each file of ``kind`` by its path in the project, filled in from ``names``."""
    templates = importlib.resources.files(__package__ or "mcpactor.cli") / "_templates"
    files: dict[str, str] = {}
    for template, destination in kind.files:
        text = "" if template is None else (templates / template).read_text(encoding="utf-8")
        files[_fill(destination, names)] = _fill(text, names)
    return files


def _fill(text: str, names: Mapping[str, str]) -> str:
    # One pass: what a field is replaced with is never read as a field.
    return _FIELD.sub(lambda match: names[match.group(1)], text)


def _check_name(name: str) -> None:
    if not _NAME.fullmatch(name):
        if name.lower() != name and _NAME.fullmatch(name.lower()):
            hint = f"; lowercase: {name.lower()!r}"
        else:
            hint = ""
        raise ConfigError(
            f"NAME: expected lowercase letters and digits, words joined by '-' or '_', "
            f"starting with a letter, got {name!r}{hint}"
        )
    if len(name) > _MAX_NAME:
        raise ConfigError(f"NAME: expected at most {_MAX_NAME} characters, got {len(name)}")
    module = name.replace("-", "_")
    if module == "mcpactor":
        raise ConfigError("NAME: 'mcpactor' is taken by mcpactor itself")
    if keyword.iskeyword(module):
        raise ConfigError(f"NAME: its module {module!r} is a Python keyword")
    if module in sys.stdlib_module_names:
        raise ConfigError(f"NAME: its module {module!r} would hide the standard library's")
    try:
        found = importlib.util.find_spec(module)
    except (ImportError, ValueError):  # a module half imported: it exists
        found = importlib.machinery.ModuleSpec(module, None)
    if found is not None:
        where = found.origin or (list(found.submodule_search_locations or []) or ["?"])[0]
        raise ConfigError(
            f"NAME: a module {module!r} is importable here already ({where}); the two "
            "would hide one another: choose another name"
        )


def _check_plugin_name(plugin: str) -> None:
    # Two distributions declaring one plugin name: neither is served.
    from ..plugins import discover, plugin_names

    if plugin in plugin_names():
        (installed,) = discover([plugin])
        raise ConfigError(
            f"NAME: the plugin name {plugin!r} is taken by {installed.origin}, installed "
            "here; the two would hide one another: choose another name"
        )


def _check_text(option: str, text: str) -> None:
    # Written as they are into TOML, JSON and Python strings: nothing that needs escaping.
    bad = sorted({char for char in text if char in '"\\' or not char.isprintable()})
    if bad or not text.strip():
        what = ", ".join(repr(char) for char in bad) if bad else "nothing but spaces"
        raise ConfigError(f"{option}: expected one line of text without quotes, got {what}")


def _check_destination(directory: Path) -> None:
    if directory.is_dir():
        if any(directory.iterdir()):
            raise ConfigError(
                f"{directory} is not empty: mcpactor new writes only into a new or empty "
                "folder, and leaves this one as it is"
            )
    elif directory.exists() or directory.is_symlink():
        raise ConfigError(f"{directory} exists and is not a folder")


def _write(directory: Path, files: Mapping[str, str]) -> None:
    if directory.is_dir():
        # Empty (checked): written in place; on a failure, what was written goes again.
        try:
            _write_files(directory, files)
        except BaseException:
            for child in directory.iterdir():
                if child.is_dir() and not child.is_symlink():
                    shutil.rmtree(child)
                else:
                    child.unlink()
            raise
        return
    directory.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{directory.name}-", dir=directory.parent))
    try:
        _write_files(staging, files)
        # Fails (leaving the other as it is) if something took the name meanwhile.
        staging.rename(directory)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    # mkdtemp made it private to its owner; a project folder is as any other.
    directory.chmod(0o777 & ~_umask())


def _write_files(root: Path, files: Mapping[str, str]) -> None:
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w", encoding="utf-8", newline="\n") as file:
            file.write(text)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
