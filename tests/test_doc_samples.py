"""Every code sample of the docs is a file the tests run.

A page shows a sample with an include line (``--8<-- "docs/samples/x.py"``, or a section
of it, ``x.py:name``); the site's snippets extension pastes the file in. Here each file in
``docs/samples/`` is loaded as ``mcpactor serve FILE`` loads it and, where it defines a
server, served in memory and one of its tools called; the others run their function. The
pages may not hold a Python block of their own: every such block is include lines only,
each naming a file and section that exist, and every sample file is shown by some page.
TOML and JSON blocks stay inline, and parse: a configuration file with the project's
reader.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any, Final

import attrs
import pytest
import trio
import trio.testing

import mcpactor.testing
from mcpactor import Server
from mcpactor.client import connect_stdio
from mcpactor.config import load_server, parse_config
from tests.doc_includes import (
    BLOCK_LINE,
    INCLUDE,
    ROOT,
    as_the_site_shows,
    block_lines,
    expand,
    python_blocks,
    section,
)

DOCS: Final = ROOT / "docs"
SAMPLES: Final = DOCS / "samples"
PAGES: Final = sorted(DOCS.glob("**/*.md"))
SAMPLE_FILES: Final = sorted(SAMPLES.glob("*.py"))
#: seconds a server in a subprocess gets to start and answer
TIMEOUT: Final = 30


def _blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"^ *```{language}\n(.*?)^ *```", text, re.S | re.M)


# --- loading a sample -------------------------------------------------------------------


@pytest.fixture
def load(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Callable[[str], ModuleType]]:
    """Load ``docs/samples/<name>.py`` as ``mcpactor serve`` would, in an empty directory."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    loaded: list[str] = []

    def _load(name: str) -> ModuleType:
        path = SAMPLES / f"{name}.py"
        module_name = f"_mcpactor_target_{name}"
        if "server = " in path.read_text(encoding="utf-8"):
            load_server(str(path))  # importable by module path, for offload="process"
        else:
            spec = importlib.util.spec_from_file_location(module_name, path)
            assert spec is not None
            assert spec.loader is not None
            sys.modules[module_name] = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(sys.modules[module_name])
        loaded.append(module_name)
        return sys.modules[module_name]

    yield _load
    for name in loaded:
        sys.modules.pop(name, None)


def _as_module(monkeypatch: pytest.MonkeyPatch, name: str, module: ModuleType) -> None:
    # A sample that imports its server by the name the page gives it (``myserver``,
    # ``mcpactor_weather``) gets the file that stands for it under that name.
    monkeypatch.setitem(sys.modules, name, module)


def _text(result: dict[str, Any]) -> str:
    assert not result.get("isError"), result
    return str(result["content"][0]["text"])


def _value(result: dict[str, Any]) -> Any:
    """What a tool returned: its structured ``result`` when it has one, else its text."""
    text = _text(result)
    structured = result.get("structuredContent")
    return structured["result"] if structured is not None else text


# --- the samples that define a server: one tool called, its answer checked --------------


@attrs.frozen
class Call:
    tool: str
    arguments: dict[str, Any]
    value: Any
    #: whether its handler sleeps, so the test runs on virtual time
    sleeps: bool = False


CALLS: Final = {
    "apps_view": Call("show_forecast", {"city": "Oslo"}, "sun in Oslo"),
    "cancellation_check": Call("count_primes", {"below": 100}, 25),
    "cancellation_pool": Call("square", {"n": 7}, 49),
    "cancellation_process": Call("proof_of_work", {"prefix": "mcp", "zeros": 1}, None),
    "cancellation_timeouts": Call("crawl", {"pages": 2}, "crawled 2 pages", sleeps=True),
    "composition_mount": Call("weather_forecast", {"city": "Oslo"}, "sun in Oslo"),
    "eras_cache": Call("forecast", {"city": "Oslo"}, "sun in Oslo"),
    "eras_header": Call("query", {"region": "eu", "sql": "select 1"}, "eu: select 1"),
    "eras_task": Call("render", {"scene": "dawn"}, "rendered dawn"),
    "http_serve": Call("add", {"a": 2, "b": 3}, 5),
    "transformations_mount": Call(
        "weather_forecast", {"city": "Oslo", "days": 2}, "2 day(s) of sun in Oslo (metric)"
    ),
    "middleware_builtins": Call("search", {"query": "trio"}, "3 results for trio"),
    "middleware_early": Call("price", {"item": "APPLE"}, "apple: 3 EUR"),
    "middleware_shape": Call("greet", {"name": "Ada"}, "hello Ada"),
    "plugins_lifespan": Call("polled", {}, 1, sleeps=True),
    "plugins_weather": Call("forecast", {"city": "Oslo"}, "Sunny in Oslo"),
    "tasks_declare": Call("crawl", {"pages": 3}, "crawled 3 pages", sleeps=True),
    "writing_crunch": Call("crunch", {"rows": 4}, 14),
    "writing_prompt": Call("topics", {}, ["trio", "tasks", "testing"]),
    "writing_resources": Call("count", {}, 1),
    "writing_tool": Call(
        "find_note",
        {"title": "shop", "match": "prefix"},
        {"title": "shopping", "body": "milk, bread"},
    ),
}


@pytest.mark.parametrize("name", sorted(name for name, call in CALLS.items() if not call.sleeps))
async def test_a_sample_server_answers_a_tool_call(
    name: str, load: Callable[[str], ModuleType]
) -> None:
    await _call_checked(name, load)


@pytest.mark.parametrize("name", sorted(name for name, call in CALLS.items() if call.sleeps))
async def test_a_sample_server_answers_a_tool_call_in_virtual_time(
    name: str, load: Callable[[str], ModuleType], autojump_clock: trio.testing.MockClock
) -> None:
    await _call_checked(name, load)


async def _call_checked(name: str, load: Callable[[str], ModuleType]) -> None:
    call = CALLS[name]
    module = load(name)
    assert isinstance(module.server, Server)
    async with mcpactor.testing.client(module.server) as client:
        assert call.tool in [tool["name"] for tool in await client.list_tools()]
        result = await client.call_tool(call.tool, call.arguments)
    if name == "cancellation_process":
        # any nonce will do: check the one found
        nonce = _value(result)
        assert _hex_sha256(f"mcp{nonce}").startswith("0")
    elif name == "writing_tool":
        assert result["structuredContent"] == call.value
    else:
        assert _value(result) == call.value


def _hex_sha256(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode()).hexdigest()


async def test_a_missing_note_is_a_tool_error(load: Callable[[str], ModuleType]) -> None:
    module = load("writing_tool")
    async with mcpactor.testing.client(module.server) as client:
        result = await client.call_tool("find_note", {"title": "nothing"})
    assert result["isError"] is True
    assert "no note called 'nothing'" in result["content"][0]["text"]


async def test_the_resources_sample_reads_the_index_and_a_note(
    load: Callable[[str], ModuleType],
) -> None:
    module = load("writing_resources")
    async with mcpactor.testing.client(module.server) as client:
        index = await client.read_resource("notes://index")
        note = await client.read_resource("notes://by-id/1")
    assert index["contents"][0]["text"] == "shopping"
    assert json.loads(note["contents"][0]["text"]) == {"title": "shopping", "body": "milk, bread"}


async def test_the_prompt_sample_completes_its_topic(load: Callable[[str], ModuleType]) -> None:
    module = load("writing_prompt")
    async with mcpactor.testing.client(module.server) as client:
        prompt = await client.get_prompt("summarise", {"topic": "trio"})
        completion = await client.complete(
            {"type": "ref/prompt", "name": "summarise"}, {"name": "topic", "value": "t"}
        )
    assert prompt["messages"][0]["content"]["text"] == "Summarise trio in a short form."
    assert completion["completion"]["values"] == ["trio", "tasks", "testing"]


async def test_the_elicitation_sample_books_once_after_the_answer(
    load: Callable[[str], ModuleType],
) -> None:
    module = load("eras_elicit")
    asked: list[str] = []

    async def answer(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params["message"])
        return {"action": "accept", "content": {"name": "Ada"}}

    async with mcpactor.testing.client(module.server, elicitation_handler=answer) as client:
        result = await client.call_tool("book", {"city": "Oslo"})
    assert _text(result) == "Ada on AB123 to Oslo"
    assert asked == ["Who travels to Oslo?"]
    assert module.booked == [("AB123 to Oslo", "Ada")]


async def test_the_explicit_rounds_sample_asks_then_deploys() -> None:
    # InputRequired is the 2026-07-28 way: served over stdio as a client of that revision
    # asks, the first attempt returns the question and the retry carries its answer.
    asked: list[str] = []
    sent: list[Any] = []

    async def answer(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params["message"])
        return {"action": "accept", "content": {"yes": True}}

    command = [sys.executable, "-m", "mcpactor", "serve", str(SAMPLES / "eras_rounds.py")]
    with trio.fail_after(TIMEOUT):
        async with connect_stdio(
            command,
            initialize=True,
            protocol_version="2026-07-28",
            elicitation_handler=answer,
            on_client_message=sent.append,
        ) as client:
            result = await client.call_tool("deploy", {"env": "prod"})
    assert _text(result) == "deployed to prod"
    assert asked == ["Deploy to prod?"]
    calls = [m["params"] for m in sent if isinstance(m, dict) and m.get("method") == "tools/call"]
    assert [call.get("inputResponses") for call in calls] == [
        None,
        {"confirm": {"action": "accept", "content": {"yes": True}}},
    ]


async def test_the_task_after_input_sample_is_a_task_tool(
    load: Callable[[str], ModuleType],
) -> None:
    module = load("tasks_after_input")
    async with mcpactor.testing.client(module.server) as client:
        (tool,) = await client.list_tools()
    assert tool["name"] == "migrate"
    assert tool["execution"] == {"taskSupport": "required"}


async def test_the_statistics_sample_reads_the_notes_mount(
    load: Callable[[str], ModuleType],
) -> None:
    module = load("composition_statistics")
    async with mcpactor.testing.client(module.server) as client:
        assert _text(await client.call_tool("notes_add", {"text": "milk"})) == "noted: milk"
        statistics = module.notes_statistics()
    assert (statistics.name, statistics.prefix, statistics.state) == ("notes", "notes", "running")
    assert (statistics.calls_total, statistics.calls_in_flight) == (1, 0)
    assert statistics.max_concurrent == 4


async def test_the_observatory_sample_sees_the_running_search(
    load: Callable[[str], ModuleType],
) -> None:
    tree = await load("operations_observatory").tree_while_searching()
    (session,) = tree["sessions"]["items"]
    (request,) = session["requests"]
    assert (request["method"], request["name"], request["cancelled"]) == (
        "tools/call",
        "search",
        False,
    )
    assert tree["counts"]["requests"] == 1


def test_the_proxy_sample_mounts_two_remote_servers(load: Callable[[str], ModuleType]) -> None:
    # The remote servers are not there: mounting connects to nothing until served.
    module = load("composition_proxy")
    assert [mount.prefix for mount in module.app.mounts] == ["remote", "web"]


async def test_the_authenticate_sample_names_the_bearer(load: Callable[[str], ModuleType]) -> None:
    module = load("http_authenticate")
    assert await module.authenticate({"authorization": "Bearer s3cret"}) == "alice"
    assert await module.authenticate({"authorization": "Bearer guess"}) is None
    assert await module.authenticate({}) is None
    assert module.options.authenticate is module.authenticate


async def test_the_server_card_sample_serves_its_card_and_catalog(
    load: Callable[[str], ModuleType],
) -> None:
    from mcpactor.transports import open_http_app
    from tests.transports._http_client import AsgiClient

    module = load("http_server_card")
    async with (
        trio.open_nursery() as nursery,
        open_http_app(module.server, options=module.options) as app,
    ):
        http = AsgiClient(app, nursery)
        card = await (await http.request("GET", "/mcp/server-card", {})).json()
        assert (card["name"], card["title"]) == ("com.example/weather", "Weather")
        assert card["remotes"][0]["url"] == "https://mcp.example.com/mcp"
        catalog = await (await http.request("GET", "/.well-known/ai-catalog.json", {})).json()
        assert [entry["url"] for entry in catalog["entries"]] == [
            "https://mcp.example.com/mcp/server-card",
            "https://mail.example.com/mcp/server-card",
        ]


def test_the_websocket_sample_defines_its_function(load: Callable[[str], ModuleType]) -> None:
    # Run against a server in tests/transports/test_http_docs.py.
    module = load("http_websocket")
    assert callable(module.list_remote_tools)


async def test_the_tasks_client_sample_crawls_as_tasks(
    load: Callable[[str], ModuleType], autojump_clock: trio.testing.MockClock
) -> None:
    server = load("tasks_declare").server
    sample = load("tasks_client")
    async with mcpactor.testing.client(server) as client:
        assert await sample.crawl_two(client) == "crawled 4 pages"
        statuses = sorted(task["status"] for task in await client.tasks.list())
    assert statuses == ["cancelled", "completed"]
    assert trio.current_time() == pytest.approx(2.0)


# --- the testing page's samples, against the quickstart server ---------------------------


@pytest.fixture
def myserver(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """``examples/quickstart.py`` as the ``myserver`` the testing page imports."""
    spec = importlib.util.spec_from_file_location("myserver", ROOT / "examples" / "quickstart.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    _as_module(monkeypatch, "myserver", module)
    return module


async def test_the_first_testing_sample_passes(
    myserver: ModuleType, load: Callable[[str], ModuleType]
) -> None:
    await load("testing_first").test_add()


async def test_the_fixture_sample_passes_at_a_session_revision(
    myserver: ModuleType, load: Callable[[str], ModuleType]
) -> None:
    sample = load("testing_fixture")
    assert callable(sample.client)  # a pytest fixture, named by assignment
    async with mcpactor.testing.client(myserver.server) as client:
        await sample.test_tools_are_listed(client)


async def test_the_sampling_sample_answers_for_the_model(
    load: Callable[[str], ModuleType],
) -> None:
    # The sample is a test: it asserts what the model answered.
    await load("testing_sampling").test_the_model_answers()


def test_the_stdio_testing_sample_defines_its_test(
    myserver: ModuleType, load: Callable[[str], ModuleType]
) -> None:
    # Run over a real pipe in tests/test_examples.py.
    assert callable(load("testing_stdio").test_over_stdio)


# --- the plugin page's samples, with the weather plugin's module ------------------------


async def test_the_plugin_test_sample_passes(
    monkeypatch: pytest.MonkeyPatch, load: Callable[[str], ModuleType]
) -> None:
    _as_module(monkeypatch, "mcpactor_weather", load("plugins_weather"))
    await load("plugins_test").test_forecast()


def test_the_entry_point_sample_asks_discovery(
    monkeypatch: pytest.MonkeyPatch, load: Callable[[str], ModuleType]
) -> None:
    weather = load("plugins_weather")
    _as_module(monkeypatch, "mcpactor_weather", weather)
    sample = load("plugins_entry_point")
    assert sample.server is weather.server
    # No mcpactor-weather distribution is installed here: discovery says so by name.
    from mcpactor import PluginError

    with pytest.raises(PluginError, match="weather"):
        sample.test_the_entry_point_names_the_server()


# --- the lifespan sample of writing-a-server --------------------------------------------


async def test_the_lifespan_sample_counts_notes(load: Callable[[str], ModuleType]) -> None:
    module = load("writing_lifespan")
    async with mcpactor.testing.client(module.server) as client:
        assert _value(await client.call_tool("count_notes")) == 0
        added = await client.call_tool("add_note", {"title": "shop", "body": "milk"})
        assert added["structuredContent"] == {"title": "shop", "body": "milk"}
        assert added.data == module.Note("shop", "milk")
        assert _value(await client.call_tool("count_notes")) == 1
        db = module.server.state.db
    # Left with the lifespan: the database is closed and the state gone.
    with pytest.raises(sqlite3.ProgrammingError, match="closed"):
        db.execute("SELECT 1")
    with pytest.raises(RuntimeError, match="is not running"):
        _ = module.server.state


async def test_the_state_testing_sample_passes(
    monkeypatch: pytest.MonkeyPatch, load: Callable[[str], ModuleType]
) -> None:
    _as_module(monkeypatch, "notes", load("writing_lifespan"))
    await load("testing_state").test_a_note_is_added()


def test_the_smallest_server_sample_names_itself(load: Callable[[str], ModuleType]) -> None:
    server = load("writing_server").server
    assert (server.name, server.version) == ("notes", "1.0.0")


# --- every sample type-checks as its reader's code would ---------------------------------

#: the modules samples import by the name a page gives them, and the files standing for them
STAND_INS: Final = {
    "myserver": ROOT / "examples" / "quickstart.py",
    "mcpactor_weather": SAMPLES / "plugins_weather.py",
    "notes": SAMPLES / "writing_lifespan.py",
}
#: seconds mypy gets to check the samples from a cold cache
MYPY_TIMEOUT: Final = 600


def test_every_sample_is_clean_under_mypy_strict(tmp_path: Path) -> None:
    # Run as a reader runs it on code copied from the pages: plain ``mypy --strict``, with
    # none of the project's settings (the working directory has no pyproject.toml).
    stand_ins = tmp_path / "stand_ins"
    stand_ins.mkdir()
    for name, path in STAND_INS.items():
        shutil.copyfile(path, stand_ins / f"{name}.py")
    command = [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(tmp_path / "cache")]
    checked = subprocess.run(
        [*command, *map(str, SAMPLE_FILES)],
        cwd=tmp_path,
        env={**os.environ, "MYPYPATH": str(stand_ins)},
        capture_output=True,
        text=True,
        timeout=MYPY_TIMEOUT,
        check=False,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert f"no issues found in {len(SAMPLE_FILES)} source files" in checked.stdout


# --- every sample is run, and shown ------------------------------------------------------

#: samples checked by a test of their own above
CHECKED: Final = {
    "composition_proxy",
    "composition_statistics",
    "eras_elicit",
    "eras_rounds",
    "http_authenticate",
    "http_server_card",
    "http_websocket",
    "operations_observatory",
    "plugins_entry_point",
    "plugins_test",
    "tasks_after_input",
    "tasks_client",
    "testing_first",
    "testing_fixture",
    "testing_sampling",
    "testing_state",
    "testing_stdio",
    "writing_lifespan",
    "writing_server",
}


def test_every_sample_file_is_run() -> None:
    assert {path.stem for path in SAMPLE_FILES} == set(CALLS) | CHECKED
    assert not set(CALLS) & CHECKED


def test_every_sample_file_is_shown_by_a_page() -> None:
    included = {
        Path(BLOCK_LINE.fullmatch(line).group(1)).stem  # type: ignore[union-attr]
        for page in PAGES
        for line in block_lines(page.read_text(encoding="utf-8"))
    }
    assert {path.stem for path in SAMPLE_FILES} <= included


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(DOCS)))
def test_a_pages_python_blocks_are_includes(page: Path) -> None:
    # An include block (``--8<--``, files, ``--8<--``) and nothing else: no sample is
    # written in a page, and a Python formatter leaves the block alone.
    text = page.read_text(encoding="utf-8")
    for block in _blocks(text, "(?:python|py|python3|pycon)"):
        lines = block.splitlines()
        assert lines[0] == lines[-1] == "--8<--", f"{page.name}: a Python sample in the page"
        named = [line for line in lines[1:-1] if line.strip()]
        assert named, f"{page.name}: an include block naming no file"
        for line in named:
            found = BLOCK_LINE.fullmatch(line)
            assert found, f"{page.name}: not a file of an include block: {line!r}"
            path = ROOT / found.group(1)
            assert path.parent in (SAMPLES, ROOT / "examples"), line
            section(path, found.group(2))  # raises when the section is not there


def test_a_one_line_include_names_a_file() -> None:
    # The changelog page is CHANGELOG.md, included whole.
    pages = [page for page in PAGES if INCLUDE.search(page.read_text(encoding="utf-8"))]
    assert pages == [DOCS / "changelog.md"]
    for match in INCLUDE.finditer(pages[0].read_text(encoding="utf-8")):
        assert (ROOT / match.group(1)).is_file(), match.group(0)


def test_expanding_a_page_drops_the_markers() -> None:
    text = expand("--8<--\ndocs/samples/eras_task.py:sample\n--8<--")
    assert text.startswith('@server.tool(task_support="optional")\n')
    assert "--8<--" not in text
    assert expand('--8<-- "CHANGELOG.md"') == (ROOT / "CHANGELOG.md").read_text().rstrip("\n")


# --- what the site shows: includes resolved by its own snippets extension ------------------


@pytest.mark.parametrize(
    "page", [ROOT / "README.md", *PAGES], ids=lambda page: str(page.relative_to(ROOT))
)
def test_every_python_block_a_page_shows_compiles(page: Path) -> None:
    # A section marker that cuts a function's body leaves the reader a sample that is not
    # Python; each block is compiled as the site shows it, the includes resolved.
    shown = as_the_site_shows(page.read_text(encoding="utf-8"))
    failures = []
    for line, code in python_blocks(shown):
        try:
            compile(code, f"{page.name}, the block at line {line}", "exec", dont_inherit=True)
        except SyntaxError as exc:
            failures.append(f"{exc.filename}: {exc.msg} (its line {exc.lineno})\n{code}")
    assert not failures, "\n\n".join(failures)


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(DOCS)))
def test_the_pages_read_here_are_the_sites(page: Path) -> None:
    # The other tests read the pages through expand(); it must show what the site shows
    # (the site may keep a section's blank lines at its ends).
    text = page.read_text(encoding="utf-8")

    def lines(shown: str) -> list[str]:
        return [line.rstrip() for line in shown.splitlines() if line.strip()]

    assert lines(expand(text)) == lines(as_the_site_shows(text))


def test_a_section_that_cuts_a_body_is_caught(tmp_path: Path) -> None:
    cut = tmp_path / "cut.py"
    cut.write_text(
        "# --8<-- [start:sample]\n"
        "async def render(scene: str) -> str:\n"
        "    # --8<-- [end:sample]\n"
        '    return f"rendered {scene}"\n'
    )
    shown = as_the_site_shows("```python\n--8<--\ncut.py:sample\n--8<--\n```\n", tmp_path)
    ((_, code),) = python_blocks(shown)
    assert code.strip() == "async def render(scene: str) -> str:"
    with pytest.raises(SyntaxError, match="expected an indented block"):
        compile(code, "cut", "exec")


def test_python_blocks_are_found_indented_and_fenced_longer() -> None:
    text = "- a list item:\n\n    ```python\n    x = 1\n    ```\n\n````py\ny = 2\n````\n"
    assert python_blocks(text) == [(3, "x = 1\n"), (7, "y = 2\n")]


def test_a_bad_include_line_is_named() -> None:
    with pytest.raises(ValueError, match="not a file of an include block"):
        expand("--8<--\ndocs/samples/eras_task.py: sample\n--8<--")


def test_a_missing_section_is_named() -> None:
    with pytest.raises(LookupError, match="no section 'nothing'"):
        section(SAMPLES / "eras_task.py", "nothing")


# --- the blocks that stay inline ---------------------------------------------------------


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(DOCS)))
def test_json_blocks_parse(page: Path) -> None:
    for block in _blocks(page.read_text(encoding="utf-8"), "json"):
        json.loads(block)


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(DOCS)))
def test_toml_blocks_parse_as_the_files_they_stand_for(page: Path, tmp_path: Path) -> None:
    for block in _blocks(page.read_text(encoding="utf-8"), "toml"):
        data = tomllib.loads(block)
        if "project" in data:
            # A plugin's (or an extension's) pyproject.toml: its entry point in a group
            # discovery reads.
            groups = {"mcpactor.servers", "mcpactor.extensions"}
            assert groups & set(data["project"]["entry-points"])
        else:
            parse_config(data, source=tmp_path / "mcpactor.toml")


# --- the command-line reference, written by the site's hook ------------------------------


def _cli_hook() -> ModuleType:
    path = DOCS / "_hooks" / "cli_reference.py"
    spec = importlib.util.spec_from_file_location("cli_reference_hook", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_cli_reference_has_every_command_and_option() -> None:
    from mcpactor.cli import _build_parser

    hook = _cli_hook()
    text = hook.render()
    parser = _build_parser()
    commands = hook._subcommands(parser)
    assert {"serve", "call", "plugins"} <= set(commands)
    for name, command in commands.items():
        assert f"## `mcpactor {name}`" in text
        for action in command._actions:
            if action.help == argparse.SUPPRESS:
                continue  # an internal option, kept out of the help on purpose
            for flag in action.option_strings:
                assert flag in text, f"mcpactor {name} {flag}"
    assert "--version" in text


def test_the_cli_reference_is_the_same_in_any_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    hook = _cli_hook()
    monkeypatch.setenv("COLUMNS", "40")
    narrow = hook.render()
    monkeypatch.setenv("COLUMNS", "200")
    assert hook.render() == narrow
    assert os.environ["COLUMNS"] == "200"  # the terminal's width is given back


def test_the_cli_reference_page_keeps_its_marker() -> None:
    hook = _cli_hook()
    page = attrs.make_class("Page", ["file"])(attrs.make_class("File", ["src_uri"])(hook.PAGE))
    source = (DOCS / hook.PAGE).read_text(encoding="utf-8")
    assert hook.MARKER not in hook.on_page_markdown(source, page)
    with pytest.raises(ValueError, match="lost its marker"):
        hook.on_page_markdown("# The `mcpactor` command\n", page)
    other = attrs.make_class("Page", ["file"])(attrs.make_class("File", ["src_uri"])("index.md"))
    assert hook.on_page_markdown("unchanged", other) == "unchanged"
