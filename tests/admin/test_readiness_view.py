"""The admin page shows the server's readiness: ready, starting, draining, or not and why."""

from __future__ import annotations

import contextlib
import functools
import shutil
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio

from mcpactor import Server
from mcpactor.admin import create_admin_app, serve_admin
from mcpactor.runtime import Observatory
from mcpactor.transports import HttpOptions, Readiness, serve_http

from .browser import CHROMIUM, signed_in_page
from .served_process import serve_clock_with_admin

TOKEN = "s3cret-admin-token-for-readiness"
BEARER = {"Authorization": f"Bearer {TOKEN}"}
UNREACHABLE = "the store redis://cache:6379/0 is unreachable: refused"


class _Store:
    """A readiness check that answers what the test says."""

    def __init__(self) -> None:
        self.problem: str | None = None

    async def __call__(self) -> str | None:
        return self.problem


async def _readiness(app: Any) -> Any:
    response = await app.test_client().get("/api/tree", headers=BEARER)
    assert response.status_code == 200
    return (await response.get_json())["readiness"]


async def test_the_tree_says_the_readiness_and_why_not() -> None:
    store = _Store()
    readiness = Readiness(check=store, interval=0)
    observatory = Observatory(replica="test")
    app = create_admin_app(observatory, token=TOKEN, readiness=readiness.describe)
    assert await _readiness(app) == {"state": "starting", "why": None}
    readiness.started()
    assert await _readiness(app) == {"state": "ready", "why": None}
    # Why, as the check says it, bounded: it may quote what the store said.
    store.problem = "the store redis://cache:6379/0 is unreachable: " + "timed out " * 200
    answer = await _readiness(app)
    assert answer["state"] == "unavailable"
    assert answer["why"].startswith("the store redis://cache:6379/0 is unreachable: timed out")
    assert len(answer["why"]) == 500
    # /readyz says one word of it, to anyone.
    assert await readiness.state() == "unavailable"
    store.problem = None
    assert await _readiness(app) == {"state": "ready", "why": None}
    readiness.drain()
    assert await _readiness(app) == {"state": "draining", "why": None}


async def test_without_a_readiness_the_tree_says_none() -> None:
    app = create_admin_app(Observatory(replica="test"), token=TOKEN)
    assert await _readiness(app) is None


@contextlib.asynccontextmanager
async def _served(readiness: Readiness) -> AsyncIterator[str]:
    # A server over HTTP with this readiness, and the admin page that shows it.
    server = Server("ready", "1.0.0")
    observatory = Observatory(replica="test-replica")
    observatory.install()
    observatory.serve(server)
    async with trio.open_nursery() as nursery:
        await nursery.start(
            functools.partial(
                serve_http,
                server,
                host="127.0.0.1",
                port=0,
                tune_gc=False,
                options=HttpOptions(readiness=readiness),
            )
        )
        app = create_admin_app(observatory, token=TOKEN, readiness=readiness.describe)
        host, port = await nursery.start(
            functools.partial(serve_admin, app, host="127.0.0.1", port=0)
        )
        yield f"http://{host}:{port}/"
        nursery.cancel_scope.cancel()


@pytest.mark.skipif(
    shutil.which(CHROMIUM) is None, reason="Chromium is not installed (/usr/bin/chromium)"
)
async def test_the_page_shows_the_readiness_as_it_changes() -> None:
    store = _Store()
    readiness = Readiness(started=True, check=store, interval=0)

    def drive(url: str) -> None:
        with signed_in_page(url, TOKEN) as (page, problems):
            badge = page.locator("#readiness")

            def shows(text: str) -> None:
                page.wait_for_function(
                    "(text) => document.getElementById('readiness').textContent === text",
                    arg=text,
                )

            shows("ready")
            assert badge.is_visible()
            assert "ready" in (badge.get_attribute("class") or "").split()
            trio.from_thread.run_sync(setattr, store, "problem", UNREACHABLE)
            shows(f"not ready: {UNREACHABLE}")
            assert "unavailable" in (badge.get_attribute("class") or "").split()
            trio.from_thread.run_sync(readiness.drain)
            shows("draining")
            assert problems == []

    async with _served(readiness) as url:
        await trio.to_thread.run_sync(drive, url)


async def test_a_served_process_shows_it_is_ready(tmp_path: Path) -> None:
    async with serve_clock_with_admin(TOKEN, tmp_path) as served:
        async with httpx.AsyncClient(base_url=served.admin_url, timeout=10) as admin:
            answer = await admin.get("api/tree", headers=BEARER)
            assert answer.status_code == 200
            assert answer.json()["readiness"] == {"state": "ready", "why": None}
        served.process.send_signal(signal.SIGTERM)
        with trio.fail_after(30):
            await served.process.wait()
