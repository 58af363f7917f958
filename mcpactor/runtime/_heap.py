"""How a serving process treats its heap: fewer, cheaper passes of the cycle collector."""

# Most of what a request allocates dies by reference counting as soon as the request
# ends; the cycle collector only matters for cycles, and serving makes almost none
# (over four bursts of 1 000 calls, each pass found a few dozen objects to free). A pass over
# the youngest generation runs after every N net allocations, whatever they are, and
# requests in flight are net allocations: with 1 000 sleep(1) calls in flight — ~55
# live container objects each, coroutine frames mostly — every pass walked tens of
# thousands of live objects at ~0.5 µs each, 40–45 ms per burst of 1 000 calls with a
# threshold of 20 000 or 50 000 (the default 700 also ran full passes: worse still),
# 15 ms with 100 000. The cost of a high threshold is memory: cyclic garbage, when a
# handler makes some, waits for up to that many net allocations (~10–20 MB) before a
# pass frees it. Freezing start-up's objects keeps full passes from walking them.

from __future__ import annotations

import gc
from typing import Final

__all__ = ["settle_heap"]

#: net allocations of container objects between passes over the youngest generation
YOUNG_GENERATION_THRESHOLD: Final = 100_000


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
