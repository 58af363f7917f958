"""Task actors: requests that outlive their request, in both eras.

One Task actor (``TaskRunner``) and one status table (protocol's ``TRANSITIONS``, through
``TaskState.move``) serve two owners: ``TaskManager``, the tasks of one session
(2025-11-25), and ``TaskRegistry``, the tasks of the tasks extension at a revision
without sessions. Each owner composes the same pieces: a ``TaskTable`` of entries and
limits, a ``TaskExpiry`` reaping them when their TTL passes, the runner, and with a
``TaskStore`` in the options a ``TaskReplica`` sharing them with other replicas.
"""

from typing import TYPE_CHECKING, Final

from ..._lazy import exports

if TYPE_CHECKING:
    from .._statistics import TaskStatistics as TaskStatistics
    from ._extension import TaskPublisher as TaskPublisher
    from ._extension import TaskRegistry as TaskRegistry
    from ._options import TaskOptions as TaskOptions
    from ._session import TaskManager as TaskManager
    from ._store import REPLICA_STOPPED as REPLICA_STOPPED
    from ._store import CommandHandler as CommandHandler
    from ._store import InMemoryTaskStore as InMemoryTaskStore
    from ._store import StoppedHook as StoppedHook
    from ._store import TaskCommand as TaskCommand
    from ._store import TaskRecord as TaskRecord
    from ._store import TaskStore as TaskStore
    from ._store import TaskWatch as TaskWatch
    from ._store import TaskWatchers as TaskWatchers
    from ._store import stopped as stopped
    from ._table import TaskEntry as TaskEntry

#: public name -> (module, name there): imported on first use (see mcpactor/_lazy.py)
_LAZY: Final = {
    "TaskPublisher": ("._extension", "TaskPublisher"),
    "TaskRegistry": ("._extension", "TaskRegistry"),
    "TaskOptions": ("._options", "TaskOptions"),
    "TaskStatistics": (".._statistics", "TaskStatistics"),
    "TaskManager": ("._session", "TaskManager"),
    "REPLICA_STOPPED": ("._store", "REPLICA_STOPPED"),
    "CommandHandler": ("._store", "CommandHandler"),
    "InMemoryTaskStore": ("._store", "InMemoryTaskStore"),
    "StoppedHook": ("._store", "StoppedHook"),
    "TaskCommand": ("._store", "TaskCommand"),
    "TaskRecord": ("._store", "TaskRecord"),
    "TaskStore": ("._store", "TaskStore"),
    "TaskWatch": ("._store", "TaskWatch"),
    "TaskWatchers": ("._store", "TaskWatchers"),
    "stopped": ("._store", "stopped"),
    "TaskEntry": ("._table", "TaskEntry"),
}

__all__ = [
    "REPLICA_STOPPED",
    "CommandHandler",
    "InMemoryTaskStore",
    "StoppedHook",
    "TaskCommand",
    "TaskEntry",
    "TaskManager",
    "TaskOptions",
    "TaskPublisher",
    "TaskRecord",
    "TaskRegistry",
    "TaskStatistics",
    "TaskStore",
    "TaskWatch",
    "TaskWatchers",
    "stopped",
]

__getattr__ = exports(__name__, globals(), _LAZY)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
