"""``mcpactor serve --log-format json`` and ``--otel``, and their keys in the config file."""

from __future__ import annotations

import argparse
import json
import logging
import subprocess
import sys
from pathlib import Path
from typing import Final

import pytest
import trio

from mcpactor._config import parse_config
from mcpactor._exceptions import ConfigError
from mcpactor.cli import _build_parser
from mcpactor.cli._extras import ExtraMissing
from mcpactor.cli._observability import configure_observability
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
