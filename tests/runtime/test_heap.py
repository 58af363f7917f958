"""``settle_heap`` and ``collect_when_quiet``: the serve entry points and the collector."""

from __future__ import annotations

import functools
import gc
from collections.abc import Iterator
from typing import Any

import pytest
import trio
import trio.testing

from mcpactor import Server
from mcpactor.runtime import (
    collect_when_quiet,
    current_start_gate,
    rare_young_passes,
    settle_heap,
)
from mcpactor.runtime._heap import (
    QUIET_LOOK_SECONDS,
    QUIET_PASS_MINIMUM,
    START_UP_YOUNG_THRESHOLD,
    YOUNG_GENERATION_THRESHOLD,
)
from mcpactor.transports import serve_http


def test_it_freezes_start_up_and_raises_a_lower_young_threshold() -> None:
    gc.set_threshold(700, 10, 10)
    before = gc.get_freeze_count()
    settle_heap()
    assert gc.get_freeze_count() > before
    assert gc.get_threshold() == (YOUNG_GENERATION_THRESHOLD, 10, 10)


def test_a_second_server_in_the_process_does_not_freeze_again() -> None:
    gc.set_threshold(700, 10, 10)
    settle_heap()
    frozen = gc.get_freeze_count()
    garbage = [[index] for index in range(1000)]
    settle_heap()
    assert gc.get_freeze_count() == frozen
    del garbage


def test_it_leaves_a_higher_threshold_and_a_disabled_collector_alone() -> None:
    gc.set_threshold(YOUNG_GENERATION_THRESHOLD * 5, 3, 4)
    settle_heap()
    assert gc.get_threshold() == (YOUNG_GENERATION_THRESHOLD * 5, 3, 4)
    gc.set_threshold(0, 10, 10)
    settle_heap()
    assert gc.get_threshold() == (0, 10, 10)


def test_start_up_passes_are_rarer_and_serving_raises_them_further() -> None:
    gc.set_threshold(700, 10, 10)
    rare_young_passes()
    assert gc.get_threshold() == (START_UP_YOUNG_THRESHOLD, 10, 10)
    settle_heap()
    assert gc.get_threshold() == (YOUNG_GENERATION_THRESHOLD, 10, 10)
    # once serving, and with a collector the user tuned or disabled, it changes nothing
    rare_young_passes()
    assert gc.get_threshold() == (YOUNG_GENERATION_THRESHOLD, 10, 10)
    gc.set_threshold(0, 10, 10)
    rare_young_passes()
    assert gc.get_threshold() == (0, 10, 10)


async def served_threshold(*, tune_gc: bool) -> tuple[int, int, int]:
    gc.set_threshold(700, 10, 10)
    async with trio.open_nursery() as nursery:
        await nursery.start(functools.partial(serve_http, Server("heap"), port=0, tune_gc=tune_gc))
        threshold = gc.get_threshold()
        nursery.cancel_scope.cancel()
    return threshold


async def test_serve_http_settles_the_heap_unless_told_not_to() -> None:
    assert (await served_threshold(tune_gc=True))[0] == YOUNG_GENERATION_THRESHOLD
    gc.unfreeze()
    assert (await served_threshold(tune_gc=False))[0] == 700
    assert gc.get_freeze_count() == 0


# --- collect_when_quiet ---------------------------------------------------------------


@pytest.fixture
def passes() -> Iterator[list[int]]:
    """The generations of the collector's passes while the test runs, automatic ones off."""
    # Only explicit passes run: an automatic one would empty the young generation too.
    gc.collect()
    gc.set_threshold(10_000_000, 10, 10)
    seen: list[int] = []

    def record(phase: str, info: dict[str, Any]) -> None:
        if phase == "stop":
            seen.append(info["generation"])

    gc.callbacks.append(record)
    yield seen
    gc.callbacks.remove(record)


def young_objects(count: int) -> list[list[int]]:
    return [[index] for index in range(count)]


async def test_a_quiet_heap_with_many_young_objects_gets_one_pass(
    passes: list[int], autojump_clock: trio.testing.MockClock
) -> None:
    async with trio.open_nursery() as nursery:
        nursery.start_soon(collect_when_quiet)
        kept = young_objects(QUIET_PASS_MINIMUM * 2)
        await trio.sleep(QUIET_LOOK_SECONDS * 10)
        nursery.cancel_scope.cancel()
    # One pass moved them out of the young generations; nothing was left for another.
    assert passes == [1]
    assert gc.get_count()[0] < QUIET_PASS_MINIMUM
    del kept


async def test_no_pass_while_the_heap_grows_then_one_when_it_stops(
    passes: list[int], autojump_clock: trio.testing.MockClock
) -> None:
    kept = young_objects(QUIET_PASS_MINIMUM * 2)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(collect_when_quiet)
        for _ in range(20):
            kept += young_objects(1000)
            await trio.sleep(QUIET_LOOK_SECONDS / 2)
        assert passes == []
        await trio.sleep(QUIET_LOOK_SECONDS * 3)
        assert passes == [1]
        nursery.cancel_scope.cancel()


async def test_few_young_objects_or_a_disabled_collector_get_no_pass(
    passes: list[int], autojump_clock: trio.testing.MockClock
) -> None:
    async with trio.open_nursery() as nursery:
        nursery.start_soon(collect_when_quiet)
        few = young_objects(QUIET_PASS_MINIMUM // 4)
        await trio.sleep(QUIET_LOOK_SECONDS * 10)
        assert passes == []
        gc.disable()
        many = young_objects(QUIET_PASS_MINIMUM * 2)
        await trio.sleep(QUIET_LOOK_SECONDS * 10)
        assert passes == []
        nursery.cancel_scope.cancel()
    del few, many


async def test_no_pass_while_requests_are_in_flight(
    passes: list[int], autojump_clock: trio.testing.MockClock
) -> None:
    requests = current_start_gate()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(collect_when_quiet)
        requests.spawned()
        requests.started()
        # Their frames, mostly: they die when the request ends.
        kept = young_objects(QUIET_PASS_MINIMUM * 2)
        await trio.sleep(QUIET_LOOK_SECONDS * 10)
        assert passes == []
        requests.ended()
        await trio.sleep(QUIET_LOOK_SECONDS * 3)
        assert passes == [1]
        nursery.cancel_scope.cancel()
    del kept


async def passes_while_serving(passes: list[int], *, tune_gc: bool) -> list[int]:
    async with trio.open_nursery() as nursery:
        await nursery.start(functools.partial(serve_http, Server("heap"), port=0, tune_gc=tune_gc))
        # serve_http raises the young threshold; keep automatic passes out of the count.
        gc.set_threshold(10_000_000, 10, 10)
        kept = young_objects(QUIET_PASS_MINIMUM * 2)
        await trio.sleep(QUIET_LOOK_SECONDS * 10)
        nursery.cancel_scope.cancel()
    del kept
    return list(passes)


async def test_serve_http_collects_in_quiet_spells_unless_told_not_to(
    passes: list[int], autojump_clock: trio.testing.MockClock
) -> None:
    assert await passes_while_serving(passes, tune_gc=False) == []
    gc.unfreeze()
    assert await passes_while_serving(passes, tune_gc=True) == [1]
