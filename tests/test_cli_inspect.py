"""``mcpactor inspect``: the bundled clock plugin, asked at every revision in-process."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mcpactor import testing
from mcpactor.cli import main
from mcpactor.plugins import load_plugin
from mcpactor.protocol import REVISIONS

ROOT = Path(__file__).resolve().parents[1]
CLOCK_TOOLS = {"now", "convert", "time_between", "countdown"}


def inspect_json(capsys: pytest.CaptureFixture[str], *arguments: str) -> Any:
    assert main(["inspect", *arguments, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_json_has_every_revision(capsys: pytest.CaptureFixture[str]) -> None:
    report = inspect_json(capsys, "clock")
    assert report["server"]["name"] == "clock"
    assert "IANA time zone" in report["instructions"]
    revisions = report["revisions"]
    assert list(revisions) == list(REVISIONS)
    for version, offered in revisions.items():
        assert {tool["name"] for tool in offered["tools"]} == CLOCK_TOOLS, version
        assert [r["uri"] for r in offered["resources"]] == ["clock://timezones"]
        assert [t["uriTemplate"] for t in offered["resourceTemplates"]] == [
            "clock://now/{+timezone}"
        ]
        assert [p["name"] for p in offered["prompts"]] == ["plan_meeting"]
        for tool in offered["tools"]:
            assert tool["inputSchema"]["type"] == "object"
    # What each revision defines, and nothing it does not.
    assert all("outputSchema" not in tool for tool in revisions["2024-11-05"]["tools"])
    assert all("outputSchema" in tool for tool in revisions["2025-06-18"]["tools"])
    assert "completions" not in revisions["2024-11-05"]["capabilities"]
    assert "tasks" in revisions["2025-11-25"]["capabilities"]
    assert "tasks" not in revisions["2026-07-28"]["capabilities"]
    assert "io.modelcontextprotocol/tasks" in revisions["2026-07-28"]["capabilities"]["extensions"]


async def test_json_is_what_a_client_is_told() -> None:
    import trio

    from mcpactor.cli._inspect import inspect_server

    server = load_plugin("clock")
    report = await inspect_server(server, ["2025-11-25"])
    offered = report["revisions"]["2025-11-25"]
    with trio.fail_after(10):
        async with testing.client(load_plugin("clock"), protocol_version="2025-11-25") as client:
            assert offered["tools"] == await client.list_tools()
            assert offered["prompts"] == await client.list_prompts()
            assert offered["capabilities"] == client.server.capabilities


def test_one_revision(capsys: pytest.CaptureFixture[str]) -> None:
    report = inspect_json(capsys, "clock", "--revision", "2025-03-26")
    assert list(report["revisions"]) == ["2025-03-26"]


def test_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", "clock"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("clock 0.1.0 (Clock)\n")
    lines = text.splitlines()
    capabilities = lines.index("Capabilities")
    assert lines[capabilities + 1].split() == [
        "REVISION", "TOOLS", "RESOURCES", "PROMPTS", "LOGGING", "COMPLETIONS", "MORE"
    ]  # fmt: skip
    assert lines[capabilities + 2].split()[:2] == ["2024-11-05", "listChanged"]
    assert lines[capabilities + 2].endswith("-")
    assert lines[capabilities + 5].endswith("tasks")
    assert "Tools (4, at 2025-11-25)" in lines
    assert "  now(timezone?: string) -> object" in lines
    assert "  convert(time: string, from_zone: string, to_zone: string) -> object" in lines
    (output,) = [line for line in lines if line.startswith('      output: {"type":"object"')][:1]
    assert '"title":"Instant"' in output
    assert "  clock://timezones  timezones  application/json" in lines
    assert "  plan_meeting(time*, from_zone*, to_zone*)" in lines


def test_a_file_target_and_its_failures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "small.py").write_text(
        "from mcpactor import Server\n\nserver = Server('small')\n\n\n"
        "@server.tool()\ndef add(a: int, b: int = 2) -> int:\n    return a + b\n"
    )
    assert main(["inspect", "small.py"]) == 0
    text = capsys.readouterr().out
    assert "  add(a: integer, b?: integer) -> object" in text
    assert "Resources (0)" in text
    (tmp_path / "broken.py").write_text("def oops(:\n")
    assert main(["inspect", "broken.py"]) == 1
    assert "broken.py:1: SyntaxError" in capsys.readouterr().err
    assert main(["inspect", "small.py", "--revision", "1999-01-01"]) == 2
    assert "--revision: expected one of 2024-11-05" in capsys.readouterr().err


def test_the_dev_loop_page_shows_the_table_as_it_is(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    page = (ROOT / "docs" / "dev-loop.md").read_text()
    command = "$ mcpactor inspect examples/quickstart.py\n"
    shown = page.split(command, 1)[1].split("```", 1)[0]
    monkeypatch.chdir(ROOT)
    assert main(["inspect", "examples/quickstart.py"]) == 0
    assert capsys.readouterr().out == shown
