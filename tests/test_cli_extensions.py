"""``mcpactor inspect`` shows a server's extensions; a plugin enables its own in code."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcpactor.cli import main

PLUGIN = """
from mcpactor import CustomMethod, CustomNotification, Extension, Server


async def search(params, ctx):
    return {"hits": []}


server = Server("catalogue")


@server.tool
def add(a: int, b: int) -> int:
    return a + b


server.extensions.enable(
    Extension(
        "com.example/search",
        settings={"ranking": True},
        requires=["tools"],
        methods=[CustomMethod("com.example/search", search, {"type": "object"})],
        notifications=[CustomNotification("com.example/found")],
        description="Search the catalogue.",
    )
)
"""


@pytest.fixture
def plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "catalogue.py"
    path.write_text(PLUGIN)
    return path


def test_inspect_json_lists_the_extensions_enabled_in_code(
    plugin: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["inspect", "catalogue.py", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    (extension,) = report["extensions"]
    assert extension["identifier"] == "com.example/search"
    assert extension["server"] == "catalogue"
    assert extension["settings"] == {"ranking": True}
    assert extension["requires"] == ["tools"]
    assert [m["name"] for m in extension["methods"]] == ["com.example/search"]
    assert extension["notifications"][0] == {
        "name": "com.example/found",
        "description": "",
        "paramsSchema": {"type": "object"},
        "received": False,
    }
    declared = {"com.example/search": {"ranking": True}}
    assert report["revisions"]["2025-11-25"]["capabilities"]["extensions"] == declared
    assert "extensions" not in report["revisions"]["2025-06-18"]["capabilities"]


def test_inspect_table_shows_them(plugin: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", "catalogue.py"]) == 0
    lines = capsys.readouterr().out.splitlines()
    start = lines.index("Extensions (1)")
    assert lines[start + 1] == '  com.example/search  settings: {"ranking":true}'
    assert "      requires: tools" in lines
    assert "      request com.example/search" in lines
    assert "      notification com.example/found (sent)" in lines


def test_an_unknown_extension_is_refused_by_inspect(
    plugin: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["inspect", "catalogue.py", "--extension", "com.example/none"]) == 2
    error = capsys.readouterr().err
    assert "--extension: extension 'com.example/none' is not installed" in error
