"""The trio actors: sessions, their requests, and how they are run."""

from ._session_actor import Outbound as Outbound
from ._session_actor import SessionActor as SessionActor
from ._session_actor import SessionOptions as SessionOptions
from ._session_actor import SessionStatistics as SessionStatistics
from ._threads import check_cancelled as check_cancelled

__all__ = ["Outbound", "SessionActor", "SessionOptions", "SessionStatistics", "check_cancelled"]
