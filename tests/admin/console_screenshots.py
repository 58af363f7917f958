"""Take the screenshots of docs/operations.md from the page as it is now.

    python -m tests.admin.console_screenshots [--clients 16] [--warm 30] [--out docs]

Serves ``tests/admin/operator_server.py`` with ``mcpactor serve --http --json-response
--admin`` in a process of its own, with a story rule and a trace link in its
configuration, and drives it as the issue's check does: the bench's load (``--clients``
sessions calling the quick tool back to back) and, beside it, one client whose session
calls the quick tool, a sign-in that fails (with a password, a field the rule hides and
a trace context), a failing tool and a slow tool reporting progress, and another running
a task. After ``--warm`` seconds of load (the rates' charts have a point per 5 seconds),
the system's Chromium, pressed as a person presses, takes:

- ``img/admin-search.png``: the task's id typed into *Find*: the tree narrowed to the
  session running it;
- ``img/admin-rates.png``: the rates and latency, with their charts;
- ``img/admin-history.png``: the session's history once its slow call was cancelled from
  the page: the cancelled call, the failed ones, its latest successful ones (it calls the
  quick tool every second), and the cancel in the operator actions;
- ``img/admin-story.png``: the failed sign-in's story, its secrets hidden, its log line
  and its trace link.

They go under ``--out`` (the docs folder by default) and to tests/artifacts/.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import httpx
import trio

from mcpactor import RequestError
from mcpactor.client import ClientSession, connect_http

from .browser import ARTIFACTS, CHROMIUM, press, signed_in_page
from .served_process import start_with_admin

ROOT = Path(__file__).resolve().parents[2]
SERVER = Path(__file__).with_name("operator_server.py")
TOKEN = "admin-token-for-the-docs-screenshots-0123"
TRACE_ID = "0af7651916cd43dd8448eb211c80319c"
CONFIG = f"""\
prefix = false

[servers.operated]
target = "{SERVER.as_posix()}:server"

[admin]
trace_url = "https://traces.example/trace/{{trace_id}}"

[admin.redact]
sign_in = ["note"]
"""


async def _serve(folder: Path) -> tuple[trio.Process, str, str]:
    # `mcpactor serve --admin` on free ports: (its process, its MCP endpoint, its page).
    (folder / "token").write_text(TOKEN + "\n")
    (folder / "mcpactor.toml").write_text(CONFIG)
    command = [
        sys.executable,
        "-m",
        "mcpactor",
        "serve",
        "--config",
        str(folder / "mcpactor.toml"),
        "--http",
        "127.0.0.1:0",
        "--json-response",
        "--admin",
        "127.0.0.1:0",
        "--admin-token-file",
        str(folder / "token"),
    ]
    process, endpoint, page = await start_with_admin(command, 60)
    return process, endpoint, page


async def _load(url: str, number: int) -> None:
    # One bench connection: a session calling the quick tool back to back.
    info = {"name": f"load client {number:02d}", "version": "1.0"}
    async with connect_http(url, initialize=True, client_info=info) as client:
        while True:
            await client.call_tool("echo", {"text": "ping"})


async def _slow(client: ClientSession) -> None:
    # The call the operator cancels from the page; its client follows its progress.
    async def progress(value: float, total: float | None, message: str | None) -> None:
        await trio.lowlevel.checkpoint()

    with contextlib.suppress(RequestError):
        await client.call_tool("slow", {"every": 0.25}, progress_handler=progress)


async def _now_and_then(client: ClientSession) -> None:
    # A quick call of the same session every second: its latest successful ones stay in
    # the history, which the load turns over in a second or two.
    while True:
        await client.call_tool("echo", {"text": "now and then"})
        await trio.sleep(1)


async def _session_of(admin_url: str, client_name: str) -> str:
    # The id of the session whose client has this name, as the admin API lists it.
    async with httpx.AsyncClient(base_url=admin_url, timeout=10) as admin:
        answer = await admin.get(
            "api/tree",
            params={"find": client_name},
            headers={"Authorization": f"Bearer {TOKEN}"},
        )
    tree = answer.json()
    (session,) = [s["id"] for s in tree["sessions"]["items"] if s["client"] == client_name]
    return str(session)


def _find(page: Any, text: str) -> None:
    # Typed into Find as a person types, key by key.
    box = page.locator("input[name=find]")
    box.fill("")
    box.press_sequentially(text, delay=30)
    page.wait_for_function(
        "(text) => location.search.includes(encodeURIComponent(text))", arg=text
    )


def _shoot(target: Any, names: list[Path]) -> None:
    for name in names:
        name.parent.mkdir(parents=True, exist_ok=True)
        target.screenshot(path=str(name))


def _take(admin_url: str, ids: dict[str, Any], out: Path) -> list[Path]:
    # In a worker thread: Playwright's sync API against the served process.
    taken: list[Path] = []

    def shot(target: Any, name: str) -> None:
        paths = [out / name, ARTIFACTS / Path(name).name]
        _shoot(target, paths)
        taken.append(paths[0])

    with signed_in_page(admin_url, TOKEN, height=900, timeout_ms=30_000) as (page, problems):
        # Every session of the load is on the page, and the two beside it.
        page.wait_for_function(
            "(n) => document.querySelectorAll('.node[data-session-id]').length >= n",
            arg=ids["sessions"],
        )
        # The rates, once every tool has its row.
        page.locator("#rates-tools tbody tr", has_text="tools/call sign_in").wait_for()
        shot(page.locator("#rates"), "img/admin-rates.png")
        # A search: a task's id in Find narrows the tree to its session.
        _find(page, ids["task"])
        page.locator(".node[data-task]").first.wait_for()
        page.wait_for_function(
            "() => document.querySelectorAll('.node[data-session-id]').length === 1"
        )
        page.evaluate("window.scrollTo(0, 0)")
        shot(page, "img/admin-search.png")
        # The console client's slow call, found by its session and cancelled from the
        # page; then the session's history.
        _find(page, ids["session"])
        slow = ".node[data-request][data-session]:has-text('tools/call slow')"
        press(page, f"{slow} button", 0.3)
        page.locator("dialog#confirm[open]").wait_for()
        page.wait_for_timeout(300)  # reading the dialog
        press(page, "#confirm-ok", 0.2)
        page.locator("dialog#confirm").wait_for(state="hidden")
        page.locator("#history-table tbody tr", has_text="cancelled").first.wait_for()
        page.locator("#audit-table tbody tr", has_text="cancel").first.wait_for()
        page.locator("#toast").wait_for(state="hidden")
        page.locator("#history-table tbody tr", has_text="ok").first.wait_for()
        shot(page.locator("#history"), "img/admin-history.png")
        # The failed sign-in's story, from its row.
        press(page, "#history-table tbody tr:has-text('sign_in') button", 0.25)
        page.locator("dialog#story[open]").wait_for()
        page.locator("#story-logs li").first.wait_for()
        shot(page, "img/admin-story.png")
        press(page, "#story-close", 0.15)
        assert problems == [], problems
    return taken


async def main(clients: int, warm: float, out: Path) -> list[Path]:
    """Serve, load, and take the screenshots; return where they went."""
    console = {"name": "console client", "version": "4.2"}
    with tempfile.TemporaryDirectory() as folder:
        process, mcp_url, admin_url = await _serve(Path(folder))
        try:
            async with (
                connect_http(
                    mcp_url,
                    initialize=True,
                    client_info=console,
                ) as client,
                connect_http(
                    mcp_url, initialize=True, client_info={"name": "task client", "version": "1.0"}
                ) as tasks,
                trio.open_nursery() as nursery,
            ):
                for number in range(clients):
                    nursery.start_soon(_load, mcp_url, number)
                await client.call_tool("echo", {"text": "hello"})
                arguments = {"user": "ada", "password": "hunter2", "note": "my pin is 1234"}
                traceparent = f"00-{TRACE_ID}-b7ad6b7169203331-01"
                await client.call_tool("sign_in", arguments, meta={"traceparent": traceparent})
                await client.call_tool("fail", {"why": "the disk is full"})
                task = await tasks.tasks.call_tool("job")
                nursery.start_soon(_slow, client)
                nursery.start_soon(_now_and_then, client)
                await trio.sleep(warm)
                ids = {
                    "session": await _session_of(admin_url, "console client 4.2"),
                    "task": str(task["taskId"]),
                    "sessions": clients + 2,
                }
                with trio.fail_after(300):
                    taken = await trio.to_thread.run_sync(
                        functools.partial(_take, admin_url, ids, out)
                    )
                nursery.cancel_scope.cancel()
        finally:
            if process.returncode is None:
                process.terminate()
            with trio.fail_after(30):
                await process.wait()
    return taken


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=16, help="load sessions (16)")
    parser.add_argument("--warm", type=float, default=30.0, help="seconds of load first")
    parser.add_argument("--out", type=Path, default=ROOT / "docs", help="the docs folder")
    return parser.parse_args()


if __name__ == "__main__":
    if shutil.which(CHROMIUM) is None:
        sys.exit(f"no Chromium at {CHROMIUM}")
    options = _arguments()
    for path in trio.run(main, options.clients, options.warm, options.out):
        print(path)
