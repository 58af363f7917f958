"""``mcpactor install``: each client's file, written in a temporary HOME and project.

What is written is checked against a JSON Schema of each client's documented format
(``tests/data/clients/*.schema.json``; each names where its client documents it), then
started as the client would start it: the command, arguments and environment read back
from the file (by a reader of that format, not mcpactor's), with a clean environment,
and asked for its tools.
"""

from __future__ import annotations

import json
import os
import re
import sys
import tomllib
from pathlib import Path
from typing import Any, Final

import jsonschema
import pytest
import trio
import yaml

from mcpactor.cli import main
from mcpactor.cli._install import CLIENTS
from mcpactor.client import connect_stdio

ROOT: Final = Path(__file__).resolve().parents[1]
SCHEMAS: Final = Path(__file__).parent / "data" / "clients"
SERVER: Final = (
    "from mcpactor import Server\n\nserver = Server('notes')\n\n\n"
    "@server.tool()\ndef jot(text: str) -> str:\n    '''Note it.'''\n    return text\n"
)
#: every client with a file of its own
FILE_CLIENTS: Final = [name for name in CLIENTS if name != "generic"]
# Where each client's file is by default on Linux, from HOME (~) or the project (.).
DEFAULT_FILES: Final = {
    "claude-desktop": "~/.config/Claude/claude_desktop_config.json",
    "claude-code": "./.mcp.json",
    "cursor": "~/.cursor/mcp.json",
    "vscode": "./.vscode/mcp.json",
    "gemini-cli": "~/.gemini/settings.json",
    "goose": "~/.config/goose/config.yaml",
    "windsurf": "~/.codeium/windsurf/mcp_config.json",
    "zed": "~/.config/zed/settings.json",
    "codex": "~/.codex/config.toml",
    "kiro": "~/.kiro/settings/mcp.json",
}
#: the environment a client gives the servers it starts here: the least a desktop
#: client passes on (the path and home), and the machine's certificates for uv
REAL_HOME: Final = os.environ.get("HOME", "/")
CERTS: Final = os.environ.get("SSL_CERT_FILE") or os.environ.get("PIP_CERT")
#: seconds a server started as a client would gets to answer (uv may build one first)
TIMEOUT: Final = 120


@pytest.fixture
def places(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A HOME and a project directory (the current one) with a server file in it."""
    home = tmp_path / "home"
    project = tmp_path / "project"
    home.mkdir()
    project.mkdir()
    (project / "notes.py").write_text(SERVER)
    monkeypatch.setenv("HOME", str(home))
    for name in ("XDG_CONFIG_HOME", "CODEX_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(project)
    return home, project


def default_file(client: str, home: Path, project: Path) -> Path:
    where = DEFAULT_FILES[client]
    return (home if where.startswith("~") else project) / where[2:]


def run(capsys: pytest.CaptureFixture[str], *arguments: str) -> tuple[int, str, str]:
    # install loads the target in this process, as serve would; what that imported (a
    # project's "notes") is this call's, not the next test's.
    before = set(sys.modules)
    try:
        status = main(["install", *arguments])
    finally:
        here = os.getcwd() + os.sep
        for name in set(sys.modules) - before:
            if (getattr(sys.modules[name], "__file__", None) or "").startswith(here):
                del sys.modules[name]
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def read_config(client: str, text: str) -> Any:
    """What the client reads in ``text``, by a reader of its own format."""
    kind = CLIENTS[client].format
    if kind == "toml":
        return tomllib.loads(text)
    if kind == "yaml":
        return yaml.safe_load(text)
    if kind == "jsonc":
        # The fixtures' comments hold no quote; trailing commas close objects.
        text = re.sub(r"(^|\s)//[^\"\n]*$", "", text, flags=re.M)
        text = re.sub(r",(\s*[}\]])", r"\1", text)
    return json.loads(text)


def validate(client: str, config: Any) -> None:
    schema = json.loads((SCHEMAS / f"{client}.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.validate(config, schema)


def entry_of(client: str, config: Any, name: str) -> dict[str, Any]:
    entry = config[CLIENTS[client].key][name]
    assert isinstance(entry, dict)
    return entry


def launch_of(client: str, config: Any, name: str) -> tuple[list[str], dict[str, str]]:
    """The command line and environment the client starts the server ``name`` with."""
    entry = entry_of(client, config, name)
    if CLIENTS[client].shape == "goose":
        command, args, env = entry["cmd"], entry.get("args", []), entry.get("envs", {})
    else:
        command, args, env = entry["command"], entry.get("args", []), entry.get("env", {})
    clean = {"PATH": os.environ["PATH"], "HOME": REAL_HOME}
    if CERTS:
        clean["SSL_CERT_FILE"] = CERTS
    return [command, *args], {**clean, **env}


async def tools_answered(argv: list[str], env: dict[str, str], cwd: Path) -> list[str]:
    """Start ``argv`` as a client would and return the names ``tools/list`` answers."""
    with trio.fail_after(TIMEOUT):
        async with connect_stdio(argv, env=env, cwd=cwd, initialize=True) as client:
            answer = await client.request("tools/list", {})
    return [tool["name"] for tool in answer["tools"]]


# --- every client -------------------------------------------------------------------------


@pytest.mark.skipif(sys.platform in ("darwin", "win32"), reason="the Linux default paths")
@pytest.mark.parametrize("client", FILE_CLIENTS)
async def test_written_where_the_client_reads_and_started_as_it_would(
    places: tuple[Path, Path], capsys: pytest.CaptureFixture[str], client: str
) -> None:
    home, project = places
    status, _, err = run(capsys, client, "notes.py", "--env", "NOTES_DIR=/srv/notes")
    assert status == 0, err
    path = default_file(client, home, project)
    assert f"{path}: wrote 'notes' ({client}, --launch venv)" in err
    config = read_config(client, path.read_text())
    validate(client, config)
    argv, env = launch_of(client, config, "notes")
    assert argv == [sys.executable, "-m", "mcpactor", "serve", str(project / "notes.py")]
    assert env["NOTES_DIR"] == "/srv/notes"
    # From a directory of the client's choosing.
    assert await tools_answered(argv, env, home) == ["jot"]
    # Again: nothing to do, and not even rewritten.
    written = path.read_bytes()
    before = path.stat()
    status, _, err = run(capsys, client, "notes.py", "--env", "NOTES_DIR=/srv/notes")
    assert status == 0
    assert "'notes' is already there, unchanged" in err
    assert path.read_bytes() == written
    assert path.stat().st_ino == before.st_ino
    assert path.stat().st_mtime_ns == before.st_mtime_ns
    # No temporary file left beside it.
    assert [p.name for p in path.parent.iterdir() if p.name.startswith(f".{path.name}")] == []


@pytest.mark.parametrize("client", list(CLIENTS))
def test_print_shows_the_entry_alone_and_writes_nothing(
    places: tuple[Path, Path], capsys: pytest.CaptureFixture[str], client: str
) -> None:
    home, project = places
    options = [] if client == "generic" else ["--print"]
    status, out, err = run(capsys, client, "clock", *options)
    assert status == 0, err
    config = read_config(client, out)
    validate(client, config)
    assert list(config) == [CLIENTS[client].key]
    assert list(config[CLIENTS[client].key]) == ["clock"]
    argv, _ = launch_of(client, config, "clock")
    assert argv == [sys.executable, "-m", "mcpactor", "serve", "clock"]
    assert list(home.iterdir()) == []
    assert [p.name for p in project.iterdir()] == ["notes.py"]


@pytest.mark.skipif(sys.platform in ("darwin", "win32"), reason="the Linux default paths")
@pytest.mark.parametrize("client", FILE_CLIENTS)
def test_dry_run_prints_the_whole_file_and_writes_nothing(
    places: tuple[Path, Path], capsys: pytest.CaptureFixture[str], client: str
) -> None:
    home, project = places
    status, out, _ = run(capsys, client, "notes.py", "--dry-run")
    assert status == 0
    validate(client, read_config(client, out))
    assert not default_file(client, home, project).exists()


# --- targets that do not load -------------------------------------------------------------

BROKEN: Final = {
    "missing": ("missing.py", None, ["'missing.py': no such file 'missing.py'"]),
    "syntax": ("broken.py", "x = 1\ndef oops(:\n", ["broken.py:2: SyntaxError", "def oops(:"]),
    "raises": ("raising.py", "raise RuntimeError('no key')\n", ["RuntimeError: no key"]),
    "no-server": ("empty.py", "x = 1\n", ["found 0 Server objects in 'empty.py'"]),
    "unknown-plugin": (
        "cloc",
        None,
        ["no installed plugin or module named 'cloc'", "installed plugins: ", "clock"],
    ),
}


@pytest.mark.parametrize("client", list(CLIENTS))
@pytest.mark.parametrize("case", list(BROKEN))
def test_a_target_that_does_not_load_is_refused_and_nothing_written(
    places: tuple[Path, Path], capsys: pytest.CaptureFixture[str], client: str, case: str
) -> None:
    _, project = places
    target, source, expected = BROKEN[case]
    if source is not None:
        (project / target).write_text(source)
    path = project / "client-config"
    path.write_text("untouched")
    status, out, err = run(capsys, client, target, "--config-file", str(path))
    assert status == 1
    assert out == ""
    for words in expected:
        assert words in err
    assert "nothing was written" in err
    assert "Traceback" not in err
    assert path.read_text() == "untouched"
    # --no-check writes it all the same, for a launch whose environment has what is missing.
    if client != "generic":
        path.unlink()
        status, _, err = run(capsys, client, target, "--config-file", str(path), "--no-check")
        assert status == 0, err
        assert path.exists()


# --- what the file held -------------------------------------------------------------------

# For each format: a file with other entries, keys and (where the format has them)
# comments, and what must still be in it, byte for byte, after the entry is added.
EXISTING: Final = {
    "claude-desktop": (
        '{\n    "globalShortcut": "Ctrl+Space",\n    "mcpServers": {\n'
        '        "other": {"command": "node", "args": ["other.js"]}\n    }\n}\n'
    ),
    "vscode": (
        '// shared with the team\n{\n\t"inputs": [],\n\t"servers": {\n'
        '\t\t// the docs server\n\t\t"docs": {"type": "stdio", "command": "docs-mcp"},\n'
        "\t},\n}\n"
    ),
    "zed": (
        "// Zed settings\n//\n// For information on how to configure Zed, see the docs.\n"
        '{\n  "theme": "One Dark",\n  "vim_mode": true, // keep\n}\n'
    ),
    "gemini-cli": '{\n  "theme": "GitHub",\n  "mcpServers": {}\n}\n',
    "codex": (
        '# my Codex settings\nmodel = "o3"\n\n[mcp_servers.docs]\ncommand = "docs-mcp"\n'
        '# its token\n[mcp_servers.docs.env]\nTOKEN = "t"\n\n[profiles.fast]\nmodel = "o4"\n'
    ),
    "goose": (
        "GOOSE_PROVIDER: anthropic\nextensions:\n  developer:\n    bundled: true\n"
        "    enabled: true\n    name: developer\n    timeout: 300\n    type: builtin\n"
    ),
}


@pytest.mark.parametrize("client", list(EXISTING))
def test_what_the_file_held_is_kept(
    places: tuple[Path, Path], capsys: pytest.CaptureFixture[str], client: str
) -> None:
    _, project = places
    path = project / "config"
    before = EXISTING[client]
    path.write_text(before)
    path.chmod(0o600)
    old = read_config(client, before)
    status, _, err = run(capsys, client, "notes.py", "--config-file", str(path))
    assert status == 0, err
    text = path.read_text()
    assert path.stat().st_mode & 0o777 == 0o600
    config = read_config(client, text)
    validate(client, config)
    key = CLIENTS[client].key
    # Every other key and entry, as it was.
    assert {k: v for k, v in config.items() if k != key} == {
        k: v for k, v in old.items() if k != key
    }
    assert {k: v for k, v in config[key].items() if k != "notes"} == old.get(key, {})
    assert "notes" in config[key]
    if CLIENTS[client].format != "yaml":
        # Edited in place: the old text is all there, in order, comments included.
        position = 0
        for line in before.splitlines():
            # (an empty object of servers opens to hold the entry)
            found = text.find(line.rstrip(",").replace("{}", "{"), position)
            assert found >= 0, (line, text)
            position = found


def test_an_entry_is_updated_keeping_its_own_keys(
    places: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    _, project = places
    path = project / "claude.json"
    path.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "notes": {"command": "python3", "args": ["old.py"], "env": {"K": "v"}, "x": 1}
                }
            },
            indent=4,
        )
    )
    assert run(capsys, "claude-desktop", "notes.py", "--config-file", str(path))[0] == 0
    assert json.loads(path.read_text())["mcpServers"]["notes"] == {
        "command": sys.executable,
        "args": ["-m", "mcpactor", "serve", str(project / "notes.py")],
        "env": {"K": "v"},
        "x": 1,
    }
    # --env replaces the entry's environment.
    run(capsys, "claude-desktop", "notes.py", "--config-file", str(path), "--env", "A=b")
    assert json.loads(path.read_text())["mcpServers"]["notes"]["env"] == {"A": "b"}


MALFORMED: Final = {
    "json": [
        ('{\n  "a": 1,,\n}\n', ":2:10: not valid JSON (Expecting property name"),
        ("// a comment\n{}\n", ":1:1: not valid JSON (Expecting value)"),
        ("[1, 2]\n", ": expected an object at the top, got list"),
        ('{"KEY": []}\n', ": KEY: expected an object of servers, got list"),
    ],
    "jsonc": [
        ('{\n  // fine\n  "a": 1 "b": 2\n}\n', ":3:10: not valid JSON (comments and trailing"),
        ('{"KEY": "no"}\n', ": KEY: expected an object of servers, got string"),
    ],
    "yaml": [
        ("KEY: [\n", ":2:1: not valid YAML ("),
        ("KEY:\n  - a\n", ": KEY: expected an object of servers, got list"),
        ("a: 1  # a comment\n", ":1: has comments, which writing the file again would lose"),
    ],
    "toml": [
        ("model = \n", ": not valid TOML (Invalid value (at line 1, column 9))"),
        ("KEY = 1\n", ": KEY: expected an object of servers, got int"),
        (
            '[mcp_servers]\nnotes = { command = "x" }\n',
            ": mcp_servers.notes is not written as a [mcp_servers.notes] table",
        ),
    ],
}


@pytest.mark.parametrize("client", FILE_CLIENTS)
def test_a_file_that_is_not_a_config_is_named_and_left_alone(
    places: tuple[Path, Path], capsys: pytest.CaptureFixture[str], client: str
) -> None:
    _, project = places
    path = project / "config"
    key = CLIENTS[client].key
    for text, expected in MALFORMED[CLIENTS[client].format]:
        text, expected = text.replace("KEY", key), expected.replace("KEY", key)
        path.write_text(text)
        status, out, err = run(capsys, client, "notes.py", "--config-file", str(path))
        assert status == 2, (text, err)
        assert out == ""
        assert f"{path}{expected}" in err, (text, err)
        assert "left as it is" in err
        assert "Traceback" not in err
        assert path.read_text() == text
        assert sorted(p.name for p in project.iterdir()) == ["config", "notes.py"]


def test_the_write_is_atomic(
    places: tuple[Path, Path], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, project = places
    path = project / ".mcp.json"
    path.write_text('{"mcpServers": {}}\n')

    def fail(source: str, destination: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", fail)
    status, _, err = run(capsys, "claude-code", "notes.py")
    assert status == 1
    assert "No space left on device" in err
    assert path.read_text() == '{"mcpServers": {}}\n'
    assert sorted(p.name for p in project.iterdir()) == [".mcp.json", "notes.py"]


# --- launches ------------------------------------------------------------------------------


async def test_uvx_and_uv_run_name_no_virtual_environment(
    places: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    home, project = places
    path = project / ".mcp.json"
    run(capsys, "claude-code", "notes.py", "--launch", "uvx", "--from", str(ROOT), "--name", "a")
    (project / "pyproject.toml").write_text(
        '[project]\nname = "notes"\nversion = "0"\nrequires-python = ">=3.11"\n'
    )
    status, _, err = run(
        capsys, "claude-code", "notes.py", "--launch", "uv-run", "--from", str(ROOT), "--name", "b"
    )
    assert status == 0, err
    config = read_config("claude-code", path.read_text())
    validate("claude-code", config)
    assert sys.prefix not in path.read_text()
    served = ["mcpactor", "serve", str(project / "notes.py")]
    assert launch_of("claude-code", config, "a")[0] == ["uvx", "--from", str(ROOT), *served]
    assert launch_of("claude-code", config, "b")[0] == [
        "uv",
        *("run", "--project", str(project), "--with", str(ROOT), *served),
    ]
    for name in ("a", "b"):
        argv, env = launch_of("claude-code", config, name)
        assert await tools_answered(argv, env, home) == ["jot"]


def test_launch_options(places: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    # A plugin's distribution comes along; --with adds more.
    status, out, _ = run(
        capsys, "generic", "clock", "--launch", "uvx", "--with", "tzdata", "--with", "x>1"
    )
    assert status == 0
    assert json.loads(out)["mcpServers"]["clock"] == {
        "command": "uvx",
        "args": [
            *("--from", "mcpactor", "--with", "mcpactor-clock", "--with", "tzdata"),
            *("--with", "x>1", "mcpactor", "serve", "clock"),
        ],
        "env": {},
    }
    status, _, err = run(capsys, "generic", "clock", "--with", "tzdata")
    assert status == 2
    assert "--with and --from go with --launch uvx or uv-run" in err


def test_scopes_names_and_modules(
    places: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    home, project = places
    assert run(capsys, "claude-code", "notes.py", "--scope", "user")[0] == 0
    assert "notes" in json.loads((home / ".claude.json").read_text())["mcpServers"]
    assert run(capsys, "cursor", "notes.py", "--scope", "project", "--name", "mine")[0] == 0
    assert "mine" in json.loads((project / ".cursor" / "mcp.json").read_text())["mcpServers"]
    assert run(capsys, "codex", "notes.py", "--scope", "project")[0] == 0
    assert (
        "notes" in tomllib.loads((project / ".codex" / "config.toml").read_text())["mcp_servers"]
    )
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


# --- the docs page ---------------------------------------------------------------------------


def shown_after(command: str) -> str:
    """What the dev-loop page shows under ``$ command``, up to the end of its block."""
    page = (ROOT / "docs" / "dev-loop.md").read_text()
    return page.split(f"$ {command}\n", 1)[1].split("```", 1)[0]


@pytest.mark.skipif(sys.platform in ("darwin", "win32"), reason="the Linux default paths")
def test_the_dev_loop_page_shows_what_install_does(
    places: tuple[Path, Path], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    home, _ = places
    monkeypatch.chdir(ROOT)
    command = "mcpactor install claude-desktop examples/quickstart.py --env QUICKSTART_GREETING=Hi"
    status, _, err = run(capsys, *command.split()[2:])
    assert status == 0
    assert err.replace(str(home), "/home/me") == shown_after(command)
    command = "mcpactor install claude-desktop cloc"
    status, _, err = run(capsys, *command.split()[2:])
    assert status == 1
    assert err == shown_after(command)
    command = "mcpactor install generic examples/quickstart.py --launch uvx"
    status, out, _ = run(capsys, *command.split()[2:])
    assert status == 0
    assert out.replace(str(ROOT), "/home/me/project") == shown_after(command)
