# One writer per stream, enforced: a second task that starts writing while another is
# still at it is a bug (its bytes would interleave with the first one's), so it raises
# ``trio.BusyResourceError`` at once instead of corrupting the stream. The same contract
# as trio's own streams, which guard ``send_all`` this way.

from __future__ import annotations

import trio

__all__ = ["ConflictDetector"]


class ConflictDetector:
    """A context manager that one task at a time may be inside; a second one raises.

    Raises:
        trio.BusyResourceError: on entering while another task is inside.
    """

    __slots__ = ("_message", "held")

    def __init__(self, message: str) -> None:
        self._message = message
        #: a task is inside (read it, never set it): a synchronous write, which no other
        #: task can interrupt, checks it instead of entering
        self.held = False

    def __enter__(self) -> None:
        if self.held:
            raise trio.BusyResourceError(self._message)
        self.held = True

    def __exit__(self, *exc_info: object) -> None:
        self.held = False
