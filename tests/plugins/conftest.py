"""Throwaway plugin distributions, written into a temporary directory put on sys.path.

A distribution here is what pip would leave behind: a package directory and a
``<name>-<version>.dist-info`` with ``METADATA`` and ``entry_points.txt``. No network,
no pip: ``importlib.metadata`` finds it on ``sys.path`` like any installed one.
"""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

#: a plugin that serves one tool, one resource template and one prompt
GOOD_PLUGIN = """
from mcpactor import Server

server = Server("{name}", version="3.1.4")

@server.tool()
def echo(text: str) -> str:
    \"\"\"Say it back.\"\"\"
    return "{name}: " + text

@server.resource("{name}://items/{{item}}")
def item(item: str) -> str:
    return "{name} item " + item

@server.prompt()
def greet(who: str) -> str:
    return "hello " + who
"""


class Site:
    """A directory on sys.path that throwaway distributions are installed into."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.packages: list[str] = []

    def install(
        self,
        distribution: str,
        version: str,
        *,
        entry_points: Mapping[str, str],
        modules: Mapping[str, str],
    ) -> None:
        """Install a distribution declaring ``entry_points`` and providing ``modules``."""
        for module, source in modules.items():
            package = self.root / module
            package.mkdir()
            (package / "__init__.py").write_text(textwrap.dedent(source))
            self.packages.append(module)
        info = self.root / f"{distribution.replace('-', '_')}-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: {distribution}\nVersion: {version}\n"
        )
        lines = ["[mcpactor.servers]", *(f"{k} = {v}" for k, v in entry_points.items())]
        (info / "entry_points.txt").write_text("\n".join(lines) + "\n")

    def install_plugin(self, name: str, *, distribution: str | None = None) -> None:
        """Install a working plugin ``name`` (module ``throwaway_<name>``)."""
        module = f"throwaway_{name}"
        self.install(
            distribution or f"throwaway-{name}",
            "3.1.4",
            entry_points={name: f"{module}:server"},
            modules={module: GOOD_PLUGIN.format(name=name)},
        )


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Site]:
    root = tmp_path / "site"
    root.mkdir()
    monkeypatch.syspath_prepend(str(root))
    installed = Site(root)
    yield installed
    for module in installed.packages:
        for name in [n for n in sys.modules if n == module or n.startswith(module + ".")]:
            del sys.modules[name]
