"""``mcpactor serve`` that cannot serve: a short message naming the culprit, and a status.

Each case runs the real command as a child process and reads what a user would read:
the exit status, and stderr — a few lines, no traceback unless ``--debug``.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Final

import pytest
import trio

from tests.transports._cli import server_file, serving

# Real processes, real time: generous, so only a hang trips it.
GUARD: Final = 60.0
ROOT: Final = Path(__file__).resolve().parents[1]

GOOD: Final = """
from mcpactor import Server

server = Server("good")


@server.tool()
def add(a: int, b: int) -> int:
    return a + b
"""

FAILING_LIFESPAN: Final = """
import contextlib

from mcpactor import Server

server = Server("failing")


@server.lifespan
@contextlib.asynccontextmanager
async def connect(server):
    raise ConnectionRefusedError("database at db.internal:5432 refused the connection")
    yield
"""


async def run_serve(
    *arguments: str, cwd: Path, env: dict[str, str] | None = None, command: list[str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    """Run ``mcpactor serve ARGUMENTS`` to its end, stdin closed."""
    with trio.fail_after(GUARD):
        return await trio.run_process(
            [*(command or [sys.executable, "-m", "mcpactor"]), "serve", *arguments],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )


def short_report(
    done: subprocess.CompletedProcess[bytes], *, status: int = 1, lines: int = 4
) -> str:
    """stderr of a failed command, checked to be a short report without a traceback."""
    assert done.returncode == status, done.stderr
    assert done.stdout == b""
    text = done.stderr.decode()
    assert "Traceback" not in text, text
    assert 1 <= len(text.splitlines()) <= lines, text
    assert all(line.startswith(("mcpactor", "  ")) for line in text.splitlines()), text
    return text


async def test_a_syntax_error_names_the_file_and_line(tmp_path: Path) -> None:
    server_file(tmp_path, "broken.py", GOOD + "\ndef oops(:\n    pass\n")
    text = short_report(await run_serve("broken.py", cwd=tmp_path))
    assert "broken.py:11: SyntaxError: " in text
    # The line itself, as Python would show it.
    assert "    def oops(:" in text


async def test_a_module_that_raises_at_import_names_the_line(tmp_path: Path) -> None:
    server_file(tmp_path, "raising.py", GOOD + "\nraise RuntimeError('no API key set')\n")
    text = short_report(await run_serve("raising.py", cwd=tmp_path))
    assert "RuntimeError: no API key set (raising.py:11, in <module>)" in text


async def test_a_missing_module_is_named(tmp_path: Path) -> None:
    text = short_report(await run_serve("weather.servers:server", cwd=tmp_path))
    assert "no module named 'weather'" in text


async def test_a_word_that_is_no_plugin_names_the_installed_ones(tmp_path: Path) -> None:
    # A misspelt plugin is as likely as a missing module: both are said.
    text = short_report(await run_serve("cloc", cwd=tmp_path))
    assert "'cloc': no installed plugin or module named 'cloc'" in text
    assert "installed plugins: " in text
    assert "clock" in text.partition("installed plugins: ")[2]


async def test_a_missing_dependency_of_the_module_names_both(tmp_path: Path) -> None:
    server_file(tmp_path, "needy.py", "import requests_that_are_not_installed\n" + GOOD)
    (tmp_path / "pkg").mkdir()
    server_file(tmp_path / "pkg", "__init__.py", "")
    server_file(tmp_path / "pkg", "needy.py", "import requests_that_are_not_installed\n" + GOOD)
    for target, place in [("needy.py", "needy.py:1"), ("pkg.needy", "pkg/needy.py:1")]:
        text = short_report(await run_serve(target, cwd=tmp_path))
        assert "ModuleNotFoundError: No module named 'requests_that_are_not_installed'" in text
        assert f"({place}, in <module>)" in text


async def test_a_module_in_the_current_directory_is_found_as_with_python_m(
    tmp_path: Path,
) -> None:
    # A console script's sys.path starts with its own directory, not the current one.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = server_file(
        bin_dir,
        "mcpactor_script.py",
        "import sys\nfrom mcpactor.cli import main\nsys.exit(main())\n",
    )
    project = tmp_path / "project"
    (project / "pkg").mkdir(parents=True)
    server_file(project / "pkg", "__init__.py", "")
    server_file(project / "pkg", "tools.py", GOOD)
    done = await run_serve("pkg.tools:server", cwd=project, command=[sys.executable, str(script)])
    # Served over stdio until stdin's end: a clean exit.
    assert done.returncode == 0, done.stderr
    assert done.stderr == b""


async def test_a_target_named_on_the_command_line_must_load(tmp_path: Path) -> None:
    server_file(tmp_path, "good.py", GOOD)
    server_file(tmp_path, "bad.py", "raise ImportError('bad is bad')\n")
    text = short_report(await run_serve("good.py", "bad.py", cwd=tmp_path))
    assert "server 'bad' failed to load" in text
    assert "ImportError: bad is bad (bad.py:1, in <module>)" in text


async def test_a_port_in_use_is_named(tmp_path: Path) -> None:
    server_file(tmp_path, "good.py", GOOD)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        for server in ("builtin", "hypercorn"):
            done = await run_serve(
                "good.py", "--http", str(port), "--http-server", server, cwd=tmp_path
            )
            text = short_report(done)
            assert f"mcpactor: cannot listen on 127.0.0.1:{port}: " in text
            assert "in use" in text


@pytest.mark.parametrize("transport", [[], ["--http", "127.0.0.1:0"]])
async def test_a_lifespan_that_fails_at_start_is_named(
    tmp_path: Path, transport: list[str]
) -> None:
    server_file(tmp_path, "failing.py", FAILING_LIFESPAN)
    text = short_report(await run_serve("failing.py", *transport, cwd=tmp_path))
    assert (
        "mcpactor: cannot start: ConnectionRefusedError: database at db.internal:5432 "
        "refused the connection (failing.py:12, in connect)"
    ) in text


async def test_debug_adds_the_traceback(tmp_path: Path) -> None:
    server_file(tmp_path, "failing.py", FAILING_LIFESPAN)
    for argv in (["--debug", "serve", "failing.py"], ["serve", "failing.py", "--debug"]):
        with trio.fail_after(GUARD):
            done = await trio.run_process(
                [sys.executable, "-m", "mcpactor", *argv],
                cwd=tmp_path,
                stdin=subprocess.DEVNULL,
                capture_stderr=True,
                check=False,
            )
        assert done.returncode == 1
        text = done.stderr.decode()
        assert "Traceback (most recent call last):" in text
        assert 'failing.py", line 12, in connect' in text
        # The short report still closes it.
        assert text.rstrip().endswith("refused the connection (failing.py:12, in connect)")


# Makes the http extra's modules look uninstalled: the import system itself says so, as it
# does when the distribution is missing (this is a sitecustomize, run at interpreter start).
HIDE_MODULES: Final = """
import sys

HIDDEN = {hidden!r}


class Uninstalled:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name.partition(".")[0] in HIDDEN:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None


sys.meta_path.insert(0, Uninstalled)
"""


@pytest.mark.parametrize(
    ("hidden", "server"),
    [(("httptools",), "builtin"), (("hypercorn",), "hypercorn"), (("wsproto",), "builtin")],
)
async def test_a_missing_http_extra_says_what_to_install(
    tmp_path: Path, hidden: tuple[str, ...], server: str
) -> None:
    server_file(tmp_path, "good.py", GOOD)
    site = tmp_path / "site"
    site.mkdir()
    server_file(site, "sitecustomize.py", HIDE_MODULES.format(hidden=set(hidden)))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(site), *sys.path])
    # The simulation is real: the interpreter cannot import the module at all.
    with trio.fail_after(GUARD):
        probe = await trio.run_process(
            [sys.executable, "-c", f"import {hidden[0]}"],
            env=env,
            capture_stderr=True,
            check=False,
        )
    assert probe.returncode == 1
    assert f"No module named '{hidden[0]}'" in probe.stderr.decode()
    done = await run_serve(
        "good.py", "--http", "0", "--http-server", server, cwd=tmp_path, env=env
    )
    text = short_report(done)
    assert "pip install 'mcpactor[http]'" in text
    assert f"no module named '{hidden[0]}'" in text
    # stdio needs none of it.
    done = await run_serve("good.py", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        (["--max-sessions", "0"], "argument --max-sessions: expected a positive integer, got '0'"),
        (["--session-idle-timeout", "-1"], "argument --session-idle-timeout: expected a"),
        (["--session-idle-timeout", "inf"], "argument --session-idle-timeout: expected a"),
        (["--response-mode", "xml"], "argument --response-mode: invalid choice: 'xml'"),
        (["--health-path", "healthz"], "argument --health-path: expected a path starting"),
        (["--log-level", "loud"], "argument --log-level: expected one of debug, info"),
        (["--max-connections", "many"], "argument --max-connections: expected a positive"),
    ],
)
async def test_a_bad_option_value_is_one_line_naming_it(
    tmp_path: Path, arguments: list[str], expected: str
) -> None:
    server_file(tmp_path, "good.py", GOOD)
    done = await run_serve("good.py", "--http", "0", *arguments, cwd=tmp_path)
    text = short_report(done, status=2)
    assert len(text.splitlines()) == 1
    assert expected in text


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        (["--tls-cert", "cert.pem"], "--tls-cert: HTTPS needs a certificate and its key; "),
        (["--tls-cert", "none.pem", "--tls-key", "none.key"], "--tls-cert: no such file"),
        (
            ["--tls-cert", "good.py", "--tls-key", "good.py"],
            "--tls-cert 'good.py', --tls-key 'good.py': cannot use them as a PEM certificate",
        ),
        (["--http", "host:port"], "--http expects [HOST:]PORT, got 'host:port'"),
    ],
)
async def test_a_bad_combination_is_one_line_naming_the_options(
    tmp_path: Path, arguments: list[str], expected: str
) -> None:
    server_file(tmp_path, "good.py", GOOD)
    done = await run_serve("good.py", "--http", "0", *arguments, cwd=tmp_path)
    text = short_report(done, status=2)
    assert len(text.splitlines()) == 1
    assert expected in text


async def test_an_authentication_hook_that_does_not_load_is_named(tmp_path: Path) -> None:
    server_file(tmp_path, "good.py", GOOD)
    server_file(tmp_path, "auth.py", "TOKEN = 's3cret'\n")
    for reference, expected in [
        ("auth:check", "--authenticate: 'auth:check': module 'auth' has no attribute 'check'"),
        ("auth:TOKEN", "--authenticate: 'auth:TOKEN' is not a function, it is a str"),
        ("nowhere:check", "--authenticate: 'nowhere:check': no module named 'nowhere'"),
        ("auth", "--authenticate: expected MODULE:FUNCTION, got 'auth'"),
    ]:
        done = await run_serve("good.py", "--http", "0", "--authenticate", reference, cwd=tmp_path)
        assert expected in short_report(done)


async def test_the_config_file_names_its_own_bad_keys(tmp_path: Path) -> None:
    server_file(tmp_path, "good.py", GOOD)
    config = server_file(
        tmp_path,
        "mcpactor.toml",
        """
        transport = "http"
        [http]
        port = 0
        max_sessions = 0
        [servers.good]
        target = "good.py"
        """,
    )
    text = short_report(await run_serve("--config", str(config), cwd=tmp_path), status=2)
    # The key's line in the file (line 1 is the blank one the dedented text starts with).
    assert "mcpactor.toml: http.max_sessions: expected a positive integer, got 0 (line 5)" in text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            '[servers.good]\ntarget = "good.py"\nprefix = 3\n',
            "mcpactor.toml: servers.good.prefix: expected true, false or a prefix",
        ),
        ('[servers.good]\ntarget = "good.py"\n\n[http]\nprot = 1\n', "http.prot: unknown key"),
        ('servers = { good = { target = "good.py", prefx = "g" } }\n', "servers.good.prefx:"),
    ],
)
async def test_a_bad_config_value_names_its_line(tmp_path: Path, text: str, expected: str) -> None:
    server_file(tmp_path, "good.py", GOOD)
    config = tmp_path / "mcpactor.toml"
    config.write_text(text)
    shown = short_report(await run_serve("--config", str(config), cwd=tmp_path), status=2)
    assert expected in shown
    (line,) = [
        n
        for n, code in enumerate(text.splitlines(), 1)
        if code.startswith(("prefix", "prot", "servers ="))
    ]
    assert shown.rstrip().endswith(f"(line {line})")


async def test_a_config_that_is_not_toml_names_line_and_column(tmp_path: Path) -> None:
    config = tmp_path / "mcpactor.toml"
    config.write_text('[servers.good]\ntarget = "good.py\n')
    shown = short_report(await run_serve("--config", str(config), cwd=tmp_path), status=2)
    assert "mcpactor.toml: not valid TOML: " in shown
    assert "(at line 2, column " in shown


def broken_plugin_site(tmp_path: Path) -> dict[str, str]:
    """An environment where an installed plugin ``broken`` raises when it is imported."""
    # An installed distribution, as pip leaves one: metadata with the entry point.
    site = tmp_path / "site"
    info = site / "broken_plugin-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[mcpactor.servers]\nbroken = broken_plugin:server\n")
    failing = GOOD + "\nraise RuntimeError('BROKEN_TOKEN is not set')\n"
    server_file(site, "broken_plugin.py", failing)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(site), *sys.path])
    return env


async def test_a_plugin_raising_at_import_is_named(tmp_path: Path) -> None:
    env = broken_plugin_site(tmp_path)
    # The plugin, its entry point, its distribution, the cause, and the --debug hint.
    text = short_report(await run_serve("broken", cwd=tmp_path, env=env), lines=5)
    assert "plugin 'broken' failed to load" in text
    assert "distribution: broken-plugin 0.1" in text
    assert "RuntimeError: BROKEN_TOKEN is not set (site/broken_plugin.py:11, in <module>)" in text


async def test_version() -> None:
    from mcpactor import __version__

    with trio.fail_after(GUARD):
        done = await trio.run_process(
            [sys.executable, "-m", "mcpactor", "--version"], capture_stdout=True
        )
    assert done.stdout.decode() == f"mcpactor {__version__}\n"


@pytest.mark.parametrize(
    ("flags", "info_shown"),
    [
        ([], False),
        (["-v"], True),
        (["--verbose"], True),
        (["-v", "--log-level", "warning"], False),
    ],
)
async def test_verbose_logs_more(tmp_path: Path, flags: list[str], info_shown: bool) -> None:
    server_file(tmp_path, "good.py", GOOD)
    # Served until stdin's end; starting logs at INFO that no state key was configured.
    done = await run_serve("good.py", *flags, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (b"INFO mcpactor: no state key configured" in done.stderr) == info_shown


@pytest.mark.parametrize(("flags", "error_shown"), [(["-q"], True), (["-qq"], False)])
async def test_quiet_logs_less(tmp_path: Path, flags: list[str], error_shown: bool) -> None:
    env = broken_plugin_site(tmp_path)
    # Every installed plugin: the broken one is left out, with an ERROR, and the rest served.
    done = await run_serve(*flags, cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    assert (b"ERROR mcpactor: plugin 'broken' failed to load" in done.stderr) == error_shown
    assert b"INFO" not in done.stderr


async def test_serving_still_prints_one_line(tmp_path: Path) -> None:
    server_file(tmp_path, "good.py", GOOD)
    async with serving([str(tmp_path / "good.py"), "--http", "127.0.0.1:0"]) as served:
        assert served.url.startswith("http://127.0.0.1:")
        assert served.url.endswith("/mcp")


async def test_the_quickstart_shows_a_syntax_error_as_it_is_reported(tmp_path: Path) -> None:
    text = (ROOT / "docs" / "quickstart.md").read_text()
    shown = text.split("mcpactor: 'examples/quickstart.py'", 1)[1].split("```", 1)[0]
    shown = "mcpactor: 'examples/quickstart.py'" + shown
    source = (ROOT / "examples" / "quickstart.py").read_text().splitlines()
    (line,) = [n for n, code in enumerate(source) if code.startswith("async def add(")]
    source[line] = source[line].removesuffix(":")
    (tmp_path / "examples").mkdir()
    (tmp_path / "examples" / "quickstart.py").write_text("\n".join(source) + "\n")
    done = await run_serve("examples/quickstart.py", cwd=tmp_path)
    assert short_report(done) == shown


@pytest.mark.skipif(sys.platform == "win32", reason="--workers needs a POSIX system")
async def test_workers_whose_lifespan_fails_stop_instead_of_restarting(tmp_path: Path) -> None:
    server_file(tmp_path, "failing.py", FAILING_LIFESPAN)
    done = await run_serve(
        "failing.py", "--http", "127.0.0.1:0", "--stateless", "--workers", "2", cwd=tmp_path
    )
    # The worker's error, said once by the supervisor, and its status.
    assert done.returncode == 1
    text = done.stderr.decode()
    assert "Traceback" not in text
    assert text.count("cannot start: ConnectionRefusedError: database at db.internal:5432") == 1
    assert "starting it again" not in text
    assert "serving" not in text
