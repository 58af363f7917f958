# One server mounted in another: its name, prefix, state and limit on concurrent calls,
# and its supervision.
#
# Supervision is the one place of the server layer that needs trio: the plugin subtrees
# of DESIGN's actor tree. Each child's lifespans are entered in a supervisor task of its
# own (``supervise``). A child whose lifespan (or a background task its lifespan
# started) raises is logged under its name and marked failed: its requests get an error
# naming it, the others keep serving.

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator, Mapping
from typing import Literal, final

import attrs
import trio

from .._exceptions import INTERNAL_ERROR, RequestError
from ..protocol import JSONObject, describe
from ._context import Context
from ._dispatch import Composable
from ._transform import ToolTransform

__all__ = [
    "Mount",
    "MountState",
    "MountStatistics",
    "RootsHook",
    "single_errors_bare",
    "supervise",
]

_log = logging.getLogger("mcpactor")


#: where a mounted server is in its life
MountState = Literal["idle", "starting", "running", "failed", "stopped"]


@attrs.frozen
class MountStatistics:
    """A snapshot of one mounted server, for tests, logs and debug output."""

    name: str
    prefix: str | None
    state: MountState
    #: what made it fail, when ``state`` is ``"failed"``
    error: str | None
    #: requests being served by it right now
    calls_in_flight: int
    #: requests waiting for room under ``max_concurrent``
    calls_waiting: int
    #: requests routed to it since it was mounted
    calls_total: int
    max_concurrent: int | None


@final
class Mount:
    """A server mounted in another: its name, prefix, state and limit on concurrent calls."""

    def __init__(
        self,
        server: Composable,
        *,
        name: str,
        prefix: str | None,
        max_concurrent: int | None,
        tools: Mapping[str, ToolTransform] | None = None,
    ) -> None:
        #: the mounted server
        self.server = server
        #: the name it is known by in logs, errors and statistics
        self.name = name
        #: what its tool and prompt names are prefixed with (joined by ``_``), or None
        self.prefix = prefix
        #: how its tools are exposed, by their own names (``ToolTransform``)
        self.tools: Mapping[str, ToolTransform] = dict(tools or {})
        #: how many of its requests may run at once (None: no limit)
        self.max_concurrent = max_concurrent
        self._limiter = trio.CapacityLimiter(max_concurrent) if max_concurrent else None
        self._state: MountState = "idle"
        self._error: BaseException | None = None
        self._in_flight = 0
        self._calls = 0
        self._down = trio.Event()
        self._down.set()

    def __repr__(self) -> str:
        return f"<Mount {describe(self.name)} of {self.server!r} ({self._state})>"

    @property
    def state(self) -> MountState:
        """Where it is in its life: idle, starting, running, failed or stopped."""
        return self._state

    @property
    def failed(self) -> bool:
        """Whether its lifespan crashed; its requests are refused until it is served again."""
        return self._state == "failed"

    @property
    def error(self) -> BaseException | None:
        """What made it fail, or None."""
        return self._error

    async def wait_down(self) -> None:
        """Wait until its lifespans have ended: it stopped, or it failed."""
        await self._down.wait()

    def expose(self, name: str) -> str:
        """The name a tool or prompt of this server has in the parent."""
        return f"{self.prefix}_{name}" if self.prefix else name

    def statistics(self) -> MountStatistics:
        """Return its state and how busy it is right now."""
        limiter = self._limiter
        return MountStatistics(
            name=self.name,
            prefix=self.prefix,
            state=self._state,
            error=_describe(self._error) if self._error is not None else None,
            calls_in_flight=self._in_flight,
            calls_waiting=limiter.statistics().tasks_waiting if limiter is not None else 0,
            calls_total=self._calls,
            max_concurrent=self.max_concurrent,
        )

    def _context(self, ctx: Context) -> Context:
        """The Context its handlers see for a request the parent received."""
        context = Context(
            peer=ctx._peer,
            request_id=ctx.request_id,
            negotiated=ctx.negotiated,
            meta=ctx.meta,
            server=self.server,
        )
        # One round of a multi round-trip request, and one progress, whichever server's
        # handler asks or reports.
        context._rounds = ctx._rounds
        context._origin = ctx._origin or ctx
        return context

    async def _call(self, method: str, params: JSONObject, ctx: Context) -> JSONObject:
        """Serve one request with the mounted server, within its limit.

        Raises:
            RequestError: it has failed, or its handler answered with an error.
        """
        self._check_alive()
        self._calls += 1
        limiter = self._limiter
        # A token per call, not the task: a task may route to the same child twice.
        token = object()
        if limiter is not None:
            await limiter.acquire_on_behalf_of(token)
        try:
            self._check_alive()
            self._in_flight += 1
            try:
                return await self.server.handle_request(method, params, self._context(ctx))
            finally:
                self._in_flight -= 1
        finally:
            if limiter is not None:
                limiter.release_on_behalf_of(token)

    def _check_alive(self) -> None:
        if self._state == "failed":
            assert self._error is not None
            raise RequestError(
                INTERNAL_ERROR,
                f"server {describe(self.name)} has failed ({_describe(self._error)}); "
                "its tools, resources and prompts are unavailable",
                {"server": self.name, "error": _describe(self._error)},
            )

    def _fail(self, exc: BaseException, when: str) -> None:
        self._state = "failed"
        self._error = exc
        _log.error(
            "server %r failed %s and is marked failed; the others keep serving: %s",
            self.name,
            when,
            _describe(exc),
            exc_info=exc,
        )


async def supervise(
    mount: Mount,
    stop: trio.Event,
    *,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Run ``mount``'s lifespans until ``stop``; a failure marks it failed, logged."""
    mount._state = "starting"
    mount._error = None
    mount._down = trio.Event()
    up = False
    try:
        async with mount.server.running():
            mount._state = "running"
            up = True
            task_status.started()
            await stop.wait()
    except Exception as exc:
        # The supervisor's one job: one child's failure stays that child's.
        when = "while stopping" if stop.is_set() else "while serving"
        mount._fail(exc, when if up else "to start")
    finally:
        if not mount.failed:
            mount._state = "stopped"
        mount._down.set()
    if not up:
        task_status.started()


class RootsHook:
    """Runs a child's roots-changed hooks when the parent's client changes its roots."""

    def __init__(self, mount: Mount) -> None:
        self._mount = mount

    async def __call__(self, ctx: Context) -> None:
        mount = self._mount
        if mount.failed:
            return
        child_ctx = mount._context(ctx)
        for hook in list(mount.server.roots_changed_hooks):
            try:
                await hook(child_ctx)
            except Exception:
                _log.exception("server %r: roots-changed hook %r failed", mount.name, hook)


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for sub in exc.exceptions for leaf in _leaves(sub)]
    return [exc]


def _describe(exc: BaseException) -> str:
    """``Type: message`` of an exception, or of each exception a group holds."""
    return "; ".join(f"{type(leaf).__name__}: {leaf}" for leaf in _leaves(exc))


@contextlib.contextmanager
def single_errors_bare() -> Iterator[None]:
    """Let a lone exception of the body out of the supervisors' nursery as it is."""
    # A nursery wraps even a lone exception of the body in a group; whoever is inside
    # ``async with server.running()`` expects to see its own exception come back, be it
    # a group itself. (The supervisors raise nothing, so a lone one is the body's.)
    try:
        yield
    except BaseExceptionGroup as group:
        if len(group.exceptions) != 1:
            raise
        single = group.exceptions[0]
        context = single.__context__
        try:
            raise single
        finally:
            single.__context__ = context
            del single, context
