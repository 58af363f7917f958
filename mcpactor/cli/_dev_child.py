"""What the fronts of ``mcpactor dev`` know of the served child: one generation per start.

Each start of ``mcpactor serve`` is a ``Generation``. The supervisor begins a new one
*before* it stops the old child, so a request arriving during a restart waits for the
new child instead of reaching one that is shutting down. A generation is *settled* once
it serves, once it failed (its ``failure`` is the report the child would have printed),
or once a newer one replaced it; the fronts wait with ``Children.settled`` and then
forward to it, or answer with its failure.

The child says how its start went through a pipe (``serve --worker-status FD``, as the
workers of ``serve --workers`` do): ``{"ready": true}`` once it serves over HTTP, or its
report (``{"status", "lines", "traceback"}``) when it could not start. Both are read
here, bounded; nothing of the served code is imported into this process. What a child
is started with (its command line, that pipe, over HTTP its socket) is its ``Handover``.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final, NamedTuple

import attrs
import trio

from .._exceptions import INTERNAL_ERROR
from ..protocol import (
    MAX_RESOURCE_SUBSCRIPTIONS,
    Batch,
    Body,
    ErrorResponse,
    JSONObject,
    Notification,
    Request,
    RequestId,
)

if TYPE_CHECKING:
    import socket

    from ..client import Url

__all__ = [
    "CLOSING",
    "START_WAIT",
    "STOPPED",
    "Children",
    "Failure",
    "Generation",
    "Handover",
    "Opening",
    "handover",
    "read_status",
]

#: seconds a request waits for a server that is starting
START_WAIT: Final = 60.0
#: the most the status pipe is read for (a report of a few lines, or a traceback)
_MAX_STATUS: Final = 256 * 1024
#: a report's lines kept, and the characters kept of each
_MAX_LINES: Final = 20
_MAX_LINE: Final = 2000


@attrs.frozen
class Failure:
    """Why no server answers: the report ``mcpactor serve`` would have printed."""

    #: the short report, one message a line (a message may run over several lines)
    lines: tuple[str, ...]
    #: the child's traceback (with ``--debug``), or None
    traceback: str | None = None

    @property
    def summary(self) -> str:
        """The report's first line: the file and line of a syntax error, the exception."""
        return self.lines[0].partition("\n")[0] if self.lines else "the server is not running"

    def error(self, request_id: RequestId | None) -> ErrorResponse:
        """The JSON-RPC error a request gets while the server is down."""
        return ErrorResponse(
            request_id,
            INTERNAL_ERROR,
            f"the server is not running: {self.summary}",
            {"report": list(self.lines)},
        )


#: what a request gets when its server stopped before answering it
STOPPED: Final = Failure(
    (
        "the server stopped before it answered (it is restarting, or it exited: "
        "mcpactor dev's output says which)",
    )
)
#: what a request gets once ``mcpactor dev`` itself is stopping
CLOSING: Final = Failure(("mcpactor dev is stopping",))


@attrs.define
class Opening:
    """What a session told its server that a new server must be told again.

    Its ``initialize`` (kept by the front, as it travels), whether
    ``notifications/initialized`` followed, and what it set since: the log level and the
    resources it subscribed to.
    """

    initialized: bool = False
    #: the params of the last ``logging/setLevel``
    log_level: JSONObject | None = None
    #: the URIs subscribed to, in order (at most the server's own limit)
    subscriptions: dict[str, None] = attrs.field(factory=dict)

    def note(self, body: Body) -> None:
        """Take note of what the client sent (a message or a batch)."""
        for item in body.items if type(body) is Batch else (body,):
            if type(item) is Notification and item.method == "notifications/initialized":
                self.initialized = True
            if type(item) is not Request or item.params is None:
                continue
            if item.method == "logging/setLevel":
                self.log_level = item.params
                continue
            uri = item.params.get("uri")
            if type(uri) is not str:
                continue
            if item.method == "resources/subscribe":
                if len(self.subscriptions) < MAX_RESOURCE_SUBSCRIPTIONS:
                    self.subscriptions[uri] = None
            elif item.method == "resources/unsubscribe":
                self.subscriptions.pop(uri, None)

    def after_initialize(self, prefix: str) -> list[Request | Notification]:
        """What follows ``initialize`` on a new server; requests take ids ``prefix/N``."""
        if not self.initialized:
            return []
        messages: list[Request | Notification] = [Notification("notifications/initialized")]
        if self.log_level is not None:
            messages.append(Request(f"{prefix}/level", "logging/setLevel", self.log_level))
        for number, uri in enumerate(self.subscriptions):
            messages.append(Request(f"{prefix}/{number}", "resources/subscribe", {"uri": uri}))
        return messages


@attrs.define(eq=False)
class Generation:
    """One start of the served child."""

    number: int
    #: set once it serves, failed, or was replaced
    settled: trio.Event = attrs.field(factory=trio.Event)
    #: set once a newer generation replaced it
    superseded: trio.Event = attrs.field(factory=trio.Event)
    #: set once its child has exited (and ``failure`` says why, if it failed)
    ended: trio.Event = attrs.field(factory=trio.Event)
    #: where the child serves HTTP (its own listening socket), None over stdio
    url: Url | None = None
    #: the child's process, once started
    process: trio.Process | None = None
    #: it said it serves
    ready: bool = False
    #: why it does not serve (its report), once it failed
    failure: Failure | None = None
    #: what the child said when it could not start, if it said anything yet
    report: Failure | None = None
    #: the supervisor asked it to stop (an exit then is no failure)
    stopping: bool = False
    #: a front reads the child's stdout (and closes it once read to its end)
    claimed: bool = False
    #: when it was begun (trio's clock)
    begun: float = 0.0

    def serve(self) -> None:
        """Record that the child serves."""
        self.ready = True
        self.settled.set()

    def fail(self, failure: Failure) -> None:
        """Record that the child cannot serve, and why."""
        self.failure = failure
        self.settled.set()


class Children:
    """The current generation of the served child, and waiting for it to settle."""

    def __init__(self) -> None:
        # Before the first start is begun, a request waits for it too.
        self.current = Generation(0)
        self.current.ended.set()
        self.closed = False

    def begin(self) -> Generation:
        """Begin the next generation: from now on requests wait for it."""
        previous = self.current
        self.current = Generation(previous.number + 1, begun=trio.current_time())
        previous.superseded.set()
        previous.settled.set()
        return self.current

    def close(self) -> None:
        """No generation follows: everyone waiting is answered ``CLOSING``."""
        if not self.closed:
            self.closed = True
            last = self.begin()
            last.fail(CLOSING)
            last.ended.set()

    async def settled(self) -> Generation:
        """Wait for the current generation to serve or fail; return it."""
        while True:
            generation = self.current
            await generation.settled.wait()
            if generation is self.current:
                return generation


class Handover(NamedTuple):
    """What a child is started with."""

    #: its command line
    command: list[str]
    #: the descriptors it inherits besides ``passed``
    pass_fds: list[int]
    #: the supervisor's copies of what only the child keeps, closed once it started
    passed: list[int]
    #: the read end of its status pipe (None: it says nothing)
    status: int | None
    #: the end of its lifeline the supervisor holds while it runs
    held: int | None
    #: the loopback socket it serves, closed by the supervisor once it started
    internal: socket.socket | None


def handover(
    argv: Sequence[str],
    listener: socket.socket | None,
    generation: Generation,
    *,
    scheme: str,
    path: str,
) -> Handover:
    """What the child of ``mcpactor`` ``argv`` is started with; sets ``generation.url``.

    Its status pipe and, serving HTTP (``listener``), a loopback socket of its own, which
    the supervisor forwards to, and its lifeline.
    """
    command = [sys.executable, "-m", "mcpactor", *argv]
    pass_fds: list[int] = []
    passed: list[int] = []  # the supervisor's copies of what only the child keeps
    held = status = None
    internal = None
    if sys.platform != "win32":
        status, told = os.pipe()
        passed.append(told)
        command += ["--worker-status", str(told)]
    if listener is not None:
        from ..client import Url
        from ..transports.http import LISTEN_BACKLOG
        from ._workers import bind_sockets

        host, port = listener.getsockname()[:2]
        shown = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        # The child is told where clients reach it (its Host and Origin checks),
        # and serves a socket of its own on loopback, which the supervisor forwards to.
        command += ["--http", shown]
        if sys.platform != "win32":
            (internal,) = bind_sockets("127.0.0.1", 0, 1, backlog=LISTEN_BACKLOG)[:1]
            lifeline, held = os.pipe()
            pass_fds.append(internal.fileno())
            passed.append(lifeline)
            command += [
                "--worker-socket",
                str(internal.fileno()),
                "--worker-lifeline",
                str(lifeline),
            ]
            generation.url = Url(scheme, "127.0.0.1", internal.getsockname()[1], path)
        else:  # pragma: no cover - the child binds a port picked here
            import socket as socket_module

            with socket_module.socket() as probe:
                probe.bind(("127.0.0.1", 0))
                internal_port = probe.getsockname()[1]
            command[command.index("--http") + 1] = f"127.0.0.1:{internal_port}"
            generation.url = Url(scheme, "127.0.0.1", internal_port, path)
    return Handover(command, pass_fds, passed, status, held, internal)


async def read_status(fd: int, generation: Generation) -> None:
    """Read the child's status pipe ``fd`` (closing it) until the child closes its end."""
    said = bytearray()
    async with trio.lowlevel.FdStream(fd) as stream:
        while chunk := await stream.receive_some(4096):
            if len(said) + len(chunk) > _MAX_STATUS:
                return  # not what a child of ours writes: stop listening
            said += chunk
            while b"\n" in said:
                line, _, rest = bytes(said).partition(b"\n")
                said[:] = rest
                _heard(line, generation)


def _heard(line: bytes, generation: Generation) -> None:
    try:
        message: Any = json.loads(line)
    except ValueError:
        return
    if type(message) is not dict:
        return
    if message.get("ready") is True:
        if not generation.settled.is_set():
            generation.serve()
        return
    lines = message.get("lines")
    if type(lines) is list and lines and all(type(line) is str for line in lines):
        traceback = message.get("traceback")
        generation.report = Failure(
            tuple(line[:_MAX_LINE] for line in lines[:_MAX_LINES]),
            traceback[:_MAX_STATUS] if type(traceback) is str else None,
        )
