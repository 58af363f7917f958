"""Tool transformations, checked through the official MCP client against ``mcpactor serve``.

Each case is a deployment (``mcpactor.toml`` and the Python files it names) in a
directory of its own; the official SDK starts ``mcpactor serve --config`` over stdio
(one case over Streamable HTTP), lists the tools and calls them, and the case says what
the client must see.
"""

from __future__ import annotations

import os
import sys
import textwrap
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import attrs
import httpx2
import mcp.types as types
import pytest
from mcp import ClientSession, MCPError, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from ._sdk_client import TIMEOUT, serving_http

#: the name the client gives itself: the computed argument below reads it back
CLIENT = types.Implementation(name="transform-tests", version="1.0")

CALC = '''
from mcpactor import Server

server = Server("calc", instructions="Arithmetic.")


@server.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool
def greet(name: str, greeting: str = "Hello", caller: str = "nobody") -> str:
    """Greet someone."""
    return f"{greeting}, {name} (asked by {caller})"


@server.tool
def wipe() -> str:
    """Delete everything."""
    return "wiped"
'''

HOOKS = '''
from mcpactor.auth import Principal


async def authenticate(headers):
    """The HTTP case's authentication hook: one token, naming alice."""
    if headers.get("authorization") == "Bearer s3cret":
        return Principal(subject="alice")
    return None


def caller(ctx):
    """Who asks: the principal's subject over HTTP with authorization, else the client."""
    if ctx.principal is not None:
        return ctx.principal.subject
    return (ctx.client_info or {}).get("name", "unknown")


def double_b(arguments, ctx):
    return {**arguments, "b": arguments["b"] * 2}


def shout(result, ctx):
    text = result["content"][0]["text"]
    return {**result, "content": [{"type": "text", "text": text.upper() + "!"}]}
'''

#: the same, declared in Python: the server the file serves is transformed there
PYTHON_DECLARED = """
from mcpactor.transform import ArgTransform, ToolTransform, transformed

from calc import server as calc
from hooks import caller, double_b, shout

server = transformed(calc, {
    "add": ToolTransform(
        name="plus",
        description="Add, with b doubled.",
        arguments={"a": ArgTransform(name="x", constraints={"minimum": 0, "maximum": 10})},
        before=double_b,
    ),
    "greet": ToolTransform(
        arguments={
            "greeting": ArgTransform(hide=True, value="Hi"),
            "caller": ArgTransform(hide=True, value=caller),
        },
        after=shout,
    ),
    "wipe": ToolTransform(hide=True),
})
"""


def _text(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


def _sum(result: types.CallToolResult) -> int:
    assert not result.is_error, result
    assert result.structured_content is not None
    value = result.structured_content["result"]
    assert _text(result) == f'{{"result":{value}}}'
    return int(value)


async def _refused(
    session: ClientSession, name: str, arguments: dict[str, object], words: str
) -> None:
    # Invalid arguments are refused as the revision says: an error result from
    # 2025-11-25 on (the model sees why), a -32602 error before.
    try:
        result = await session.call_tool(name, arguments)
    except MCPError as exc:
        error = exc.error
    else:
        error = None
    if error is not None:
        assert error.code == types.INVALID_PARAMS
        assert words in error.message
        return
    assert result.is_error
    assert "invalid arguments" in _text(result)
    assert words in _text(result)


async def _tools(session: ClientSession) -> dict[str, types.Tool]:
    return {tool.name: tool for tool in (await session.list_tools()).tools}


Check = Callable[[ClientSession], Awaitable[None]]


@attrs.frozen
class Case:
    id: str
    toml: str
    check: Check
    files: dict[str, str] = attrs.field(factory=dict)


# --- the checks ---------------------------------------------------------------------


async def renamed_tool(session: ClientSession) -> None:
    tools = await _tools(session)
    assert "calc_sum" in tools
    assert "calc_add" not in tools
    assert tools["calc_sum"].description == "Add two integers."
    assert _sum(await session.call_tool("calc_sum", {"a": 2, "b": 3})) == 5
    with pytest.raises(MCPError, match="unknown tool"):
        await session.call_tool("calc_add", {"a": 2, "b": 3})


async def new_description(session: ClientSession) -> None:
    tools = await _tools(session)
    assert tools["calc_add"].description == "Sum of a and b, both integers."
    assert tools["calc_add"].title == "Sum"
    assert tools["calc_add"].annotations is not None
    assert tools["calc_add"].annotations.read_only_hint is True
    assert _sum(await session.call_tool("calc_add", {"a": 1, "b": 1})) == 2


async def prefixed_server(session: ClientSession) -> None:
    tools = await _tools(session)
    assert set(tools) == {"math_add", "math_greet", "math_wipe"}
    assert _sum(await session.call_tool("math_add", {"a": 4, "b": 5})) == 9


async def renamed_argument(session: ClientSession) -> None:
    schema = (await _tools(session))["calc_greet"].input_schema
    assert set(schema["properties"]) == {"who", "greeting", "caller"}
    assert schema["required"] == ["who"]
    assert schema["properties"]["who"]["description"] == "Whom to greet."
    result = await session.call_tool("calc_greet", {"who": "Ada"})
    assert _text(result) == "Hello, Ada (asked by nobody)"
    # The old name is refused as any unknown argument is.
    await _refused(session, "calc_greet", {"name": "Ada"}, "'who' is a required property")


async def hidden_fixed(session: ClientSession) -> None:
    schema = (await _tools(session))["calc_greet"].input_schema
    assert set(schema["properties"]) == {"name", "caller"}
    assert _text(await session.call_tool("calc_greet", {"name": "Ada"})).startswith("Howdy, Ada")
    # A caller cannot set it: the schema refuses the argument.
    await _refused(session, "calc_greet", {"name": "Ada", "greeting": "Bye"}, "greeting")


async def hidden_computed(session: ClientSession) -> None:
    schema = (await _tools(session))["calc_greet"].input_schema
    assert "caller" not in schema["properties"]
    result = await session.call_tool("calc_greet", {"name": "Ada"})
    assert _text(result) == "Hello, Ada (asked by transform-tests)"


async def constrained(session: ClientSession) -> None:
    schema = (await _tools(session))["calc_greet"].input_schema
    assert schema["properties"]["greeting"]["enum"] == ["Hello", "Hi"]
    assert schema["properties"]["name"]["pattern"] == "^[A-Z][a-z]+$"
    assert (await _tools(session))["calc_add"].input_schema["properties"]["a"]["maximum"] == 10
    assert _text(await session.call_tool("calc_greet", {"name": "Ada", "greeting": "Hi"})) == (
        "Hi, Ada (asked by nobody)"
    )
    for name, arguments, words in (
        ("calc_greet", {"name": "Ada", "greeting": "Yo"}, "is not one of"),
        ("calc_greet", {"name": "ada"}, "does not match"),
        ("calc_add", {"a": 11, "b": 0}, "greater than the maximum"),
    ):
        await _refused(session, name, arguments, words)


async def wrapped(session: ClientSession) -> None:
    assert _sum(await session.call_tool("calc_add", {"a": 1, "b": 10})) == 21
    result = await session.call_tool("calc_greet", {"name": "Ada"})
    assert _text(result) == "HELLO, ADA (ASKED BY NOBODY)!"


async def hidden_tool(session: ClientSession) -> None:
    tools = await _tools(session)
    assert "calc_wipe" not in tools
    assert "calc_add" in tools
    with pytest.raises(MCPError, match="unknown tool"):
        await session.call_tool("calc_wipe", {})


async def kept_original(session: ClientSession) -> None:
    tools = await _tools(session)
    assert {"calc_add", "calc_plus"} <= set(tools)
    assert _sum(await session.call_tool("calc_plus", {"a": 1})) == 101


async def python_declared(session: ClientSession) -> None:
    tools = await _tools(session)
    assert set(tools) == {"server_plus", "server_greet"}
    plus = tools["server_plus"]
    assert plus.description == "Add, with b doubled."
    assert plus.input_schema["required"] == ["x", "b"]
    assert plus.output_schema is not None  # the original's, as the result is unchanged
    assert _sum(await session.call_tool("server_plus", {"x": 3, "b": 4})) == 11
    await _refused(session, "server_plus", {"x": 30, "b": 4}, "greater than the maximum")
    assert set(tools["server_greet"].input_schema["properties"]) == {"name"}
    result = await session.call_tool("server_greet", {"name": "Ada"})
    assert _text(result) == "HI, ADA (ASKED BY TRANSFORM-TESTS)!"


async def mounted(session: ClientSession) -> None:
    tools = await _tools(session)
    # The outer server mounts the inner one, which mounts calc: a tool two levels down.
    assert "apps_calc_total" in tools
    assert tools["apps_calc_total"].input_schema["required"] == ["a"]
    assert _sum(await session.call_tool("apps_calc_total", {"a": 5})) == 105


async def proxied(session: ClientSession) -> None:
    tools = await _tools(session)
    assert set(tools) == {"remote_sum", "remote_greet"}
    assert tools["remote_sum"].description == "Adds, remotely."
    assert _sum(await session.call_tool("remote_sum", {"first": 20, "b": 22})) == 42
    await _refused(session, "remote_sum", {"first": 101, "b": 0}, "greater than the maximum")


CASES = [
    Case(
        "rename-tool",
        """
        [servers.calc]
        target = "calc.py"
        [servers.calc.tools.add]
        name = "sum"
        """,
        renamed_tool,
    ),
    Case(
        "new-description",
        """
        [servers.calc]
        target = "calc.py"
        [servers.calc.tools.add]
        title = "Sum"
        description = "Sum of a and b, both integers."
        annotations = { readOnlyHint = true }
        """,
        new_description,
    ),
    Case(
        "prefix-mounted-server",
        """
        [servers.calc]
        target = "calc.py"
        prefix = "math"
        """,
        prefixed_server,
    ),
    Case(
        "rename-argument",
        """
        [servers.calc]
        target = "calc.py"
        [servers.calc.tools.greet.arguments.name]
        name = "who"
        description = "Whom to greet."
        """,
        renamed_argument,
    ),
    Case(
        "hide-fixed-value",
        """
        [servers.calc]
        target = "calc.py"
        [servers.calc.tools.greet.arguments.greeting]
        hide = true
        value = "Howdy"
        """,
        hidden_fixed,
    ),
    Case(
        "hide-computed-value",
        """
        [servers.calc]
        target = "calc.py"
        [servers.calc.tools.greet.arguments.caller]
        hide = true
        value_from = "hooks.py:caller"
        """,
        hidden_computed,
    ),
    Case(
        "constrain",
        """
        [servers.calc]
        target = "calc.py"
        [servers.calc.tools.greet.arguments.greeting]
        constraints = { enum = ["Hello", "Hi"] }
        [servers.calc.tools.greet.arguments.name]
        constraints = { pattern = "^[A-Z][a-z]+$" }
        [servers.calc.tools.add.arguments.a]
        constraints = { minimum = 0, maximum = 10 }
        """,
        constrained,
    ),
    Case(
        "before-after",
        """
        [servers.calc]
        target = "calc.py"
        [servers.calc.tools.add]
        before = "hooks.py:double_b"
        [servers.calc.tools.greet]
        after = "hooks.py:shout"
        """,
        wrapped,
    ),
    Case(
        "hide-tool",
        """
        [servers.calc]
        target = "calc.py"
        [servers.calc.tools.wipe]
        hide = true
        """,
        hidden_tool,
    ),
    Case(
        "keep-original-with-default",
        """
        [servers.calc]
        target = "calc.py"
        [servers.calc.tools.add]
        name = "plus"
        keep_original = true
        [servers.calc.tools.add.arguments.b]
        default = 100
        """,
        kept_original,
    ),
    Case(
        "declared-in-python",
        """
        [servers.server]
        target = "app.py"
        """,
        python_declared,
        {"app.py": PYTHON_DECLARED},
    ),
    Case(
        "mounted-tool",
        """
        [servers.apps]
        target = "apps.py"
        """,
        mounted,
        {
            "apps.py": """
            from mcpactor import Server
            from mcpactor.transform import ArgTransform, ToolTransform

            from calc import server as calc

            inner = Server("inner")
            inner.mount(calc, "calc")
            server = Server("apps")
            server.mount(inner, tools={
                "calc_add": ToolTransform(
                    name="calc_total", arguments={"b": ArgTransform(hide=True, value=100)}
                ),
            })
            """
        },
    ),
    Case(
        "proxied-tool",
        f"""
        [servers.remote]
        command = [{sys.executable!r}, "-m", "mcpactor", "serve", "--no-prefix", "calc.py"]
        [servers.remote.tools.add]
        name = "sum"
        description = "Adds, remotely."
        [servers.remote.tools.add.arguments.a]
        name = "first"
        constraints = {{ maximum = 100 }}
        [servers.remote.tools.wipe]
        hide = true
        """,
        proxied,
    ),
]


def _deploy(directory: Path, case: Case) -> Path:
    files = {"calc.py": CALC, "hooks.py": HOOKS, **case.files}
    for name, text in files.items():
        (directory / name).write_text(textwrap.dedent(text), encoding="utf-8")
    config = directory / "mcpactor.toml"
    config.write_text(textwrap.dedent(case.toml), encoding="utf-8")
    return config


def _environment(directory: Path) -> dict[str, str]:
    # The deployment's own modules import each other, as they would where it is served.
    path = os.pathsep.join(filter(None, [str(directory), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONPATH": path, "PYTHONUNBUFFERED": "1"}


async def _over_stdio(directory: Path, config: Path, check: Check) -> None:
    parameters = StdioServerParameters(
        command=sys.executable,
        args=["-m", "mcpactor", "serve", "--config", str(config)],
        cwd=directory,
        env=_environment(directory),
    )
    with anyio.fail_after(TIMEOUT * 3):
        async with (
            stdio_client(parameters) as (read, write),
            ClientSession(read, write, client_info=CLIENT) as session,
        ):
            await session.initialize()
            await check(session)


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_transformation_through_the_official_client(case: Case, tmp_path: Path) -> None:
    config = _deploy(tmp_path, case)
    anyio.run(_over_stdio, tmp_path, config, case.check, backend="asyncio")


def test_a_transformation_over_streamable_http(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The hidden value is computed from the principal the HTTP layer admitted.
    case = next(case for case in CASES if case.id == "declared-in-python")
    config = _deploy(tmp_path, case)
    for key, value in _environment(tmp_path).items():
        monkeypatch.setenv(key, value)
    monkeypatch.chdir(tmp_path)

    async def over_http(port: int) -> None:
        url = f"http://127.0.0.1:{port}/mcp"
        headers = {"Authorization": "Bearer s3cret"}
        with anyio.fail_after(TIMEOUT * 3):
            async with (
                httpx2.AsyncClient(headers=headers) as http,
                streamable_http_client(url, http_client=http) as (read, write, *_),
                ClientSession(read, write, client_info=CLIENT) as session,
            ):
                await session.initialize()
                tools = await _tools(session)
                assert set(tools["server_greet"].input_schema["properties"]) == {"name"}
                result = await session.call_tool("server_greet", {"name": "Ada"})
                assert _text(result) == "HI, ADA (ASKED BY ALICE)!"
                assert _sum(await session.call_tool("server_plus", {"x": 3, "b": 4})) == 11
                await _refused(session, "server_plus", {"x": 30, "b": 4}, "maximum")

    with serving_http("--config", str(config), "--authenticate", "hooks:authenticate") as port:
        anyio.run(over_http, port, backend="asyncio")


def test_check_table_covers_the_issue() -> None:
    # What the issue asks for, each a case above (a guard against dropping one).
    wanted = {
        "rename-tool",
        "new-description",
        "prefix-mounted-server",
        "rename-argument",
        "hide-fixed-value",
        "hide-computed-value",
        "constrain",
        "before-after",
        "hide-tool",
        "declared-in-python",
        "mounted-tool",
        "proxied-tool",
    }
    assert wanted <= {case.id for case in CASES}
