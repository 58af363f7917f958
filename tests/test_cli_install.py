"""``mcpactor install``: each client's file, written in a temporary HOME and project.

The dry-run output is checked against a JSON Schema of each client's documented format
(``tests/data/clients/*.schema.json``; each names where its client documents it).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Final

import jsonschema
import pytest

from mcpactor.cli import main

SCHEMAS: Final = Path(__file__).parent / "data" / "clients"
SERVER: Final = "from mcpactor import Server\n\nserver = Server('notes')\n"
# Where each client's file is by default, from HOME (~) or the project (.).
DEFAULT_FILES: Final = {
    "claude-desktop": "~/.config/Claude/claude_desktop_config.json",
    "claude-code": "./.mcp.json",
    "cursor": "~/.cursor/mcp.json",
    "vscode": "./.vscode/mcp.json",
}
KEYS: Final = {"claude-desktop": "mcpServers", "claude-code": "mcpServers", "cursor": "mcpServers"}


@pytest.fixture
def places(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A HOME and a project directory (the current one) with a server file in it."""
    home = tmp_path / "home"
    project = tmp_path / "project"
    home.mkdir()
    project.mkdir()
    (project / "notes.py").write_text(SERVER)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.chdir(project)
    return home, project


def default_file(client: str, home: Path, project: Path) -> Path:
    where = DEFAULT_FILES[client]
    return (home if where.startswith("~") else project) / where[2:]


def run(capsys: pytest.CaptureFixture[str], *arguments: str) -> tuple[int, str, str]:
    status = main(["install", *arguments])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


@pytest.mark.skipif(sys.platform in ("darwin", "win32"), reason="the Linux default paths")
@pytest.mark.parametrize("client", sorted(DEFAULT_FILES))
def test_dry_run_prints_what_the_client_documents(
    places: tuple[Path, Path], capsys: pytest.CaptureFixture[str], client: str
) -> None:
    home, project = places
    status, out, _ = run(capsys, client, "notes.py", "--env", "NOTES_DIR=/srv/notes", "--dry-run")
    assert status == 0
    config = json.loads(out)
    schema = json.loads((SCHEMAS / f"{client}.schema.json").read_text())
    jsonschema.validate(config, schema)
    entry = config[KEYS.get(client, "servers")]["notes"]
    assert entry["command"] == sys.executable
    assert entry["args"] == ["-m", "mcpactor", "serve", str(project / "notes.py")]
    assert entry["env"] == {"NOTES_DIR": "/srv/notes"}
    assert ("type" in entry) == (client in ("claude-code", "vscode"))
    # Printed, not written.
    assert not default_file(client, home, project).exists()


@pytest.mark.skipif(sys.platform in ("darwin", "win32"), reason="the Linux default paths")
@pytest.mark.parametrize("client", sorted(DEFAULT_FILES))
def test_written_where_the_client_reads_and_idempotent(
    places: tuple[Path, Path], capsys: pytest.CaptureFixture[str], client: str
) -> None:
    home, project = places
    status, _, err = run(capsys, client, "notes.py")
    assert status == 0
    path = default_file(client, home, project)
    assert f"{path}: wrote 'notes' ({client})" in err
    written = path.read_bytes()
    before = path.stat()
    status, _, err = run(capsys, client, "notes.py")
    assert status == 0
    assert "'notes' is already there, unchanged" in err
    assert path.read_bytes() == written
    # Not even rewritten.
    assert path.stat().st_ino == before.st_ino
    assert path.stat().st_mtime_ns == before.st_mtime_ns
    # No temporary file left beside it.
    assert [p.name for p in path.parent.iterdir() if p.name.startswith(f".{path.name}")] == []


def test_other_entries_and_keys_are_kept_and_the_entry_updated(
    places: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    _, project = places
    path = project / "claude.json"
    existing: dict[str, Any] = {
        "globalShortcut": "Ctrl+Space",
        "mcpServers": {
            "other": {"command": "node", "args": ["other.js"]},
            "notes": {"command": "python3", "args": ["old.py"], "env": {"KEY": "kept"}, "x": 1},
        },
    }
    path.write_text(json.dumps(existing, indent=4) + "\n")
    path.chmod(0o600)
    status, _, _ = run(capsys, "claude-desktop", "notes.py", "--config-file", str(path))
    assert status == 0
    text = path.read_text()
    # Its indentation, its mode.
    assert text.startswith('{\n    "globalShortcut": "Ctrl+Space",\n')
    assert path.stat().st_mode & 0o777 == 0o600
    config = json.loads(text)
    assert list(config) == ["globalShortcut", "mcpServers"]
    assert config["mcpServers"]["other"] == {"command": "node", "args": ["other.js"]}
    assert config["mcpServers"]["notes"] == {
        "command": sys.executable,
        "args": ["-m", "mcpactor", "serve", str(project / "notes.py")],
        "env": {"KEY": "kept"},
        "x": 1,
    }
    # --env replaces the entry's environment.
    status, _, _ = run(
        capsys, "claude-desktop", "notes.py", "--config-file", str(path), "--env", "A=b"
    )
    assert json.loads(path.read_text())["mcpServers"]["notes"]["env"] == {"A": "b"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{\n  "mcpServers": {,\n}\n', "claude.json:2:18: not valid JSON (Expecting "),
        ("[1, 2]\n", "claude.json: expected a JSON object, got list"),
        ('{"mcpServers": []}\n', "claude.json: mcpServers: expected an object of servers"),
    ],
)
def test_a_file_that_is_not_a_config_is_named_and_left_alone(
    places: tuple[Path, Path], capsys: pytest.CaptureFixture[str], text: str, expected: str
) -> None:
    _, project = places
    path = project / "claude.json"
    path.write_text(text)
    status, out, err = run(capsys, "claude-code", "notes.py", "--config-file", str(path))
    assert status == 2
    assert out == ""
    assert expected in err
    assert "left as it is" in err
    assert "Traceback" not in err
    assert path.read_text() == text
    assert sorted(p.name for p in project.iterdir()) == ["claude.json", "notes.py"]


def test_scopes_names_and_modules(
    places: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    home, project = places
    assert run(capsys, "claude-code", "notes.py", "--scope", "user")[0] == 0
    assert "notes" in json.loads((home / ".claude.json").read_text())["mcpServers"]
    assert run(capsys, "cursor", "notes.py", "--scope", "project", "--name", "mine")[0] == 0
    assert "mine" in json.loads((project / ".cursor" / "mcp.json").read_text())["mcpServers"]
    status, _, err = run(capsys, "claude-desktop", "notes.py", "--scope", "project")
    assert status == 2
    assert "--scope: claude-desktop has no project scope" in err
    # A module of the current directory is found from wherever the client starts it.
    status, out, _ = run(capsys, "vscode", "notes:server", "--dry-run")
    entry = json.loads(out)["servers"]["notes"]
    assert entry["args"][-1] == "notes:server"
    assert entry["env"] == {"PYTHONPATH": str(project)}
    # A plugin is named after itself and needs nothing more.
    status, out, _ = run(capsys, "cursor", "clock", "--dry-run")
    assert json.loads(out)["mcpServers"]["clock"]["env"] == {}
    status, _, err = run(capsys, "cursor", "clock", "--env", "oops")
    assert status == 2
    assert "--env expects KEY=VALUE, got 'oops'" in err
