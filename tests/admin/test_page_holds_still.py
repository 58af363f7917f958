"""The admin page holds still under a person's pointer, in the system's Chromium.

While a slow call's progress redraws the page twice a second, the Cancel button is
pressed the way a person presses it: the pointer moves onto it, the button goes down,
stays down for 100 to 500 ms, and comes up (``Input.dispatchMouseEvent`` through the
DevTools protocol, as the browser's own input). Every press opens the confirmation on
the first try, the button is the same element all along (the tree is patched, not
rebuilt), selected text stops the redraws, and the page logs no error (its icon
included).
"""

from __future__ import annotations

import functools
import time
from typing import Any

import trio

from mcpactor.client import connect_http

from .browser import signed_in_page
from .harness import TOKEN, open_served
from .test_page_chromium import _call_slow

__all__: list[str] = []

#: how long each press is held, in seconds: a quick tap to a slow press
HOLDS = (0.1, 0.3, 0.5, 0.2, 0.4, 0.3, 0.15, 0.45, 0.25, 0.35)


def _press(cdp: Any, page: Any, selector: str, hold: float) -> None:
    # A person's press: move onto the element, hold the button down, let go.
    box = page.locator(selector).bounding_box()
    assert box is not None, selector
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    cdp.send("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y})
    cdp.send(
        "Input.dispatchMouseEvent",
        {"type": "mousePressed", "x": x, "y": y, "button": "left", "clickCount": 1},
    )
    time.sleep(hold)  # the person holding the button down
    cdp.send(
        "Input.dispatchMouseEvent",
        {"type": "mouseReleased", "x": x, "y": y, "button": "left", "clickCount": 1},
    )


def _progress(page: Any) -> float:
    text = page.locator(".node[data-session] .progress-text").first
    return float(text.get_attribute("data-progress") or "0")


def _drive(admin_url: str, seen: dict[str, Any]) -> None:
    with signed_in_page(admin_url, TOKEN, height=760) as (page, problems):
        cancel = ".node[data-request][data-session] button"
        page.locator(cancel).wait_for()
        page.eval_on_selector(cancel, "(button) => { button.marked = true; }")
        cdp = page.context.new_cdp_session(page)
        first = _progress(page)
        opened = 0
        for hold in HOLDS:
            _press(cdp, page, cancel, hold)
            if page.locator("dialog#confirm[open]").count():
                opened += 1
                seen.setdefault("confirm", page.locator("#confirm-text").inner_text())
                _press(cdp, page, "dialog#confirm button[value=cancel]", 0.1)
                page.locator("dialog#confirm").wait_for(state="hidden")
            time.sleep(0.2)  # the person moving on to the next press
        seen["opened"] = opened
        seen["progress"] = (first, _progress(page))
        seen["same button"] = page.eval_on_selector(cancel, "(b) => b.marked === true")
        seen["streams shown"] = page.locator(".node .kind", has_text="stream").count()
        seen["progress text"] = page.locator(".progress-text").first.inner_text()
        # Selected text holds the page still; letting go of it lets it move again.
        page.evaluate(
            """() => {
                const title = document.querySelector('.node[data-session] .title');
                document.getSelection().selectAllChildren(title);
            }"""
        )
        held = _progress(page)
        page.wait_for_function(
            "() => document.getElementById('status').textContent.startsWith('held')"
        )
        seen["held"] = (held, _progress(page))
        page.evaluate("() => document.getSelection().removeAllRanges()")
        page.wait_for_function(
            "(held) => Number(document.querySelector("
            "'.node[data-session] .progress-text').dataset.progress) > held",
            arg=held,
        )
        seen["problems"] = problems


async def test_every_press_lands_on_the_first_try_while_the_page_updates() -> None:
    seen: dict[str, Any] = {}
    async with (
        open_served() as served,
        connect_http(
            served.mcp_url,
            initialize=True,
            protocol_version="2025-11-25",
            client_info={"name": "press client", "version": "3.1"},
        ) as client,
        trio.open_nursery() as nursery,
    ):
        nursery.start_soon(_call_slow, client, {})
        with trio.fail_after(10):
            await served.started.wait()
        with trio.fail_after(120):
            await trio.to_thread.run_sync(functools.partial(_drive, served.admin_url, seen))
        nursery.cancel_scope.cancel()
    assert seen["opened"] == len(HOLDS)
    before, after = seen["progress"]
    assert after > before + 3, "the page was updating while it was pressed"
    assert seen["same button"]
    # The dialog names the request, its client and its session.
    assert "tools/call slow" in seen["confirm"]
    assert "press client 3.1" in seen["confirm"]
    assert "session " in seen["confirm"]
    # The GET stream this client never opened is not listed; streams are asked for.
    assert seen["streams shown"] == 0
    assert seen["progress text"]
    held_at, still = seen["held"]
    assert still == held_at
    assert seen["problems"] == []
