"""How a serving process treats its heap: fewer, cheaper passes of the cycle collector."""

# Most of what a request allocates dies by reference counting as soon as the request
# ends; the cycle collector only matters for cycles. Its default trigger (a pass over
# the youngest generation every 700 net allocations, a full pass every so often) is
# tuned for short scripts: with 1 000 requests in flight — ~55 live container objects
# each — a burst of sleep(1) calls spent about 80 µs of collector time per call, a
# third of its CPU, much of it in full passes over everything start-up built.
# Measured with ``bench/micro_http.py --burst 1000``: 190/216 µs best/median CPU per
# call with the defaults, 165/179 µs with start-up frozen and the threshold below.

from __future__ import annotations

import gc
from typing import Final

__all__ = ["settle_heap"]

#: net allocations of container objects between passes over the youngest generation
YOUNG_GENERATION_THRESHOLD: Final = 20_000


def settle_heap() -> None:
    """Freeze what start-up built and run the cycle collector's young passes less often.

    The serve entry points call this once the server has started: what exists then
    (modules, the registry, the lifespans' state) lives as long as the process, so
    full passes need not walk it. A threshold already higher than ours, or a disabled
    collector, is left alone.
    """
    gc.freeze()
    young, middle, old = gc.get_threshold()
    if 0 < young < YOUNG_GENERATION_THRESHOLD:
        gc.set_threshold(YOUNG_GENERATION_THRESHOLD, middle, old)
