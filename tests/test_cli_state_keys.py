"""The sealing keys of stateless requests from configuration: file, environment, TOML."""

from __future__ import annotations

import base64
import os
from pathlib import Path

import pytest

from mcpactor._exceptions import ConfigError
from mcpactor.cli import _serve
from mcpactor.config import (
    STATE_KEYS_ENV,
    parse_config,
    parse_state_keys,
    read_state_keys,
    state_sealer,
)


def _key() -> str:
    return base64.b64encode(os.urandom(32)).decode()


def test_the_first_key_seals_and_every_key_opens() -> None:
    old, new = _key(), _key()
    before = state_sealer(None, {STATE_KEYS_ENV: old})
    after = state_sealer(None, {STATE_KEYS_ENV: f"{new}, {old}"})
    assert before is not None
    assert after is not None
    sealed = before.seal({"n": 1}, method="tools/call", params={}, now=0.0)
    # Rotated: the old key still opens what it sealed; the new one seals from now on.
    assert after.open(sealed, method="tools/call", params={}, now=1.0) == {"n": 1}
    assert after.ring.keys[0].key_id != before.ring.keys[0].key_id
    assert after.ring.keys[1].key_id == before.ring.keys[0].key_id


def test_a_key_file_skips_comments_and_blank_lines(tmp_path: Path) -> None:
    key = _key()
    path = tmp_path / "keys"
    path.write_text(f"# rotated in May\n\n{key}\n")
    ring = read_state_keys(path)
    assert len(ring.keys) == 1
    # The id is the key's own: every process reading the file agrees on it.
    assert ring.keys[0].key_id == parse_state_keys(key, source="x").keys[0].key_id
    assert state_sealer(path, {STATE_KEYS_ENV: _key()}) is not None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("not base64!\n", "line 1: not a state key"),
        (base64.b64encode(b"short").decode(), "line 1: not a state key"),
        ("# only a comment\n", "holds no state key"),
    ],
)
def test_bad_key_files_name_the_line(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "keys"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message):
        read_state_keys(path)


def test_a_key_listed_twice_is_refused() -> None:
    key = _key()
    with pytest.raises(ConfigError, match="line 2: the same key"):
        parse_state_keys(f"{key}\n{key}\n", source="keys")


def test_no_configuration_means_no_sealer() -> None:
    assert state_sealer(None, {}) is None


def test_a_missing_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read the state key file"):
        read_state_keys(tmp_path / "absent")


def test_the_config_file_names_the_key_file_beside_it(tmp_path: Path) -> None:
    config = parse_config(
        {"stateless": {"state_keys_file": "state.keys", "keepalive": 5}},
        source=tmp_path / "mcpactor.toml",
    )
    assert config.state_keys_file == tmp_path / "state.keys"
    assert config.keepalive == 5.0
    with pytest.raises(ConfigError, match="stateless"):
        parse_config({"stateless": {"state_key": "x"}}, source=tmp_path / "mcpactor.toml")


def test_serve_builds_its_stateless_options_from_the_command_line(tmp_path: Path) -> None:
    from mcpactor.cli import _build_parser

    path = tmp_path / "keys"
    path.write_text(_key())
    args = _build_parser().parse_args(
        ["serve", "x.py", "--state-key-file", str(path), "--listen-keepalive", "3"]
    )
    options = _serve._stateless_options(args)
    assert options.sealer is not None
    assert options.keepalive == 3.0
