# What the live tree reads of the actors: the frozen values their ``view()`` methods return.
#
# Each actor that the Observatory watches says what it holds at one instant through one
# method at the end of its class: ``SessionActor.view``, ``HttpSession.view``,
# ``SessionManager.view``, ``StatelessHost.view`` and the task tables' ``view``. The
# snapshot (``_snapshot.py``) reads these values, never the actors' attributes, so an
# actor may keep its state however it likes as long as its ``view`` still says it.
#
# A view holds plain values (ids, times on trio's clock, counts) and, where the tree goes
# on or an action needs one, the live object to go through (a session's actor and task
# table, a table's sessions): the snapshot asks those for their own views, and the
# actions use their public methods (a stateless request's ``cancel``, found in its
# host's public ``flights``), never their insides. The actors' modules import this
# one, so it names their classes in comments only (a type would be an import cycle).

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from ..protocol import JSONValue, RequestId

if TYPE_CHECKING:
    from ..server import Server
    from ._offload import ProcessPool

__all__ = [
    "HostView",
    "HttpSessionView",
    "ManagerView",
    "RequestView",
    "SessionView",
    "StreamView",
    "TaskView",
]


@attrs.frozen
class RequestView:
    """A request being served: what it asks, since when, and how far it got."""

    #: its id, as its client sent it
    id: RequestId
    #: its method; None while it is being opened (its actor not started yet)
    method: str | None
    #: its params as received (the snapshot bounds what it shows of them)
    params: JSONValue
    #: when it started, on trio's clock; None while it is being opened
    started: float | None
    #: the last progress its handler reported
    progress: float | None
    #: its cancel scope's deadline (``inf``: none)
    deadline: float
    #: whether its cancel scope was cancelled
    cancelled: bool
    #: a stateless request's key in its host (what ``cancel_stateless`` takes)
    key: int | None = None
    #: what a stateless request was admitted as (a session's is the session's)
    principal: object = None
    #: the total its handler gave with its last progress, if any
    total: float | None = None
    #: the message its handler gave with its last progress, if any
    message: str | None = None


@attrs.frozen
class TaskView:
    """A task in a task table: its status and times (trio's clock)."""

    id: str
    status: str
    created: float
    #: when it may be deleted; None: never
    expires: float | None
    message: str | None
    #: whether its status is final
    terminal: bool
    #: who created it (tasks extension); None in a session's table
    principal: str | None


@attrs.frozen
class StreamView:
    """A response stream of an HTTP session: what it owes and whether a connection holds it."""

    id: str
    #: the session's standalone stream (the GET's), else a POST's
    standalone: bool
    #: responses it still owes
    pending: int
    #: items queued for its connection, not yet written
    buffered: int
    #: whether a connection is writing it
    attached: bool
    #: the last event id a connection wrote
    last_event_id: str | None


@attrs.frozen
class SessionView:
    """A session actor: what was negotiated, what runs in it, and what it runs on."""

    #: the requests it is serving, in the order they came
    requests: tuple[RequestView, ...]
    #: the negotiated revision; None before initialize
    revision: str | None
    #: the ``clientInfo`` its client sent; None before initialize
    client_info: JSONValue
    #: the Server it serves
    server: Server
    #: its task table, a ``TaskManager`` (``view`` lists the tasks, ``cancel`` ends one)
    tasks: Any
    #: its own worker processes, if it started any
    processes: ProcessPool | None


@attrs.frozen
class HttpSessionView:
    """How an HTTP session is held: its id, state, connections and streams."""

    #: its ``Mcp-Session-Id``; None for a session without one
    id: str | None
    #: how it is reached (``SessionKind``'s value)
    kind: str
    #: whether its actor and router are running (else it sleeps)
    awake: bool
    #: whether it is being closed
    closing: bool
    #: when it was made and last used, on trio's clock
    created: float
    last_active: float
    #: HTTP connections holding it now
    connections: int
    #: what its client was admitted as
    principal: object
    #: its ``SessionActor``
    actor: Any
    streams: tuple[StreamView, ...]


@attrs.frozen
class HostView:
    """A stateless host: the requests it serves, its task table and worker pool."""

    requests: tuple[RequestView, ...]
    #: the tasks extension's table, a ``TaskRegistry`` or a task host of the caller's;
    #: None: not open
    tasks: Any
    #: the worker processes its requests use, if there are any
    processes: ProcessPool | None


@attrs.frozen
class ManagerView:
    """An HTTP session table: its sessions, its stateless host and its worker pools."""

    #: its ``HttpSession``s, every one until it has ended
    sessions: tuple[Any, ...]
    #: its ``StatelessHost``
    stateless: Any
    #: the worker pools its sessions share
    pools: tuple[ProcessPool, ...]
