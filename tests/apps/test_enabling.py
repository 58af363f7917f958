"""MCP Apps enabled as any installed extension is: by its identifier, from the command line
(``--extension io.modelcontextprotocol/ui``) and from ``mcpactor.toml``.

mcpactor declares the extension in its own ``mcpactor.extensions`` entry points. The
distribution installed in the shared environment may predate this checkout, so the test
writes the metadata pip writes for those entry points (read from ``pyproject.toml``)
ahead of it on the path, and runs the real ``mcpactor serve``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Final

import pytest
import trio

from mcpactor.client import connect_stdio
from mcpactor.ext import apps

ROOT: Final = Path(__file__).resolve().parents[2]
UI: Final = "io.modelcontextprotocol/ui"
#: seconds for a cold start of a subprocess and its answers
TIMEOUT: Final = 60
VIEW: Final = "ui://plain/view.html"
SERVER: Final = f'''
from mcpactor import Server
from mcpactor.ext import apps

server = Server("plain")
apps.add_ui_resource(server, "{VIEW}", "<!doctype html><html></html>")


@server.tool(meta=apps.ui("{VIEW}"))
async def show() -> str:
    """Show the view."""
    return "shown"
'''
# The view is served at another URI than the tool names.
BROKEN: Final = SERVER.replace(
    f'add_ui_resource(server, "{VIEW}"', 'add_ui_resource(server, "ui://plain/b"'
)


def _entry_points() -> dict[str, str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    points: dict[str, str] = project["project"]["entry-points"]["mcpactor.extensions"]
    return points


def test_mcpactor_declares_the_extension_as_an_entry_point() -> None:
    (target,) = _entry_points().values()
    module, name = target.split(":")
    assert module == "mcpactor.ext.apps"
    assert getattr(apps, name) is apps.extension
    assert apps.extension.identifier == UI


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project folder: the server, and mcpactor's entry points as pip installs them."""
    site = tmp_path / "site" / "mcpactor-0+checkout.dist-info"
    site.mkdir(parents=True)
    (site / "METADATA").write_text("Metadata-Version: 2.1\nName: mcpactor\nVersion: 0+checkout\n")
    lines = [f"{name} = {target}" for name, target in _entry_points().items()]
    (site / "entry_points.txt").write_text("[mcpactor.extensions]\n" + "\n".join(lines) + "\n")
    (tmp_path / "server.py").write_text(SERVER, encoding="utf-8")
    (tmp_path / "broken.py").write_text(BROKEN, encoding="utf-8")
    return tmp_path


def _environment(project: Path) -> dict[str, str]:
    paths = [str(project / "site"), *filter(None, os.environ.get("PYTHONPATH", "").split(":"))]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}


async def _check(command: list[str], project: Path, tool: str) -> None:
    with trio.fail_after(TIMEOUT):
        async with connect_stdio(
            command, env=_environment(project), cwd=project, initialize=True
        ) as session:
            assert session.server.capabilities["extensions"] == {UI: {}}
            tools = {t["name"]: t for t in await session.list_tools()}
            assert tools[tool]["_meta"]["ui"] == {"resourceUri": VIEW}
            read = await session.read_resource(VIEW)
    assert read["contents"][0]["mimeType"] == apps.MIME_TYPE


SERVE: Final = [sys.executable, "-m", "mcpactor", "serve"]


async def test_enabled_from_the_command_line(project: Path) -> None:
    await _check([*SERVE, "server.py", "--extension", UI], project, "show")


async def test_enabled_from_mcpactor_toml(project: Path) -> None:
    (project / "mcpactor.toml").write_text(
        f'extensions = ["{UI}"]\n\n[servers.plain]\ntarget = "server.py:server"\n'
    )
    # Mounted, the tool takes its server's prefix; the view keeps its URI.
    await _check([*SERVE, "--config", "mcpactor.toml"], project, "plain_show")


def test_enabled_from_the_command_line_it_checks_the_views(project: Path) -> None:
    done = subprocess.run(
        [*SERVE, "broken.py", "--extension", UI],
        input="",
        capture_output=True,
        text=True,
        cwd=project,
        env=_environment(project),
        timeout=TIMEOUT,
        check=False,
    )
    assert done.returncode != 0
    assert f"tool 'show' names the view '{VIEW}', which no resource serves" in done.stderr
