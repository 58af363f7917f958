# The limits of a task table (the figures it reports are in runtime/_statistics.py).

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:
    # Only a store's owner imports the store's module: a table without one never does.
    from ._store import TaskStore

__all__ = ["TaskOptions", "ms"]


def _positive(instance: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None and not value > 0:
        raise ValueError(f"{attribute.name} must be positive, got {value!r}")


@attrs.frozen
class TaskOptions:
    """Limits of the tasks of one session (of the process, for the tasks extension)."""

    #: tasks running at once; more are refused with a clear error
    max_running: int = attrs.field(default=32, validator=_positive)
    #: tasks kept (running or finished, until their TTL passes)
    max_stored: int = attrs.field(default=1024, validator=_positive)
    #: seconds a task is kept when nobody asks for a TTL (None: until the owner ends)
    default_ttl: float | None = attrs.field(default=3600.0, validator=_positive)
    #: the longest TTL granted, in seconds; longer requests are cut to it (None: no limit)
    max_ttl: float | None = attrs.field(default=86400.0, validator=_positive)
    #: the polling interval suggested to clients, in seconds
    poll_interval: float | None = attrs.field(default=1.0, validator=_positive)
    #: tasks per ``tasks/list`` page
    page_size: int = attrs.field(default=100, validator=_positive)
    #: the largest result (as JSON, in bytes) a finished task keeps; a larger one fails
    #: the task with -32603 naming the limit. None: the transport's message limit,
    #: which ``serve_stdio`` and ``serve_http`` fill in (no limit elsewhere)
    max_result_bytes: int | None = attrs.field(default=None, validator=_positive)
    #: whether the session offers tasks at all; off, the ``tasks`` capability is not
    #: declared and task metadata is ignored (stateless HTTP: a task would end with its
    #: one-request session)
    enabled: bool = True
    #: the task store shared with other replicas (None: this table is the whole truth)
    store: TaskStore | None = attrs.field(default=None, eq=False, repr=False)


def ms(seconds: float | None) -> int | None:
    """``seconds`` in whole milliseconds; None for None or infinity (no limit)."""
    if seconds is None or math.isinf(seconds):
        return None
    return round(seconds * 1000)
