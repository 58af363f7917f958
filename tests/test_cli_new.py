"""``mcpactor new``: the projects it writes, the names it refuses, and what it never overwrites.

A generated server file passes its own tests, ruff and ``mypy --strict`` here; a generated
plugin is built, installed alone and launched as its ``server.json`` says in
``tests/test_new_project_release.py``.
"""

from __future__ import annotations

import contextlib
import datetime
import io
import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any, Final

import jsonschema
import pytest

import mcpactor
from mcpactor.cli import _build_parser, _command_of, _new, main

ROOT: Final = Path(__file__).resolve().parents[1]
SCHEMA: Final = json.loads((ROOT / "tests" / "data" / "server.schema.json").read_text())
TEMPLATES: Final = ROOT / "mcpactor" / "cli" / "_templates"


def new(folder: Path, *argv: str) -> tuple[int, str, str]:
    """``mcpactor new ARGV`` run in ``folder``: status, stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    with (
        contextlib.chdir(folder),
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
    ):
        status = main(["new", *argv])
    return status, out.getvalue(), err.getvalue()


def listing(folder: Path) -> list[str]:
    return sorted(str(path.relative_to(folder)) for path in folder.rglob("*") if path.is_file())


def test_new_parses_as_in_the_full_parser() -> None:
    argv = ["new", "plugin", "mcpactor-weather", "out", "--namespace", "io.github.a", "-v"]
    assert _command_of(argv) == "new"
    assert vars(_build_parser(only="new").parse_args(argv)) == vars(
        _build_parser().parse_args(argv)
    )


def test_a_plugin_is_a_distribution_with_everything_a_release_needs(tmp_path: Path) -> None:
    status, out, err = new(tmp_path, "plugin", "mcpactor-weather", "--namespace", "io.github.a")
    assert (status, err) == (0, "")
    project = tmp_path / "mcpactor-weather"
    assert listing(project) == [
        ".gitignore",
        "LICENSE",
        "README.md",
        "pyproject.toml",
        "server.json",
        "src/mcpactor_weather/__init__.py",
        "src/mcpactor_weather/__main__.py",
        "src/mcpactor_weather/py.typed",
        "tests/test_mcpactor_weather.py",
    ]
    assert "cd mcpactor-weather" in out
    assert "pip install -e '.[dev]'" in out
    for path in project.rglob("*"):
        if path.is_file():
            assert "{{" not in path.read_text(encoding="utf-8"), path

    config = tomllib.loads((project / "pyproject.toml").read_text())
    meta = config["project"]
    assert meta["name"] == "mcpactor-weather"
    # the plugin is the distribution's name less the "mcpactor-" every bundled one has
    assert meta["entry-points"]["mcpactor.servers"] == {"weather": "mcpactor_weather:server"}
    assert meta["scripts"] == {"mcpactor-weather": "mcpactor_weather.__main__:main"}
    assert config["tool"]["hatch"]["version"]["path"] == "src/mcpactor_weather/__init__.py"
    major, minor = (int(part) for part in mcpactor.__version__.split(".")[:2])
    assert meta["dependencies"] == [f"mcpactor>={mcpactor.__version__},<{major}.{minor + 1}"]
    assert config["tool"]["mypy"]["strict"] is True

    document = json.loads((project / "server.json").read_text())
    jsonschema.Draft7Validator(
        SCHEMA, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER
    ).validate(document)
    assert document["$schema"] == SCHEMA["$id"]
    assert document["name"] == "io.github.a/weather"
    (package,) = document["packages"]
    assert package["identifier"] == "mcpactor-weather"
    assert package["runtimeHint"] == "uvx"
    assert "packageArguments" not in package
    assert document["version"] == package["version"] == "0.1.0"
    assert '__version__ = "0.1.0"' in (project / "src/mcpactor_weather/__init__.py").read_text()

    readme = (project / "README.md").read_text()
    assert "<!-- mcp-name: io.github.a/weather -->" in readme
    licence = (project / "LICENSE").read_text()
    assert licence.startswith("MIT License\n")
    assert f"Copyright (c) {datetime.date.today().year} The mcpactor-weather authors" in licence


def test_a_name_without_the_prefix_is_the_plugins_name_too(tmp_path: Path) -> None:
    status, _, err = new(
        tmp_path, "plugin", "weather_tools", "--author", "Ada Lovelace", "--description", "Rain."
    )
    assert (status, err) == (0, "")
    project = tmp_path / "weather_tools"
    meta = tomllib.loads((project / "pyproject.toml").read_text())["project"]
    assert meta["entry-points"]["mcpactor.servers"] == {"weather_tools": "weather_tools:server"}
    assert meta["scripts"] == {"weather_tools": "weather_tools.__main__:main"}
    assert meta["authors"] == [{"name": "Ada Lovelace"}]
    assert meta["description"] == "Rain"
    source = (project / "src/weather_tools/__init__.py").read_text()
    assert "weather-tools://about" in source  # a URI scheme has no '_'
    document = json.loads((project / "server.json").read_text())
    assert document["name"] == "io.github.your-name/weather_tools"
    assert document["title"] == "Weather Tools"


def test_a_server_is_one_file_with_its_test(tmp_path: Path) -> None:
    status, out, err = new(tmp_path, "server", "hello", "elsewhere/hello-server")
    assert (status, err) == (0, "")
    project = tmp_path / "elsewhere" / "hello-server"
    assert listing(project) == [
        ".gitignore",
        "README.md",
        "hello.py",
        "pyproject.toml",
        "test_hello.py",
    ]
    assert "mcpactor serve hello.py" in out


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("Weather", "lowercase: 'weather'"),
        ("9lives", "starting with a letter, got '9lives'"),
        ("weather-", "words joined by '-' or '_'"),
        ("wea--ther", "words joined by '-' or '_'"),
        ("wea.ther", "got 'wea.ther'"),
        ("", "got ''"),
        ("x" * 41, "at most 40 characters, got 41"),
        ("class", "its module 'class' is a Python keyword"),
        ("json", "its module 'json' would hide the standard library's"),
        ("mcpactor", "'mcpactor' is taken by mcpactor itself"),
        ("trio", "a module 'trio' is importable here already"),
        ("clock", "the plugin name 'clock' is taken by mcpactor-clock"),
    ],
)
def test_a_bad_name_is_refused_and_nothing_is_written(
    tmp_path: Path, name: str, message: str
) -> None:
    status, _, err = new(tmp_path, "plugin", name)
    assert status == 2
    assert message in err
    assert err.startswith("mcpactor: NAME: ")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--namespace", "github"], "--namespace: expected a reverse-DNS name"),
        (["--namespace", "io.github.a/b"], "got 'io.github.a/b'"),
        (["--description", "x" * 101], "at most 100 characters, got 101"),
        (["--description", 'say "hi"'], "without quotes, got '\"'"),
        (["--author", "a\\b"], "--author: expected one line of text"),
        (["--author", "two\nlines"], "got '\\n'"),
        (["--author", "  "], "got nothing but spaces"),
        (["--description", " ..."], "got nothing but full stops"),
    ],
)
def test_a_bad_option_is_refused_and_nothing_is_written(
    tmp_path: Path, options: list[str], message: str
) -> None:
    status, _, err = new(tmp_path, "plugin", "mcpactor-weather", *options)
    assert status == 2
    assert message in err
    assert list(tmp_path.iterdir()) == []


def test_a_folder_that_is_not_empty_is_left_as_it_is(tmp_path: Path) -> None:
    (tmp_path / "mcpactor-weather").mkdir()
    (tmp_path / "mcpactor-weather" / "notes.txt").write_text("mine")
    status, _, err = new(tmp_path, "plugin", "mcpactor-weather")
    assert status == 2
    assert "mcpactor-weather is not empty" in err
    assert listing(tmp_path) == ["mcpactor-weather/notes.txt"]
    assert (tmp_path / "mcpactor-weather" / "notes.txt").read_text() == "mine"
    # the current folder, named as "."
    status, _, err = new(tmp_path / "mcpactor-weather", "server", "hello", ".")
    assert status == 2
    assert ". is not empty" in err
    assert listing(tmp_path) == ["mcpactor-weather/notes.txt"]


def test_an_empty_folder_is_written_into(tmp_path: Path) -> None:
    (tmp_path / "here").mkdir()
    status, _, err = new(tmp_path / "here", "plugin", "mcpactor-weather", ".")
    assert (status, err) == (0, "")
    assert (tmp_path / "here" / "pyproject.toml").is_file()
    assert (tmp_path / "here" / "src" / "mcpactor_weather" / "__main__.py").is_file()


def test_a_file_in_the_way_is_refused(tmp_path: Path) -> None:
    (tmp_path / "hello").write_text("mine")
    status, _, err = new(tmp_path, "server", "hello")
    assert status == 2
    assert "hello exists and is not a folder" in err
    assert (tmp_path / "hello").read_text() == "mine"


@pytest.mark.parametrize("existing", [False, True], ids=["new folder", "empty folder"])
def test_a_failure_while_writing_leaves_nothing_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, existing: bool
) -> None:
    def fail_halfway(root: Path, files: dict[str, str]) -> None:
        (root / "README.md").write_text("half")
        (root / "src").mkdir()
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(_new, "_write_files", fail_halfway)
    if existing:
        (tmp_path / "mcpactor-weather").mkdir()
    status, _, err = new(tmp_path, "plugin", "mcpactor-weather")
    assert status == 1
    assert "No space left on device" in err
    if existing:
        assert listing(tmp_path) == []
        assert list((tmp_path / "mcpactor-weather").iterdir()) == []
    else:
        assert list(tmp_path.iterdir()) == []


def test_every_template_belongs_to_a_kind() -> None:
    used = {template for kind in _new.KINDS.values() for template, _ in kind.files if template}
    shipped = {str(path.relative_to(TEMPLATES)) for path in TEMPLATES.rglob("*.tmpl")}
    assert used == shipped


def _checked(command: list[str], cwd: Path, **env: str) -> str:
    done = subprocess.run(
        command,
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, f"{command}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def test_a_server_passes_its_own_tests_ruff_and_mypy(tmp_path: Path) -> None:
    status, _, err = new(tmp_path, "server", "hello")
    assert (status, err) == (0, "")
    project = tmp_path / "hello"
    python = sys.executable
    outcome = _checked([python, "-m", "pytest", "-q", "-p", "no:cacheprovider"], project)
    assert "2 passed" in outcome
    _checked([python, "-m", "ruff", "check", "--no-cache", "."], project)
    _checked([python, "-m", "ruff", "format", "--check", "--no-cache", "."], project)
    cache = str(tmp_path / "mypy-cache")
    assert "Success" in _checked([python, "-m", "mypy", "--cache-dir", cache], project)
    # and serves as its README says
    listed = _checked(
        [
            python,
            "-m",
            "mcpactor",
            "call",
            "--list",
            "--",
            python,
            "-m",
            "mcpactor",
            "serve",
            "hello.py",
        ],
        project,
    )
    tools = [tool["name"] for tool in json.loads(listed)["tools"]]
    assert tools == ["greet"]


@pytest.mark.parametrize("kind", list(_new.KINDS))
def test_the_longest_names_still_pass_ruff(tmp_path: Path, kind: str) -> None:
    name = "a" + "-bcdefghi" * 4 + "jkl"
    assert len(name) == 40
    description = "abcdefghi " * 9 + "abcdefghij"
    assert len(description) == 100
    status, _, err = new(
        tmp_path,
        kind,
        name,
        "--namespace",
        "io.github." + "n" * 39,
        "--description",
        description,
    )
    assert (status, err) == (0, "")
    project = tmp_path / name
    python = sys.executable
    _checked([python, "-m", "ruff", "check", "--no-cache", "."], project)
    _checked([python, "-m", "ruff", "format", "--check", "--no-cache", "."], project)


def test_project_names_says_what_each_field_is() -> None:
    names: dict[str, Any] = _new.project_names("plugin", "mcpactor-weather")
    assert {key: names[key] for key in ("distribution", "module", "plugin", "scheme")} == {
        "distribution": "mcpactor-weather",
        "module": "mcpactor_weather",
        "plugin": "weather",
        "scheme": "weather",
    }
    assert _new.project_names("server", "mcpactor-weather")["plugin"] == "mcpactor-weather"


def test_the_docs_show_what_is_written(tmp_path: Path) -> None:
    # docs/new-project.md shows pyproject.toml in part and server.json whole, for
    # `mcpactor new plugin mcpactor-weather --namespace io.github.alice`.
    page = (ROOT / "docs" / "new-project.md").read_text(encoding="utf-8")
    (toml_block,) = re.findall(r"^```toml\n(.*?)^```", page, re.S | re.M)
    (json_block,) = re.findall(r"^```json\n(.*?)^```", page, re.S | re.M)
    status, _, err = new(tmp_path, "plugin", "mcpactor-weather", "--namespace", "io.github.alice")
    assert (status, err) == (0, "")
    project = tmp_path / "mcpactor-weather"
    assert json.loads(json_block) == json.loads((project / "server.json").read_text())
    shown = tomllib.loads(toml_block)["project"]
    written = tomllib.loads((project / "pyproject.toml").read_text())["project"]
    assert shown == {key: written[key] for key in shown}
