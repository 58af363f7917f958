"""docs/configuration.md says what the file reader does: every [http] key, its default,
its flag; its sample parses to what it says."""

from __future__ import annotations

import argparse
import re
import tomllib
from pathlib import Path
from typing import Any, Final

import attrs

from mcpactor.cli import _build_parser
from mcpactor.config import HttpConfig, Reader, parse_config
from mcpactor.config._http import read_http_config
from mcpactor.transports import HttpOptions

DOC: Final = Path(__file__).resolve().parents[1] / "docs" / "configuration.md"
TEXT: Final = DOC.read_text()


def http_rows() -> list[list[str]]:
    rest = TEXT[TEXT.index("## `[http]`") :]
    rows = []
    for line in rest.splitlines()[1:]:
        if line.startswith("|"):
            rows.append([cell.strip() for cell in line.strip("|").split(" | ")])
        elif rows:
            break
    return rows[2:]


def codes(cell: str) -> list[str]:
    return re.findall(r"`([^`]*)`", cell)


def documented_keys() -> dict[str, list[str]]:
    return {key: row for row in http_rows() for key in codes(row[0])}


def serve_flags() -> set[str]:
    parser = _build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {
        flag for action in commands.choices["serve"]._actions for flag in action.option_strings
    }


def test_every_http_key_is_documented() -> None:
    fields = {field.name for field in attrs.fields(HttpConfig)}
    assert set(documented_keys()) == fields


def test_the_defaults_are_the_options_defaults() -> None:
    defaults = HttpOptions()
    checked = 0
    for key, row in documented_keys().items():
        if not hasattr(defaults, key):
            continue
        cell = row[2]
        if cell == "none":
            expected: Any = None
        elif codes(cell):
            # Written as in the file: TOML values.
            values = [tomllib.loads(f"v = {text}")["v"] for text in codes(cell)]
            # A row of two keys gives a default each, in order.
            expected = values[codes(row[0]).index(key)] if len(values) > 1 else values[0]
        elif re.fullmatch(r"[\d.]+", cell):
            expected = float(cell)
        else:
            continue  # said in words (the Host and Origin defaults depend on the bind)
        value = getattr(defaults, key)
        assert value == expected or (value == () and expected is None), key
        checked += 1
    assert checked >= 20


def test_every_flag_named_exists() -> None:
    flags = serve_flags()
    named = [code.split()[0] for row in http_rows() for code in codes(row[3])]
    assert named
    assert set(named) <= flags


def test_the_sample_reads_as_written() -> None:
    (block,) = re.findall(r"```toml\n(.*?)```", TEXT, re.S)
    config = parse_config(tomllib.loads(block), source=DOC)
    assert config.transport == "http"
    http = config.http
    assert (http.host, http.port) == ("0.0.0.0", 8443)
    assert http.tls_cert == "/etc/ssl/certs/mcp.example.com.pem"
    assert http.authenticate == f"{DOC.parent / 'hooks' / 'tokens.py'}:authenticate"
    options = HttpOptions(**{k: v for k, v in http.options().items() if k != "authenticate"})
    assert options.health_path == "/live"
    assert (options.sse_path, options.messages_path) == (None, None)
    assert options.max_sessions_per_client == 16
    assert options.keep_alive_timeout == 30.0


def test_an_empty_http_table_sets_no_option() -> None:
    http = read_http_config(Reader(DOC, "http"), {})
    assert http == HttpConfig()
    assert http.options() == {}
