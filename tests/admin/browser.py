"""The system's Chromium, signed in to the admin page, for the tests that drive it, and
a person's press of the pointer (``press``)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

CHROMIUM = os.environ.get("MCPACTOR_CHROMIUM", "/usr/bin/chromium")
ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@contextlib.contextmanager
def signed_in_page(
    admin_url: str, token: str, *, height: int = 900, timeout_ms: int = 15_000
) -> Iterator[tuple[Any, list[str]]]:
    """A page of the admin listener, signed in with ``token``, and what went wrong on it.

    The list collects the console's errors and every response of 400 or more, for a test
    to assert empty. Playwright's sync API: run it in a worker thread.
    """
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": height})
            page.set_default_timeout(timeout_ms)
            problems: list[str] = []
            page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
            page.on(
                "response",
                lambda r: problems.append(f"{r.status} {r.url}") if r.status >= 400 else None,
            )
            page.goto(admin_url)
            # No cookie yet: the page sends the browser to the login form.
            assert page.url.endswith("/login"), page.url
            page.fill("input[name=token]", token)
            press(page, "button[type=submit]", 0.12)
            # Signed in once the form's answer has brought the page (and its cookie).
            page.wait_for_url(lambda url: not url.split("?")[0].endswith("/login"))
            page.wait_for_load_state()
            yield page, problems
        finally:
            browser.close()


def press(page: Any, target: Any, hold: float) -> None:
    """Press ``target`` (a selector, or a locator) as a person does: the pointer moved
    onto the middle of its box, the button down for ``hold`` seconds, then up."""
    element = (page.locator(target) if isinstance(target, str) else target).first
    element.wait_for()
    element.scroll_into_view_if_needed()  # the person scrolls to it first
    box = element.bounding_box()
    assert box is not None, target
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2, steps=4)
    page.mouse.down()
    page.wait_for_timeout(hold * 1000)
    page.mouse.up()
