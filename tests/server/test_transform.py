"""Tool transformations in process: what a transformation refuses, and what it keeps.

The cases a user sees (listing and calling through the official client) are in
tests/interop/test_sdk_transform.py; these check the edges: transformations that do not
fit the tool, configuration errors naming the key, scopes, tasks of the original.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from mcpactor import PluginError, RequestError, Server, ToolError
from mcpactor.config import ARGUMENT_KEYS, TOOL_KEYS, ConfigError, assemble, load_config
from mcpactor.testing import client
from mcpactor.transform import ArgTransform, ToolTransform, transformed


def make_calc() -> Server:
    calc = Server("calc")

    @calc.tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @calc.tool(scopes=["calc:write"])
    def reset(confirm: bool) -> str:
        """Reset the memory."""
        return "reset" if confirm else "kept"

    return calc


@pytest.mark.parametrize(
    ("tools", "words"),
    [
        ({"add": ToolTransform(arguments={"c": ArgTransform(name="x")})}, "no argument 'c'"),
        (
            {"add": ToolTransform(arguments={"a": ArgTransform(name="b")})},
            "two arguments are named 'b'",
        ),
        (
            {"add": ToolTransform(arguments={"a": ArgTransform(hide=True)})},
            "argument 'a' is required: hiding it needs a value",
        ),
        ({"add": ToolTransform(name="bad name")}, "invalid tool name"),
        ({"add": ToolTransform(name="reset")}, "is served twice"),
    ],
)
def test_a_transformation_that_does_not_fit_is_refused_at_mount(
    tools: dict[str, ToolTransform], words: str
) -> None:
    parent = Server("parent")
    with pytest.raises(PluginError, match=words):
        parent.mount(make_calc(), tools=tools)
    assert parent.mounts == ()


async def test_a_transformation_of_a_tool_the_server_lacks_stops_the_start() -> None:
    parent = transformed(make_calc(), {"sub": ToolTransform(name="minus")})
    with pytest.raises(PluginError, match="has no tool 'sub' to transform"):
        async with parent.running():
            pass


def test_argument_values_need_a_hidden_argument_and_known_constraints() -> None:
    with pytest.raises(ValueError, match="set hide=True"):
        ArgTransform(value=1)
    with pytest.raises(ValueError, match="unknown keyword"):
        ArgTransform(constraints={"typo": 1})


async def test_arguments_are_mapped_and_swapped_names_work() -> None:
    seen: list[dict[str, Any]] = []

    def before(arguments: dict[str, Any], ctx: object) -> None:
        seen.append(arguments)  # None: the arguments go on unchanged

    swapped = {"a": ArgTransform(name="b"), "b": ArgTransform(name="a", default=7)}
    served = transformed(make_calc(), {"add": ToolTransform(arguments=swapped, before=before)})
    async with client(served) as session:
        listed = {tool["name"]: tool for tool in await session.list_tools()}
        schema = listed["add"]["inputSchema"]
        assert schema["required"] == ["b"]
        assert schema["properties"]["a"]["default"] == 7
        result = await session.call_tool("add", {"b": 1})
        assert result["structuredContent"] == {"result": 8}
    assert seen == [{"a": 1, "b": 7}]


async def test_a_wrapper_refusing_with_a_tool_error_is_an_error_result() -> None:
    def before(arguments: dict[str, Any], ctx: object) -> dict[str, Any]:
        if arguments["a"] < 0:
            raise ToolError("a must not be negative here")
        return arguments

    served = transformed(make_calc(), {"add": ToolTransform(before=before)})
    async with client(served) as session:
        result = await session.call_tool("add", {"a": -1, "b": 1})
        assert result["isError"] is True
        assert result["content"][0]["text"] == "a must not be negative here"


def test_a_transformed_tool_keeps_the_originals_scopes() -> None:
    served = transformed(make_calc(), {"reset": ToolTransform(name="wipe")})
    assert served.required_scopes("tools/call", "wipe") == ("calc:write",)


# --- mcpactor.toml ----------------------------------------------------------------------


def _config(tmp_path: Path, tools: str) -> Path:
    (tmp_path / "calc.py").write_text(
        "from tests.server.test_transform import make_calc\nserver = make_calc()\n"
    )
    path = tmp_path / "mcpactor.toml"
    path.write_text('[servers.calc]\ntarget = "calc.py"\n' + textwrap.dedent(tools))
    return path


@pytest.mark.parametrize(
    ("tools", "words"),
    [
        ("[servers.calc.tools.add]\nnme = 'x'\n", "servers.calc.tools.add.nme: unknown key"),
        ("[servers.calc.tools.add]\nname = 'a b'\n", "servers.calc.tools.add.name: expected"),
        ("[servers.calc.tools.add]\nhide = 'yes'\n", "servers.calc.tools.add.hide: expected"),
        ("[servers.calc.tools]\nadd = 3\n", "servers.calc.tools.add: expected a table"),
        (
            "[servers.calc.tools.add.arguments.a]\nhid = true\n",
            "servers.calc.tools.add.arguments.a.hid: unknown key",
        ),
        (
            "[servers.calc.tools.add.arguments.a]\nvalue = 1\n",
            "servers.calc.tools.add.arguments.a.value: only applies to a hidden argument",
        ),
        (
            "[servers.calc.tools.add.arguments.a]\nconstraints = { maximun = 3 }\n",
            "servers.calc.tools.add.arguments.a.constraints: constraints: unknown keyword",
        ),
        (
            "[servers.calc.tools.add]\nbefore = 'nocolon'\n",
            "servers.calc.tools.add.before: expected 'module:function'",
        ),
    ],
)
def test_bad_tool_tables_name_the_key(tmp_path: Path, tools: str, words: str) -> None:
    with pytest.raises(ConfigError, match=words.replace(".", r"\.")) as caught:
        load_config(_config(tmp_path, tools))
    assert "(line " in str(caught.value)


def test_a_hook_that_does_not_load_fails_its_server_naming_the_key(tmp_path: Path) -> None:
    config = load_config(
        _config(tmp_path, "[servers.calc.tools.add]\nbefore = 'calc.py:missing'\n")
    )
    with pytest.raises(PluginError, match=r"servers\.calc\.tools\.add\.before"):
        assemble(config.servers, strict=True)


async def test_a_tool_table_transforms_the_served_tool(tmp_path: Path) -> None:
    config = load_config(
        _config(
            tmp_path,
            """
            [servers.calc.tools.add]
            name = "plus"
            [servers.calc.tools.add.arguments.b]
            hide = true
            value = 10
            """,
        )
    )
    async with client(assemble(config.servers)) as session:
        names = [tool["name"] for tool in await session.list_tools()]
        assert names == ["calc_plus", "calc_reset"]
        result = await session.call_tool("calc_plus", {"a": 1})
        assert result["structuredContent"] == {"result": 11}


def test_every_tool_table_key_is_documented() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "configuration.md").read_text()
    section = doc[doc.index("## `[servers.NAME.tools.TOOL]`") :]
    for key in TOOL_KEYS | ARGUMENT_KEYS:
        assert f"| `{key}` |" in section, key


async def test_an_after_hook_is_held_to_the_output_schema_it_declares() -> None:
    def tripled(result: dict[str, Any], ctx: object) -> dict[str, Any]:
        value = result["structuredContent"]["result"] * 3
        return {**result, "structuredContent": {"total": value}}

    def broken(result: dict[str, Any], ctx: object) -> dict[str, Any]:
        return {**result, "structuredContent": {"total": "many"}}

    schema = {
        "type": "object",
        "properties": {"total": {"type": "integer"}},
        "required": ["total"],
    }
    served = transformed(
        make_calc(),
        {
            "add": ToolTransform(name="triple", after=tripled, output_schema=schema),
            "reset": ToolTransform(after=broken, output_schema=schema),
        },
    )
    async with client(served) as session:
        listed = {tool["name"]: tool for tool in await session.list_tools()}
        assert listed["triple"]["outputSchema"] == schema
        good = await session.call_tool("triple", {"a": 1, "b": 2})
        bad = await session.call_tool("reset", {"confirm": True})
    assert good["structuredContent"] == {"total": 9}
    assert bad["isError"] is True
    assert "does not match its outputSchema" in bad["content"][0]["text"]


@pytest.mark.parametrize("revision", ["2025-06-18", "2025-11-25"])
async def test_a_constraint_is_refused_as_the_revision_refuses_bad_arguments(
    revision: str,
) -> None:
    narrowed = {"a": ArgTransform(constraints={"maximum": 5})}
    served = transformed(make_calc(), {"add": ToolTransform(arguments=narrowed)})
    original = make_calc()
    async with client(served, protocol_version=revision) as session:
        ok = await session.call_tool("add", {"a": 5, "b": 1})
        try:
            answer: Any = await session.call_tool("add", {"a": 6, "b": 1})
        except RequestError as exc:
            answer = exc
    # The same call of a tool whose own schema refuses it, for comparison.
    async with client(original, protocol_version=revision) as session:
        try:
            expected: Any = await session.call_tool("add", {"a": "6", "b": 1})
        except RequestError as exc:
            expected = exc
    assert ok["structuredContent"] == {"result": 6}
    assert type(answer) is type(expected)
    if isinstance(answer, RequestError):
        assert answer.code == expected.code == -32602
        assert "6 is greater than the maximum of 5" in answer.message
    else:
        assert answer["isError"] is True
        assert "6 is greater than the maximum of 5" in answer["content"][0]["text"]


async def test_an_after_hook_returning_no_result_is_an_error_result() -> None:
    def wrong(result: dict[str, Any], ctx: object) -> list[str]:
        return ["not", "a", "result"]

    served = transformed(make_calc(), {"add": ToolTransform(after=wrong)})
    async with client(served) as session:
        answer = await session.call_tool("add", {"a": 1, "b": 2})
        still = await session.call_tool("add", {"a": 1, "b": 2})
    assert answer["isError"] is True
    assert answer["content"][0]["text"].startswith("tool 'add' failed: ")
    assert still["isError"] is True  # the session goes on serving
