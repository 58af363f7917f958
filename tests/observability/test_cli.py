"""``mcpactor serve --log-format json`` and ``--otel``, and their keys in the config file."""

from __future__ import annotations

import argparse
import json
import logging
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Final

import httpx
import pytest
import trio

from mcpactor._exceptions import ConfigError
from mcpactor.cli import _build_parser
from mcpactor.cli._extras import ExtraMissing
from mcpactor.cli._observability import configure_observability
from mcpactor.config import parse_config
from mcpactor.observability import JsonFormatter
from mcpactor.runtime._metrics import METRICS

GUARD: Final = 60.0

LOGGING_SERVER: Final = """
import logging

from mcpactor import Server

server = Server("logging")
log = logging.getLogger("logging_server")


@server.tool()
async def shout(word: str) -> str:
    log.warning("shouting %s", word)
    return word.upper()
"""

MESSAGES: Final = b"".join(
    json.dumps(message).encode() + b"\n"
    for message in (
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "test", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": "call-7",
            "method": "tools/call",
            "params": {"name": "shout", "arguments": {"word": "hey"}},
        },
    )
)


async def test_serve_writes_json_lines_with_the_request_ids(tmp_path: Path) -> None:
    (tmp_path / "logging_server.py").write_text(LOGGING_SERVER)
    with trio.fail_after(GUARD):
        done = await trio.run_process(
            [
                sys.executable,
                "-m",
                "mcpactor",
                "serve",
                "--log-format",
                "json",
                "logging_server.py",
            ],
            cwd=tmp_path,
            stdin=MESSAGES,
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
    assert done.returncode == 0, done.stderr.decode()
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert answers[-1]["result"]["content"][0]["text"] == "HEY"
    records = [json.loads(line) for line in done.stderr.splitlines()]
    (shouted,) = [r for r in records if r["logger"] == "logging_server"]
    assert shouted["message"] == "shouting hey"
    assert shouted["request_id"] == "call-7"
    assert shouted["method"] == "tools/call"
    assert shouted["level"] == "WARNING"


def _serve_args(*argv: str) -> argparse.Namespace:
    return _build_parser().parse_args(["serve", *argv, "x.py"])


def test_the_options_are_off_unless_given() -> None:
    args = _serve_args()
    assert args.log_format is None
    assert args.otel is None
    args = _serve_args("--log-format", "json", "--otel")
    assert args.log_format == "json"
    assert args.otel is True
    with pytest.raises(SystemExit):
        _serve_args("--log-format", "xml")


def test_the_config_file_keys(tmp_path: Path) -> None:
    source = tmp_path / "mcpactor.toml"
    config = parse_config({"log_format": "json", "observability": {"otel": True}}, source=source)
    assert config.log_format == "json"
    assert config.otel is True
    plain = parse_config({}, source=source)
    assert plain.log_format is None
    assert plain.otel is False
    with pytest.raises(ConfigError, match="log_format: expected one of 'text', 'json'"):
        parse_config({"log_format": "xml"}, source=source)
    with pytest.raises(ConfigError, match=r"observability\.otl: unknown key"):
        parse_config({"observability": {"otl": True}}, source=source)
    with pytest.raises(ConfigError, match=r"observability\.otel: expected"):
        parse_config({"observability": {"otel": "yes"}}, source=source)


def test_configure_from_the_file_where_the_command_line_is_silent(tmp_path: Path) -> None:
    root = logging.getLogger()
    saved = (list(root.handlers), METRICS.log_context, METRICS.tracer)
    config = parse_config(
        {"log_format": "json", "observability": {"otel": True}}, source=tmp_path / "m.toml"
    )
    try:
        configure_observability(_serve_args(), config)
        assert isinstance(root.handlers[-1].formatter, JsonFormatter)
        assert METRICS.log_context
        assert METRICS.tracer is not None
    finally:
        for handler in list(root.handlers):
            root.removeHandler(handler)
        for handler in saved[0]:
            root.addHandler(handler)
        METRICS.log_context, METRICS.tracer = saved[1], saved[2]
    # The command line's text wins over the file's json.
    configure_observability(
        _serve_args("--log-format", "text"),
        parse_config({"log_format": "json"}, source=tmp_path / "m.toml"),
    )
    assert not METRICS.log_context


def test_serve_help_names_the_options() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mcpactor", "serve", "--help"],
        capture_output=True,
        check=True,
        timeout=GUARD,
    )
    assert b"--log-format" in done.stdout
    assert b"--otel" in done.stdout


def test_otel_without_the_extra_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    # As if opentelemetry-api were not installed.
    monkeypatch.setitem(sys.modules, "opentelemetry.trace", None)
    with pytest.raises(ExtraMissing, match=r"mcpactor\[otel\]"):
        configure_observability(_serve_args("--otel"))
    assert METRICS.tracer is None


def test_serving_loads_neither_prometheus_nor_opentelemetry() -> None:
    # The counters are the runtime's own; the libraries load only when asked for.
    code = (
        "import sys, mcpactor, mcpactor.runtime, mcpactor.transports, mcpactor.transports.http, "
        "mcpactor.observability, mcpactor.cli._serve\n"
        "loaded = [m for m in ('prometheus_client', 'opentelemetry') if m in sys.modules]\n"
        "assert not loaded, loaded\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=GUARD)


# --- every line the command writes ---------------------------------------------------------

ADMIN_TOKEN: Final = "a-token-from-a-file-0123456789"
WORKERS: Final = ("serve", "logging_server.py", "--log-format", "json")

FORGING_SERVER: Final = """
from mcpactor import Server

server = Server("forging")


@server.tool()
async def parse(word: str) -> str:
    raise ValueError(f"cannot parse {word}")
"""


def _json_lines(stderr: bytes) -> list[dict[str, object]]:
    # Every line parses as one JSON object: none is plain text.
    records = []
    for line in stderr.decode().splitlines():
        record = json.loads(line)
        assert isinstance(record, dict), line
        assert {"ts", "level", "logger", "message"} <= set(record), line
        records.append(record)
    return records


async def _read_until(stream: trio.abc.ReceiveStream, said: bytearray, *wanted: bytes) -> None:
    with trio.fail_after(GUARD):
        while not all(w in said for w in wanted) or not said.endswith(b"\n"):
            chunk = await stream.receive_some(4096)
            assert chunk, said.decode()
            said += chunk


async def test_serving_with_the_admin_listener_writes_only_json_lines(tmp_path: Path) -> None:
    (tmp_path / "logging_server.py").write_text(LOGGING_SERVER)
    (tmp_path / "token").write_text(ADMIN_TOKEN + "\n")
    command = [sys.executable, "-m", "mcpactor", "serve", "logging_server.py"]
    command += ["--http", "127.0.0.1:0", "--log-format", "json", "--admin", "127.0.0.1:0"]
    command += ["--admin-token-file", "token"]
    process = await trio.lowlevel.open_process(command, cwd=tmp_path, stderr=subprocess.PIPE)
    assert process.stderr is not None
    said = bytearray()
    try:
        await _read_until(process.stderr, said, b"serving http", b"admin page")
        records = _json_lines(bytes(said))
        messages = [str(r["message"]) for r in records]
        (admin,) = [m for m in messages if m.startswith("admin page http://127.0.0.1:")]
        assert [m for m in messages if m.startswith("serving http://127.0.0.1:")]
        url = admin.split()[2]
        # An operator's action is logged with what it acted on, who and from where.
        async with httpx.AsyncClient(base_url=url, timeout=10) as client:
            answer = await client.post(
                "api/actions/close-session",
                json={"session": "no-such\r\nsession"},
                headers={"Authorization": f"Bearer {ADMIN_TOKEN}"},
            )
            assert answer.status_code == 409
        await _read_until(process.stderr, said, b"admin action")
    finally:
        process.send_signal(signal.SIGTERM)
        with trio.fail_after(GUARD):
            await process.wait()
        said += await _rest(process.stderr)
        await process.stderr.aclose()
    records = _json_lines(bytes(said))
    (audit,) = [r for r in records if r["logger"] == "mcpactor.admin.audit"]
    assert audit["level"] == "INFO"
    assert audit["message"] == (
        "admin action close-session on session 'no-such\\r\\nsession' by admin token from "
        "127.0.0.1: nothing to do"
    )


async def _rest(stream: trio.abc.ReceiveStream) -> bytes:
    rest = b""
    with trio.fail_after(GUARD):
        while chunk := await stream.receive_some(4096):
            rest += chunk
    return rest


async def _run(
    argv: list[str], cwd: Path, stdin: bytes = b""
) -> subprocess.CompletedProcess[bytes]:
    with trio.fail_after(GUARD):
        return await trio.run_process(
            [sys.executable, "-m", "mcpactor", *argv],
            cwd=cwd,
            stdin=stdin,
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )


@pytest.mark.parametrize(
    ("argv", "status", "said"),
    [
        # The fatal path: a target that does not load.
        (["serve", "missing.py", "--log-format", "json"], 1, "no such file 'missing.py'"),
        # With --debug the traceback goes in the line's exc.
        (["--debug", "serve", "missing.py", "--log-format=json"], 1, "no such file"),
        # A wrong option, said before anything is loaded.
        (["serve", "--log-format", "json", "--max-sessions", "0", "x.py"], 2, "--max-sessions"),
        # The port in use is found by the supervisor of --workers.
        (
            [*WORKERS, "--http", "127.0.0.1:PORT", "--stateless", "--workers", "2"],
            1,
            "cannot listen on 127.0.0.1:PORT",
        ),
    ],
)
async def test_what_stops_the_command_is_a_json_line(
    tmp_path: Path, argv: list[str], status: int, said: str
) -> None:
    (tmp_path / "logging_server.py").write_text(LOGGING_SERVER)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        done = await _run([a.replace("PORT", port) for a in argv], tmp_path)
    assert done.returncode == status, done.stderr
    records = _json_lines(done.stderr)
    assert records
    assert all(r["level"] == "ERROR" for r in records), records
    assert said.replace("PORT", port) in str(records[0]["message"])
    if "--debug" in argv:
        assert "Traceback (most recent call last)" in str(records[0]["exc"])


async def test_the_config_files_json_applies_to_what_fails_after_it_is_read(
    tmp_path: Path,
) -> None:
    (tmp_path / "mcpactor.toml").write_text(
        'log_format = "json"\n\n[servers.broken]\ntarget = "broken.py"\n'
    )
    (tmp_path / "broken.py").write_text("raise RuntimeError('at import')\n")
    done = await _run(["serve", "--config", "mcpactor.toml"], tmp_path)
    assert done.returncode == 1
    (first, *_) = _json_lines(done.stderr)
    assert "RuntimeError: at import" in str(first["message"])


async def test_workers_and_their_supervisor_write_only_json_lines(tmp_path: Path) -> None:
    (tmp_path / "logging_server.py").write_text(LOGGING_SERVER)
    command = [sys.executable, "-m", "mcpactor", "-v", "serve", "logging_server.py"]
    command += ["--http", "127.0.0.1:0", "--stateless", "--workers", "2", "--log-format", "json"]
    process = await trio.lowlevel.open_process(command, cwd=tmp_path, stderr=subprocess.PIPE)
    assert process.stderr is not None
    said = bytearray()
    try:
        await _read_until(process.stderr, said, b"with 2 workers")
    finally:
        process.send_signal(signal.SIGTERM)
        with trio.fail_after(GUARD):
            await process.wait()
        said += await _rest(process.stderr)
        await process.stderr.aclose()
    assert process.returncode == 0
    records = _json_lines(bytes(said))
    # At -v the workers' own lines are there too, and the supervisor's on stopping.
    assert any(str(r["message"]).startswith("serving MCP on") for r in records)
    assert any("stopping the workers" in str(r["message"]) for r in records)


async def test_text_lines_escape_what_a_tool_quotes(tmp_path: Path) -> None:
    # The tool's exception repeats its argument: CR, LF and an escape sequence, which
    # would forge a record and drive the terminal.
    (tmp_path / "forging.py").write_text(FORGING_SERVER)
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {
            "name": "parse",
            "arguments": {"word": "x\r\nCRITICAL mcpactor: forged\x1b[2J"},
        },
    }
    stdin = MESSAGES.split(b"\n")[0] + b"\n" + MESSAGES.split(b"\n")[1] + b"\n"
    done = await _run(["serve", "forging.py"], tmp_path, stdin + json.dumps(call).encode() + b"\n")
    assert done.returncode == 0, done.stderr
    text = done.stderr.decode()
    assert "\x1b" not in text
    assert "\r" not in text
    records = [line for line in text.splitlines() if not line.startswith(" ")]
    assert records == ["ERROR mcpactor: tool 'parse' failed"], text
    assert "  ValueError: cannot parse x\\r\\nCRITICAL mcpactor: forged\\x1b[2J" in text
