"""``mcpactor serve --admin``: what it refuses, and a real server process with it on."""

from __future__ import annotations

import signal
from pathlib import Path

import httpx
import pytest
import trio

from mcpactor.cli import main
from mcpactor.cli._admin import admin_bind, admin_token

from .served_process import serve_clock_with_admin

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
    async with serve_clock_with_admin(TOKEN, tmp_path) as served:
        # A token from a file is never printed.
        assert TOKEN.encode() not in served.said
        async with httpx.AsyncClient(base_url=served.admin_url, timeout=10) as admin:
            assert (await admin.get("api/tree")).status_code == 401
            answer = await admin.get("api/tree", headers={"Authorization": f"Bearer {TOKEN}"})
            assert answer.status_code == 200
            assert [plugin["name"] for plugin in answer.json()["plugins"]] == ["clock"]
        served.process.send_signal(signal.SIGTERM)
        with trio.fail_after(30):
            await served.process.wait()


async def test_the_drain_action_drains_the_served_process(tmp_path: Path) -> None:
    # The page's drain action does what SIGTERM does: not ready at once, written to the
    # audit log, and the process stops by itself once the drain delay is over.
    async with serve_clock_with_admin(TOKEN, tmp_path, "--drain-delay", "0.5") as served:
        auth = {"Authorization": f"Bearer {TOKEN}"}
        async with (
            httpx.AsyncClient(base_url=served.admin_url, timeout=10) as admin,
            httpx.AsyncClient(base_url=served.http_url, timeout=10) as http,
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
        process = served.process
        with trio.fail_after(30):
            await process.wait()
        assert process.returncode == 0
        assert process.stderr is not None
        said = served.said + await process.stderr.receive_some(65536)
        assert b"admin action drain on the server by" in said, said.decode()
