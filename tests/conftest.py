"""Shared pytest configuration."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def _restore_the_collector() -> Iterator[None]:
    # The serve entry points set the process's cycle collector up for serving; in the
    # test process each test starts from the interpreter's own settings again.
    threshold = gc.get_threshold()
    enabled = gc.isenabled()
    yield
    gc.unfreeze()
    gc.set_threshold(*threshold)
    if enabled:
        gc.enable()
    else:
        gc.disable()
