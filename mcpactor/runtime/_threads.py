"""Cooperative cancellation for blocking handlers running in worker threads."""

from __future__ import annotations

import trio

__all__ = ["check_cancelled"]


def check_cancelled() -> None:
    """Raise ``trio.Cancelled`` if the request this worker thread serves was cancelled.

    Blocking (``def``) handlers run in worker threads, where trio cannot interrupt them;
    call this between units of work so that ``notifications/cancelled``, a timeout or
    shutdown stops the handler. Outside a worker thread it does nothing.
    """
    try:
        trio.from_thread.check_cancelled()
    except RuntimeError:
        # Not in a trio worker thread (called from async code or plain Python).
        return
