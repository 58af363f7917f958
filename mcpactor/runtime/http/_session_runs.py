# The runs of an HTTP session's actor: how a session sleeps and wakes (_http_session.py
# says when). Asleep there is no run: no task, channel or nursery. Waking starts one task
# in the manager's nursery that runs the actor with a fresh inbox and outbox (whose
# senders route what the session sends, _routing.py); falling asleep closes the inbox,
# the actor ends its run without closing the core, and the task ends.

from __future__ import annotations

import enum
import functools
import logging
from typing import Any, Final, Protocol

import trio

from ..._exceptions import ProtocolError
from ...protocol import JSONValue, Phase
from .._messages import Outbox
from .._session_actor import SessionActor
from ._routing import Routing
from ._session_kinds import SessionHost, SessionKind

__all__ = ["RunOwner", "RunState", "SessionRuns"]

_log = logging.getLogger("mcpactor.http")

_INBOX_SIZE: Final = 64


class RunState(enum.Enum):
    """Where a session's actor is between and during its runs."""

    #: state only: no task, no channel
    ASLEEP = "asleep"
    #: the actor and the router run in the manager's nursery
    AWAKE = "awake"
    #: the inbox closed for a rest; the task is ending
    FALLING_ASLEEP = "falling asleep"


class RunOwner(Protocol):
    """What the runs need of their session (``HttpSession`` is one)."""

    actor: SessionActor
    routing: Routing
    kind: SessionKind
    manager: SessionHost[Any]
    closing: bool
    id: str | None

    async def end(self) -> None:
        """The session is over: connections end, the core closes, the store forgets it."""


class SessionRuns:
    """One session's actor runs: waking it, letting it rest, and the channels of a run."""

    __slots__ = ("_session", "_settled", "inbox", "sink", "state")

    def __init__(self, session: RunOwner) -> None:
        self._session = session
        #: where the actor is
        self.state = RunState.ASLEEP
        #: the running actor's inbox (None asleep): the one way a message reaches it
        self.inbox: trio.MemorySendChannel[JSONValue | ProtocolError] | None = None
        #: the actor's Outbox while it runs
        self.sink: Outbox | None = None
        # Made when a message must wait for the session to finish falling asleep.
        self._settled: trio.Event | None = None

    @property
    def awake(self) -> bool:
        """Whether the actor and router are running (or finishing a run)."""
        return self.state is not RunState.ASLEEP

    def wake(self) -> None:
        """Start a run: the actor, in a task the manager's nursery owns."""
        inbox_send, inbox_receive = trio.open_memory_channel[JSONValue | ProtocolError](
            _INBOX_SIZE
        )
        session = self._session
        self.inbox = inbox_send
        self.sink = session.routing.outbox()
        self.state = RunState.AWAKE
        session.manager.wake(session, functools.partial(self._run, inbox_receive, self.sink))

    async def _run(
        self, inbox: trio.MemoryReceiveChannel[JSONValue | ProtocolError], outbox: Outbox
    ) -> None:
        session = self._session
        actor = session.actor
        rested = False
        try:
            await actor.run(inbox, outbox=outbox, rest=self._rests)
            rested = actor.core.phase is not Phase.CLOSED
        except Exception:
            # A failing session ends alone, never the manager's nursery (invariant 3).
            _log.exception("session %s failed", session.id)
        finally:
            self.inbox = None
            self.sink = None
            if rested and not session.closing:
                self.state = RunState.ASLEEP
                self.settle()
            else:
                # Its own store work is shielded: a cancelled run still ends it whole.
                await session.end()

    def _rests(self) -> bool:
        # The actor asks when it finds nothing to do, and when its inbox closed: a rest,
        # unless the session is closing. An operating session that answered only what
        # the core answers alone (ping, notifications) rests at once; one that served a
        # request stays awake until the sleep timer finds it quiet.
        if self._session.closing:
            return False
        if self.state is RunState.FALLING_ASLEEP:
            return True
        if self.state is RunState.AWAKE and self._quiet():
            self.sleep()
            return True
        return False

    def _quiet(self) -> bool:
        # Nothing left to route. (A GET stream needs no router while nothing is sent: a
        # change for it wakes the session.)
        session = self._session
        sink = self.sink
        return (
            session.kind is SessionKind.STREAMABLE
            # Between initialize and notifications/initialized the client's next message
            # is on its way: the session waits for it awake (or for the sleep timer).
            and session.actor.core.phase is Phase.OPERATING
            and not session.routing.by_request
            and sink is not None
            and sink.idle
        )

    def may_sleep(self) -> bool:
        """Return whether the session is awake and nothing is left for its tasks to do."""
        session = self._session
        inbox, sink = self.inbox, self.sink
        routing = session.routing
        if (
            self.state is not RunState.AWAKE
            or session.closing
            # Connections but the GET stream's (which a change wakes the session for).
            or routing.connections > (routing.standalone.conn is not None)
            or routing.by_request
            or inbox is None
            or sink is None
            or not sink.idle
            or not session.actor.resting()
        ):
            return False
        # The inbox empty and the actor parked on it: nothing was handed to the actor
        # that it has not dealt with yet.
        inbound = inbox.statistics()
        return inbound.current_buffer_used == 0 and inbound.tasks_waiting_receive == 1

    def sleep(self) -> None:
        """Let an awake session fall asleep; the caller checked ``may_sleep()``."""
        assert self.inbox is not None
        self.state = RunState.FALLING_ASLEEP
        self.inbox.close()

    def settle(self) -> None:
        """The run is over (asleep or ended): whoever waits for that goes on."""
        if self._settled is not None:
            self._settled.set()
            self._settled = None

    async def wait_settled(self) -> None:
        """Wait until a run that is falling asleep has ended."""
        if self._settled is None:
            self._settled = trio.Event()
        await self._settled.wait()

    async def ensure_awake(self) -> bool:
        """Make sure the actor runs; False if the session is closing."""
        while not self._session.closing:
            if self.state is RunState.AWAKE:
                return True
            if self.state is RunState.ASLEEP:
                self.wake()
                return True
            await self.wait_settled()
        return False
