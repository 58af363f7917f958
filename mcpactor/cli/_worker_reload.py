"""Replacing the workers of ``mcpactor serve --workers N`` one at a time, on ``SIGHUP``.

For each worker in turn the supervisor starts a new one on the same listening socket,
waits until it says it serves, then asks the old one to stop (``RETIRE_SIGNAL``: it
drains as on SIGTERM, but closes its listener at once, without the drain delay, and
finishes its in-flight requests within ``--grace``) and waits for it to exit before the
next. So at most N + 1 workers run, and each socket always has a process accepting on
it. The drain delay is for a load balancer to see a replica go; here the port stays
served, and an old worker answering ``/readyz`` "draining" for the delay would only
make probes of a healthy port fail now and then.

No connection is refused or dropped meanwhile. The supervisor holds every listening
socket open from start to end, and a new worker accepts on its predecessor's socket: the
socket (its kernel queue) outlives both processes. With ``SO_REUSEPORT`` this matters:
the kernel drops the queued connections of a reuse-port socket when it closes, and a
new socket bound beside it would not take them over; here no socket closes.

A worker is ready when it tells the supervisor so over its status pipe, once its
listener accepts. Asking ``/readyz`` would not do: over one port the kernel spreads
connections between the workers, so a probe reaches any of them, not the new one.

A new worker is a new process: it reads the config file and imports the served code
anew. One that cannot start (a broken config, a module that fails to import) or does
not serve within ``READY_WITHIN`` seconds stops the reload; the workers not yet replaced
go on serving, and the error is said. A SIGHUP during a reload is queued (one at most),
never run beside it.
"""

from __future__ import annotations

import logging
from collections.abc import MutableSequence
from typing import Final, Generic, Protocol, TypeVar

import trio

from ._report import say

__all__ = ["READY_WITHIN", "Reloads"]

_log = logging.getLogger("mcpactor.workers")

#: seconds a new worker has to say it serves before the reload gives up on it
READY_WITHIN: Final = 120.0


class _Failure(Protocol):
    # Why a worker could not start (``WorkerFailure``).
    @property
    def lines(self) -> tuple[str, ...]: ...
    @property
    def traceback(self) -> str | None: ...


class _Worker(Protocol):
    # One worker of the supervisor, as a reload sees it (``_workers._Worker``).
    on_trial: bool

    @property
    def number(self) -> int: ...
    @property
    def process(self) -> trio.Process | None: ...
    @property
    def served(self) -> bool: ...
    @property
    def rejection(self) -> _Failure | None: ...
    @property
    def settled(self) -> trio.Event: ...
    @property
    def ended(self) -> trio.Event: ...


_W = TypeVar("_W", bound=_Worker)


class _Supervisor(Protocol[_W]):
    # What a reload asks of the supervisor (``_workers._Supervisor``).
    @property
    def workers(self) -> MutableSequence[_W]: ...
    @property
    def serving(self) -> trio.Event: ...
    @property
    def stopping(self) -> trio.Event: ...
    def successor(self, worker: _W, /) -> _W: ...
    def retire(self, worker: _W, /) -> None: ...


class Reloads(Generic[_W]):
    """The reloads of a supervisor's workers: one at a time, a SIGHUP during one queued."""

    def __init__(self, supervisor: _Supervisor[_W]) -> None:
        self._supervisor = supervisor
        self._wanted = trio.Event()
        self._busy = False

    def ask(self) -> None:
        """Ask for a reload (SIGHUP): now, or once the reload under way is done."""
        if self._wanted.is_set():
            say("SIGHUP: a reload is queued already", level=logging.WARNING)
        elif self._busy:
            say(
                "SIGHUP: a reload is under way; another follows once it is done",
                level=logging.WARNING,
            )
        elif not self._supervisor.serving.is_set():
            say("SIGHUP: the workers are reloaded once they all serve", level=logging.WARNING)
        self._wanted.set()

    async def run(self) -> None:
        """Reload each time one is asked for, until cancelled."""
        supervisor = self._supervisor
        while True:
            await self._wanted.wait()
            # Replacing a first worker that has not served yet would hide why it failed.
            await supervisor.serving.wait()
            self._wanted = trio.Event()
            self._busy = True
            try:
                await self._reload()
            finally:
                self._busy = False

    async def _reload(self) -> None:
        supervisor = self._supervisor
        count = len(supervisor.workers)
        say(f"SIGHUP: replacing the {count} workers one at a time")
        for number in range(count):
            if supervisor.stopping.is_set():
                return
            old = supervisor.workers[number]
            new = supervisor.successor(old)
            with trio.move_on_after(READY_WITHIN):
                await new.settled.wait()
            if supervisor.stopping.is_set():
                return
            if not new.served:
                supervisor.retire(new)
                self._abandon(new, replaced=number, count=count)
                return
            new.on_trial = False
            supervisor.workers[number] = new
            _log.info(
                "worker %d: pid %s serves; stopping pid %s",
                number,
                _pid(new),
                _pid(old),
            )
            supervisor.retire(old)
            await old.ended.wait()
        if supervisor.stopping.is_set():
            return
        say(f"reloaded: {count} workers replaced")

    def _abandon(self, new: _W, *, replaced: int, count: int) -> None:
        rejection = new.rejection
        if rejection is None:
            lines: tuple[str, ...] = (
                f"it did not say it serves within {READY_WITHIN:g} s; it was stopped",
            )
            traceback = None
        else:
            lines, traceback = rejection.lines, rejection.traceback
        kept = (
            "the old workers go on serving"
            if replaced == 0
            else (f"{replaced} of {count} workers were replaced; the others go on as they were")
        )
        say(
            "\n".join(
                (
                    f"reload stopped: the new worker {new.number} could not start, so {kept}:",
                    *(f"  {line}" for line in lines),
                )
            ),
            level=logging.ERROR,
            exc_text=traceback,
        )


def _pid(worker: _Worker) -> int | None:
    process = worker.process
    return None if process is None else process.pid
