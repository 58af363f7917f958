"""What of protocol/ a plain stdio session builds: not the wire types some sessions use.

A server whose tools return text, answering one ``initialize`` and one ``tools/call``
over stdio, must not build the content and result classes, the descriptive wire types
(``Implementation``, ``ToolAnnotations``, ``Completion``), the framer's over-long-line
report, the server→client request types or the listen filters: each loads with its
first use.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

#: modules of protocol/ a plain session must not load
DEFERRED = (
    "mcpactor.protocol._types",
    "mcpactor.protocol._described",
    "mcpactor.protocol._too_long",
    "mcpactor.protocol._client_types",
    "mcpactor.protocol._listen",
)

_TARGET = """\
import atexit, json, os, sys

from mcpactor import Server

server = Server("start-up")


@server.tool()
def echo(text: str) -> str:
    return text


def _dump() -> None:
    with open(os.environ["PROBE_OUT"], "w") as file:
        json.dump(sorted(sys.modules), file)


atexit.register(_dump)
"""


_ECHO_HI = {"name": "echo", "arguments": {"text": "hi"}}


def _line(message: dict[str, object]) -> str:
    return json.dumps({"jsonrpc": "2.0", **message}) + "\n"


def _session(*requests: dict[str, object]) -> str:
    # A 2025-11-25 session's opening, then ``requests``.
    opening = {
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "start-up", "version": "0"},
        },
    }
    messages = (opening, {"method": "notifications/initialized"}, *requests)
    return "".join(map(_line, messages))


def _served_modules(tmp_path: Path, lines: str, source: str = _TARGET) -> tuple[set[str], str]:
    out = tmp_path / "modules.json"
    target = tmp_path / "target.py"
    target.write_text(source, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "mcpactor", "serve", str(target)],
        input=lines,
        capture_output=True,
        text=True,
        env={**os.environ, "PROBE_OUT": str(out)},
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return set(json.loads(out.read_text(encoding="utf-8"))), done.stdout


def test_a_plain_session_builds_no_deferred_wire_type(tmp_path: Path) -> None:
    lines = _session({"id": 2, "method": "tools/call", "params": _ECHO_HI})
    loaded, stdout = _served_modules(tmp_path, lines)
    answers = [json.loads(line) for line in stdout.splitlines()]
    assert [answer["id"] for answer in answers] == [1, 2]
    assert answers[1]["result"]["content"] == [{"type": "text", "text": "hi"}]
    assert "mcpactor.protocol._jsonrpc" in loaded  # the probe saw the served process
    assert sorted(set(DEFERRED) & loaded) == []


def test_an_over_long_line_builds_its_report_on_first_use(tmp_path: Path) -> None:
    # The reader's limit is 4 MiB: one line past it is answered with -32700.
    long_line = (
        '{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"'
        + "a" * (4 * 1024 * 1024)
        + '"}}\n'
    )
    loaded, stdout = _served_modules(tmp_path, long_line)
    answers = [json.loads(line) for line in stdout.splitlines()]
    assert [answer["error"]["code"] for answer in answers] == [-32700]
    assert "mcpactor.protocol._too_long" in loaded


def test_a_result_class_named_by_a_late_annotation_is_still_a_whole_result(
    tmp_path: Path,
) -> None:
    # The annotation is resolved when the tool is registered, and resolving it is what
    # first builds CallToolResult: the tool still gets no output schema, and what it
    # returns is the result as it is.
    source = "from __future__ import annotations\n\n" + _TARGET.replace(
        "from mcpactor import Server\n", "import mcpactor\nfrom mcpactor import Server\n"
    ).replace(
        "def echo(text: str) -> str:\n    return text\n",
        "def echo(text: str) -> mcpactor.CallToolResult:\n"
        "    return mcpactor.CallToolResult(content=[mcpactor.TextContent(text=text)])\n",
    )
    assert "mcpactor.CallToolResult" in source
    lines = _session(
        {"id": 2, "method": "tools/list"}, {"id": 3, "method": "tools/call", "params": _ECHO_HI}
    )
    loaded, stdout = _served_modules(tmp_path, lines, source)
    answers = {answer["id"]: answer for answer in map(json.loads, stdout.splitlines())}
    (tool,) = answers[2]["result"]["tools"]
    assert "outputSchema" not in tool
    assert answers[3]["result"] == {"content": [{"type": "text", "text": "hi"}]}
    assert "mcpactor.protocol._types" in loaded
