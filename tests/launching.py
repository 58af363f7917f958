"""Launching a plugin as an MCP client does, and asking it what it serves over stdio."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["list_tools_over_stdio", "required_settings"]


def required_settings(server_json: Mapping[str, Any], folder: Path) -> dict[str, str]:
    """A value for each setting ``server_json`` marks required, made inside ``folder``."""
    settings: dict[str, str] = {}
    for package in server_json.get("packages", []):
        for variable in package.get("environmentVariables", []):
            if variable.get("isRequired"):
                settings[variable["name"]] = _required_setting(variable["name"], folder)
    return settings


def _required_setting(name: str, folder: Path) -> str:
    # What the required settings of the bundled plugins need to start: somewhere to read.
    if name == "MCPACTOR_FS_ROOTS":
        return str(folder)
    if name == "MCPACTOR_SKILLS_FOLDER":
        skill = folder / "skills" / "hello"
        skill.mkdir(parents=True, exist_ok=True)
        (skill / "SKILL.md").write_text("---\nname: hello\ndescription: Say hello.\n---\n")
        return str(folder / "skills")
    if name == "MCPACTOR_SQLITE_DB":
        path = folder / "empty.db"
        sqlite3.connect(path).close()
        return str(path)
    raise AssertionError(f"no value for the required setting {name}")


def list_tools_over_stdio(
    command: Sequence[str], *, cwd: Path, env: Mapping[str, str]
) -> tuple[dict[str, Any], list[str]]:
    """Start ``command``, initialize it over stdio and list its tools; then close its stdin.

    Returns the ``initialize`` result and the tools' names (none for a server without
    tools). The server must exit with status 0 once its stdin is closed.
    """
    messages = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "launch-check", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]
    done = subprocess.run(
        list(command),
        input="".join(json.dumps(message) + "\n" for message in messages),
        capture_output=True,
        text=True,
        cwd=cwd,
        env=dict(env),
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, f"{command} exited with {done.returncode}:\n{done.stderr}"
    answers = {answer.get("id"): answer for answer in map(json.loads, done.stdout.splitlines())}
    assert set(answers) >= {1, 2}, done.stdout
    initialized: dict[str, Any] = answers[1]["result"]
    if "tools" not in initialized["capabilities"]:
        # A server with no tools (skills are resources) does not serve tools/list.
        assert answers[2]["error"]["code"] == -32601, answers[2]
        return initialized, []
    tools = [tool["name"] for tool in answers[2]["result"]["tools"]]
    return initialized, tools
