"""HTTP sessions: their manager, hibernation, streams, routing and resumption.

The transports (``mcpactor.transports``) turn HTTP requests into calls on these; nothing
here knows about HTTP framing, headers or ASGI.
"""

from ._event_store import DEFAULT_MAX_BYTES as DEFAULT_MAX_BYTES
from ._event_store import DEFAULT_MAX_BYTES_PER_SESSION as DEFAULT_MAX_BYTES_PER_SESSION
from ._event_store import DEFAULT_MAX_BYTES_PER_STREAM as DEFAULT_MAX_BYTES_PER_STREAM
from ._event_store import DEFAULT_MAX_EVENTS_PER_STREAM as DEFAULT_MAX_EVENTS_PER_STREAM
from ._event_store import EventStore as EventStore
from ._event_store import EventStoreStatistics as EventStoreStatistics
from ._event_store import MemoryEventStore as MemoryEventStore
from ._event_store import Replay as Replay
from ._event_store import StreamKey as StreamKey
from ._event_store import StreamLease as StreamLease
from ._http_session import DuplicateRequestId as DuplicateRequestId
from ._http_session import HttpSession as HttpSession
from ._http_session import SessionHost as SessionHost
from ._http_session import SessionKind as SessionKind
from ._relay import MAX_RELAYED_BYTES as MAX_RELAYED_BYTES
from ._relay import MemoryHub as MemoryHub
from ._relay import MemoryRelay as MemoryRelay
from ._relay import Relay as Relay
from ._relay import Relayed as Relayed
from ._relay import RelayKind as RelayKind
from ._relay import Replicas as Replicas
from ._routing import Routing as Routing
from ._session_manager import COALESCE_SECONDS as COALESCE_SECONDS
from ._session_manager import SLEEP_AFTER as SLEEP_AFTER
from ._session_manager import WATCH_AFTER as WATCH_AFTER
from ._session_manager import ManagerStatistics as ManagerStatistics
from ._session_manager import SessionLimitReached as SessionLimitReached
from ._session_manager import SessionManager as SessionManager
from ._session_records import MAX_RECORD_BYTES as MAX_RECORD_BYTES
from ._session_runs import RunState as RunState
from ._session_runs import SessionRuns as SessionRuns
from ._session_store import MemorySessionRecords as MemorySessionRecords
from ._session_store import MemorySessionStore as MemorySessionStore
from ._session_store import SessionRecord as SessionRecord
from ._session_store import SessionRecords as SessionRecords
from ._session_store import SessionStore as SessionStore
from ._session_store import StoreUnavailable as StoreUnavailable
from ._session_store import principal_identity as principal_identity
from ._streams import Attachment as Attachment
from ._streams import Item as Item
from ._streams import NudgeTimer as NudgeTimer
from ._streams import Stream as Stream

__all__ = [
    "COALESCE_SECONDS",
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_BYTES_PER_SESSION",
    "DEFAULT_MAX_BYTES_PER_STREAM",
    "DEFAULT_MAX_EVENTS_PER_STREAM",
    "MAX_RECORD_BYTES",
    "MAX_RELAYED_BYTES",
    "SLEEP_AFTER",
    "WATCH_AFTER",
    "Attachment",
    "DuplicateRequestId",
    "EventStore",
    "EventStoreStatistics",
    "HttpSession",
    "Item",
    "ManagerStatistics",
    "MemoryEventStore",
    "MemoryHub",
    "MemoryRelay",
    "MemorySessionRecords",
    "MemorySessionStore",
    "NudgeTimer",
    "Relay",
    "RelayKind",
    "Relayed",
    "Replay",
    "Replicas",
    "Routing",
    "RunState",
    "SessionHost",
    "SessionKind",
    "SessionLimitReached",
    "SessionManager",
    "SessionRecord",
    "SessionRecords",
    "SessionRuns",
    "SessionStore",
    "StoreUnavailable",
    "Stream",
    "StreamKey",
    "StreamLease",
    "principal_identity",
]
