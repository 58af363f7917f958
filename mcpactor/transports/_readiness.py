# Readiness: whether a load balancer should send this server new work (/readyz).
#
# Liveness (/healthz) says the process answers; readiness says it should be given work.
# It is false while the server starts (until its owner says it has started), while it
# drains or stops, and, when a check is given (the shared store's PING), while that
# check fails. The check's answer is kept for ``interval`` seconds and one check runs at
# a time, so a storm of probes from many load balancers costs the store one PING per
# interval, and a probe never waits longer than the check's own deadline.
#
# Draining is said here and acted on by whoever serves: ``drain()`` makes readiness false
# at once, and ``wait_draining()`` is what the server's drain task awaits (the signal
# handler and the admin page's drain action both end up in ``drain()``). Whether any
# probe ever asked is kept too: a server nothing probes has no load balancer to wait for.

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Final

import trio

from ..protocol import describe_error

__all__ = ["DEFAULT_CHECK_INTERVAL", "Readiness", "ReadinessCheck"]

_log = logging.getLogger("mcpactor.http")

#: seconds a check's answer stands before the next probe checks again
DEFAULT_CHECK_INTERVAL: Final = 2.0

#: awaited by a probe: None when what it checks is fine, else why not (said in the log)
ReadinessCheck = Callable[[], Awaitable[str | None]]


class Readiness:
    """Whether this server is ready for new work: what ``/readyz`` answers.

    A Readiness is created starting (not ready); its owner calls ``started()`` once
    the server serves, and a draining server calls ``drain()``. ``check`` (the shared
    store's reachability, for one) is asked at most once per ``interval`` seconds.
    """

    def __init__(
        self,
        *,
        started: bool = False,
        check: ReadinessCheck | None = None,
        interval: float = DEFAULT_CHECK_INTERVAL,
    ) -> None:
        if not interval >= 0:
            raise ValueError(f"interval is a number of seconds from 0, got {interval!r}")
        self._started = started
        self._draining = trio.Event()
        self._probed = False
        self._check = check
        self._interval = interval
        self._checked_at = -float("inf")
        self._problem: str | None = None
        self._lock = trio.Lock()

    @property
    def starting(self) -> bool:
        """Whether the server has not said it has started yet."""
        return not self._started

    @property
    def draining(self) -> bool:
        """Whether the server is draining (it finishes its work and takes none)."""
        return self._draining.is_set()

    @property
    def probed(self) -> bool:
        """Whether a probe has asked (``state``) since the server was made."""
        return self._probed

    def started(self) -> None:
        """Say the server serves: ready from now on, unless draining or the check fails."""
        self._started = True

    def drain(self) -> bool:
        """Say the server drains: not ready from now on; False if it already was."""
        if self._draining.is_set():
            return False
        self._draining.set()
        return True

    async def wait_draining(self) -> None:
        """Wait until the server drains (``drain`` was called)."""
        await self._draining.wait()

    async def state(self) -> str | None:
        """None when ready, else why not: ``starting``, ``draining`` or ``unavailable``.

        ``unavailable`` is what the check found wrong; the details are logged, not
        returned, since a probe is answered to anyone who asks.
        """
        self._probed = True
        if not self._started:
            return "starting"
        if self._draining.is_set():
            return "draining"
        if self._check is None:
            return None
        return None if await self._checked() is None else "unavailable"

    async def describe(self) -> tuple[str, str | None]:
        """What an operator is shown: the state and, when unavailable, why.

        The state is ``ready``, ``starting``, ``draining`` or ``unavailable``; why is
        what the check found wrong (None otherwise). Asking is not a probe's asking.
        """
        if not self._started:
            return "starting", None
        if self.draining:
            return "draining", None
        if self._check is None:
            return "ready", None
        problem = await self._checked()
        return ("ready", None) if problem is None else ("unavailable", problem)

    async def _checked(self) -> str | None:
        # The check's answer: at most one check per interval, one at a time.
        assert self._check is not None
        async with self._lock:
            # A probe that waited for another's check takes its answer.
            if trio.current_time() - self._checked_at >= self._interval:
                try:
                    problem = await self._check()
                except Exception as exc:
                    # A check that breaks says not ready, as one that fails does.
                    problem = f"the readiness check failed: {describe_error(exc)}"
                self._checked_at = trio.current_time()
                if problem != self._problem:
                    if problem is not None:
                        _log.warning("not ready: %s", problem)
                    else:
                        _log.info("ready again")
                self._problem = problem
        return self._problem
