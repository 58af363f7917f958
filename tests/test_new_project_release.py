"""A plugin made by ``mcpactor new``, and the bundled ones, as users install and launch them.

Once per module: wheels of this checkout's mcpactor and bundled plugins are built, and
installed alone into a new virtual environment, offline (``pip install --no-index``
from those wheels and their dependencies' wheels, which ``pip download`` fetches first,
from the machine's own package copies where pip is configured with some). That
environment's ``mcpactor new plugin`` writes a project into an empty folder (the
templates come from the installed wheel), ``python -m build`` builds it, and its wheel
is installed beside the rest.

Then the project passes its own tests, ruff and ``mypy --strict`` against the installed
packages; every wheel carries its licence, the README's ``mcp-name:`` line and a console
script named after the distribution; and each ``server.json`` launches its server as a
client would (``uvx IDENTIFIER``: the console script of that name), which answers
``initialize`` and ``tools/list`` over stdio.
"""

from __future__ import annotations

import configparser
import email
import json
import os
import re
import shlex
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Final, NamedTuple

import jsonschema
import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from .launching import list_tools_over_stdio, required_settings

ROOT: Final = Path(__file__).resolve().parents[1]
PLUGINS: Final = sorted(path.parent for path in (ROOT / "plugins").glob("*/pyproject.toml"))
SCHEMA: Final = json.loads((ROOT / "tests" / "data" / "server.schema.json").read_text())
#: the project ``mcpactor new`` makes here: its distribution and plugin names
NEW: Final = "mcpactor-kit-check"
NEW_PLUGIN: Final = "kit-check"
NAMESPACE: Final = "io.github.mcpactor-tests"
# Ten minutes for a build or an install on a loaded machine; a hang fails the test.
TIMEOUT: Final = 600


class Release(NamedTuple):
    """What the module's fixture built and installed."""

    #: the wheels (and the new project's sdist) of this checkout and of the new project
    built: Path
    #: the new virtual environment
    venv: Path
    #: the project ``mcpactor new plugin`` wrote
    project: Path
    #: a folder with nothing in it, to run things from
    empty: Path

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    def wheel(self, distribution: str) -> Path:
        (found,) = self.built.glob(f"{distribution.replace('-', '_')}-*.whl")
        return found


def _clean_env(**extra: str) -> dict[str, str]:
    # Nothing of the checkout may be imported by accident.
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    env.update(extra)
    return env


def _run(command: Sequence[str | Path], cwd: Path | None = None, **env: str) -> str:
    done = subprocess.run(
        [str(part) for part in command],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=_clean_env(**env),
        timeout=TIMEOUT,
        check=False,
    )
    shown = shlex.join(str(part) for part in command)
    assert done.returncode == 0, (
        f"{shown} exited with {done.returncode}:\n{done.stdout}\n{done.stderr}"
    )
    return done.stdout


def _build(project: Path, outdir: Path, *, wheel_only: bool) -> None:
    options = ["--wheel"] if wheel_only else []
    _run([sys.executable, "-m", "build", *options, "--outdir", outdir, project])


def _requirements(wheel: Path, ours: set[str], extras: Sequence[str] = ()) -> list[str]:
    """What ``wheel`` requires (with ``extras``), less the distributions built here."""
    with zipfile.ZipFile(wheel) as archive:
        (name,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        metadata = email.message_from_bytes(archive.read(name))
    wanted = []
    for text in metadata.get_all("Requires-Dist") or []:
        requirement = Requirement(text)
        if canonicalize_name(requirement.name) in ours:
            continue
        marker = requirement.marker
        if marker is None or any(marker.evaluate({"extra": extra}) for extra in ("", *extras)):
            # Decided here, for this interpreter and these extras: pip is given it plain.
            requirement.marker = None
            wanted.append(str(requirement))
    return wanted


def _local_indexes() -> list[str]:
    """The package indexes pip is configured with that are folders of this machine."""
    listed = _run([sys.executable, "-m", "pip", "config", "list"])
    found: list[str] = []
    for line in listed.splitlines():
        match = re.fullmatch(r"[^=]*\.(?:extra-)?index-url='(.*)'", line.strip())
        if match:
            found += [url for url in match.group(1).split() if url.startswith("file:")]
    return list(dict.fromkeys(found))


def _download(requirements: Sequence[str], dest: Path) -> None:
    # Wheels of the dependencies: from the machine's own copies of the index where pip has
    # some and they hold every one, else as pip is configured (the package index).
    command = [
        sys.executable, "-m", "pip", "download", "--quiet", "--only-binary=:all:",
        "--dest", str(dest), *requirements,
    ]  # fmt: skip
    local = _local_indexes()
    if local:
        first, *others = local
        extra = [option for url in others for option in ("--extra-index-url", url)]
        done = subprocess.run(
            [*command, "--index-url", first, *extra],
            capture_output=True,
            env=_clean_env(),
            timeout=TIMEOUT,
            check=False,
        )
        if done.returncode == 0:
            return
    _run(command)


def _install(release_python: Path, links: Sequence[Path], *requirements: str) -> None:
    # Offline: only the wheels built or downloaded here.
    finds = [option for link in links for option in ("--find-links", str(link))]
    _run([release_python, "-m", "pip", "install", "--quiet", "--no-index", *finds, *requirements])


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> Release:
    """This checkout's release installed alone, and a project ``mcpactor new`` made there."""
    work = tmp_path_factory.mktemp("release")
    built, deps, empty, projects = (work / name for name in ("built", "deps", "empty", "new"))
    for folder in (empty, projects):
        folder.mkdir()
    with ThreadPoolExecutor(max_workers=3) as pool:
        builds = [
            pool.submit(_build, project, built, wheel_only=True) for project in [ROOT, *PLUGINS]
        ]
        venv = work / "venv"
        pool.submit(_run, [sys.executable, "-m", "venv", venv]).result()
        for build in builds:
            build.result()
    ours = {canonicalize_name(path.name.split("-")[0]) for path in built.glob("*.whl")}
    ours.add(canonicalize_name(NEW))
    _download(
        sorted({r for wheel in built.glob("*.whl") for r in _requirements(wheel, ours)}), deps
    )
    release = Release(built, venv, projects / NEW, empty)
    distributions = ["mcpactor", *(plugin.name for plugin in PLUGINS)]
    _install(release.python, [built, deps], *distributions)

    # `mcpactor new` of the installed wheel, in an empty folder, then the author's build.
    _run([venv / "bin" / "mcpactor", "new", "plugin", NEW, "--namespace", NAMESPACE], cwd=projects)
    _build(release.project, built, wheel_only=False)
    _download(_requirements(release.wheel(NEW), ours, extras=["test"]), deps)
    _install(release.python, [built, deps], f"{NEW}[test]")
    return release


def test_mcpactor_is_the_wheel_of_this_checkout(release: Release) -> None:
    where = _run(
        [release.python, "-c", "import mcpactor; print(mcpactor.__file__)"], release.empty
    )
    assert Path(where.strip()).is_relative_to(release.venv)


def test_the_new_project_passes_its_own_tests(release: Release) -> None:
    # Against the installed wheel: the src/ layout keeps the folder's copy off the path.
    outcome = _run(
        [release.python, "-m", "pytest", "-q", "-p", "no:cacheprovider"], release.project
    )
    assert re.search(r"\b5 passed\b", outcome), outcome


def test_the_new_project_passes_ruff_and_mypy(release: Release, tmp_path: Path) -> None:
    project = release.project
    _run([sys.executable, "-m", "ruff", "check", "--no-cache", "."], project)
    _run([sys.executable, "-m", "ruff", "format", "--check", "--no-cache", "."], project)
    # Strict (its pyproject.toml says so), with mcpactor and pytest as installed there.
    checked = _run(
        [sys.executable, "-m", "mypy", "--python-executable", release.python,
         "--cache-dir", tmp_path / "mypy"],
        project,
    )  # fmt: skip
    assert "Success: no issues found in 3 source files" in checked


def test_the_new_projects_sdist_holds_what_its_tests_read(release: Release) -> None:
    (sdist,) = release.built.glob(f"{NEW.replace('-', '_')}-*.tar.gz")
    with tarfile.open(sdist) as archive:
        names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    module = NEW.replace("-", "_")
    assert {
        "LICENSE",
        "README.md",
        "pyproject.toml",
        "server.json",
        f"src/{module}/__init__.py",
        f"src/{module}/__main__.py",
        f"src/{module}/py.typed",
        f"tests/test_{module}.py",
    } <= names


def _server_json(distribution: str, release: Release) -> dict[str, Any]:
    folder = release.project if distribution == NEW else ROOT / "plugins" / distribution
    document: dict[str, Any] = json.loads((folder / "server.json").read_text(encoding="utf-8"))
    return document


DISTRIBUTIONS: Final = [NEW, *(plugin.name for plugin in PLUGINS)]


@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
def test_a_wheel_carries_its_licence_mcp_name_and_console_script(
    release: Release, distribution: str
) -> None:
    module = distribution.replace("-", "_")
    with zipfile.ZipFile(release.wheel(distribution)) as archive:
        names = archive.namelist()
        (info,) = {name.split("/")[0] for name in names if ".dist-info/" in name}
        licence = archive.read(f"{info}/licenses/LICENSE").decode()
        metadata = email.message_from_bytes(archive.read(f"{info}/METADATA"))
        entry_points = configparser.ConfigParser(delimiters=("=",))
        entry_points.read_string(archive.read(f"{info}/entry_points.txt").decode())
    assert licence.startswith("MIT License\n")
    description = str(metadata.get_payload())
    assert f"mcp-name: {_server_json(distribution, release)['name']}" in description
    assert dict(entry_points["console_scripts"]) == {distribution: f"{module}.__main__:main"}
    assert len(entry_points["mcpactor.servers"]) == 1


def test_the_new_server_json_is_valid_for_the_registry(release: Release) -> None:
    document = _server_json(NEW, release)
    jsonschema.Draft7Validator(
        SCHEMA, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER
    ).validate(document)
    assert document["$schema"] == SCHEMA["$id"]
    assert document["name"] == f"{NAMESPACE}/{NEW_PLUGIN}"


@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
def test_server_json_launches_the_server_as_a_client_does(
    release: Release, distribution: str, tmp_path: Path
) -> None:
    document = _server_json(distribution, release)
    (package,) = document["packages"]
    # `uvx IDENTIFIER ARGUMENTS`: the console script IDENTIFIER of the package installed
    # alone; here, of the environment where it is installed.
    assert package["registryType"] == "pypi"
    assert package["runtimeHint"] == "uvx"
    arguments = [argument["value"] for argument in package.get("packageArguments", [])]
    command = [str(release.venv / "bin" / package["identifier"]), *arguments]
    env = _clean_env(HOME=str(tmp_path), **required_settings(document, tmp_path))
    initialized, tools = list_tools_over_stdio(command, cwd=release.empty, env=env)
    assert initialized["serverInfo"]["version"] == package["version"]
    # Every plugin serves something: tools, or resources (the skills plugin).
    assert tools or "resources" in initialized["capabilities"]
    if distribution == NEW:
        assert initialized["serverInfo"]["name"] == NEW_PLUGIN
        assert tools == ["greet"]


def test_the_console_script_takes_serves_options(release: Release) -> None:
    # --http reaches `mcpactor serve`, which says what serving over HTTP needs: the
    # environment has mcpactor without its http extra.
    done = subprocess.run(
        [release.venv / "bin" / NEW, "--http", "127.0.0.1:0"],
        capture_output=True,
        text=True,
        cwd=release.empty,
        env=_clean_env(),
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    assert "pip install 'mcpactor[http]'" in done.stderr
    version = _run([release.venv / "bin" / NEW, "--version"], release.empty)
    assert version.startswith(f"{NEW} 0.1.0 (the plugin '{NEW_PLUGIN}' of mcpactor ")
