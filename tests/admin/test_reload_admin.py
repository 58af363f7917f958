"""``--workers --store --admin`` reloaded with SIGHUP: the page stays on its port throughout,
served by the new first worker afterwards, and says it is ready."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
import trio

from ..serving import put_away, stop_gracefully
from ..store.conftest import free_port, redis_port  # noqa: F401
from ..transports.test_http_worker_reload import _children, _Lines

TOKEN = "a-token-for-the-reload-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the workers are found through /proc"
)


async def _tree(admin: httpx.AsyncClient) -> dict[str, object]:
    answer = await admin.get("api/tree", headers=AUTH)
    assert answer.status_code == 200, answer.text
    tree: dict[str, object] = answer.json()
    return tree


async def test_the_admin_page_keeps_its_port_through_a_reload(
    tmp_path: Path,
    redis_port: int,  # noqa: F811
) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    admin_port = free_port()
    command = [sys.executable, "-m", "mcpactor", "serve", "--http", "127.0.0.1:0"]
    command += ["--workers", "2", "--store", f"redis://127.0.0.1:{redis_port}"]
    command += ["--admin", f"127.0.0.1:{admin_port}", "--admin-token-file", str(token_file)]
    process = await trio.lowlevel.open_process([*command, "clock"], stderr=subprocess.PIPE)
    assert process.stderr is not None
    said = _Lines()
    refused = 0
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(said.read, process.stderr)
            (line,) = await said.wait_for("admin page http://")
            match = re.search(r"admin page (http://127\.0\.0\.1:(\d+)/)", line)
            assert match is not None
            assert int(match.group(2)) == admin_port
            url = match.group(1)
            async with httpx.AsyncClient(base_url=url, timeout=10) as admin:
                before = await _tree(admin)
                assert before["readiness"] == {"state": "ready", "why": None}
                first_pid = before["replica"]["pid"]  # type: ignore[index]
                assert first_pid in _children(process.pid)

                stop_knocking = trio.Event()

                async def knock() -> None:
                    # A connection to the page's port, again and again, while it reloads.
                    nonlocal refused
                    while not stop_knocking.is_set():
                        try:
                            stream = await trio.open_tcp_stream("127.0.0.1", admin_port)
                        except ConnectionRefusedError:
                            refused += 1
                        else:
                            await stream.aclose()
                        await trio.sleep(0.01)

                nursery.start_soon(knock)
                process.send_signal(signal.SIGHUP)
                await said.wait_for("reloaded: 2 workers replaced")
                stop_knocking.set()
                after = await _tree(admin)
                assert after["readiness"] == {"state": "ready", "why": None}
                assert after["replica"]["pid"] != first_pid  # type: ignore[index]
                assert after["replica"]["pid"] in _children(process.pid)  # type: ignore[index]
            assert refused == 0
            await stop_gracefully(process)
            nursery.cancel_scope.cancel()
    finally:
        await put_away(process)
