"""What each bundled plugin ships besides its code, and the console script that serves it.

A plugin's distribution carries its licence, a README whose ``mcp-name:`` line is the
name its ``server.json`` publishes (the MCP registry looks for it in the package's
description on PyPI), and a console script named after the distribution that serves the
plugin, so that ``uvx DISTRIBUTION`` — how a client launches what ``server.json``
describes — starts it. ``tests/test_new_project_release.py`` builds the wheels and
launches each one; this module reads the sources and runs the script's code in place.
"""

from __future__ import annotations

import ast
import json
import os
import sys
import tomllib
from pathlib import Path
from typing import Any, Final

import pytest

import mcpactor
import mcpactor.cli
from mcpactor.console import serve_plugin
from mcpactor.plugins import load_plugin

from .launching import list_tools_over_stdio, required_settings

ROOT: Final = Path(__file__).resolve().parents[1]
PLUGINS: Final = sorted(path.parent for path in (ROOT / "plugins").glob("*/pyproject.toml"))


def _project(plugin: Path) -> dict[str, Any]:
    project: dict[str, Any] = tomllib.loads((plugin / "pyproject.toml").read_text())["project"]
    return project


def _entry_point(plugin: Path) -> str:
    (name,) = _project(plugin)["entry-points"]["mcpactor.servers"]
    return str(name)


def _server_json(plugin: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((plugin / "server.json").read_text(encoding="utf-8"))
    return document


def test_every_bundled_plugin_is_checked() -> None:
    assert len(PLUGINS) == 6


@pytest.mark.parametrize("plugin", PLUGINS, ids=lambda plugin: plugin.name)
def test_a_plugin_ships_the_projects_licence(plugin: Path) -> None:
    # hatchling puts LICENSE (beside pyproject.toml) into the wheel's .dist-info/licenses
    # and into the sdist; the wheels themselves are read in test_new_project_release.
    assert (plugin / "LICENSE").read_text() == (ROOT / "LICENSE").read_text()
    assert _project(plugin)["license"] == "MIT"


@pytest.mark.parametrize("plugin", PLUGINS, ids=lambda plugin: plugin.name)
def test_a_plugins_readme_names_what_its_server_json_publishes(plugin: Path) -> None:
    readme = (plugin / "README.md").read_text(encoding="utf-8")
    names = [
        line.split("mcp-name:", 1)[1].strip(" ->")
        for line in readme.splitlines()
        if "mcp-name:" in line
    ]
    assert names == [_server_json(plugin)["name"]]
    assert _project(plugin)["readme"] == "README.md"  # what PyPI shows as the description


@pytest.mark.parametrize("plugin", PLUGINS, ids=lambda plugin: plugin.name)
def test_a_plugins_console_script_is_named_after_its_distribution(plugin: Path) -> None:
    project = _project(plugin)
    package = project["name"].replace("-", "_")
    assert project["scripts"] == {project["name"]: f"{package}.__main__:main"}
    # ... and serves the plugin's own entry point, through the one shared helper.
    source = plugin / "src" / package / "__main__.py"
    calls = [
        node
        for node in ast.walk(ast.parse(source.read_text(encoding="utf-8")))
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "serve_plugin"
    ]
    assert [ast.literal_eval(call.args[0]) for call in calls] == [_entry_point(plugin)]


@pytest.mark.parametrize("plugin", PLUGINS, ids=lambda plugin: plugin.name)
def test_a_plugins_server_json_launches_its_console_script(plugin: Path) -> None:
    # `uvx IDENTIFIER ARGS` runs the console script IDENTIFIER; no argument is needed.
    (package,) = _server_json(plugin)["packages"]
    assert package["runtimeHint"] == "uvx"
    assert package["identifier"] in _project(plugin)["scripts"]
    assert package.get("packageArguments", []) == []


# --- the helper the console scripts call ---------------------------------------------


def test_serve_plugin_runs_serve_with_the_scripts_arguments(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[list[str]] = []
    monkeypatch.setattr(mcpactor.cli, "main", lambda argv: seen.append(list(argv)) or 7)
    assert serve_plugin("clock", ["--http", "8000", "-v"]) == 7
    monkeypatch.setattr(sys, "argv", ["mcpactor-clock", "--stateless"])
    assert serve_plugin("clock") == 7
    assert seen == [["serve", "clock", "--http", "8000", "-v"], ["serve", "clock", "--stateless"]]


def test_serve_plugin_says_which_plugin_and_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert serve_plugin("clock", ["--version"]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("mcpactor-clock ")
    assert f"mcpactor {mcpactor.__version__}" in printed


def test_serve_plugin_help_is_serves_help_under_the_plugins_name(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exited:
        serve_plugin("clock", ["--help"])
    assert exited.value.code == 0
    printed = capsys.readouterr().out
    assert printed.startswith("Serves the mcpactor plugin 'clock' as `mcpactor serve clock`")
    assert "usage: mcpactor serve" in printed
    assert "--http" in printed


def test_serve_plugin_refuses_a_wrong_option_as_serve_does(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exited:
        serve_plugin("clock", ["--no-such-option"])
    assert exited.value.code == 2
    assert "--no-such-option" in capsys.readouterr().err


@pytest.mark.parametrize("plugin", PLUGINS, ids=lambda plugin: plugin.name)
def test_python_dash_m_serves_the_plugin_over_stdio(plugin: Path, tmp_path: Path) -> None:
    # The script's own module, run as `python -m PACKAGE` from an empty folder: it answers
    # initialize and tools/list as the plugin.
    package = _project(plugin)["name"].replace("-", "_")
    env = {**os.environ, "HOME": str(tmp_path)}
    env.update(required_settings(_server_json(plugin), tmp_path))
    initialized, tools = list_tools_over_stdio(
        [sys.executable, "-m", package], cwd=tmp_path, env=env
    )
    assert initialized["serverInfo"]["name"] == load_plugin(_entry_point(plugin)).name
    # Every plugin serves something: tools, or resources (the skills plugin).
    assert tools or "resources" in initialized["capabilities"]
