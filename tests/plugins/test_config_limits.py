"""The configuration file's tool timeouts (per server) and task limits (per session)."""

from __future__ import annotations

import re
import sys
import textwrap
import tomllib
from pathlib import Path
from typing import Final

import pytest
import trio
import trio.testing

from mcpactor import TaskOptions
from mcpactor.client import ProxyServer, connect_memory, connect_stdio
from mcpactor.config import ConfigError, ServerConfig, assemble, load_config, parse_config
from tests.client.conftest import text_of

# Real processes, real time: generous, so only a hang trips it.
GUARD: Final = 60.0
DOCS: Final = Path(__file__).resolve().parents[2] / "docs" / "composition.md"

SLOW_SERVER: Final = """
import trio

from mcpactor import Server

server = Server("slow")


@server.tool()
async def slow() -> str:
    await trio.sleep(100)
    return "slow done"


@server.tool(timeout=300)
async def patient() -> str:
    await trio.sleep(100)
    return "patient done"


@server.tool(task_support="optional")
async def job() -> str:
    return "job done"
"""


def write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text))
    return path


def test_tool_timeouts_and_task_limits_are_read(tmp_path: Path) -> None:
    config = load_config(
        write(
            tmp_path / "mcpactor.toml",
            """
            [tasks]
            max_running = 4
            max_stored = 50
            default_ttl = 60
            max_ttl = 600.5
            poll_interval = 0.5

            [servers.clock]
            tool_timeout = 2.5

            [servers.web]
            url = "http://127.0.0.1:9/mcp"
            tool_timeout = 30
            """,
        )
    )
    assert config.tasks == TaskOptions(
        max_running=4, max_stored=50, default_ttl=60.0, max_ttl=600.5, poll_interval=0.5
    )
    assert config.servers == (
        ServerConfig(name="clock", plugin="clock", tool_timeout=2.5),
        ServerConfig(name="web", url="http://127.0.0.1:9/mcp", tool_timeout=30.0),
    )
    assert isinstance(config.servers[1].tool_timeout, float)


def test_the_documented_example_is_read() -> None:
    [block] = [
        block
        for block in re.findall(r"```toml\n(.*?)```", DOCS.read_text(), re.DOTALL)
        if "[tasks]" in block
    ]
    config = parse_config(tomllib.loads(block), source=DOCS)
    assert config.tasks == TaskOptions(max_running=8, default_ttl=600.0)
    assert config.servers == (ServerConfig(name="fs", plugin="fs", tool_timeout=30.0),)


def test_without_them_nothing_changes(tmp_path: Path) -> None:
    config = load_config(write(tmp_path / "mcpactor.toml", "[servers.clock]\n"))
    assert config.tasks is None
    assert config.servers[0].tool_timeout is None
    # Keys left out keep TaskOptions' defaults.
    partial = load_config(write(tmp_path / "mcpactor.toml", "[tasks]\nmax_running = 2\n"))
    assert partial.tasks == TaskOptions(max_running=2)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "[servers.clock]\ntool_timeout = 0",
            "servers.clock.tool_timeout: expected a positive number of seconds, got 0",
        ),
        (
            "[servers.clock]\ntool_timeout = -1.5",
            "servers.clock.tool_timeout: expected a positive number of seconds, got -1.5",
        ),
        (
            "[servers.clock]\ntool_timeout = inf",
            "servers.clock.tool_timeout: expected a positive number of seconds, got inf",
        ),
        (
            "[servers.clock]\ntool_timeout = nan",
            "servers.clock.tool_timeout: expected a positive number of seconds, got nan",
        ),
        (
            "[servers.clock]\ntool_timeout = '5'",
            "servers.clock.tool_timeout: expected an integer or a number, got '5'",
        ),
        (
            "[servers.clock]\ntool_timeout = true",
            "servers.clock.tool_timeout: expected an integer or a number, got True",
        ),
        ("tasks = 3", "tasks: expected a table, got 3"),
        (
            "[tasks]\nttl = 5",
            "tasks.ttl: unknown key; expected one of default_ttl, max_running, max_stored, "
            "max_ttl, poll_interval",
        ),
        ("[tasks]\nmax_running = 0", "tasks.max_running: expected a positive integer, got 0"),
        ("[tasks]\nmax_running = true", "tasks.max_running: expected an integer, got True"),
        ("[tasks]\nmax_stored = 1.5", "tasks.max_stored: expected an integer, got 1.5"),
        (
            "[tasks]\ndefault_ttl = -1",
            "tasks.default_ttl: expected a positive number of seconds, got -1",
        ),
        (
            "[tasks]\nmax_ttl = 'long'",
            "tasks.max_ttl: expected an integer or a number, got 'long'",
        ),
        (
            "[tasks]\npoll_interval = 0",
            "tasks.poll_interval: expected a positive number of seconds, got 0",
        ),
        (
            "[tasks]\ndefault_ttl = 100\nmax_ttl = 10",
            "tasks.default_ttl: expected at most tasks.max_ttl (10), got 100.0",
        ),
    ],
)
def test_a_wrong_value_is_named(tmp_path: Path, text: str, expected: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(write(tmp_path / "mcpactor.toml", text))
    # The message ends with the line of the key in the file.
    key = expected.split(":", 1)[0].rsplit(".", 1)[-1]
    (line,) = [n for n, code in enumerate(text.splitlines(), 1) if code.startswith(f"{key} ")]
    assert str(info.value) == f"{tmp_path / 'mcpactor.toml'}: {expected} (line {line})"


def test_task_keys_in_pyproject_are_named_in_full(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", "[tool.mcpactor.tasks]\nmax_running = -1\n")
    with pytest.raises(ConfigError, match=r"tool\.mcpactor\.tasks\.max_running: expected"):
        load_config(tmp_path / "pyproject.toml")


async def test_a_servers_tool_timeout_cancels_its_slow_tools(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    target = str(write(tmp_path / "slow_server.py", SLOW_SERVER))
    fast = write(tmp_path / "fast_server.py", SLOW_SERVER.replace('"slow"', '"fast"'))
    app = assemble(
        [
            ServerConfig(name="slow", target=target, tool_timeout=2.5),
            ServerConfig(name="fast", target=str(fast)),
        ]
    )
    assert [mount.server.tool_timeout for mount in app.mounts] == [2.5, None]
    async with connect_memory(app, initialize=True) as client:
        start = trio.current_time()
        result = await client.call_tool("slow_slow")
        assert result["isError"] is True
        assert text_of(result) == "tool 'slow' timed out after 2.5 s"
        assert trio.current_time() - start == pytest.approx(2.5)
        # A tool's own timeout wins over its server's.
        assert text_of(await client.call_tool("slow_patient")) == "patient done"
        # The other server has no deadline.
        start = trio.current_time()
        assert text_of(await client.call_tool("fast_slow")) == "slow done"
        assert trio.current_time() - start == pytest.approx(100)


def test_a_proxied_server_gets_its_tool_timeout() -> None:
    app = assemble(
        [
            ServerConfig(name="web", url="http://127.0.0.1:9/mcp", tool_timeout=3),
            ServerConfig(name="child", command=("true",), tool_timeout=4),
        ]
    )
    proxies = [mount.server for mount in app.mounts]
    assert all(isinstance(proxy, ProxyServer) for proxy in proxies)
    assert [proxy.tool_timeout for proxy in proxies] == [3, 4]


async def test_serve_applies_the_task_limits(tmp_path: Path) -> None:
    write(tmp_path / "slow_server.py", SLOW_SERVER)
    config = write(
        tmp_path / "mcpactor.toml",
        """
        [tasks]
        default_ttl = 12.5

        [servers.slow]
        target = "slow_server.py"
        """,
    )
    command = [sys.executable, "-m", "mcpactor", "serve", "--config", str(config)]
    with trio.fail_after(GUARD):
        async with connect_stdio(command, initialize=True) as client:
            created = await client.request(
                "tools/call", {"name": "slow_job", "arguments": {}, "task": {}}
            )
    assert created["task"]["ttl"] == 12_500
