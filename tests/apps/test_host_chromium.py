"""The greeter of examples/apps in a real MCP Apps host, in the system's Chromium.

``mcpactor serve --http`` serves the example as a user would. The host page
(``host/``, on another origin) is built on the official packages: the TypeScript SDK's
client connects to the server, lists its tools, calls the one with a view, reads the
view and renders it in a sandboxed iframe under the CSP its ``_meta.ui`` declares, and
the ext-apps App Bridge connects the view (the ext-apps ``App``, inlined into the view
at build time) to the host. Pressing the view's button calls the app-only tool through
the host; the answer must show in the iframe, and nothing may go wrong on the console.
The view cannot reach the server around the host: its policy allows no connection.

Both Node packages are installed from their lock files (``npm ci``) and built here. The
screenshot goes to tests/artifacts/apps-host.png (and docs/images/ with
``MCPACTOR_DOC_SHOTS=1``).
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.admin.browser import ARGS, ARTIFACTS, CHROMIUM

from ._npm import built

playwright_api = pytest.importorskip(
    "playwright.sync_api", reason="playwright is not installed (the test extra)"
)
NPM = shutil.which("npm")
pytestmark = [
    pytest.mark.skipif(
        shutil.which(CHROMIUM) is None,
        reason=f"no Chromium at {CHROMIUM} (Debian: apt-get install chromium; CI installs it)",
    ),
    pytest.mark.skipif(
        NPM is None or shutil.which("node") is None,
        reason="node and npm are needed to build the host page and the example's view",
    ),
]

ROOT = Path(__file__).resolve().parents[2]
HOST = Path(__file__).resolve().parent / "host"
EXAMPLE = ROOT / "examples" / "apps"
DOCS = ROOT / "docs" / "images"
#: seconds the server gets to listen, and any one wait in the page
TIMEOUT = 30
ANSWER = "Hello, Ada! Greetings from mcpactor."


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@contextlib.contextmanager
def _mcpactor_serve(host_origin: str, log: Path) -> Iterator[str]:
    """``mcpactor serve --http`` of the greeter, its answers readable by the host page."""
    port = _free_port()
    command = [
        sys.executable, "-m", "mcpactor", "serve", "examples/apps/greeter.py",
        "--http", f"127.0.0.1:{port}", f"--cors-origins={host_origin}",
    ]  # fmt: skip
    with log.open("wb") as errors:
        process = subprocess.Popen(command, cwd=ROOT, stderr=errors)
    try:
        deadline = time.monotonic() + TIMEOUT
        while True:  # a subprocess starting: there is nothing to wait on but the port
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if process.poll() is not None:
                    pytest.fail(f"mcpactor serve exited:\n{log.read_text()[-2000:]}")
                assert time.monotonic() < deadline, "mcpactor serve did not listen"
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=TIMEOUT)


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass


@contextlib.contextmanager
def _host_page() -> Iterator[str]:
    """The built host page, served from its own origin; yields that origin."""
    handler = functools.partial(_Quiet, directory=str(HOST / "dist"))
    with ThreadingHTTPServer(("127.0.0.1", 0), handler) as http:
        thread = threading.Thread(target=http.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{http.server_address[1]}"
        finally:
            http.shutdown()
            thread.join()


def _shot(page: Any) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "apps-host.png"))
    if os.environ.get("MCPACTOR_DOC_SHOTS") == "1":
        page.screenshot(path=str(DOCS / "apps-host.png"))


def _check_the_sandbox(page: Any, url: str, problems: list[str]) -> None:
    """The view runs under the policy its ``_meta.ui.csp`` (none) makes: no network."""
    (view,) = [frame for frame in page.frames if frame != page.main_frame]
    policy = view.evaluate(
        "document.querySelector('meta[http-equiv=Content-Security-Policy]').content"
    )
    assert "default-src 'none'" in policy
    assert "connect-src 'none'" in policy
    before = len(problems)
    # Straight to the server, around the host: the browser refuses, and says so.
    reached = view.evaluate(
        "url => fetch(url, {method: 'POST'}).then(() => 'reached', () => 'refused')", url
    )
    assert reached == "refused"
    refusals = problems[before:]
    assert refusals, "the browser said nothing of the refused connection"
    assert all("Content Security Policy" in text for text in refusals), refusals
    del problems[before:]


def test_the_greeter_answers_through_a_real_host(tmp_path: Path) -> None:
    assert NPM is not None
    built(EXAMPLE, NPM)
    built(HOST, NPM)
    problems: list[str] = []
    with (
        _host_page() as origin,
        _mcpactor_serve(origin, tmp_path / "serve.log") as url,
        playwright_api.sync_playwright() as playwright,
    ):
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1100, "height": 520})
            page.set_default_timeout(TIMEOUT * 1000)
            page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda error: problems.append(f"uncaught: {error}"))
            page.on(
                "response",
                lambda r: problems.append(f"{r.status} {r.url}") if r.status >= 400 else None,
            )
            page.goto(f"{origin}/index.html?server={url}")
            page.wait_for_function("window.hostState.ready || window.hostState.errors.length")
            state = page.evaluate("window.hostState")
            assert state["errors"] == []
            assert state["server"] == {"name": "greeter", "version": "1.0.0"}
            assert state["serverCapabilities"]["extensions"] == {"io.modelcontextprotocol/ui": {}}
            # The host keeps the app-only tool from the model, and read the view.
            assert state["modelTools"] == ["open_greeter"]
            assert state["appOnlyTools"] == ["greet"]
            assert state["view"]["uri"] == "ui://greeter/greeter.html"
            assert state["view"]["mimeType"] == "text/html;profile=mcp-app"
            assert state["view"]["ui"] == {"prefersBorder": True}

            iframe = page.locator("iframe")
            assert iframe.get_attribute("sandbox") == "allow-scripts"
            view = page.frame_locator("iframe")
            # The result of the tool the "model" called reached the view.
            view.locator("#status", has_text="The greeter is open").wait_for()
            view.locator("#name").fill("Ada")
            view.locator("#greet").click()
            view.locator("#answer", has_text=ANSWER).wait_for()
            assert view.locator("#answer").inner_text() == ANSWER
            assert page.evaluate("window.hostState.appCalls") == ["greet"]
            _shot(page)
            _check_the_sandbox(page, url, problems)
        finally:
            browser.close()
    assert problems == []
