# The bookkeeping of the client's own requests: the slot each waits on for its response,
# and the progress updates that reach its caller.
#
# The reader fills a slot (``finish``) and never blocks on it; a progress update is
# queued, without waiting, on the slot's own small channel, which the caller's task
# drains into its handler (``report_progress``), so a slow handler slows its call only.

from __future__ import annotations

import logging
from typing import Final, TypeGuard

import trio

from ..protocol import JSONObject, describe
from ._handlers import ProgressHandler

__all__ = ["Pending", "is_number", "report_progress"]

_log = logging.getLogger("mcpactor.client")

# Progress updates queued for one call before further ones are dropped.
_PROGRESS_BUFFER: Final = 64


class Pending:
    """The one-shot slot of one request waiting for its response, and its progress."""

    __slots__ = ("done", "error", "method", "progress_receive", "progress_send", "result")

    def __init__(self, method: str, *, progress: bool) -> None:
        self.method = method
        self.done = trio.Event()
        self.result: JSONObject | None = None
        self.error: Exception | None = None
        self.progress_send: trio.MemorySendChannel[JSONObject] | None = None
        self.progress_receive: trio.MemoryReceiveChannel[JSONObject] | None = None
        if progress:
            self.progress_send, self.progress_receive = trio.open_memory_channel[JSONObject](
                _PROGRESS_BUFFER
            )

    def finish(self, result: JSONObject | None, error: Exception | None) -> None:
        if self.done.is_set():
            return
        self.result = result
        self.error = error
        self.done.set()
        if self.progress_send is not None:
            # Ends the caller's progress loop after the updates already queued.
            self.progress_send.close()


async def report_progress(handler: ProgressHandler, params: JSONObject) -> None:
    progress = params.get("progress")
    if not is_number(progress):
        _log.warning("ignored a progress notification without a number: %s", describe(params))
        return
    total = params.get("total")
    message = params.get("message")
    await handler(
        progress,
        total if is_number(total) else None,
        message if isinstance(message, str) else None,
    )


def is_number(value: object) -> TypeGuard[float]:
    return type(value) is int or type(value) is float
