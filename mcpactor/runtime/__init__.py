"""The trio actors: sessions, their requests, and how they are run."""

from typing import TYPE_CHECKING, Final

from .._lazy import exports

if TYPE_CHECKING:
    from ._bus import DEFAULT_BUFFER as DEFAULT_BUFFER
    from ._bus import ChangeBus as ChangeBus
    from ._bus import ChangeEvent as ChangeEvent
    from ._bus import InMemoryBus as InMemoryBus
    from ._bus import Listener as Listener
    from ._chain import ChainAnswered as ChainAnswered
    from ._changes import ChangeNotices as ChangeNotices
    from ._conflict import ConflictDetector as ConflictDetector
    from ._heap import collect_when_quiet as collect_when_quiet
    from ._heap import rare_young_passes as rare_young_passes
    from ._heap import settle_heap as settle_heap
    from ._history import History as History
    from ._messages import Outbound as Outbound
    from ._messages import OutboundKind as OutboundKind
    from ._messages import Outbox as Outbox
    from ._messages import SessionOptions as SessionOptions
    from ._messages import StreamSignal as StreamSignal
    from ._metrics import BUCKETS as BUCKETS
    from ._metrics import CANCELLED as CANCELLED
    from ._metrics import ERROR as ERROR
    from ._metrics import LOG_CONTEXT as LOG_CONTEXT
    from ._metrics import METRICS as METRICS
    from ._metrics import Metrics as Metrics
    from ._metrics import RequestTrace as RequestTrace
    from ._observed import observed as observed
    from ._offload import OffloadError as OffloadError
    from ._offload import ProcessPool as ProcessPool
    from ._offload import open_process_pool as open_process_pool
    from ._peer import SessionPeer as SessionPeer
    from ._session_actor import SessionActor as SessionActor
    from ._session_actor import StartGate as StartGate
    from ._session_actor import current_start_gate as current_start_gate
    from ._snapshot import Observatory as Observatory
    from ._snapshot import current_observatory as current_observatory
    from ._stateless import LISTEN as LISTEN
    from ._stateless import StatelessHost as StatelessHost
    from ._stateless import StatelessOptions as StatelessOptions
    from ._statistics import ProcessPoolStatistics as ProcessPoolStatistics
    from ._statistics import SessionStatistics as SessionStatistics
    from ._statistics import StatelessStatistics as StatelessStatistics
    from ._threads import check_cancelled as check_cancelled
    from ._views import HostView as HostView
    from ._views import HttpSessionView as HttpSessionView
    from ._views import ManagerView as ManagerView
    from ._views import RequestView as RequestView
    from ._views import SessionView as SessionView
    from ._views import StreamView as StreamView
    from ._views import TaskView as TaskView
    from .tasks import CommandHandler as CommandHandler
    from .tasks import StoppedHook as StoppedHook
    from .tasks import TaskCommand as TaskCommand
    from .tasks import TaskManager as TaskManager
    from .tasks import TaskOptions as TaskOptions
    from .tasks import TaskRecord as TaskRecord
    from .tasks import TaskStatistics as TaskStatistics
    from .tasks import TaskWatch as TaskWatch
    from .tasks import TaskWatchers as TaskWatchers
    from .tasks import stopped as stopped

#: public name -> (module, name there): imported on first use (see mcpactor/_lazy.py)
_LAZY: Final = {
    "DEFAULT_BUFFER": ("._bus", "DEFAULT_BUFFER"),
    "ChangeBus": ("._bus", "ChangeBus"),
    "ChangeEvent": ("._bus", "ChangeEvent"),
    "InMemoryBus": ("._bus", "InMemoryBus"),
    "Listener": ("._bus", "Listener"),
    "ChainAnswered": ("._chain", "ChainAnswered"),
    "ChangeNotices": ("._changes", "ChangeNotices"),
    "ConflictDetector": ("._conflict", "ConflictDetector"),
    "collect_when_quiet": ("._heap", "collect_when_quiet"),
    "rare_young_passes": ("._heap", "rare_young_passes"),
    "settle_heap": ("._heap", "settle_heap"),
    "History": ("._history", "History"),
    "Outbound": ("._messages", "Outbound"),
    "OutboundKind": ("._messages", "OutboundKind"),
    "Outbox": ("._messages", "Outbox"),
    "SessionOptions": ("._messages", "SessionOptions"),
    "SessionStatistics": ("._statistics", "SessionStatistics"),
    "StreamSignal": ("._messages", "StreamSignal"),
    "BUCKETS": ("._metrics", "BUCKETS"),
    "CANCELLED": ("._metrics", "CANCELLED"),
    "ERROR": ("._metrics", "ERROR"),
    "LOG_CONTEXT": ("._metrics", "LOG_CONTEXT"),
    "METRICS": ("._metrics", "METRICS"),
    "Metrics": ("._metrics", "Metrics"),
    "RequestTrace": ("._metrics", "RequestTrace"),
    "OffloadError": ("._offload", "OffloadError"),
    "ProcessPool": ("._offload", "ProcessPool"),
    "ProcessPoolStatistics": ("._statistics", "ProcessPoolStatistics"),
    "open_process_pool": ("._offload", "open_process_pool"),
    "SessionPeer": ("._peer", "SessionPeer"),
    "SessionActor": ("._session_actor", "SessionActor"),
    "StartGate": ("._session_actor", "StartGate"),
    "current_start_gate": ("._session_actor", "current_start_gate"),
    "Observatory": ("._snapshot", "Observatory"),
    "current_observatory": ("._snapshot", "current_observatory"),
    "observed": ("._observed", "observed"),
    "LISTEN": ("._stateless", "LISTEN"),
    "StatelessHost": ("._stateless", "StatelessHost"),
    "StatelessOptions": ("._stateless", "StatelessOptions"),
    "StatelessStatistics": ("._statistics", "StatelessStatistics"),
    "check_cancelled": ("._threads", "check_cancelled"),
    "HostView": ("._views", "HostView"),
    "HttpSessionView": ("._views", "HttpSessionView"),
    "ManagerView": ("._views", "ManagerView"),
    "RequestView": ("._views", "RequestView"),
    "SessionView": ("._views", "SessionView"),
    "StreamView": ("._views", "StreamView"),
    "TaskView": ("._views", "TaskView"),
    "CommandHandler": (".tasks", "CommandHandler"),
    "StoppedHook": (".tasks", "StoppedHook"),
    "TaskCommand": (".tasks", "TaskCommand"),
    "TaskManager": (".tasks", "TaskManager"),
    "TaskOptions": (".tasks", "TaskOptions"),
    "TaskRecord": (".tasks", "TaskRecord"),
    "TaskStatistics": (".tasks", "TaskStatistics"),
    "TaskWatch": (".tasks", "TaskWatch"),
    "TaskWatchers": (".tasks", "TaskWatchers"),
    "stopped": (".tasks", "stopped"),
}

__all__ = [
    "BUCKETS",
    "CANCELLED",
    "DEFAULT_BUFFER",
    "ERROR",
    "LISTEN",
    "LOG_CONTEXT",
    "METRICS",
    "ChainAnswered",
    "ChangeBus",
    "ChangeEvent",
    "ChangeNotices",
    "CommandHandler",
    "ConflictDetector",
    "History",
    "HostView",
    "HttpSessionView",
    "InMemoryBus",
    "Listener",
    "ManagerView",
    "Metrics",
    "Observatory",
    "OffloadError",
    "Outbound",
    "OutboundKind",
    "Outbox",
    "ProcessPool",
    "ProcessPoolStatistics",
    "RequestTrace",
    "RequestView",
    "SessionActor",
    "SessionOptions",
    "SessionPeer",
    "SessionStatistics",
    "SessionView",
    "StartGate",
    "StatelessHost",
    "StatelessOptions",
    "StatelessStatistics",
    "StoppedHook",
    "StreamSignal",
    "StreamView",
    "TaskCommand",
    "TaskManager",
    "TaskOptions",
    "TaskRecord",
    "TaskStatistics",
    "TaskView",
    "TaskWatch",
    "TaskWatchers",
    "check_cancelled",
    "collect_when_quiet",
    "current_observatory",
    "current_start_gate",
    "observed",
    "open_process_pool",
    "rare_young_passes",
    "settle_heap",
    "stopped",
]

__getattr__ = exports(__name__, globals(), _LAZY)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
