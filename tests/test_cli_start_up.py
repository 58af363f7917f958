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
