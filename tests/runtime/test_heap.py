"""``settle_heap``: what the serve entry points do to the process's cycle collector."""

from __future__ import annotations

import functools
import gc

import trio

from mcpactor import Server
from mcpactor.runtime import settle_heap
from mcpactor.runtime._heap import YOUNG_GENERATION_THRESHOLD
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
