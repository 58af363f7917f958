"""One writer per stream: ConflictDetector."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from mcpactor.runtime import ConflictDetector


async def test_a_second_task_entering_raises_busy() -> None:
    detector = ConflictDetector("someone is writing")
    inside = trio.Event()
    leave = trio.Event()

    async def first() -> None:
        with detector:
            inside.set()
            await leave.wait()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(first)
        await inside.wait()
        with pytest.raises(trio.BusyResourceError, match="someone is writing"), detector:
            pass  # pragma: no cover
        leave.set()
    # Free again once the first task has left, also after an exception inside.
    with pytest.raises(ValueError, match="inside"), detector:
        raise ValueError("inside")
    with detector:
        pass


async def test_two_writers_of_one_http_stream_raise() -> None:
    from mcpactor.runtime.http import Attachment, HttpSession, Stream
    from mcpactor.transports._asgi import AsgiExchange
    from mcpactor.transports._http_writer import write_stream

    class Session:
        async def release(self, attachment: Attachment) -> None:
            return

    blocked = trio.Event()

    async def send(message: dict[str, object]) -> None:
        blocked.set()
        await trio.sleep_forever()

    async def receive() -> dict[str, object]:
        await trio.sleep_forever()
        raise AssertionError  # pragma: no cover

    attachment = Attachment(Stream("1"))
    session: HttpSession = Session()  # type: ignore[assignment]
    exchange = AsgiExchange({"method": "GET", "path": "/", "headers": []}, receive, send)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(
            lambda: write_stream(exchange, session, attachment, [], started=True, retry_ms=0)
        )
        await blocked.wait()
        with pytest.raises(trio.BusyResourceError):
            await write_stream(exchange, session, attachment, [], started=True, retry_ms=0)
        nursery.cancel_scope.cancel()
