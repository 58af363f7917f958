"""Print the package's structure figures: the sizes and doors a reader meets.

Read from the source with ``ast``::

    python bench/structure.py            # the figures
    python bench/structure.py --list     # and every offender under each

The figures: import cycles, modules over 600 lines, functions over 80 lines, classes
over 25 methods (counting the package's own bases), JSON-RPC messages built as dicts
outside ``protocol/``, synchronous ``*_now`` twins, and imports into another
subpackage's private module.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "mcpactor"

MODULE_LINES = 600
FUNCTION_LINES = 80
CLASS_METHODS = 25


def sources(package: Path = PACKAGE) -> dict[str, ast.Module]:
    """Every module of the package by dotted name, parsed."""
    found = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = ast.parse(path.read_text(encoding="utf-8"))
    return found


def line_counts(package: Path = PACKAGE) -> dict[str, int]:
    counts = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        counts[".".join(parts)] = len(path.read_text(encoding="utf-8").splitlines())
    return counts


def long_functions(trees: dict[str, ast.Module]) -> Iterator[tuple[str, int]]:
    for name, tree in trees.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > FUNCTION_LINES:
                    yield f"{name}.{node.name}", length


def classes(trees: dict[str, ast.Module]) -> dict[str, tuple[ast.ClassDef, str]]:
    found = {}
    for name, tree in trees.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                found.setdefault(node.name, (node, name))
                found[f"{name}.{node.name}"] = (node, name)
    return found


def own_methods(node: ast.ClassDef) -> set[str]:
    return {
        item.name for item in node.body if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
    }


def methods_with_bases(
    node: ast.ClassDef, module: str, known: dict[str, tuple[ast.ClassDef, str]]
) -> set[str]:
    names = own_methods(node)
    for base in node.bases:
        base_name = base.id if isinstance(base, ast.Name) else getattr(base, "attr", None)
        if base_name is None:
            continue
        entry = known.get(base_name)
        if entry is not None and entry[0] is not node:
            names |= methods_with_bases(entry[0], entry[1], known)
    return names


def big_classes(trees: dict[str, ast.Module]) -> Iterator[tuple[str, int]]:
    known = classes(trees)
    for name, tree in trees.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                count = len(methods_with_bases(node, name, known))
                if count > CLASS_METHODS:
                    yield f"{name}.{node.name}", count


def jsonrpc_dicts(trees: dict[str, ast.Module]) -> Iterator[tuple[str, int]]:
    """Dict displays with a ``"jsonrpc"`` key outside ``protocol/``."""
    for name, tree in trees.items():
        if name.startswith("mcpactor.protocol"):
            continue
        for node in ast.walk(tree):
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


def now_twins(trees: dict[str, ast.Module]) -> Iterator[tuple[str, int]]:
    for name, tree in trees.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.endswith(
                "_now"
            ):
                yield f"{name}.{node.name}", node.lineno


def subpackage(name: str) -> str:
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else ""


def private_imports(trees: dict[str, ast.Module]) -> Iterator[tuple[str, str, int]]:
    """Imports of another subpackage's private module, once per importer and module.

    A private module is one with a ``_name`` part below its subpackage
    (``mcpactor.runtime._peer``); the package root's own modules
    (``mcpactor._exceptions``) are the base every layer may import.
    """
    seen: set[tuple[str, str]] = set()
    packages = {name for name, tree in trees.items()}
    for name, tree in trees.items():
        is_package = (PACKAGE.parent / name.replace(".", "/") / "__init__.py").exists()
        base_package = name if is_package else name.rpartition(".")[0]
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = base_package.split(".")
                    base = base[: len(base) - node.level + 1]
                    source = ".".join([*base, node.module] if node.module else base)
                else:
                    source = node.module or ""
                targets = [
                    f"{source}.{alias.name}" if f"{source}.{alias.name}" in packages else source
                    for alias in node.names
                ]
            else:
                continue
            for target in targets:
                if not target.startswith("mcpactor.") or target not in packages:
                    continue
                if subpackage(target) == subpackage(name):
                    continue
                parts = target.split(".")
                if len(parts) < 3 or not any(part.startswith("_") for part in parts[2:]):
                    continue
                if (name, target) not in seen:
                    seen.add((name, target))
                    yield name, target, node.lineno


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="list every offender")
    args = parser.parse_args()
    trees = sources()
    counts = line_counts()
    figures: list[tuple[str, list[str]]] = [
        (
            f"modules over {MODULE_LINES} lines",
            [f"{name} {lines}" for name, lines in counts.items() if lines > MODULE_LINES],
        ),
        (
            f"functions over {FUNCTION_LINES} lines",
            [f"{name} {lines}" for name, lines in long_functions(trees)],
        ),
        (
            f"classes over {CLASS_METHODS} methods",
            [f"{name} {count}" for name, count in big_classes(trees)],
        ),
        (
            "JSON-RPC messages built outside protocol/",
            [f"{name}:{line}" for name, line in jsonrpc_dicts(trees)],
        ),
        ("*_now twins", [f"{name}:{line}" for name, line in now_twins(trees)]),
        (
            "imports into another subpackage's private module",
            [f"{name}:{line} -> {target}" for name, target, line in private_imports(trees)],
        ),
    ]
    for title, offenders in figures:
        print(f"{len(offenders):5}  {title}")
        if args.list:
            for offender in sorted(offenders):
                print(f"         {offender}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
