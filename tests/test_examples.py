"""Every example server starts, initializes and lists its tools over stdio.

The examples of the two eras are also served over HTTP to our client at 2026-07-28 and
in a 2025-11-25 session at once, and checked by value.

Each example runs as a user would run it, in a subprocess: ``python -m mcpactor serve
<file>``, and ``python <file>`` for examples that serve themselves when run as a script.
The test speaks newline-delimited JSON-RPC on the pipes and checks every message the
server sends against the official schema.

The docs' samples a newcomer copies first run as written too: each is saved as the file
the docs name and imported, so a missing import or a call in the wrong order fails here.
"""

from __future__ import annotations

import contextlib
import importlib.util
import re
import sqlite3
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, Final

import orjson
import pytest
import trio

import mcpactor.testing
from mcpactor import RequestError
from mcpactor.client import connect_http, connect_stdio
from tests.doc_includes import expanded
from tests.spec_schema import check_server_message

from .serving import serve_http

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))
DOCS = ROOT / "docs"
REVISION = "2025-11-25"
#: seconds a server gets to start (a cold Python import) and answer
TIMEOUT = 30


def _launches() -> list[Any]:
    launches = []
    for path in EXAMPLES:
        launches.append(
            pytest.param([sys.executable, "-m", "mcpactor", "serve", str(path)], id=path.name)
        )
        if 'if __name__ == "__main__":' in path.read_text():
            launches.append(pytest.param([sys.executable, str(path)], id=f"{path.name}-script"))
    return launches


class _Lines:
    """Reads newline-delimited JSON messages from a byte stream."""

    def __init__(self, stream: trio.abc.ReceiveStream) -> None:
        self._stream = stream
        self._buffer = bytearray()

    async def receive(self) -> Any:
        while b"\n" not in self._buffer:
            chunk = await self._stream.receive_some()
            if not chunk:
                raise AssertionError(
                    f"the server closed stdout; unread output: {bytes(self._buffer)!r}"
                )
            self._buffer += chunk
        line, _, rest = self._buffer.partition(b"\n")
        self._buffer = bytearray(rest)
        return orjson.loads(line)

    async def response(self, request_id: int, method: str) -> Any:
        """Read until the response to ``request_id``, checking every message on the way."""
        while True:
            message = await self.receive()
            if message.get("id") == request_id and "method" not in message:
                check_server_message(message, REVISION, request_method=method)
                return message
            check_server_message(message, REVISION)


async def _send(stream: trio.abc.SendStream, message: dict[str, Any]) -> None:
    await stream.send_all(orjson.dumps(message) + b"\n")


def test_every_example_is_tested() -> None:
    assert {path.name for path in EXAMPLES} >= {"quickstart.py", "everything.py"}


@pytest.mark.parametrize("command", _launches())
async def test_example_answers_initialize_and_tools_list(command: list[str]) -> None:
    process = await trio.lowlevel.open_process(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=ROOT
    )
    try:
        assert process.stdin is not None
        assert process.stdout is not None
        lines = _Lines(process.stdout)
        with trio.fail_after(TIMEOUT):
            await _send(
                process.stdin,
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "initialize",
                    "params": {
                        "protocolVersion": REVISION,
                        "capabilities": {},
                        "clientInfo": {"name": "example-test", "version": "1.0"},
                    },
                },
            )
            initialized = await lines.response(1, "initialize")
            assert initialized["result"]["protocolVersion"] == REVISION
            assert "tools" in initialized["result"]["capabilities"]
            await _send(process.stdin, {"jsonrpc": "2.0", "method": "notifications/initialized"})
            await _send(process.stdin, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
            listed = await lines.response(2, "tools/list")
            tools = listed["result"]["tools"]
            assert tools, "an example server should have at least one tool"
            assert len({tool["name"] for tool in tools}) == len(tools)
            # Closing stdin is how a stdio client ends the session: the server exits 0.
            await process.stdin.aclose()
            assert await process.wait() == 0
    finally:
        if process.returncode is None:
            process.kill()
        with trio.CancelScope(shield=True):
            await process.wait()
            for pipe in (process.stdin, process.stdout):
                if pipe is not None:
                    await pipe.aclose()


# --- the docs' samples ------------------------------------------------------------------


#: what marks the lifespan sample of the writing page
LIFESPAN: Final = "lifespan=open_notes"


def _doc_sample(doc: str, containing: str) -> str:
    text = expanded(DOCS / doc)
    samples = [s for s in re.findall(r"```python\n(.*?)```", text, re.S) if containing in s]
    assert len(samples) == 1, f"expected one Python sample in {doc} with {containing!r}"
    return samples[0]


def _import(path: Path, source: str) -> ModuleType:
    """Save ``source`` as ``path`` and import it as a module, as ``mcpactor serve`` would."""
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def test_the_lifespan_sample_opens_and_closes_its_database(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    notes = _import(tmp_path / "notes.py", _doc_sample("writing-a-server.md", LIFESPAN))
    with pytest.raises(RuntimeError, match="is not running"):
        _ = notes.server.state
    async with mcpactor.testing.client(notes.server) as client:
        db = notes.server.state.db
        result = await client.call_tool("count_notes")
        assert result.data == 0
    # Left when serving ends: the connection is closed and the state forgotten.
    with pytest.raises(RuntimeError, match="is not running"):
        _ = notes.server.state
    with pytest.raises(sqlite3.ProgrammingError):
        db.execute("SELECT 1")


async def test_the_state_testing_sample_passes_against_the_lifespan_sample(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The testing page's "notes" is the writing page's lifespan sample, saved as notes.py.
    (tmp_path / "notes.py").write_text(_doc_sample("writing-a-server.md", LIFESPAN))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "notes", raising=False)  # another test's notes
    try:
        sample = _import(tmp_path / "test_notes.py", _doc_sample("testing.md", "from notes"))
        await sample.test_a_note_is_added()
    finally:
        sys.modules.pop("notes", None)


async def test_the_first_testing_sample_passes_against_the_quickstart_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The docs' "myserver" is the quickstart example's server: add and greet.
    (tmp_path / "myserver.py").write_text((ROOT / "examples" / "quickstart.py").read_text())
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        sample = _import(tmp_path / "test_add.py", _doc_sample("testing.md", "async def test_add"))
        await sample.test_add()
    finally:
        sys.modules.pop("myserver", None)


async def test_the_stdio_testing_sample_passes_against_the_quickstart_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "myserver.py").write_text((ROOT / "examples" / "quickstart.py").read_text())
    monkeypatch.chdir(tmp_path)
    sample = _import(tmp_path / "test_stdio.py", _doc_sample("testing.md", "connect_stdio"))
    with trio.fail_after(TIMEOUT):
        await sample.test_over_stdio()


# --- the two eras' examples, served over HTTP to clients of both eras ------------------

STATELESS = "2026-07-28"


def _served_over_http(example: str) -> contextlib.AbstractAsyncContextManager[str]:
    """Serve ``examples/<example>`` with ``mcpactor serve --http``; yield its MCP URL."""
    return serve_http(f"examples/{example}", cwd=ROOT, timeout=TIMEOUT)


async def test_two_eras_asks_in_either_era_and_books_once() -> None:
    asked: list[str] = []

    async def answer(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params["message"])
        if "Who is coming" in params["message"]:
            return {"action": "accept", "content": {"name": "Ada", "guests": 2}}
        return {"action": "accept", "content": {"confirm": True}}

    sent: list[Any] = []
    async with _served_over_http("two_eras.py") as url:
        with trio.fail_after(TIMEOUT):
            async with connect_http(
                url,
                initialize=True,
                protocol_version=STATELESS,
                elicitation_handler=answer,
                on_client_message=sent.append,
            ) as modern:
                booked = await modern.call_tool("book_table", {"evening": "friday"})
            async with connect_http(
                url, initialize=True, protocol_version=REVISION, elicitation_handler=answer
            ) as session:
                again = await session.call_tool("book_table", {"evening": "friday"})
    assert booked["resultType"] == "complete"
    text = booked["content"][0]["text"]
    assert text.startswith("Booked friday: Ada x2 (reference ")
    # Two questions, so three rounds of the same call at 2026-07-28, and in the session
    # the same two questions as requests: the booking is made once, the table taken once.
    calls = [m for m in sent if isinstance(m, dict) and m.get("method") == "tools/call"]
    assert len(calls) == 3
    assert "requestState" not in calls[0]["params"]
    assert all("requestState" in call["params"] for call in calls[1:])
    assert again["content"][0]["text"] == text
    assert asked == [
        "3 table(s) free on friday. Who is coming?",
        "Book friday for Ada, 2 guest(s)?",
        "2 table(s) free on friday. Who is coming?",
        "Book friday for Ada, 2 guest(s)?",
    ]


async def test_cached_catalog_sends_its_hints_and_mirrors_the_region() -> None:
    sent: list[Any] = []
    async with _served_over_http("cached_catalog.py") as url:
        with trio.fail_after(TIMEOUT):
            async with connect_http(
                url, initialize=True, protocol_version=STATELESS, on_client_message=sent.append
            ) as client:
                [tool] = await client.list_tools()
                listed = await client.request("resources/list", {})
                read = await client.read_resource("catalog://products")
                templates = await client.request("resources/templates/list", {})
                priced = await client.call_tool("price", {"region": "eu", "product": "kettle"})
            async with connect_http(url, initialize=True, protocol_version=REVISION) as session:
                old = await session.request("resources/list", {})
    assert tool["inputSchema"]["properties"]["region"]["x-mcp-header"] == "Region"
    assert (listed["ttlMs"], listed["cacheScope"]) == (3_600_000, "public")
    assert (read["ttlMs"], read["cacheScope"]) == (3_600_000, "public")
    assert orjson.loads(read["contents"][0]["text"]) == {"products": ["kettle", "toaster"]}
    assert (templates["ttlMs"], templates["cacheScope"]) == (300_000, "public")
    assert priced["content"][0]["text"] == "EUR 39"
    assert "ttlMs" not in old
    assert "cacheScope" not in old


async def test_two_eras_asks_across_retries_over_stdio_too() -> None:
    asked: list[str] = []

    async def answer(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params["message"])
        if "Who is coming" in params["message"]:
            return {"action": "accept", "content": {"name": "Grace", "guests": 4}}
        return {"action": "accept", "content": {"confirm": True}}

    command = [sys.executable, "-m", "mcpactor", "serve", "examples/two_eras.py"]
    with trio.fail_after(TIMEOUT):
        async with connect_stdio(
            command,
            cwd=ROOT,
            initialize=True,
            protocol_version=STATELESS,
            elicitation_handler=answer,
        ) as client:
            booked = await client.call_tool("book_table", {"evening": "saturday"})
            full = await client.call_tool("book_table", {"evening": "saturday"})
    assert booked["resultType"] == "complete"
    assert booked["content"][0]["text"].startswith("Booked saturday: Grace x4 (reference ")
    # The only table is taken: the second call reads that and asks nothing.
    assert full["content"][0]["text"] == "No table free on saturday."
    assert asked == [
        "1 table(s) free on saturday. Who is coming?",
        "Book saturday for Grace, 4 guest(s)?",
    ]


@pytest.mark.parametrize("revision", [REVISION, STATELESS])
async def test_middleware_example_audits_filters_and_caches(revision: str) -> None:
    command = [sys.executable, "-m", "mcpactor", "serve", str(ROOT / "examples" / "middleware.py")]
    said: list[str | None] = []

    async def progress(value: float, total: float | None, message: str | None) -> None:
        said.append(message)

    with trio.fail_after(TIMEOUT):
        async with connect_stdio(command, initialize=True, protocol_version=revision) as client:
            names = [tool["name"] for tool in await client.list_tools()]
            first = await client.call_tool("add_note", {"text": "milk"}, progress_handler=progress)
            second = await client.call_tool("add_note", {"text": "bread"})
            with pytest.raises(RequestError) as hidden:
                await client.call_tool("drop_all")
            with pytest.raises(RequestError) as unknown:
                await client.call_tool("no_such_tool")
            read = await client.read_resource("notes://all")
            again = await client.read_resource("notes://all")
    assert names == ["add_note"]
    assert first["_meta"]["example.com/audit"] == {"tool": "add_note", "calls": 1}
    assert second["_meta"]["example.com/audit"] == {"tool": "add_note", "calls": 2}
    assert said == ["saved"]
    assert hidden.value.code == unknown.value.code
    assert hidden.value.message == "unknown tool: 'drop_all'"
    assert read["contents"][0]["text"] == "milk\nbread\n(read 1 time(s))"
    # At 2026-07-28 the second read is answered from the cache, as its hint allows.
    times = "1" if revision == STATELESS else "2"
    assert again["contents"][0]["text"] == f"milk\nbread\n(read {times} time(s))"


@pytest.mark.parametrize("revision", [REVISION, STATELESS])
async def test_transformations_example_exposes_the_transformed_tool(revision: str) -> None:
    example = ROOT / "examples" / "transformations.py"
    command = [sys.executable, "-m", "mcpactor", "serve", str(example)]
    with trio.fail_after(TIMEOUT):
        async with connect_stdio(command, initialize=True, protocol_version=revision) as client:
            tools = await client.list_tools()
            result = await client.call_tool("forecast", {"city": " lisbon ", "days": 2})
            refused = await client.call_tool("forecast", {"city": "Lisbon", "days": 9})
            with pytest.raises(RequestError) as hidden:
                await client.call_tool("debug_dump")
    assert [tool["name"] for tool in tools] == ["forecast"]
    (forecast,) = tools
    assert forecast["annotations"] == {"readOnlyHint": True}
    assert set(forecast["inputSchema"]["properties"]) == {"city", "days"}
    assert forecast["inputSchema"]["properties"]["days"]["maximum"] == 7
    texts = [block["text"] for block in result["content"]]
    assert texts == [
        "Lisbon: 2 day(s) of sun, 21°C (asked by mcpactor)",
        "Source: the example weather service.",
    ]
    assert refused["isError"] is True
    assert "9 is greater than the maximum of 7" in refused["content"][0]["text"]
    assert hidden.value.message == "unknown tool: 'debug_dump'"
