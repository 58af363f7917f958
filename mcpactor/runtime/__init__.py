"""The trio actors: sessions, their requests, and how they are run."""

from ._bus import DEFAULT_BUFFER as DEFAULT_BUFFER
from ._bus import ChangeBus as ChangeBus
from ._bus import ChangeEvent as ChangeEvent
from ._bus import InMemoryBus as InMemoryBus
from ._bus import Listener as Listener
from ._conflict import ConflictDetector as ConflictDetector
from ._heap import collect_when_quiet as collect_when_quiet
from ._heap import settle_heap as settle_heap
from ._messages import Outbound as Outbound
from ._messages import OutboundKind as OutboundKind
from ._messages import Outbox as Outbox
from ._messages import SessionOptions as SessionOptions
from ._messages import SessionStatistics as SessionStatistics
from ._messages import StreamSignal as StreamSignal
from ._offload import OffloadError as OffloadError
from ._offload import ProcessPool as ProcessPool
from ._offload import ProcessPoolStatistics as ProcessPoolStatistics
from ._offload import open_process_pool as open_process_pool
from ._session_actor import Received as Received
from ._session_actor import SessionActor as SessionActor
from ._snapshot import Observatory as Observatory
from ._snapshot import current_observatory as current_observatory
from ._snapshot import observed as observed
from ._starts import StartGate as StartGate
from ._starts import current_start_gate as current_start_gate
from ._stateless import StatelessHost as StatelessHost
from ._stateless import StatelessOptions as StatelessOptions
from ._stateless import StatelessStatistics as StatelessStatistics
from ._task_store import CommandHandler as CommandHandler
from ._task_store import StoppedHook as StoppedHook
from ._task_store import TaskCommand as TaskCommand
from ._task_store import TaskRecord as TaskRecord
from ._task_store import TaskWatch as TaskWatch
from ._task_store import TaskWatchers as TaskWatchers
from ._task_store import stopped as stopped
from ._tasks import TaskManager as TaskManager
from ._tasks import TaskOptions as TaskOptions
from ._tasks import TaskStatistics as TaskStatistics
from ._threads import check_cancelled as check_cancelled

__all__ = [
    "DEFAULT_BUFFER",
    "ChangeBus",
    "ChangeEvent",
    "CommandHandler",
    "ConflictDetector",
    "InMemoryBus",
    "Listener",
    "Observatory",
    "OffloadError",
    "Outbound",
    "OutboundKind",
    "Outbox",
    "ProcessPool",
    "ProcessPoolStatistics",
    "Received",
    "SessionActor",
    "SessionOptions",
    "SessionStatistics",
    "StartGate",
    "StatelessHost",
    "StatelessOptions",
    "StatelessStatistics",
    "StoppedHook",
    "StreamSignal",
    "TaskCommand",
    "TaskManager",
    "TaskOptions",
    "TaskRecord",
    "TaskStatistics",
    "TaskWatch",
    "TaskWatchers",
    "check_cancelled",
    "collect_when_quiet",
    "current_observatory",
    "current_start_gate",
    "observed",
    "open_process_pool",
    "settle_heap",
    "stopped",
]
