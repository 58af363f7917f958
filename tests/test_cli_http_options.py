"""``mcpactor serve --http``'s operator options, from the command line and the config file.

How flags and ``[http]`` keys become ``HttpOptions`` is checked in process (the HTTP
server replaced by one that records what it was given); what they do is checked end to
end, against ``mcpactor serve`` running as a child process.
"""

from __future__ import annotations

import contextlib
import ssl
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any, Final

import orjson
import pytest
import trio

from mcpactor import Server
from mcpactor.cli import _build_parser, main
from mcpactor.transports import HttpOptions
from tests.transports._cli import first_line, server_file, serving
from tests.transports._http_client import McpClient, SocketClient

GUARD: Final = 60.0

GOOD: Final = """
from mcpactor import Server

server = Server("good")


@server.tool()
def add(a: int, b: int) -> int:
    return a + b
"""

AUTH: Final = """
def check(headers):
    return "alice" if headers.get("authorization") == "Bearer s3cret" else None
"""

INITIALIZE: Final = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "operator", "version": "1"},
    },
}


class Recorded:
    """What ``serve_http`` was called with, in place of serving."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    @property
    def options(self) -> HttpOptions:
        (call,) = self.calls
        options = call["options"]
        assert isinstance(options, HttpOptions)
        return options


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch) -> Recorded:
    record = Recorded()

    async def fake_serve_http(
        server: Server, *, task_status: trio.TaskStatus[tuple[str, int]], **kwargs: Any
    ) -> None:
        record.calls.append(kwargs)
        task_status.started(("127.0.0.1", 1))

    monkeypatch.setattr("mcpactor.transports.serve_http", fake_serve_http)
    return record


def write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text))
    return path


def test_every_flag_reaches_http_options(tmp_path: Path, recorded: Recorded) -> None:
    server = write(tmp_path / "good.py", GOOD)
    write(tmp_path / "auth.py", AUTH)
    argv = [
        "serve",
        str(server),
        "--http",
        "0",
        "--response-mode",
        "sse",
        "--cors-origins",
        "https://app.example.com",
        "https://other.example.com",
        "--max-sessions",
        "50",
        "--max-sessions-per-client",
        "5",
        "--max-connections",
        "200",
        "--session-idle-timeout",
        "120",
        "--keep-alive-timeout",
        "7.5",
        "--request-timeout",
        "12",
        "--health-path",
        "/live",
        "--access-log",
        "--authenticate",
        f"{tmp_path / 'auth.py'}:check",
    ]
    assert main(argv) == 0
    options = recorded.options
    assert options.response_mode == "sse"
    assert options.cors_origins == ("https://app.example.com", "https://other.example.com")
    assert options.max_sessions == 50
    assert options.max_sessions_per_client == 5
    assert options.max_connections == 200
    assert options.session_idle_timeout == 120.0
    assert options.keep_alive_timeout == 7.5
    assert options.request_timeout == 12.0
    assert options.health_path == "/live"
    assert options.access_log is True
    assert options.authenticate is not None
    assert options.authenticate({"authorization": "Bearer s3cret"}) == "alice"
    assert options.authenticate({}) is None


def test_without_flags_the_defaults_stand(tmp_path: Path, recorded: Recorded) -> None:
    assert main(["serve", str(write(tmp_path / "good.py", GOOD)), "--http", "0"]) == 0
    # The readiness is the command's own (the admin page's drain action drains it).
    assert recorded.options == HttpOptions(
        max_body_bytes=recorded.options.max_body_bytes, readiness=recorded.options.readiness
    )
    assert recorded.options.health_path == "/healthz"


@pytest.mark.parametrize(
    ("flags", "mode"),
    [(["--json-response"], "json"), (["--response-mode", "json"], "json"), ([], "auto")],
)
def test_json_response_is_response_mode_json(
    tmp_path: Path, recorded: Recorded, flags: list[str], mode: str
) -> None:
    assert main(["serve", str(write(tmp_path / "good.py", GOOD)), "--http", "0", *flags]) == 0
    assert recorded.options.response_mode == mode


def test_no_health_turns_the_endpoint_off(tmp_path: Path, recorded: Recorded) -> None:
    assert (
        main(["serve", str(write(tmp_path / "good.py", GOOD)), "--http", "0", "--no-health"]) == 0
    )
    assert recorded.options.health_path is None


def test_the_config_file_sets_every_option(tmp_path: Path, recorded: Recorded) -> None:
    write(tmp_path / "good.py", GOOD)
    write(tmp_path / "auth.py", AUTH)
    write(tmp_path / "cert.pem", "")
    config = write(
        tmp_path / "mcpactor.toml",
        """
        transport = "http"

        [http]
        port = 0
        response_mode = "json"
        cors_origins = ["https://app.example.com"]
        authenticate = "auth.py:check"
        www_authenticate = 'Bearer realm="mcp"'
        health_path = false
        access_log = true
        sse_path = false
        messages_path = false
        websocket_path = "/socket"
        max_sessions = 40
        max_sessions_per_client = 4
        max_connections = 300
        max_head_bytes = 16384
        max_header_count = 50
        session_idle_timeout = 600
        unconfirmed_session_timeout = 20
        keep_alive_timeout = 10
        request_timeout = 15
        write_timeout = 25
        websocket_idle_timeout = 300

        [servers.good]
        target = "good.py"
        """,
    )
    assert main(["serve", "--config", str(config)]) == 0
    options = recorded.options
    assert options.response_mode == "json"
    assert options.cors_origins == ("https://app.example.com",)
    assert options.www_authenticate == 'Bearer realm="mcp"'
    assert options.health_path is None
    assert options.access_log is True
    assert (options.sse_path, options.messages_path, options.websocket_path) == (
        None,
        None,
        "/socket",
    )
    assert options.max_sessions == 40
    assert options.max_sessions_per_client == 4
    assert options.max_connections == 300
    assert options.max_head_bytes == 16384
    assert options.max_header_count == 50
    assert options.session_idle_timeout == 600.0
    assert options.unconfirmed_session_timeout == 20.0
    assert options.keep_alive_timeout == 10.0
    assert options.request_timeout == 15.0
    assert options.write_timeout == 25.0
    assert options.websocket_idle_timeout == 300.0
    assert options.authenticate is not None
    assert options.authenticate({"authorization": "Bearer s3cret"}) == "alice"


def test_flags_win_over_the_config_file(tmp_path: Path, recorded: Recorded) -> None:
    write(tmp_path / "good.py", GOOD)
    config = write(
        tmp_path / "mcpactor.toml",
        """
        [http]
        port = 9
        max_sessions = 40
        response_mode = "sse"
        health_path = "/up"

        [servers.good]
        target = "good.py"
        """,
    )
    argv = ["serve", "--config", str(config), "--http", "0", "--max-sessions", "7"]
    assert main([*argv, "--json-response", "--no-health"]) == 0
    options = recorded.options
    assert (options.max_sessions, options.response_mode, options.health_path) == (7, "json", None)
    # --http PORT moves the bind; the rest of [http] still applies.
    assert recorded.calls[0]["port"] == 0


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("response_mode = 'xml'", "http.response_mode: expected one of 'auto', 'json', 'sse'"),
        (
            "json_response = true\nresponse_mode = 'sse'",
            "http.response_mode: expected 'json' or nothing with json_response = true",
        ),
        ("tls_cert = 'c.pem'", "http.tls_key: missing; HTTPS needs tls_cert and tls_key"),
        ("authenticate = 'auth'", "http.authenticate: expected 'module:function', got 'auth'"),
        ("health_path = 'up'", "http.health_path: expected a path starting with '/', or false"),
        ("health_path = true", "http.health_path: expected a path starting with '/', or false"),
        ("access_log = 'yes'", "http.access_log: expected true or false, got 'yes'"),
        ("max_connections = 0", "http.max_connections: expected a positive integer, got 0"),
        ("max_head_bytes = true", "http.max_head_bytes: expected an integer, got True"),
        ("request_timeout = 0", "http.request_timeout: expected a positive number of seconds"),
        ("write_timeout = inf", "http.write_timeout: expected a positive number of seconds"),
        ("cors_origins = 'x'", "http.cors_origins: expected a list of strings, got 'x'"),
        ("max_sesions = 3", "http.max_sesions: unknown key"),
    ],
)
def test_a_wrong_http_key_is_named(tmp_path: Path, text: str, expected: str) -> None:
    from mcpactor.config import ConfigError, load_config

    with pytest.raises(ConfigError) as info:
        load_config(write(tmp_path / "mcpactor.toml", f"[http]\n{text}\n"))
    assert expected in str(info.value)


def test_relative_paths_in_http_are_the_files(tmp_path: Path) -> None:
    from mcpactor.config import load_config

    config = load_config(
        write(
            tmp_path / "mcpactor.toml",
            """
            [http]
            tls_cert = "tls/cert.pem"
            tls_key = "/etc/tls/key.pem"
            authenticate = "hooks/auth.py:check"
            """,
        )
    )
    assert config.http.tls_cert == str(tmp_path / "tls" / "cert.pem")
    assert config.http.tls_key == "/etc/tls/key.pem"
    assert config.http.authenticate == f"{tmp_path / 'hooks' / 'auth.py'}:check"
    # A module reference stays one: it is looked up on sys.path.
    other = load_config(write(tmp_path / "m.toml", "[http]\nauthenticate = 'pkg.auth:check'\n"))
    assert other.http.authenticate == "pkg.auth:check"


@pytest.mark.parametrize(
    "argv",
    [
        ["--log-level", "debug", "serve", "x.py"],
        ["serve", "--log-level", "Debug", "x.py"],
        ["serve", "x.py", "--log-level", "DEBUG"],
        ["--log-level", "info", "serve", "--log-level", "debug", "x.py"],
    ],
)
def test_log_level_is_read_before_or_after_serve_in_any_case(argv: list[str]) -> None:
    assert _build_parser().parse_args(argv).log_level == "DEBUG"


def test_log_level_before_serve_is_kept_when_serve_has_none() -> None:
    args = _build_parser().parse_args(["--log-level", "error", "--debug", "serve", "x.py"])
    assert (args.log_level, args.debug) == ("ERROR", True)
    args = _build_parser().parse_args(["serve", "x.py"])
    assert (args.log_level, args.debug) == (None, False)


# --- end to end ----------------------------------------------------------------------


async def http_get(port: int, path: str, *, host: str = "127.0.0.1") -> tuple[int, bytes]:
    """A plain GET over a fresh connection: (status, body)."""
    async with trio.open_nursery() as nursery:
        http = SocketClient(host, port, nursery)
        response = await http.request("GET", path, {"host": f"localhost:{port}"})
        body = await response.body()
        await http.aclose()
    return response.status, body


async def test_the_health_endpoint_is_on_moved_or_off(tmp_path: Path) -> None:
    server = str(server_file(tmp_path, "good.py", GOOD))
    with trio.fail_after(GUARD):
        async with serving([server, "--http", "127.0.0.1:0"]) as served:
            status, body = await http_get(served.port, "/healthz")
            assert status == 200
            assert orjson.loads(body)["status"] == "ok"
        async with serving([server, "--http", "127.0.0.1:0", "--health-path", "/live"]) as served:
            assert (await http_get(served.port, "/live"))[0] == 200
            assert (await http_get(served.port, "/healthz"))[0] == 404
        async with serving([server, "--http", "127.0.0.1:0", "--no-health"]) as served:
            assert (await http_get(served.port, "/healthz"))[0] == 404


async def test_the_access_log_shows_each_request(tmp_path: Path) -> None:
    server = str(server_file(tmp_path, "good.py", GOOD))
    with trio.fail_after(GUARD):
        async with serving([server, "--http", "127.0.0.1:0", "--access-log"]) as served:
            assert (await http_get(served.port, "/healthz"))[0] == 200
            assert (await http_get(served.port, "/nowhere"))[0] == 404
            served.process.terminate()
            await served.process.wait()
            assert served.process.stderr is not None
            rest = b""
            while chunk := await served.process.stderr.receive_some(65536):
                rest += chunk
    logged = [line for line in rest.decode().splitlines() if "mcpactor.access" in line]
    assert any("/healthz" in line and " 200 " in f"{line} " for line in logged), logged
    assert any("/nowhere" in line and "404" in line for line in logged), logged


async def test_authenticate_from_the_command_line_and_the_config_file(tmp_path: Path) -> None:
    server_file(tmp_path, "good.py", GOOD)
    server_file(tmp_path, "auth.py", AUTH)
    config = server_file(
        tmp_path,
        "mcpactor.toml",
        """
        transport = "http"
        [http]
        port = 0
        authenticate = "auth.py:check"
        [servers.good]
        target = "good.py"
        """,
    )
    for arguments in (
        [str(tmp_path / "good.py"), "--http", "127.0.0.1:0", "--authenticate", "auth:check"],
        ["--config", str(config)],
    ):
        with trio.fail_after(GUARD):
            # auth:check is a module of the current directory: run from there.
            async with serving_in(tmp_path, arguments) as port:
                await check_authentication(port)


async def check_authentication(port: int) -> None:
    async with trio.open_nursery() as nursery:
        http = SocketClient("127.0.0.1", port, nursery)
        client = McpClient(http)
        refused = await client.post(INITIALIZE)
        assert refused.status == 401
        await refused.body()
        accepted = await client.post(INITIALIZE, authorization="Bearer s3cret")
        assert accepted.status == 200
        assert (await accepted.json())["result"]["serverInfo"]["name"] in ("good", "mcpactor")
        await http.aclose()


async def test_response_mode_sse_answers_with_a_stream(tmp_path: Path) -> None:
    server = str(server_file(tmp_path, "good.py", GOOD))
    with trio.fail_after(GUARD):
        for flags, content_type in [
            ([], "application/json"),
            (["--response-mode", "sse"], "text/event-stream"),
        ]:
            async with (
                serving([server, "--http", "127.0.0.1:0", *flags]) as served,
                trio.open_nursery() as nursery,
            ):
                http = SocketClient("127.0.0.1", served.port, nursery)
                answer = await McpClient(http).post(INITIALIZE)
                assert answer.status == 200
                assert answer.content_type.startswith(content_type)
                await answer.body()
                await http.aclose()


@pytest.mark.parametrize("http_server", ["builtin", "hypercorn"])
async def test_tls_serves_https(tmp_path: Path, http_server: str) -> None:
    import trustme

    authority = trustme.CA()
    certificate = authority.issue_cert("localhost", "127.0.0.1")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    certificate.private_key_and_cert_chain_pem.write_to_path(str(cert))
    certificate.private_key_pem.write_to_path(str(key))
    server = str(server_file(tmp_path, "good.py", GOOD))
    arguments = [server, "--http", "127.0.0.1:0", "--http-server", http_server]
    arguments += ["--tls-cert", str(cert), "--tls-key", str(key)]
    context = ssl.create_default_context()
    authority.configure_trust(context)
    with trio.fail_after(GUARD):
        async with serving(arguments) as served:
            assert served.url.startswith("https://127.0.0.1:")
            status, headers, body = await https_request(
                context, served.port, "POST", "/mcp", orjson.dumps(INITIALIZE)
            )
            assert status == 200, body
            assert headers["content-type"].startswith("application/json")
            assert orjson.loads(body)["result"]["serverInfo"]["name"] == "good"
            status, _, _ = await https_request(context, served.port, "GET", "/healthz", b"")
            assert status == 200


async def https_request(
    context: ssl.SSLContext, port: int, method: str, path: str, body: bytes
) -> tuple[int, Mapping[str, str], bytes]:
    """One request over a fresh TLS connection (Connection: close): status, headers, body."""
    tcp = await trio.open_tcp_stream("127.0.0.1", port)
    stream = trio.SSLStream(tcp, context, server_hostname="localhost", https_compatible=True)
    async with stream:
        head = (
            f"{method} {path} HTTP/1.1\r\nhost: localhost:{port}\r\nconnection: close\r\n"
            "content-type: application/json\r\naccept: application/json, text/event-stream\r\n"
            f"content-length: {len(body)}\r\n\r\n"
        )
        await stream.send_all(head.encode() + body)
        received = b""
        try:
            while chunk := await stream.receive_some(65536):
                received += chunk
        except trio.BrokenResourceError:
            pass  # a peer that closes without close_notify: what arrived is the answer
    raw_head, _, rest = received.partition(b"\r\n\r\n")
    status_line, *lines = raw_head.decode().split("\r\n")
    headers = {
        name.strip().lower(): value.strip()
        for name, _, value in (line.partition(":") for line in lines)
    }
    if "content-length" in headers:
        rest = rest[: int(headers["content-length"])]
    return int(status_line.split()[1]), headers, rest


@contextlib.asynccontextmanager
async def serving_in(directory: Path, arguments: list[str]) -> AsyncIterator[int]:
    """``mcpactor serve ARGUMENTS`` run from ``directory``; yields the port it serves."""
    process = await trio.lowlevel.open_process(
        [sys.executable, "-m", "mcpactor", "serve", *arguments],
        cwd=directory,
        stderr=subprocess.PIPE,
    )
    assert process.stderr is not None
    try:
        line = await first_line(process.stderr)
        url = line.split("serving ", 1)[1].split()[0]
        yield int(url.rsplit(":", 1)[1].split("/")[0])
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
        await process.stderr.aclose()


def test_an_authenticate_key_that_does_not_load_is_named(
    tmp_path: Path, recorded: Recorded, capsys: pytest.CaptureFixture[str]
) -> None:
    write(tmp_path / "good.py", GOOD)
    write(tmp_path / "auth.py", AUTH)
    config = write(
        tmp_path / "mcpactor.toml",
        """
        transport = "http"
        [http]
        port = 0
        authenticate = "auth.py:chek"
        [servers.good]
        target = "good.py"
        """,
    )
    assert main(["serve", "--config", str(config)]) == 1
    error = capsys.readouterr().err
    assert f"mcpactor: {config}: http.authenticate: " in error
    assert "has no attribute 'chek'" in error
    # Nothing was started.
    assert recorded.calls == []
