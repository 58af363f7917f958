"""LateWatch: a watch for the client only for requests that outlast a moment."""

from __future__ import annotations

import trio
import trio.testing

from mcpactor.runtime.http._watch import LateWatch


async def test_requests_that_end_in_time_are_never_watched(
    autojump_clock: trio.testing.MockClock,
) -> None:
    watch = LateWatch(1.0)
    calls = 0

    async def gone() -> None:
        nonlocal calls
        calls += 1
        await trio.sleep_forever()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(watch.run)
        for _ in range(3):
            armed = watch.arm(gone, trio.CancelScope())
            await trio.sleep(0.5)
            armed.disarm()
        await trio.sleep(5)
        assert calls == 0
        assert watch.watching == 0
        nursery.cancel_scope.cancel()


async def test_a_long_request_is_cancelled_when_its_client_leaves(
    autojump_clock: trio.testing.MockClock,
) -> None:
    watch = LateWatch(1.0)
    left = trio.Event()

    async def gone() -> None:
        await left.wait()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(watch.run)
        with trio.CancelScope() as request:
            armed = watch.arm(gone, request)
            await trio.sleep(2)
            assert watch.watching == 1
            left.set()
            await trio.sleep_forever()
        assert request.cancelled_caught
        armed.disarm()
        await trio.testing.wait_all_tasks_blocked()
        assert watch.watching == 0
        nursery.cancel_scope.cancel()


async def test_disarming_ends_a_running_watch(autojump_clock: trio.testing.MockClock) -> None:
    watch = LateWatch(1.0)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(watch.run)
        request = trio.CancelScope()
        armed = watch.arm(trio.sleep_forever, request)
        await trio.sleep(2)
        assert watch.watching == 1
        armed.disarm()
        await trio.testing.wait_all_tasks_blocked()
        assert watch.watching == 0
        assert not request.cancel_called
        nursery.cancel_scope.cancel()


async def test_a_request_that_ends_as_its_watch_starts_ends_nothing_else() -> None:
    # The timer starts a watch, and the request ends before the watch's first step: the
    # watch finds nothing to watch. (It used to fail an assertion, in the app's nursery:
    # the server ended.)
    watch = LateWatch(1.0)

    async def gone() -> None:
        raise AssertionError("a disarmed request's client is not watched")

    async with trio.open_nursery() as nursery:
        nursery.start_soon(watch.run)
        await trio.testing.wait_all_tasks_blocked()
        armed = watch.arm(gone, trio.CancelScope())
        watch._start(armed)
        armed.disarm()
        await trio.testing.wait_all_tasks_blocked()
        assert watch.watching == 0
        nursery.cancel_scope.cancel()
