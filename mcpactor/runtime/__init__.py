"""The trio actors: sessions, their requests, and how they are run."""

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
from ._starts import StartGate as StartGate
from ._starts import current_start_gate as current_start_gate
from ._tasks import TaskManager as TaskManager
from ._tasks import TaskOptions as TaskOptions
from ._tasks import TaskStatistics as TaskStatistics
from ._threads import check_cancelled as check_cancelled

__all__ = [
    "ConflictDetector",
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
    "StreamSignal",
    "TaskManager",
    "TaskOptions",
    "TaskStatistics",
    "check_cancelled",
    "collect_when_quiet",
    "current_start_gate",
    "open_process_pool",
    "settle_heap",
]
