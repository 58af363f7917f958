"""The configuration file: parsing, errors that name the key, and serving what it names."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
import textwrap
import types
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Final

import pytest
import trio

import mcpactor.testing
from mcpactor import PluginError, Server
from mcpactor.cli import main
from mcpactor.client import ClientSession, ProxyServer, connect_stdio, connect_websocket
from mcpactor.config import (
    Config,
    ConfigError,
    HttpConfig,
    ServerConfig,
    assemble,
    find_config,
    load_config,
    target_configs,
)
from tests.client.conftest import text_of

from .conftest import Site

ROOT: Final = Path(__file__).resolve().parents[2]
EXAMPLE: Final = ROOT / "examples" / "mcpactor.toml"
# Real processes, real time: generous, so only a hang trips it.
GUARD: Final = 60.0


def write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text))
    return path


def test_a_full_configuration_is_read(tmp_path: Path) -> None:
    config = load_config(
        write(
            tmp_path / "mcpactor.toml",
            """
            transport = "http"
            prefix = false
            strict = true
            log_level = "info"
            grace = 2

            [http]
            host = "0.0.0.0"
            port = 9000
            path = "/rpc"
            stateless = true
            allowed_hosts = ["example.com"]
            workers = 3

            [env]
            MCPACTOR_FS_ROOTS = "/srv"

            [servers.clock]
            prefix = "time"
            max_concurrent = 4

            [servers.local]
            target = "servers/local.py:app"

            [servers.module]
            target = "package.module:server"
            prefix = true

            [servers.remote]
            command = ["remote-mcp", "--flag"]
            env = { TOKEN = "t" }
            cwd = "work"

            [servers.web]
            url = "ws://127.0.0.1:9/ws"
            headers = { Authorization = "Bearer x" }
            """,
        )
    )
    assert config == Config(
        source=tmp_path / "mcpactor.toml",
        transport="http",
        prefix=False,
        strict=True,
        log_level="INFO",
        grace=2.0,
        http=HttpConfig(
            host="0.0.0.0",
            port=9000,
            path="/rpc",
            stateless=True,
            allowed_hosts=("example.com",),
            workers=3,
        ),
        env={"MCPACTOR_FS_ROOTS": "/srv"},
        servers=(
            ServerConfig(name="clock", plugin="clock", prefix="time", max_concurrent=4),
            ServerConfig(name="local", target=f"{tmp_path}/servers/local.py:app"),
            ServerConfig(name="module", target="package.module:server"),
            ServerConfig(
                name="remote",
                command=("remote-mcp", "--flag"),
                env={"TOKEN": "t"},
                cwd=str(tmp_path / "work"),
            ),
            ServerConfig(
                name="web", url="ws://127.0.0.1:9/ws", headers={"Authorization": "Bearer x"}
            ),
        ),
    )


def test_an_empty_file_is_a_default_configuration(tmp_path: Path) -> None:
    config = load_config(write(tmp_path / "mcpactor.toml", ""))
    assert config == Config(source=tmp_path / "mcpactor.toml")


def test_pyproject_tool_mcpactor_is_read(tmp_path: Path) -> None:
    write(
        tmp_path / "pyproject.toml",
        """
        [project]
        name = "deployment"

        [tool.mcpactor.servers.clock]
        prefix = "time"
        """,
    )
    assert find_config(tmp_path) == tmp_path / "pyproject.toml"
    config = load_config(tmp_path)
    assert config.servers == (ServerConfig(name="clock", plugin="clock", prefix="time"),)


def test_mcpactor_toml_wins_over_pyproject(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", "[tool.mcpactor]\n")
    write(tmp_path / "mcpactor.toml", "")
    assert find_config(tmp_path) == tmp_path / "mcpactor.toml"
    assert find_config(tmp_path / "nowhere") is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "servres = {}",
            "mcpactor.toml: servres: unknown key; expected one of admin, auth, env, extensions, "
            "grace",
        ),
        ('transport = "tcp"', "transport: expected one of 'stdio', 'http', got 'tcp'"),
        ("prefix = 1", "prefix: expected true or false, got 1"),
        ('log_level = "loud"', "log_level: expected one of DEBUG, INFO"),
        ("grace = -1", "grace: expected a number of seconds ≥ 0, got -1"),
        ("grace = true", "grace: expected an integer or a number, got True"),
        ("servers = 3", "servers: expected a table, got 3"),
        ("[http]\nport = 'x'", "http.port: expected an integer, got 'x'"),
        ("[http]\nport = 70000", "http.port: expected a port number from 0 to 65535, got 70000"),
        ("[http]\nworkers = 0", "http.workers: expected at least 1, got 0"),
        ("[http]\nworkers = true", "http.workers: expected an integer, got True"),
        ("[http]\npath = 'mcp'", "http.path: expected a path starting with '/', got 'mcp'"),
        ("[http]\nallowed_hosts = 'x'", "http.allowed_hosts: expected a list of strings"),
        ("[http]\nhots = 'x'", "http.hots: unknown key"),
        ("[env]\nX = 1", "env.X: expected a string, got 1"),
        ("[servers]\nclock = 1", "servers.clock: expected a table, got 1"),
        ("[servers.clock]\nprefx = 'x'", "servers.clock.prefx: unknown key; expected one of"),
        ("[servers.clock]\nprefix = 'a b'", "servers.clock.prefix: expected true, false or a"),
        ("[servers.clock]\nprefix = 3", "servers.clock.prefix: expected true, false or"),
        ("[servers.clock]\nmax_concurrent = 0", "servers.clock.max_concurrent: expected a"),
        ("[servers.clock]\nmax_concurrent = true", "servers.clock.max_concurrent: expected an"),
        ("[servers.x]\ncommand = []", "servers.x.command: expected a non-empty list of strings"),
        ("[servers.x]\ncommand = 'ls'", "servers.x.command: expected a non-empty list"),
        ("[servers.x]\nurl = 'ws://h'\nenv = {}", "servers.x.env: only applies to a server with"),
        ("[servers.x]\ntarget = 'm:a'\nheaders = {}", "servers.x.headers: only applies"),
        ("[servers.x]\ntarget = 'm:a'\nurl = 'ws://h'", "servers.x: give one of plugin, target"),
        ('[servers."a b"]', 'servers."a b": server names use A-Z'),
        ("[servers.x]\ntarget = 1", "servers.x.target: expected a string, got 1"),
    ],
)
def test_a_wrong_key_is_named(tmp_path: Path, text: str, expected: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(write(tmp_path / "mcpactor.toml", text))
    assert expected in str(info.value)
    assert str(info.value).startswith(f"{tmp_path / 'mcpactor.toml'}: ")
    assert isinstance(info.value, ValueError)


def test_keys_in_pyproject_are_named_in_full(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", "[tool.mcpactor.servers.clock]\nprefix = 3\n")
    with pytest.raises(ConfigError, match=r"tool\.mcpactor\.servers\.clock\.prefix: expected"):
        load_config(tmp_path / "pyproject.toml")


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({"mcpactor.toml": "x = "}, "mcpactor.toml: not valid TOML"),
        ({"pyproject.toml": "[project]\n"}, "pyproject.toml: no [tool.mcpactor] table"),
        ({}, "has no mcpactor.toml and no pyproject.toml with a [tool.mcpactor] table"),
    ],
)
def test_an_unusable_file_is_reported(
    tmp_path: Path, files: dict[str, str], expected: str
) -> None:
    for name, text in files.items():
        write(tmp_path / name, text)
    target = tmp_path / next(iter(files)) if files else tmp_path
    with pytest.raises(ConfigError) as info:
        load_config(target)
    assert expected in str(info.value)


def test_a_missing_file_is_reported(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read the configuration"):
        load_config(tmp_path / "missing.toml")


def test_command_line_targets_become_named_servers() -> None:
    configs = target_configs(
        [
            "clock",
            "pkg.weather:server",
            "servers/notes.py",
            "other/notes.py:app",
            "ws://h.example:8/ws",
        ],
        plugins=["clock"],
    )
    assert configs == [
        ServerConfig(name="clock", plugin="clock"),
        ServerConfig(name="weather", target="pkg.weather:server"),
        ServerConfig(name="notes", target="servers/notes.py"),
        ServerConfig(name="notes_2", target="other/notes.py:app"),
        ServerConfig(name="h.example", url="ws://h.example:8/ws"),
    ]


def test_assemble_mounts_each_server_under_its_prefix(tmp_path: Path) -> None:
    write(
        tmp_path / "one.py",
        """
        from mcpactor import Server
        server = Server("one", instructions="the first")
        server.add_tool(lambda: "1", name="ping")
        """,
    )
    write(
        tmp_path / "two.py",
        """
        from mcpactor import Server
        server = Server("two")
        server.add_tool(lambda: "2", name="ping")
        """,
    )
    served = assemble(
        [
            ServerConfig(name="one", target=str(tmp_path / "one.py")),
            ServerConfig(
                name="two", target=str(tmp_path / "two.py"), prefix="b", max_concurrent=3
            ),
            ServerConfig(name="far", command=("remote-mcp",), env={"A": "1"}),
        ]
    )
    assert served.name == "mcpactor"
    assert served.instructions == "one: the first"
    mounts = {mount.name: mount for mount in served.mounts}
    assert [(m.name, m.prefix, m.max_concurrent) for m in served.mounts] == [
        ("one", "one", None),
        ("two", "b", 3),
        ("far", "far", None),
    ]
    assert isinstance(mounts["far"].server, ProxyServer)
    assert sorted(served._catalog().tools) == ["b_ping", "one_ping"]


async def test_assemble_runs_each_servers_middleware_in_the_order_listed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    one, two = Server("one"), Server("two")
    one.add_tool(lambda: "1", name="ping")
    two.add_tool(lambda: "2", name="pong")
    seen: list[str] = []

    def noting(tag: str) -> Any:
        async def layer(call: Any, call_next: Any) -> AsyncIterator[Any]:
            seen.append(f"{tag} {call.method}")
            async for message in call_next(call):
                yield message

        return layer

    first, second = one.middleware.use(noting("one")), two.middleware.use(noting("two"))
    module = types.ModuleType("_config_test_layered")
    vars(module).update(one=one, two=two)
    monkeypatch.setitem(sys.modules, module.__name__, module)
    served = assemble(
        [
            ServerConfig(name="one", target="_config_test_layered:one"),
            ServerConfig(name="two", target="_config_test_layered:two"),
        ]
    )
    # Only the served server's chain runs: it took each server's layers, in order.
    assert list(served.middleware) == [first, second]
    async with mcpactor.testing.client(served) as client:
        assert (await client.call_tool("two_pong")).text == "2"
    assert seen[-2:] == ["one tools/call", "two tools/call"]


def test_assemble_without_prefixes_keeps_explicit_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    one, two = Server("one"), Server("two")
    one.add_tool(lambda: "1", name="ping")
    two.add_tool(lambda: "2", name="ping")
    module = types.ModuleType("_config_test_servers")
    vars(module).update(one=one, two=two)
    monkeypatch.setitem(sys.modules, module.__name__, module)
    served = assemble(
        [
            ServerConfig(name="one", target="_config_test_servers:one"),
            ServerConfig(name="two", target="_config_test_servers:two", prefix="t"),
        ],
        prefix=False,
    )
    assert sorted(served._catalog().tools) == ["ping", "t_ping"]
    with pytest.raises(PluginError, match="tool 'ping' is served twice"):
        assemble(
            [
                ServerConfig(name="one", target="_config_test_servers:one"),
                ServerConfig(name="two", target="_config_test_servers:two"),
            ],
            prefix=False,
        )


def test_assemble_leaves_out_what_fails_unless_strict(
    site: Site, caplog: pytest.LogCaptureFixture
) -> None:
    site.install_plugin("alpha")
    servers = [
        ServerConfig(name="alpha", plugin="alpha"),
        ServerConfig(name="ghost", plugin="ghost_not_installed"),
        ServerConfig(name="bad", target="no_such_module_here:server"),
        ServerConfig(name="web", url="gopher://x"),
    ]
    served = assemble(servers)
    assert [mount.name for mount in served.mounts] == ["alpha"]
    text = caplog.text
    assert "plugin 'ghost_not_installed' is not installed" in text
    assert "server 'bad' failed to load" in text
    assert "server 'web' failed to load" in text
    with pytest.raises(PluginError, match="'ghost_not_installed' is not installed"):
        assemble(servers, strict=True)
    with pytest.raises(PluginError, match="nothing to serve"):
        assemble(servers[1:])
    with pytest.raises(ConfigError, match="two servers are named 'alpha'"):
        assemble([servers[0], servers[0]])


def test_serve_with_a_bad_config_names_the_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path / "mcpactor.toml", "[servers.clock]\nmax_concurrent = -2\n")
    assert main(["serve", "--config", str(path)]) == 2
    error = capsys.readouterr().err
    assert "servers.clock.max_concurrent: expected a positive integer, got -2" in error


def test_serve_picks_config_servers_by_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path / "mcpactor.toml", "[servers.clock]\n")
    assert main(["serve", "--config", str(path), "nope"]) == 2
    assert "names no server 'nope'" in capsys.readouterr().err


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    # The example runs ``python``: this interpreter.
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return env


async def check_example(client: ClientSession) -> None:
    tools = [tool["name"] for tool in await client.list_tools()]
    assert tools == ["weather_forecast", "notes_add", "quick_add", "quick_greet"]
    assert text_of(await client.call_tool("weather_forecast", {"city": "Oslo"})) == "snow in Oslo"
    result = await client.call_tool("quick_add", {"a": 2, "b": 3})
    assert result["structuredContent"] == {"result": 5}
    read = await client.read_resource("quickstart://about")
    assert read["contents"][0]["text"].startswith("# quickstart")


async def test_the_example_configuration_serves_over_stdio() -> None:
    command = [sys.executable, "-m", "mcpactor", "serve", "--config", str(EXAMPLE)]
    with trio.fail_after(GUARD):
        async with connect_stdio(command, env=child_env(), initialize=True) as client:
            await check_example(client)


async def test_a_configuration_can_serve_over_http(tmp_path: Path) -> None:
    text = EXAMPLE.read_text().replace("port = 8000", "port = 0")
    text = text.replace('transport = "stdio"', 'transport = "http"')
    text = text.replace(
        'target = "compose.py"', f"target = {str(ROOT / 'examples' / 'compose.py')!r}"
    )
    text = text.replace('cwd = "."', f"cwd = {str(ROOT / 'examples')!r}")
    config = write(tmp_path / "mcpactor.toml", text)
    with trio.fail_after(GUARD):
        async with trio.open_nursery() as nursery:
            process = await nursery.start(
                functools.partial(
                    trio.run_process,
                    [sys.executable, "-m", "mcpactor", "serve", "--config", str(config)],
                    env=child_env(),
                    stdin=subprocess.DEVNULL,
                    stderr=subprocess.PIPE,
                    check=False,
                )
            )
            assert process.stderr is not None
            url = await _served_url(process.stderr)
            assert url.endswith("/mcp")
            ws = url.replace("http://", "ws://").removesuffix("/mcp") + "/ws"
            async with connect_websocket(ws, initialize=True) as client:
                await check_example(client)
            process.terminate()


async def _served_url(stderr: trio.abc.ReceiveStream) -> str:
    seen = b""
    while b"mcpactor: serving " not in seen or not seen.endswith(b"\n"):
        chunk = await stderr.receive_some()
        assert chunk, f"the server exited: {seen.decode(errors='replace')}"
        seen += chunk
    line = seen.split(b"mcpactor: serving ", 1)[1].split(b"\n", 1)[0]
    return line.decode()


def test_serve_without_config_names_the_file_in_the_directory(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    # A file ``--config .`` would read is not read without it: the user is told so.
    write(tmp_path / "mcpactor.toml", "[servers.clock]\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("mcpactor.plugins._entry_points", lambda group: [])
    assert main(["serve"]) == 1
    error = capsys.readouterr().err
    assert "none is installed (mcpactor.toml is here: serve it with --config .)" in error


def test_serving_installed_plugins_warns_of_a_config_left_unread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from mcpactor.cli._serve import _mind_config_here

    (tmp_path / "pyproject.toml").write_text("[tool.mcpactor]\nprefix = false\n")
    monkeypatch.chdir(tmp_path)
    _mind_config_here(["clock"])
    assert "pyproject.toml is here but not read" in caplog.text
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    caplog.clear()
    _mind_config_here(["clock"])
    assert caplog.text == ""
