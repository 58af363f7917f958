"""Print the package's structure figures: the sizes and doors a reader meets.

Read from the source with ``ast``::

    python bench/structure.py            # the figures
    python bench/structure.py --list     # and every offender under each

The figures: import cycles, modules over 600 lines, functions over 80 lines, classes
over 25 methods (counting the package's own bases), JSON-RPC messages built as dicts
outside ``protocol/``, synchronous ``*_now`` twins, and imports into another
subpackage's private module. ``tests/test_layers.py`` holds them to a budget.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Callable, Collection, Iterator, Mapping
from pathlib import Path
from typing import NamedTuple

PACKAGE = Path(__file__).resolve().parents[1] / "mcpactor"

MODULE_LINES = 600
FUNCTION_LINES = 80
CLASS_METHODS = 25


class Source(NamedTuple):
    """One module of the package, parsed."""

    tree: ast.Module
    is_package: bool
    lines: int


def sources(package: Path = PACKAGE) -> dict[str, Source]:
    """Every module of the package by dotted name (a package by its own name), parsed."""
    found = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts.pop()
        text = path.read_text(encoding="utf-8")
        found[".".join(parts)] = Source(
            ast.parse(text, filename=str(path)), is_package, len(text.splitlines())
        )
    return found


# --- imports ----------------------------------------------------------------------------


def imports(modules: dict[str, Source]) -> Iterator[tuple[str, str, int]]:
    """(importer, imported, line) for every import of one of the package's modules.

    Every import counts: under ``TYPE_CHECKING`` and inside functions as much as at the
    top. ``from package import name`` imports the submodule ``name`` if there is one,
    else a name of the package's ``__init__``.
    """
    for name, source in modules.items():
        package = name if source.is_package else name.rpartition(".")[0]
        for node in ast.walk(source.tree):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")
                    base = base[: len(base) - node.level + 1]
                    origin = ".".join([*base, node.module] if node.module else base)
                else:
                    origin = node.module or ""
                targets = [
                    f"{origin}.{alias.name}" if f"{origin}.{alias.name}" in modules else origin
                    for alias in node.names
                ]
            else:
                continue
            for target in targets:
                if target in modules and target != name:
                    yield name, target, node.lineno


def cycles(modules: dict[str, Source]) -> list[frozenset[str]]:
    """The import cycles: strongly connected components of more than one module."""
    edges: dict[str, set[str]] = {name: set() for name in modules}
    for importer, target, _ in imports(modules):
        edges[importer].add(target)
    return strongly_connected(edges)


def strongly_connected(edges: Mapping[str, Collection[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one node of a graph (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(edges[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component: set[str] = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(frozenset(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def subpackage(name: str) -> str:
    """``runtime`` for ``mcpactor.runtime.http._routing``; a root module is its own."""
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else ""


def private_imports(modules: dict[str, Source]) -> Iterator[tuple[str, str, int]]:
    """Imports of another subpackage's private module, once per importer and module.

    A private module is one with a ``_name`` part below its subpackage
    (``mcpactor.runtime._peer``); the package root's own modules
    (``mcpactor._exceptions``) are the base every layer may import.
    """
    seen: set[tuple[str, str]] = set()
    for name, target, line in imports(modules):
        if subpackage(target) == subpackage(name):
            continue
        parts = target.split(".")
        if len(parts) < 3 or not any(part.startswith("_") for part in parts[2:]):
            continue
        if (name, target) not in seen:
            seen.add((name, target))
            yield name, target, line


# --- sizes ------------------------------------------------------------------------------


def long_functions(modules: dict[str, Source]) -> Iterator[tuple[str, int]]:
    for name, source in modules.items():
        for node in ast.walk(source.tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > FUNCTION_LINES:
                    yield f"{name}.{node.name}", length


def own_methods(node: ast.ClassDef) -> set[str]:
    return {
        item.name for item in node.body if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
    }


class _Classes:
    """The package's classes, to find a class's bases among them."""

    def __init__(self, modules: dict[str, Source]) -> None:
        #: every class with its module, nested ones too
        self.all: list[tuple[str, ast.ClassDef]] = []
        self.by_name: dict[str, ast.ClassDef] = {}
        self.by_module: dict[tuple[str, str], ast.ClassDef] = {}
        #: (module, name) -> the module it imports ``name`` from
        self.imported: dict[tuple[str, str], str] = {}
        for module, source in modules.items():
            package = module if source.is_package else module.rpartition(".")[0]
            for node in ast.walk(source.tree):
                if isinstance(node, ast.ClassDef):
                    self.all.append((module, node))
                    self.by_name.setdefault(node.name, node)
                    self.by_module[module, node.name] = node
                elif isinstance(node, ast.ImportFrom) and node.module is not None:
                    origin = node.module
                    if node.level:
                        base = package.split(".")
                        origin = ".".join([*base[: len(base) - node.level + 1], node.module])
                    for alias in node.names:
                        self.imported[module, alias.asname or alias.name] = origin
        self.module_of = {id(node): module for module, node in self.all}

    def base(self, module: str, base: ast.expr) -> ast.ClassDef | None:
        # The class of that name in the module itself, else in the module it is imported
        # from, else the first class of the package of that name.
        name = base.id if isinstance(base, ast.Name) else getattr(base, "attr", None)
        if name is None:
            return None
        found = self.by_module.get((module, name))
        if found is None and (module, name) in self.imported:
            found = self.by_module.get((self.imported[module, name], name))
        return found if found is not None else self.by_name.get(name)

    def methods(self, node: ast.ClassDef, seen: frozenset[int] = frozenset()) -> set[str]:
        """The class's own methods and those of its bases in the package."""
        names = own_methods(node)
        module = self.module_of[id(node)]
        for expr in node.bases:
            base = self.base(module, expr)
            if base is not None and base is not node and id(base) not in seen:
                names |= self.methods(base, seen | {id(node)})
        return names


def big_classes(modules: dict[str, Source]) -> Iterator[tuple[str, int]]:
    known = _Classes(modules)
    for module, node in known.all:
        count = len(known.methods(node))
        if count > CLASS_METHODS:
            yield f"{module}.{node.name}", count


# --- second doors -----------------------------------------------------------------------


def jsonrpc_dicts(modules: dict[str, Source]) -> Iterator[tuple[str, int]]:
    """Dicts with a ``"jsonrpc"`` key outside ``protocol/``: displays and ``dict(...)``."""
    for name, source in modules.items():
        if name.startswith("mcpactor.protocol"):
            continue
        for node in ast.walk(source.tree):
            if (
                isinstance(node, ast.Dict)
                and any(
                    isinstance(key, ast.Constant) and key.value == "jsonrpc" for key in node.keys
                )
            ) or (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "dict"
                and any(keyword.arg == "jsonrpc" for keyword in node.keywords)
            ):
                yield name, node.lineno


def now_twins(modules: dict[str, Source]) -> Iterator[tuple[str, int]]:
    for name, source in modules.items():
        for node in ast.walk(source.tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.endswith(
                "_now"
            ):
                yield f"{name}.{node.name}", node.lineno


# --- the figures ------------------------------------------------------------------------

#: Each figure by its key (the budgets in tests/test_layers.py use the same keys): its
#: title and its offenders, one line each.
FIGURES: dict[str, tuple[str, Callable[[dict[str, Source]], list[str]]]] = {
    "cycles": ("import cycles", lambda m: [", ".join(sorted(c)) for c in cycles(m)]),
    "modules": (
        f"modules over {MODULE_LINES} lines",
        lambda m: [f"{name} {s.lines}" for name, s in m.items() if s.lines > MODULE_LINES],
    ),
    "functions": (
        f"functions over {FUNCTION_LINES} lines",
        lambda m: [f"{name} {lines}" for name, lines in long_functions(m)],
    ),
    "classes": (
        f"classes over {CLASS_METHODS} methods",
        lambda m: [f"{name} {count}" for name, count in big_classes(m)],
    ),
    "jsonrpc_dicts": (
        "JSON-RPC messages built outside protocol/",
        lambda m: [f"{name}:{line}" for name, line in jsonrpc_dicts(m)],
    ),
    "now_twins": ("*_now twins", lambda m: [f"{name}:{line}" for name, line in now_twins(m)]),
    "private_imports": (
        "imports into another subpackage's private module",
        lambda m: [f"{name}:{line} -> {target}" for name, target, line in private_imports(m)],
    ),
}


def figures(modules: dict[str, Source]) -> dict[str, list[str]]:
    """Every figure's offenders, sorted, by the figure's key."""
    return {key: sorted(count(modules)) for key, (_, count) in FIGURES.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="list every offender")
    args = parser.parse_args()
    for key, offenders in figures(sources()).items():
        print(f"{len(offenders):5}  {FIGURES[key][0]}")
        if args.list:
            for offender in offenders:
                print(f"         {offender}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
