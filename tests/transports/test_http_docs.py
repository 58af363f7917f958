"""docs/http.md says what the code does: its tables, its Python samples, its links.

The samples run as written (the serving one with port 0 in a subprocess, stopped with
SIGTERM as a user would stop it); the option tables are compared with the command-line
parser and with ``HttpOptions``' fields and defaults.
"""

from __future__ import annotations

import argparse
import functools
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any, Final

import attrs
import trio

from mcpactor.cli import _build_parser
from mcpactor.transports import HttpOptions, ServerCardOptions, serve_http
from tests.doc_includes import expanded

from ._cli import first_line
from ._http_client import McpClient, SocketClient
from ._http_server import Probe, asgi_client, make_server

DOC = Path(__file__).resolve().parents[2] / "docs" / "http.md"
TEXT = expanded(DOC)

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "docs", "version": "1"},
    },
}


def _python_sample(containing: str) -> str:
    samples = [s for s in re.findall(r"```python\n(.*?)```", TEXT, re.S) if containing in s]
    assert len(samples) == 1, f"expected one Python sample with {containing!r}"
    return samples[0]


def _table_after(marker: str) -> list[list[str]]:
    # The rows of the first Markdown table after ``marker``, as lists of cells.
    rest = TEXT[TEXT.index(marker) :]
    rows = []
    for line in rest.splitlines()[1:]:
        if line.startswith("|"):
            rows.append([cell.strip() for cell in line.strip("|").split(" | ")])
        elif rows:
            break
    return rows[2:]  # past the header and its rule


def _first_code(cell: str) -> str:
    match = re.search(r"`([^`]*)`", cell)
    assert match is not None, f"no code in {cell!r}"
    return match.group(1)


def _serve_options() -> dict[str, argparse.Action]:
    parser = _build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    serve = commands.choices["serve"]
    group = next(g for g in serve._action_groups if (g.title or "").startswith("HTTP"))
    options = {a.option_strings[0]: a for a in group._group_actions}
    for action in serve._actions:
        if action.option_strings and action.option_strings[0] in (
            "--grace",
            "--max-message-bytes",
            "--no-gc-tuning",
        ):
            options[action.option_strings[0]] = action
    return options


def test_the_command_line_table_lists_every_http_option() -> None:
    documented = [_first_code(row[0]).split()[0] for row in _table_after("## The command line")]
    assert sorted(documented) == sorted(_serve_options())


def test_the_command_line_table_gives_the_parser_defaults() -> None:
    options = _serve_options()
    assert options["--path"].default == "/mcp"
    assert options["--grace"].default == 5.0
    assert options["--max-message-bytes"].default == 4 * 1024 * 1024
    rows = {_first_code(row[0]).split()[0]: row[1] for row in _table_after("## The command line")}
    assert rows["--path"] == "`/mcp`"
    assert rows["--grace"] == "5"
    assert rows["--max-message-bytes"] == "4 MiB"


#: the records a default in the HttpOptions table may name
_RECORDS: Final = {"ServerCardOptions": ServerCardOptions}


def test_the_http_options_table_matches_the_fields_and_defaults() -> None:
    rows = _table_after("`HttpOptions`, all keyword arguments")
    documented = {
        _first_code(row[0]): eval(_first_code(row[1]), {"__builtins__": {}, **_RECORDS})
        for row in rows
    }
    fields = {field.name: field.default for field in attrs.fields(HttpOptions)}
    assert list(documented) == list(fields)
    defaults = HttpOptions()
    for name, value in documented.items():
        assert getattr(defaults, name) == value, name


def test_links_within_the_page_name_its_headings() -> None:
    headings = re.findall(r"^#+ (.+)$", TEXT, re.M)
    anchors = {re.sub(r"[^\w\- ]", "", h).strip().lower().replace(" ", "-") for h in headings}
    links = set(re.findall(r"\]\(#([^)]+)\)", TEXT))
    assert links
    assert links <= anchors


async def test_the_serving_sample_serves_its_allowed_hosts_and_stops_on_sigterm(
    tmp_path: Path,
) -> None:
    sample = _python_sample("serve_http")
    assert sample.count("port=8000") == 1
    script = tmp_path / "serve_notes.py"
    script.write_text(sample.replace("port=8000", "port=0"))
    process = await trio.lowlevel.open_process(
        [sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    assert process.stdout is not None
    try:
        url = (await first_line(process.stdout)).split("serving ", 1)[1].split()[0]
        port = int(url.removesuffix("/mcp").rsplit(":", 1)[1])
        async with trio.open_nursery() as nursery:
            http = SocketClient("127.0.0.1", port, nursery)
            client = McpClient(http)
            # The allow-list replaces the loopback defaults: only the names it lists pass.
            refused = await client.post(INITIALIZE, host=f"127.0.0.1:{port}")
            assert refused.status == 421
            await refused.body()
            accepted = await client.post(INITIALIZE, host=f"localhost:{port}")
            assert accepted.status == 200
            assert (await accepted.json())["result"]["serverInfo"]["name"] == "notes"
            cors = await client.post(
                INITIALIZE, host=f"localhost:{port}", origin="https://app.example.com"
            )
            assert cors.headers["access-control-allow-origin"] == "https://app.example.com"
            await cors.body()
            await http.aclose()
        process.send_signal(signal.SIGTERM)
        with trio.fail_after(30):
            await process.wait()
        assert process.returncode == 0
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
        await process.stdout.aclose()


async def test_the_websocket_sample_lists_the_tools() -> None:
    namespace: dict[str, Any] = {}
    exec(_python_sample("connect_websocket"), namespace)
    async with trio.open_nursery() as nursery:
        host, port = await nursery.start(
            functools.partial(serve_http, make_server(Probe()), port=0)
        )
        names = await namespace["list_remote_tools"](f"ws://{host}:{port}/ws")
        assert "add" in names
        nursery.cancel_scope.cancel()


async def test_the_authentication_sample_refuses_without_its_token() -> None:
    namespace: dict[str, Any] = {}
    exec(_python_sample("authenticate"), namespace)
    options = namespace["options"]
    assert isinstance(options, HttpOptions)
    async with asgi_client(make_server(Probe()), options=options) as (_, http):
        client = McpClient(http)
        refused = await client.post(INITIALIZE)
        assert refused.status == 401
        assert refused.headers["www-authenticate"] == "Bearer"
        accepted = await client.post(INITIALIZE, authorization="Bearer s3cret")
        assert accepted.status == 200
        assert "mcp-session-id" in accepted.headers
