"""The release: one version everywhere, and a ``server.json`` per bundled plugin.

mcpactor and its bundled plugins are released together. Each distribution writes its
version once (``mcpactor/_version.py``, each plugin's ``__init__.py``); this test holds
them equal, and equal to what each plugin's ``server.json`` says and to the range of
mcpactor each plugin depends on. Each ``server.json`` is valid against the MCP registry's
published schema (a copy in ``tests/data``) and names the plugin's own distribution and
entry point.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import re
import sys
import tomllib
from pathlib import Path
from typing import Any, Final

import jsonschema
import pytest
from packaging.requirements import Requirement
from packaging.version import Version

ROOT: Final = Path(__file__).resolve().parents[1]
PLUGINS: Final = sorted(path.parent for path in (ROOT / "plugins").glob("*/pyproject.toml"))
SCHEMA: Final = json.loads((ROOT / "tests" / "data" / "server.schema.json").read_text())
SCHEMA_URL: Final = "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"


def _assigned_version(path: Path) -> str:
    """The string assigned to ``__version__`` in ``path``, read without importing it."""
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if (
            isinstance(node, ast.Assign)
            and [getattr(target, "id", None) for target in node.targets] == ["__version__"]
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            return node.value.value
    raise AssertionError(f"{path} assigns no __version__")


VERSION: Final = _assigned_version(ROOT / "mcpactor" / "_version.py")


def _project(plugin: Path) -> dict[str, Any]:
    project: dict[str, Any] = tomllib.loads((plugin / "pyproject.toml").read_text())["project"]
    return project


def _package(plugin: Path) -> str:
    return str(_project(plugin)["name"]).replace("-", "_")


def _server_json(plugin: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((plugin / "server.json").read_text(encoding="utf-8"))
    return document


def _validator() -> jsonschema.Draft7Validator:
    return jsonschema.Draft7Validator(
        SCHEMA, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER
    )


def test_every_bundled_plugin_is_here() -> None:
    names = [plugin.name for plugin in PLUGINS]
    assert names == [
        "mcpactor-clock",
        "mcpactor-conformance",
        "mcpactor-fs",
        "mcpactor-memory",
        "mcpactor-skills",
        "mcpactor-sqlite",
    ]


def test_the_version_is_a_release_version() -> None:
    version = Version(VERSION)
    assert str(version) == VERSION
    assert not version.is_devrelease


@pytest.mark.parametrize("plugin", PLUGINS, ids=lambda plugin: plugin.name)
def test_a_plugin_has_mcpactors_version(plugin: Path) -> None:
    project = _project(plugin)
    assert project["dynamic"] == ["version"]
    source = plugin / "src" / _package(plugin) / "__init__.py"
    config = tomllib.loads((plugin / "pyproject.toml").read_text())
    assert config["tool"]["hatch"]["version"]["path"] == str(source.relative_to(plugin))
    assert _assigned_version(source) == VERSION


@pytest.mark.parametrize("plugin", PLUGINS, ids=lambda plugin: plugin.name)
def test_a_plugin_depends_on_this_release_line_of_mcpactor(plugin: Path) -> None:
    # From the release it was made with up to the next minor version, where the API may
    # change; mcpactor's own version must be inside the range.
    (dependency,) = (
        Requirement(text)
        for text in _project(plugin)["dependencies"]
        if Requirement(text).name == "mcpactor"
    )
    version = Version(VERSION)
    expected = {f">={VERSION}", f"<{version.major}.{version.minor + 1}"}
    assert {str(spec) for spec in dependency.specifier} == expected
    assert dependency.specifier.contains(version)


@pytest.mark.parametrize("plugin", PLUGINS, ids=lambda plugin: plugin.name)
def test_a_plugins_server_json_is_valid_for_the_registry(plugin: Path) -> None:
    document = _server_json(plugin)
    _validator().validate(document)
    assert document["$schema"] == SCHEMA_URL == SCHEMA["$id"]


@pytest.mark.parametrize("plugin", PLUGINS, ids=lambda plugin: plugin.name)
def test_a_plugins_server_json_names_its_release(plugin: Path) -> None:
    document = _server_json(plugin)
    project = _project(plugin)
    (entry_point,) = project["entry-points"]["mcpactor.servers"]
    (package,) = document["packages"]
    assert document["version"] == package["version"] == VERSION
    assert package["registryType"] == "pypi"
    assert package["identifier"] == project["name"]
    assert package["transport"] == {"type": "stdio"}
    # What a client runs: `uvx DISTRIBUTION`, the console script that serves the plugin
    # (tests/test_plugin_distributions.py checks what it runs).
    assert package["runtimeHint"] == "uvx"
    assert "packageArguments" not in package
    assert project["name"] in project["scripts"]
    assert document["name"] == f"io.github.mcpactor/{entry_point}"


@pytest.mark.parametrize("plugin", PLUGINS, ids=lambda plugin: plugin.name)
def test_a_plugins_server_json_lists_the_settings_it_reads(plugin: Path) -> None:
    document = _server_json(plugin)
    (package,) = document["packages"]
    listed = {variable["name"] for variable in package.get("environmentVariables", [])}
    source = (plugin / "src" / _package(plugin) / "__init__.py").read_text(encoding="utf-8")
    read = set(re.findall(r"\bMCPACTOR_[A-Z_]+\b", source))
    assert listed == read


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.pop("name"), "'name' is a required property"),
        (lambda d: d.update(name="clock"), "does not match"),
        (lambda d: d.update(description="x" * 101), "is too long"),
        (lambda d: d["packages"][0].update(version="latest"), "should not be valid"),
        (lambda d: d["packages"][0].pop("transport"), "'transport' is a required property"),
        (lambda d: d["packages"][0].pop("identifier"), "'identifier' is a required property"),
    ],
)
def test_the_schema_refuses_what_the_registry_refuses(change: Any, message: str) -> None:
    document = _server_json(ROOT / "plugins" / "mcpactor-clock")
    change(document)
    with pytest.raises(jsonschema.ValidationError, match=message):
        _validator().validate(document)


def test_the_copied_schema_is_a_draft_7_schema() -> None:
    jsonschema.Draft7Validator.check_schema(SCHEMA)
    assert SCHEMA["$schema"] == "http://json-schema.org/draft-07/schema#"


def test_the_changelog_keeps_a_changelog() -> None:
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert text.startswith("# Changelog\n")
    assert "[Keep a Changelog]" in text
    releases = re.findall(r"^## \[([^\]]+)\]", text, re.M)
    assert releases, "no release section"
    assert releases[0] in ("Unreleased", VERSION)
    for release in releases[1:]:
        Version(release)  # every later heading names a version


def test_ci_runs_the_release_check() -> None:
    script = ROOT / ".ci" / "release-check"
    assert script.stat().st_mode & 0o111, "release-check is not executable"
    assert "bash .ci/release-check" in (ROOT / ".ci" / "run").read_text()
    assert '"$WORK/src/.ci/release_extras.py" "$DIST"' in script.read_text()


# --- each extra as the docs name it (.ci/release_extras.py, run by the release check) ----

#: an install line of the docs: ``pip install 'mcpactor[http,admin]'``, ``-e '.[http]'``
INSTALL: Final = re.compile(
    r"""pip install (?:-e )?(?:-q )?['"](?:mcpactor|\.)\[([\w,-]+)\]['"]"""
)


@pytest.fixture(scope="module")
def release_extras() -> Any:
    """``.ci/release_extras.py``, loaded as a module."""
    path = ROOT / ".ci" / "release_extras.py"
    spec = importlib.util.spec_from_file_location("release_extras", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while it loads
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    return module


def _combination(requirement: str) -> frozenset[str]:
    return frozenset(Requirement(requirement).extras)


def test_the_release_check_installs_each_extra_alone(release_extras: Any) -> None:
    runtime = release_extras.runtime_extras(ROOT)
    assert runtime == sorted(
        set(
            tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
                "optional-dependencies"
            ]
        )
        - {"test", "docs", "dev"}
    )
    checked = {_combination(requirement) for requirement in release_extras.CASES}
    assert frozenset() in checked  # the base install
    assert {frozenset({extra}) for extra in runtime} <= checked


def test_the_release_check_installs_what_the_docs_tell_users_to(release_extras: Any) -> None:
    runtime = set(release_extras.runtime_extras(ROOT))
    named = {
        (page.relative_to(ROOT), frozenset(found.group(1).split(",")))
        for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("**/*.md"))]
        for found in INSTALL.finditer(page.read_text(encoding="utf-8"))
    }
    # the developer's own extras (tests, docs) are not a server's
    served = {(page, extras) for page, extras in named if extras <= runtime}
    assert {frozenset({"redis"}), frozenset({"http", "admin"})} <= {e for _, e in served}
    checked = {_combination(requirement) for requirement in release_extras.CASES}
    unchecked = sorted(f"{page}: mcpactor[{','.join(sorted(e))}]" for page, e in served
                       if e not in checked)  # fmt: skip
    assert not unchecked, "named by the docs, not installed by .ci/release_extras.py"


def test_the_install_lines_are_found() -> None:
    found = [m.group(1) for m in INSTALL.finditer("""
        pip install 'mcpactor[http,otel]' opentelemetry-distro
        pip install -e '.[http]'
        pip install -e ".[docs]"
        pip install mcpactor-clock
    """)]  # fmt: skip
    assert found == ["http,otel", "http", "docs"]
