"""``mcpactor serve --admin``: what it refuses, and a real server process with it on."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
import trio

from mcpactor.cli import main
from mcpactor.cli._admin import admin_bind, admin_token

TOKEN = "a-token-from-a-file-0123456789"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--admin", "0.0.0.0:0"], "not a loopback address"),
        (["--admin", "192.0.2.7:8001"], "--admin-allow-remote"),
        (["--admin", "127.0.0.1:notaport"], "expects [HOST:]PORT"),
        (["--admin-token-file", "x"], "need --admin"),
        (["--http", "127.0.0.1:0", "--stateless", "--workers", "2", "--admin", "0"], "--workers"),
    ],
)
def test_serve_refuses_what_cannot_work(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    status = main(["serve", *argv, "clock"])
    assert status == 2
    assert message in capsys.readouterr().err


def test_the_bind_and_the_token() -> None:
    assert admin_bind("8001") == ("127.0.0.1", 8001)
    assert admin_bind("[::1]:8001") == ("::1", 8001)
    assert admin_bind("localhost:9") == ("localhost", 9)
    assert admin_bind("0.0.0.0:1", allow_remote=True) == ("0.0.0.0", 1)
    made, printed = admin_token(None)
    assert printed
    assert len(made) >= 32
    assert admin_token(None)[0] != made


def test_a_short_token_in_the_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "token"
    path.write_text("short\n")
    with pytest.raises(ValueError, match="at least 16"):
        admin_token(str(path))
    path.write_text(TOKEN + "\nignored\n")
    assert admin_token(str(path)) == (TOKEN, False)


async def test_a_served_process_has_its_admin_listener(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    command = [sys.executable, "-m", "mcpactor", "serve", "--http", "127.0.0.1:0"]
    command += ["--admin", "127.0.0.1:0", "--admin-token-file", str(token_file), "clock"]
    process = await trio.lowlevel.open_process(command, stderr=subprocess.PIPE)
    assert process.stderr is not None
    said = b""
    try:
        with trio.fail_after(30):
            while b"mcpactor: serving" not in said:
                chunk = await process.stderr.receive_some(4096)
                assert chunk, said.decode()
                said += chunk
        match = re.search(rb"admin page (http://127\.0\.0\.1:\d+/)", said)
        assert match is not None, said.decode()
        # A token from a file is never printed.
        assert TOKEN.encode() not in said
        url = match.group(1).decode()
        async with httpx.AsyncClient(base_url=url, timeout=10) as admin:
            assert (await admin.get("api/tree")).status_code == 401
            answer = await admin.get("api/tree", headers={"Authorization": f"Bearer {TOKEN}"})
            assert answer.status_code == 200
            assert [plugin["name"] for plugin in answer.json()["plugins"]] == ["clock"]
    finally:
        process.send_signal(signal.SIGTERM)
        with trio.fail_after(30):
            await process.wait()
        await process.stderr.aclose()


async def test_the_drain_action_drains_the_served_process(tmp_path: Path) -> None:
    # The page's drain action does what SIGTERM does: not ready at once, written to the
    # audit log, and the process stops by itself once the drain delay is over.
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    command = [sys.executable, "-m", "mcpactor", "serve", "--http", "127.0.0.1:0"]
    command += ["--drain-delay", "0.5", "--admin", "127.0.0.1:0"]
    command += ["--admin-token-file", str(token_file), "clock"]
    process = await trio.lowlevel.open_process(command, stderr=subprocess.PIPE)
    assert process.stderr is not None
    said = b""
    try:
        with trio.fail_after(30):
            while b"mcpactor: serving" not in said:
                chunk = await process.stderr.receive_some(4096)
                assert chunk, said.decode()
                said += chunk
        admin_url = re.search(rb"admin page (http://127\.0\.0\.1:\d+/)", said)
        served = re.search(rb"serving (http://127\.0\.0\.1:\d+)/mcp", said)
        assert admin_url is not None, said.decode()
        assert served is not None, said.decode()
        auth = {"Authorization": f"Bearer {TOKEN}"}
        async with (
            httpx.AsyncClient(base_url=admin_url.group(1).decode(), timeout=10) as admin,
            httpx.AsyncClient(base_url=served.group(1).decode(), timeout=10) as http,
        ):
            assert (await http.get("/readyz")).status_code == 200
            drained = await admin.post("api/actions/drain", json={}, headers=auth)
            assert (drained.status_code, drained.json()) == (
                200,
                {"action": "drain", "done": True},
            )
            ready = await http.get("/readyz")
            assert (ready.status_code, ready.json()) == (503, {"status": "draining"})
            again = await admin.post("api/actions/drain", json={}, headers=auth)
            assert (again.status_code, again.json()["done"]) == (409, False)
        with trio.fail_after(30):
            await process.wait()
        assert process.returncode == 0
        said += await process.stderr.receive_some(65536)
        assert b"admin action drain on the server by" in said, said.decode()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
        await process.stderr.aclose()
