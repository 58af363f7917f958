# The client's own failure, and how a lone failure leaves a nursery.

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from .._exceptions import MCPActorError
from ..protocol import RequestId, describe

__all__ = ["RequestCancelled", "unwrap_single_errors"]


class RequestCancelled(MCPActorError):
    """The request was cancelled with ``ClientSession.cancel`` before the server answered."""

    def __init__(self, request_id: RequestId, reason: str | None) -> None:
        super().__init__(
            f"request {describe(request_id)} was cancelled: {reason or 'no reason given'}"
        )
        self.request_id = request_id
        self.reason = reason


@contextlib.contextmanager
def unwrap_single_errors() -> Iterator[None]:
    """Raise a lone exception out of a nursery's ExceptionGroup as itself.

    The connection context managers run tasks in nurseries around the caller's block;
    without this, a ``RequestError`` escaping the block would arrive wrapped in an
    ExceptionGroup. Several failures at once stay a group.
    """
    single: BaseException | None = None
    try:
        yield
    except BaseExceptionGroup as group:
        if len(group.exceptions) != 1 or isinstance(group.exceptions[0], BaseExceptionGroup):
            raise
        single = group.exceptions[0]
    if single is not None:
        # Raised outside the except block, and its context restored, so the traceback
        # reads as if the nursery had not been there.
        context = single.__context__
        try:
            raise single
        finally:
            single.__context__ = context
            del single, context
