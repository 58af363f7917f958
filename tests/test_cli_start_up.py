"""What ``mcpactor`` builds and imports to start: only the command run, and on stdio no HTTP.

A command line that plainly names its command builds that command's parser only; it must
parse exactly as the full parser does. ``mcpactor serve`` on stdio must not import the
modules of other commands, the HTTP client or the resource server.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mcpactor.cli import _build_parser, _command_of

INITIALIZE = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "start-up", "version": "0"},
        },
    }
)


@pytest.mark.parametrize(
    ("argv", "command"),
    [
        (["serve", "clock"], "serve"),
        (["-v", "serve"], "serve"),
        (["-vvq", "call", "--list"], "call"),
        (["--log-level", "debug", "plugins"], "plugins"),
        (["--log-level=debug", "top", "http://x/"], "top"),
        (["--debug", "--quiet", "dev", "server.py"], "dev"),
        # -h and --version print the top parser's text; abbreviations may mean anything
        (["-h", "serve"], None),
        (["--he", "serve"], None),
        (["--log", "debug", "serve"], None),
        (["--version"], None),
        ([], None),
        (["bogus"], None),
        (["--", "serve"], None),
    ],
)
def test_the_command_is_read_only_when_plain(argv: list[str], command: str | None) -> None:
    assert _command_of(argv) == command


@pytest.mark.parametrize(
    "argv",
    [
        ["serve", "clock", "--grace", "2", "--http", "8000", "--stateless", "-v"],
        ["--log-level", "info", "serve"],
        ["call", "--tool", "now", "--args", '{"zone": "UTC"}', "--", "x"],
        ["plugins", "--json"],
        ["inspect", "clock"],
        ["install", "claude-desktop", "clock"],
        ["top", "http://127.0.0.1:9/", "--token-file", "t", "--once"],
        ["dev", "server.py", "--stdio", "--grace", "1"],
    ],
)
def test_the_command_parses_as_in_the_full_parser(argv: list[str]) -> None:
    command = _command_of(argv)
    assert command is not None
    assert vars(_build_parser(only=command).parse_args(argv)) == vars(
        _build_parser().parse_args(argv)
    )


def test_serving_on_stdio_loads_no_other_command_and_no_http(tmp_path: Path) -> None:
    out = tmp_path / "modules.json"
    target = tmp_path / "probe.py"
    target.write_text(
        "import json, os, sys\n"
        "from mcpactor import Server\n"
        "server = Server('probe')\n"
        "with open(os.environ['PROBE_OUT'], 'w') as file:\n"
        "    json.dump(sorted(sys.modules), file)\n",
        encoding="utf-8",
    )
    done = subprocess.run(
        [sys.executable, "-m", "mcpactor", "serve", str(target)],
        input=INITIALIZE + "\n",
        capture_output=True,
        text=True,
        env={**os.environ, "PROBE_OUT": str(out)},
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert '"result"' in done.stdout
    loaded = set(json.loads(out.read_text(encoding="utf-8")))
    assert "mcpactor.cli._serve" in loaded  # the probe ran where serve loads its target
    unwanted = {
        "mcpactor.cli._dev",
        "mcpactor.cli._inspect",
        "mcpactor.cli._install",
        "mcpactor.cli._top",
        "mcpactor.auth._resource",
        "mcpactor.auth._verifier",
        "mcpactor.transports.http",
        "urllib.request",
        "http.client",
    }
    assert sorted(unwanted & loaded) == []


#: what a command that serves nothing must not import: the event loop, any layer that
#: runs a server, the schema validator, the wire types
_NOT_FOR_HELP = (
    "trio",
    "attrs",
    "cattrs",
    "jsonschema",
    "mcpactor.server",
    "mcpactor.runtime",
    "mcpactor.transports",
    "mcpactor.auth",
    "mcpactor.store",
    "mcpactor.admin",
    "mcpactor.client",
    "mcpactor.config",
)


@pytest.mark.parametrize(
    "argv", [["--version"], ["-v", "--version"], ["serve", "--help"], ["--help"]]
)
def test_version_and_help_import_no_server(argv: list[str]) -> None:
    probe = (
        "import json, runpy, sys\n"
        "sys.argv = ['mcpactor', *sys.argv[1:]]\n"
        "try:\n"
        "    runpy.run_module('mcpactor', run_name='__main__')\n"
        "except SystemExit as exit:\n"
        "    status = exit.code\n"
        "sys.stderr.write(json.dumps([status, sorted(sys.modules)]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, *argv],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    status, loaded = json.loads(done.stderr)
    assert status == 0
    assert done.stdout.startswith("mcpactor " if "--version" in argv else "usage: mcpactor")
    heavy = [
        name
        for name in loaded
        if any(name == top or name.startswith(top + ".") for top in _NOT_FOR_HELP)
    ]
    assert heavy == []


def test_version_says_what_the_parser_says(capsys: pytest.CaptureFixture[str]) -> None:
    from mcpactor.cli import main

    with pytest.raises(SystemExit) as parsed:
        _build_parser().parse_args(["--version"])
    assert parsed.value.code == 0
    said = capsys.readouterr().out
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == said
    assert main(["--debug", "-q", "--version"]) == 0
    assert capsys.readouterr().out == said
