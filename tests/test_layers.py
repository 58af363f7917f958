"""The package's shape: no import cycles, imports point down the layers, one revision table.

Read from the source with ``ast``, so that every import counts: those under
``TYPE_CHECKING`` and inside functions as much as those at the top of a module.
"""

from __future__ import annotations

import ast
import functools
import re
import textwrap
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import attrs
import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "mcpactor"

# --- the import graph ----------------------------------------------------------------


@attrs.frozen
class Module:
    name: str
    is_package: bool
    tree: ast.Module


@functools.cache
def modules() -> dict[str, Module]:
    """Every module of the package by dotted name (a package by its own name)."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts.pop()
        name = ".".join(parts)
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        found[name] = Module(name, is_package, tree)
    return found


def imported(module: Module) -> Iterator[tuple[str, int]]:
    """The package's modules that ``module`` imports anywhere, with the line of each."""
    known = modules()
    package = module.name if module.is_package else module.name.rpartition(".")[0]
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join([*base, node.module] if node.module else base)
            else:
                source = node.module or ""
            # ``from package import name`` imports the submodule ``name`` if there is
            # one, else a name from the package's ``__init__``.
            targets = [
                f"{source}.{alias.name}" if f"{source}.{alias.name}" in known else source
                for alias in node.names
            ]
        else:
            continue
        for target in targets:
            if target in known and target != module.name:
                yield target, node.lineno


@functools.cache
def graph() -> dict[str, frozenset[str]]:
    return {
        name: frozenset(target for target, _ in imported(module))
        for name, module in modules().items()
    }


def cycles(edges: dict[str, frozenset[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module: bench/structure.py's."""
    return structure().strongly_connected(edges)  # type: ignore[no-any-return]


def test_the_graph_sees_every_kind_of_import() -> None:
    # A check of the reader itself: imports under TYPE_CHECKING, inside a function and
    # of a submodule through ``from . import`` all count.
    edges = graph()
    assert "mcpactor.transports.http" in edges["mcpactor.transports"]  # TYPE_CHECKING
    assert "mcpactor.protocol._convert" in edges["mcpactor.protocol"]  # in a function
    assert "mcpactor.transports._sse" in edges["mcpactor.transports._legacy_sse"]


def test_cycles_finds_a_cycle_through_any_number_of_modules() -> None:
    edges = {"a": frozenset({"b"}), "b": frozenset({"c"}), "c": frozenset({"a"}), "d": frozenset()}
    assert cycles(edges) == [frozenset({"a", "b", "c"})]
    assert cycles({"a": frozenset({"b"}), "b": frozenset()}) == []


#: Import cycles known to remain, each to be untied; none may be added. Empty now.
KNOWN_CYCLES: frozenset[frozenset[str]] = frozenset()


def test_no_import_cycle() -> None:
    found = set(cycles(graph()))
    new = found - KNOWN_CYCLES
    assert not new, f"new import cycles: {[sorted(c) for c in new]}"
    untied = KNOWN_CYCLES - found
    assert not untied, f"untied, remove from KNOWN_CYCLES: {[sorted(c) for c in untied]}"


# --- layers (DESIGN.md: imports point downward only) ------------------------------------

#: Modules every layer may import; they import nothing of the package themselves.
BASE = frozenset({"mcpactor._exceptions", "mcpactor._lazy", "mcpactor._version"})
#: The layers, each with the layers below it that it may import (besides BASE). The
#: package itself, the CLI, plugins, testing and their helpers sit on top and may
#: import anything; nothing below may import them.
LAYERS: dict[str, frozenset[str]] = {
    "protocol": frozenset(),
    # who is asking: the Principal, the errors of authorization, the token verifiers
    "auth": frozenset({"protocol"}),
    "server": frozenset({"protocol", "auth"}),
    # the protocol extensions mcpactor ships (MCP Apps): written on the server layer's
    # public API, as a third-party extension would be
    "ext": frozenset({"protocol", "auth", "server"}),
    "runtime": frozenset({"protocol", "auth", "server"}),
    "transports": frozenset({"protocol", "auth", "runtime"}),
    "client": frozenset({"protocol", "auth", "transports"}),
}
#: Imports the table above does not allow that the code makes today, and why.
EXCEPTIONS: dict[tuple[str, str], str] = {
    ("transports", "server"): (
        "a transport serves a Server handed to it (serve_stdio, serve_http and "
        "open_http_app take one); it only passes it on to the runtime"
    ),
    ("client", "runtime"): (
        "the in-memory connection (connect_memory) runs a SessionActor across "
        "memory channels, with no transport in between"
    ),
    ("client", "server"): (
        "the in-memory connection takes a Server, and the proxy mounts a remote server "
        "as a Server (its catalog, result adapters and URI templates)"
    ),
}


def layer(name: str) -> str:
    """The layer of a module: protocol, server, runtime, transports, client, base or top."""
    if name in BASE:
        return "base"
    parts = name.split(".")
    if len(parts) > 1 and parts[1] in LAYERS:
        return parts[1]
    return "top"


def layer_imports() -> Iterator[tuple[str, str, str, int]]:
    """(importer, imported, importer's layer, line) for imports across layers."""
    for name, module in modules().items():
        for target, line in imported(module):
            if layer(name) != layer(target):
                yield name, target, layer(target), line


def test_http_sessions_are_runtime_and_import_no_transport() -> None:
    # Hibernation, routing, streams and the event store sit under runtime/http: the
    # transports turn HTTP into calls on them, never the other way round.
    names = [name for name in modules() if name.startswith("mcpactor.runtime.http")]
    assert "mcpactor.runtime.http._session_manager" in names
    assert {layer(name) for name in names} == {"runtime"}
    for name in names:
        assert not any(layer(target) == "transports" for target in graph()[name]), name


def test_base_modules_import_nothing_of_the_package() -> None:
    for name in BASE:
        assert name in modules()
        assert list(imported(modules()[name])) == []


def test_imports_point_down_the_layers() -> None:
    wrong = []
    for name, target, target_layer, line in layer_imports():
        own = layer(name)
        if own == "top" or target_layer == "base":
            continue
        if target_layer in LAYERS[own] or (own, target_layer) in EXCEPTIONS:
            continue
        wrong.append(f"{name}:{line} imports {target}")
    assert not wrong, "imports against the layers (DESIGN.md):\n" + "\n".join(wrong)


def test_only_the_command_line_imports_the_config() -> None:
    # The deployment file's package sits at the top with the CLI: what it reads reaches
    # the layers below as arguments (HttpOptions, TaskOptions, a Server), never as an
    # import of the file's reader, which would drag tomllib and every table into them.
    wrong = [
        f"{name}:{line} imports {target}"
        for name, module in modules().items()
        if not name.startswith(("mcpactor.config", "mcpactor.cli"))
        for target, line in imported(module)
        if target == "mcpactor.config" or target.startswith("mcpactor.config.")
    ]
    assert "mcpactor.config" in modules()
    assert not wrong, "imports of the config package from below it:\n" + "\n".join(wrong)


def test_every_listed_exception_is_still_needed() -> None:
    used = {(layer(name), target_layer) for name, _, target_layer, _ in layer_imports()}
    stale = set(EXCEPTIONS) - used
    assert not stale, f"no longer imported, remove from EXCEPTIONS: {sorted(stale)}"


# --- one revision table ------------------------------------------------------------------

#: The one module that names protocol revisions; everything else reads its rows.
REVISION_TABLE = "mcpactor.protocol._revisions"
#: A date the way revisions are named (2025-11-25, 2026-07-28, …).
REVISION_NAME = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")
#: Revision names in strings outside the table that remain to be moved there, with where
#: they should come from instead; none may be added.
KNOWN_REVISION_STRINGS: dict[tuple[str, str], str] = {}


def docstrings(tree: ast.Module) -> set[int]:
    """The ids of the docstring nodes of a module and its classes and functions."""
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                found.add(id(first.value))
    return found


def revision_strings() -> set[tuple[str, str]]:
    """(module, revision name) for each string in code, not docstrings, naming a revision.

    Comments and docstrings may say which revision brought a feature: that documents
    the code. A string the code acts on or shows (a constant, a message) may not.
    """
    found: set[tuple[str, str]] = set()
    for name, module in modules().items():
        if name == REVISION_TABLE:
            continue
        skip = docstrings(module.tree)
        for node in ast.walk(module.tree):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and id(node) not in skip
            ):
                found.update((name, date) for date in REVISION_NAME.findall(node.value))
    return found


def test_the_revision_table_names_the_revisions() -> None:
    from mcpactor.protocol import REVISIONS

    assert REVISION_TABLE in modules()
    assert all(REVISION_NAME.fullmatch(version) for version in REVISIONS)


def test_no_revision_is_named_outside_the_revision_table() -> None:
    found = revision_strings()
    new = found - set(KNOWN_REVISION_STRINGS)
    assert not new, f"revision names outside {REVISION_TABLE}: {sorted(new)}"
    moved = set(KNOWN_REVISION_STRINGS) - found
    assert not moved, f"gone, remove from KNOWN_REVISION_STRINGS: {sorted(moved)}"


# --- structure budgets (bench/structure.py) ----------------------------------------------

#: The most of each structure figure of ``python bench/structure.py`` the package may have:
#: its figures when the budget was last set, so that none may grow. Lower a budget when
#: the figure falls. The targets (issue 38) are in the comments.
STRUCTURE_BUDGET: dict[str, int] = {
    "cycles": 0,  # target 0 import cycles
    "modules": 0,  # target 0 modules over 600 lines
    "functions": 0,  # target at most 5 functions over 80 lines (an argparse builder may be one)
    "classes": 0,  # target 0 classes over 25 methods, counting their bases
    "jsonrpc_dicts": 0,  # target 0 JSON-RPC messages built as dicts outside protocol/
    "now_twins": 0,  # target 0 synchronous *_now twins of asynchronous paths
    "private_imports": 0,  # target at most 20 imports into another subpackage's private module
}


@functools.cache
def structure() -> ModuleType:
    from .bench_scripts import load_bench_script

    return load_bench_script("structure.py", "bench_structure")


@functools.cache
def structure_sources() -> dict[str, Any]:
    return structure().sources()  # type: ignore[no-any-return]


@functools.cache
def structure_figures() -> dict[str, list[str]]:
    return structure().figures(structure_sources())  # type: ignore[no-any-return]


def test_every_structure_figure_has_a_budget() -> None:
    assert set(STRUCTURE_BUDGET) == set(structure().FIGURES)


@pytest.mark.parametrize("figure", sorted(STRUCTURE_BUDGET))
def test_the_structure_figure_stays_within_its_budget(figure: str) -> None:
    offenders = structure_figures()[figure]
    title = structure().FIGURES[figure][0]
    assert len(offenders) <= STRUCTURE_BUDGET[figure], (
        f"{len(offenders)} {title}, budget {STRUCTURE_BUDGET[figure]}:\n" + "\n".join(offenders)
    )


def test_the_structure_script_and_this_file_see_the_same_cycles() -> None:
    assert set(structure().cycles(structure_sources())) == set(cycles(graph()))


def synthetic_package(root: Path, files: dict[str, str]) -> dict[str, Any]:
    """The structure script's reading of a package made of ``files`` under ``root``."""
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return structure().sources(root / "mcpactor")  # type: ignore[no-any-return]


def test_the_structure_script_counts_methods_of_bases_in_other_modules(tmp_path: Path) -> None:
    many = "".join(f"    def m{i}(self): ...\n" for i in range(20))
    more = "".join(f"    def n{i}(self): ...\n" for i in range(6))
    modules = synthetic_package(
        tmp_path,
        {
            "mcpactor/__init__.py": "",
            "mcpactor/a/__init__.py": "",
            "mcpactor/a/_base.py": f"class Base:\n{many}",
            # Base here is a.Base, not the unrelated Base beside it in this module's package.
            "mcpactor/b/__init__.py": "",
            "mcpactor/b/_other.py": "class Base:\n    def x(self): ...\n",
            "mcpactor/b/_big.py": (
                f"from ..a._base import Base\n\nclass Big(Base):\n{more}\n"
                "class Small(Base):\n    def m0(self): ...\n"
            ),
        },
    )
    assert dict(structure().big_classes(modules)) == {"mcpactor.b._big.Big": 26}
    assert structure().figures(modules)["classes"] == ["mcpactor.b._big.Big 26"]


def test_the_structure_script_finds_json_rpc_dicts_outside_protocol(tmp_path: Path) -> None:
    modules = synthetic_package(
        tmp_path,
        {
            "mcpactor/__init__.py": "",
            "mcpactor/protocol/__init__.py": "ok = {'jsonrpc': '2.0', 'id': 1}\n",
            "mcpactor/runtime/__init__.py": (
                "one = dict(jsonrpc='2.0', id=1)\n"
                "two = {'id': 2, 'jsonrpc': '2.0'}\n"
                "other = {'json': 1, **one}\n"
            ),
        },
    )
    assert list(structure().jsonrpc_dicts(modules)) == [
        ("mcpactor.runtime", 1),
        ("mcpactor.runtime", 2),
    ]


def test_the_structure_script_finds_private_imports_in_every_form(tmp_path: Path) -> None:
    modules = synthetic_package(
        tmp_path,
        {
            "mcpactor/__init__.py": "",
            "mcpactor/_base.py": "",
            "mcpactor/runtime/__init__.py": "from ._metrics import Metrics\n",
            "mcpactor/runtime/_metrics.py": "class Metrics: ...\n",
            "mcpactor/runtime/_peer.py": "from ._metrics import Metrics\n",
            "mcpactor/transports/__init__.py": "",
            "mcpactor/transports/_a.py": "from ..runtime import _metrics\n",
            "mcpactor/transports/_b.py": (
                "def later():\n    from ..runtime._metrics import Metrics\n"
            ),
            "mcpactor/transports/_c.py": "import mcpactor.runtime._peer\n",
            # Through the public __init__, the root's own modules, and its own
            # subpackage: none of these count.
            "mcpactor/transports/_d.py": (
                "from ..runtime import Metrics\nfrom .. import _base\nfrom ._a import x\n"
            ),
        },
    )
    found = {(importer, target) for importer, target, _ in structure().private_imports(modules)}
    assert found == {
        ("mcpactor.transports._a", "mcpactor.runtime._metrics"),
        ("mcpactor.transports._b", "mcpactor.runtime._metrics"),
        ("mcpactor.transports._c", "mcpactor.runtime._peer"),
    }


def test_the_structure_script_finds_cycles_and_twins(tmp_path: Path) -> None:
    modules = synthetic_package(
        tmp_path,
        {
            "mcpactor/__init__.py": "",
            "mcpactor/_a.py": "from . import _b\n",
            "mcpactor/_b.py": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n    from ._c import C\n"
                "def route_now(): ...\n"
            ),
            "mcpactor/_c.py": "def later():\n    from ._a import x\n",
            "mcpactor/_d.py": "from . import _a\n",
        },
    )
    assert structure().cycles(modules) == [
        frozenset({"mcpactor._a", "mcpactor._b", "mcpactor._c"})
    ]
    assert list(structure().now_twins(modules)) == [("mcpactor._b.route_now", 4)]
