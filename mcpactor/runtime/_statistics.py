# What a session, a stateless host, a task table and a process pool report of
# themselves (their ``statistics()``): read by tests, debug output and the operations
# console, so built with the first report asked for, not with every start.

from __future__ import annotations

import attrs

from ..protocol import Phase

__all__ = [
    "ProcessPoolStatistics",
    "SessionStatistics",
    "StatelessStatistics",
    "TaskStatistics",
]


@attrs.frozen
class SessionStatistics:
    """A snapshot of one session, for tests and debug output."""

    phase: Phase
    requests_in_flight: int
    client_requests_pending: int
    subscriptions: int


@attrs.frozen
class StatelessStatistics:
    """A snapshot of a StatelessHost."""

    #: stateless requests being served (listen streams included)
    requests_in_flight: int
    #: listen streams open
    listen_streams: int


@attrs.frozen
class ProcessPoolStatistics:
    """A snapshot of a process pool."""

    #: workers waiting for a call
    idle: int
    #: workers running a call
    busy: int
    #: worker processes started so far
    started: int
    #: workers killed because their call was cancelled, timed out or broke
    killed: int


@attrs.frozen
class TaskStatistics:
    """A snapshot of one table's tasks."""

    #: task actors alive (working, waiting for input, or finishing after a cancel)
    running: int
    #: tasks in the table, finished or not
    stored: int
    #: ``tasks/result`` requests waiting for a task to finish
    waiting: int
