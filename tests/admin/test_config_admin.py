"""The ``[admin]`` table of the config file: what it reads, the errors that name the key,
the file and the line, and a served process that takes its admin listener from it."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
import trio

from mcpactor._exceptions import ConfigError
from mcpactor.cli import main
from mcpactor.config import AdminConfig, load_config

from .tokens import ISSUER, RESOURCE, Issuer

TOKEN = "a-token-from-the-admin-table-0123"


def _config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "mcpactor.toml"
    path.write_text(text)
    return path


def test_the_table_is_read(tmp_path: Path) -> None:
    path = _config(
        tmp_path,
        '[admin]\nlisten = "127.0.0.1:8765"\ntoken_file = "secrets/admin"\n'
        'allow_remote = true\nscope = "ops:admin"\n',
    )
    assert load_config(path).admin == AdminConfig(
        listen="127.0.0.1:8765",
        token_file=str(tmp_path / "secrets" / "admin"),
        allow_remote=True,
        scope="ops:admin",
    )
    # A port alone, as a number, is a port on loopback; no table is no listener.
    assert load_config(_config(tmp_path, "[admin]\nlisten = 8765\n")).admin == AdminConfig(
        listen="8765"
    )
    assert load_config(_config(tmp_path, 'transport = "stdio"\n')).admin is None


def test_the_story_s_redaction_rules_and_trace_link(tmp_path: Path) -> None:
    path = _config(
        tmp_path,
        '[admin]\nlisten = 8765\ntrace_url = "https://traces.example/t/{trace_id}"\n'
        '[admin.redact]\nsign_in = ["note", "card.number"]\n"*" = ["ssn"]\n',
    )
    admin = load_config(path).admin
    assert admin is not None
    assert admin.trace_url == "https://traces.example/t/{trace_id}"
    assert admin.redact == {"sign_in": ("note", "card.number"), "*": ("ssn",)}
    with pytest.raises(ConfigError, match=r"admin.trace_url: expected an http\(s\) URL"):
        load_config(_config(tmp_path, '[admin]\ntrace_url = "https://traces.example/"\n'))
    with pytest.raises(ConfigError, match=r"admin\.redact\.sign_in: expected a list of strings"):
        load_config(_config(tmp_path, '[admin.redact]\nsign_in = "note"\n'))


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (
            '[admin]\nlisten = "8001"\nlisen = "x"\n',
            "admin.lisen: unknown key; expected one of "
            "allow_remote, listen, redact, scope, token_file, trace_url (line 3)",
        ),
        (
            '[admin]\n\nallow_remote = "yes"\n',
            "admin.allow_remote: expected true or false, got 'yes' (line 3)",
        ),
        (
            '[admin]\nlisten = "127.0.0.1:http"\n',
            "admin.listen: expected '[HOST:]PORT' (or a "
            "port number), got '127.0.0.1:http' (line 2)",
        ),
        ('[admin]\nlisten = "99999"\n', "admin.listen: expected '[HOST:]PORT'"),
        (
            '[admin]\nscope = "two scopes"\n',
            "admin.scope: expected a scope name without spaces "
            "or quotes, got 'two scopes' (line 2)",
        ),
        ("[admin]\ntoken_file = 7\n", "admin.token_file: expected a string, got 7 (line 2)"),
        ("admin = 1\n", "admin: expected a table, got 1 (line 1)"),
    ],
)
def test_a_wrong_key_is_named_with_its_file_and_line(tmp_path: Path, text: str, said: str) -> None:
    path = _config(tmp_path, text)
    with pytest.raises(ConfigError) as raised:
        load_config(path)
    assert str(raised.value).startswith(f"{path}: ")
    assert said in str(raised.value)


@pytest.mark.parametrize(
    ("text", "said"),
    [
        # What serving refuses, before anything starts, in the file's words.
        (
            '[admin]\nscope = "ops:admin"\n',
            "mcpactor.toml: admin (line 2): the [admin] table needs 'listen'",
        ),
        (
            '\n[admin]\nlisten = "0.0.0.0:0"\n',
            "mcpactor.toml: admin.listen (line 4): --admin 0.0.0.0:0: '0.0.0.0' is not a "
            "loopback address",
        ),
    ],
)
def test_serve_refuses_a_table_that_cannot_work(
    tmp_path: Path, text: str, said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _config(tmp_path, "[servers.clock]\n" + text)
    assert main(["serve", "--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert said in err
    if "loopback" in said:
        assert "allow_remote = true" in err


async def _wait_for_admin(process: trio.Process) -> str:
    assert process.stderr is not None
    said = b""
    with trio.fail_after(30):
        while b"mcpactor: serving" not in said:
            chunk = await process.stderr.receive_some(4096)
            assert chunk, said.decode()
            said += chunk
    assert TOKEN.encode() not in said
    match = re.search(rb"admin page (http://127\.0\.0\.1:\d+/)", said)
    assert match is not None, said.decode()
    assert b"or an access token with the ops:admin scope" in said
    return match.group(1).decode()


async def test_a_served_process_takes_its_admin_listener_from_the_table(tmp_path: Path) -> None:
    issuer = Issuer(tmp_path)
    (tmp_path / "admin-token").write_text(TOKEN + "\n")
    path = _config(
        tmp_path,
        'transport = "http"\n[http]\nhost = "127.0.0.1"\nport = 0\n[servers.clock]\n'
        f'[auth]\nissuers = ["{ISSUER}"]\nresource = "{RESOURCE}"\njwks_file = "jwks.json"\n'
        '[admin]\nlisten = "127.0.0.1:0"\ntoken_file = "admin-token"\nscope = "ops:admin"\n',
    )
    command = [sys.executable, "-m", "mcpactor", "serve", "--config", str(path)]
    process = await trio.lowlevel.open_process(command, stderr=subprocess.PIPE)
    try:
        url = await _wait_for_admin(process)
        async with httpx.AsyncClient(base_url=url, timeout=10) as admin:
            assert (await admin.get("api/tree")).status_code == 401
            # The token file the table names…
            answer = await admin.get("api/tree", headers={"Authorization": f"Bearer {TOKEN}"})
            assert answer.status_code == 200
            assert [plugin["name"] for plugin in answer.json()["plugins"]] == ["clock"]
            # …and the endpoint's own authorization, with the scope the table names.
            ops = {"Authorization": f"Bearer {issuer.token('ops:admin')}"}
            assert (await admin.get("api/tree", headers=ops)).status_code == 200
            default = {"Authorization": f"Bearer {issuer.token('mcpactor:admin')}"}
            assert (await admin.get("api/tree", headers=default)).status_code == 403
    finally:
        process.send_signal(signal.SIGTERM)
        with trio.fail_after(30):
            await process.wait()
        assert process.stderr is not None
        await process.stderr.aclose()
