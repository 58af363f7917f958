"""How a serving process treats its heap: fewer, cheaper passes of the cycle collector."""

# Most of what a request allocates dies by reference counting as soon as the request
# ends; the cycle collector only matters for cycles, and serving makes almost none. A
# pass over the youngest generation runs after every N net allocations, whatever they
# are, and requests in flight are net allocations (their coroutine frames mostly): with
# many calls in flight, every pass walks tens of thousands of live objects and frees
# nothing. A high threshold makes those passes rare; its cost is memory, since cyclic
# garbage a handler makes waits that many net allocations before a pass frees it.
# Freezing start-up's objects keeps full passes from walking them.
#
# What a quiet spell builds counts towards the next pass too: idle keep-alive
# connections are many young containers (task, coroutines, cancel scope, parser), so the
# first burst over them would cross the threshold mid-burst and walk them all while
# requests wait. ``collect_when_quiet`` takes that pass while nothing happens instead:
# once the young generation has stopped growing for a moment, a pass that no request
# waits on, so the next burst starts from an empty young generation. While requests are
# in flight the young generation is mostly their live frames, which die by reference
# counting when they end; a pass then would free nothing and hold up the replies whose
# timers fall inside it, so it waits until they are done. The measurements behind the
# threshold are in docs/performance.md.

from __future__ import annotations

import gc
from typing import Final, NoReturn

__all__ = ["collect_when_quiet", "rare_young_passes", "settle_heap"]

#: net allocations of container objects between passes over the youngest generation
YOUNG_GENERATION_THRESHOLD: Final = 100_000
#: the same while ``mcpactor serve`` starts, before settle_heap (see rare_young_passes)
START_UP_YOUNG_THRESHOLD: Final = 5_000
#: seconds between two looks at the young generation by ``collect_when_quiet``
QUIET_LOOK_SECONDS: Final = 0.1
#: young containers worth a pass of their own in a quiet spell (a few ms of work)
QUIET_PASS_MINIMUM: Final = 10_000
#: a young generation that changed by fewer containers than this between two looks has
#: stopped growing (the looks themselves allocate a few)
_STILL: Final = 100


def settle_heap() -> None:
    """Freeze what start-up built and run the cycle collector's young passes less often.

    The serve entry points call this once the server has started: what exists then
    (modules, the registry, the lifespans' state) lives as long as the process, so
    full passes need not walk it. A threshold already higher than ours, or a disabled
    collector, is left alone; a process settled already is not frozen again.
    """
    young, middle, old = gc.get_threshold()
    if young >= YOUNG_GENERATION_THRESHOLD and gc.get_freeze_count():
        # Settled already: another server started in this process. Freezing again would
        # make whatever garbage exists by now permanent.
        return
    gc.freeze()
    if 0 < young < YOUNG_GENERATION_THRESHOLD:
        gc.set_threshold(YOUNG_GENERATION_THRESHOLD, middle, old)


def rare_young_passes() -> None:
    """Run the cycle collector's young passes less often while a server starts.

    ``mcpactor serve`` calls it before it imports the server: start-up allocates far
    more than it frees, so with the default threshold (700) a stdio server walked its
    young objects some seventy times before its first answer, to free almost nothing.
    ``START_UP_YOUNG_THRESHOLD`` keeps a pass now and then, so that start-up's garbage
    is freed before ``settle_heap`` freezes what is left: with serving's threshold from
    the start, the idle process held about 1 MB more. A higher threshold, or a disabled
    collector, is left alone.
    """
    young, middle, old = gc.get_threshold()
    if 0 < young < START_UP_YOUNG_THRESHOLD:
        gc.set_threshold(START_UP_YOUNG_THRESHOLD, middle, old)


async def collect_when_quiet(
    *,
    look_every: float = QUIET_LOOK_SECONDS,
    minimum: int = QUIET_PASS_MINIMUM,
) -> NoReturn:
    """Forever: collect the young generations once they hold ``minimum`` and stop growing.

    A task for the serve entry points' nurseries. Every ``look_every`` seconds it reads
    the collector's young count; when that count is at least ``minimum``, has barely
    changed since the last look and no request actor of this trio run is in flight, the
    process is between bursts, and a pass over the two young generations
    (``gc.collect(1)``) moves what survives (connections, sessions) to the old one while
    no request waits on it. A disabled collector is left alone.
    """
    import trio  # here: the module is imported before the command line imports trio

    from ._session_actor import current_start_gate

    requests = current_start_gate()
    last = gc.get_count()[0]
    while True:
        await trio.sleep(look_every)
        young = gc.get_count()[0]
        if (
            young >= minimum
            and abs(young - last) < _STILL
            and not requests.in_flight
            and gc.isenabled()
        ):
            gc.collect(1)
            young = gc.get_count()[0]
        last = young
