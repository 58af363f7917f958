"""Several processes serving one HTTP port: what ``mcpactor serve --workers N`` runs.

A Python process serves on one core. A stateless server keeps nothing between requests,
so any process can serve any request, and N processes on one port use N cores. The
supervisor binds the port itself, then runs N workers, each the same ``mcpactor serve``
command with one listening socket handed down (``--worker-socket FD``):

- On Linux each worker gets a socket of its own, all bound to the port with
  ``SO_REUSEPORT``, and the kernel spreads new connections evenly over them. Elsewhere
  every worker accepts on one shared socket.
- The sockets stay open in the supervisor, so a worker that is restarted finds the
  connections that arrived meanwhile waiting in its socket's backlog.
- A worker imports what it serves as the supervisor did: it starts with the supervisor's
  ``sys.path`` (``worker_command``), so a target that the supervisor could load, and
  the modules beside it, load in the worker too.
- Each worker tells the supervisor, through a pipe of its own (``--worker-status FD``),
  that it serves, or why it could not start. The supervisor says where it serves once
  every worker serves. A worker that exits before it ever served stops the supervisor,
  which says the worker's error and exits with its status: a worker that cannot load its
  target would fail again on every start, while the port accepted connections nobody
  answers.
- Each worker is a trio task of the supervisor: a worker that exits after it served is
  started again, after a delay that doubles while it keeps failing soon after starting;
  after ``MAX_QUICK_EXITS`` such exits in a row the supervisor gives up and stops.
- ``SIGHUP`` to the supervisor replaces the workers one at a time, each new one serving
  on its predecessor's socket before the old one is asked to stop (``_worker_reload``):
  new processes read the config file and import the served code anew.
- Workers run in sessions of their own, so a terminal's Ctrl-C reaches the supervisor
  alone: it sends each worker one SIGTERM per signal it gets (the first stops them
  gracefully, a second at once).
- Each worker holds the read end of a pipe whose other end only the supervisor holds
  (``--worker-lifeline FD``): however the supervisor ends, even killed, the pipe closes
  and the worker stops gracefully.

Sessions live in the process that opened them unless a store shared by every worker
(``--store``) holds their records: then each worker is a replica (``replica_id``), any
worker serves any session, and ``--workers`` no longer needs ``--stateless``.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import secrets
import signal
import socket
import sys
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any, Final

import attrs
import trio

from ._worker_reload import Reloads

__all__ = [
    "MAX_QUICK_EXITS",
    "PATH_ENV",
    "RETIRE_SIGNAL",
    "USAGE_EXIT",
    "WorkerFailure",
    "bind_sockets",
    "replica_id",
    "supervise",
    "tell_supervisor",
    "watch_lifeline",
    "watch_retirement",
    "worker_command",
    "workers_refusal",
]

_log = logging.getLogger("mcpactor.workers")

#: the exit code of ``mcpactor serve`` when the command line or the configuration is wrong
USAGE_EXIT: Final = 2
#: exits in a row, each soon after its start, after which a worker is not started again
#: and the supervisor stops
MAX_QUICK_EXITS: Final = 8
#: the environment variable that hands a worker the supervisor's ``sys.path`` (JSON)
PATH_ENV: Final = "MCPACTOR_WORKER_PATH"
#: what the supervisor sends a worker a reload has replaced: stop, without a drain delay
RETIRE_SIGNAL: Final[int] = getattr(signal, "SIGUSR1", signal.SIGTERM)
# Seconds before a worker that exited is started again; doubled for each exit that
# followed its start within _STABLE_AFTER seconds, up to _MAX_DELAY.
_FIRST_DELAY: Final = 0.5
_MAX_DELAY: Final = 30.0
_STABLE_AFTER: Final = 30.0
# The most a worker's status says (bytes): a line saying it serves, or its error.
_MAX_STATUS: Final = 64 * 1024
_MAX_LINES: Final = 20
_MAX_LINE: Final = 4096

# Run as ``python -c``: the supervisor's sys.path first, then the command line, so that
# the worker imports mcpactor, and what it serves, from where the supervisor did.
_BOOTSTRAP: Final = (
    "import json, os, sys\n"
    f"sys.path[:] = json.loads(os.environ.pop({PATH_ENV!r}))\n"
    "from mcpactor.cli import main\n"
    "sys.exit(main())\n"
)


def workers_refusal(workers: int, *, stateless: bool, store: str | None) -> str | None:
    """Why ``workers`` processes cannot serve as configured; None if they can."""
    if workers > 1 and not stateless and store is None:
        return (
            "--workers needs --stateless or --store: without a store the workers share, a "
            "session lives in the process that opened it"
        )
    return None


def replica_id() -> str:
    """A name for this process among the replicas sharing a store: host, pid, a nonce.

    The nonce keeps a restarted worker, which may get its predecessor's pid, apart from
    it in messages still on their way.
    """
    host = socket.gethostname()[:64] or "host"
    return f"{host}:{os.getpid()}:{secrets.token_hex(3)}"


def bind_sockets(host: str, port: int, count: int, *, backlog: int) -> list[socket.socket]:
    """Listening sockets on ``host:port`` for ``count`` workers.

    One per worker where the kernel balances connections between sockets bound to one
    port (``SO_REUSEPORT`` on Linux), otherwise one for all of them. Port 0 picks a free
    port, the same for every socket.

    Raises:
        OSError: the address cannot be bound.
    """
    family, kind, proto, _, address = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )[0]
    balanced = sys.platform.startswith("linux") and hasattr(socket, "SO_REUSEPORT")
    sockets: list[socket.socket] = []
    try:
        for _ in range(count if balanced else 1):
            sock = socket.socket(family, kind, proto)
            sockets.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if balanced:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            sock.bind(address)
            # With port 0, the first socket picked the port: the others join it.
            address = sock.getsockname()
            sock.listen(backlog)
    except BaseException:
        for sock in sockets:
            sock.close()
        raise
    return sockets


def worker_command(argv: Sequence[str]) -> tuple[list[str], dict[str, str]]:
    """The command and environment of a worker of ``mcpactor`` ``argv``.

    This interpreter, with this process's ``sys.path`` (the folder of a script it served
    included), so that the worker imports what the supervisor imported.
    """
    environment = dict(os.environ)
    environment[PATH_ENV] = json.dumps(sys.path)
    return [sys.executable, "-c", _BOOTSTRAP, *argv], environment


async def watch_lifeline(fd: int, stop: trio.Event) -> None:
    """Set ``stop`` once the supervisor's end of the lifeline pipe ``fd`` closes."""
    try:
        # The supervisor never writes: readable means the pipe was closed.
        await trio.lowlevel.wait_readable(fd)
        stop.set()
    finally:
        os.close(fd)


async def watch_retirement(stop: trio.Event) -> None:
    """Set ``stop`` when the supervisor retires this worker (``RETIRE_SIGNAL``).

    A retired worker's socket goes on being served by its successor: it stops at once,
    without the drain delay, which is there for a load balancer to notice a replica
    going away (SIGTERM, to the whole supervisor, still waits it).
    """
    with trio.open_signal_receiver(RETIRE_SIGNAL) as signals:
        async for _ in signals:
            stop.set()


def tell_supervisor(fd: int, message: Mapping[str, Any]) -> None:
    """Write the worker's status ``message`` on the pipe ``fd``, then close it.

    ``{"ready": true}`` once it serves; ``{"status": N, "lines": [...], "traceback":
    text or null}`` when it could not start (what ``mcpactor`` would have said).
    """
    data = json.dumps(message).encode() + b"\n"
    try:
        while data:
            data = data[os.write(fd, data) :]
    except OSError as exc:
        # The supervisor is gone: the lifeline stops this worker anyway.
        _log.debug("could not tell the supervisor: %s", exc)
    finally:
        os.close(fd)


@attrs.frozen
class WorkerFailure:
    """Why the supervisor stopped: a worker's error, as ``mcpactor`` reports an error."""

    #: the worker's number
    worker: int
    #: the exit status the supervisor exits with
    status: int
    #: the short report, one message a line
    lines: tuple[str, ...]
    #: the worker's traceback (with ``--debug``), or None
    traceback: str | None = None


@attrs.define(eq=False)
class _Worker:
    number: int
    listener: socket.socket
    process: trio.Process | None = None
    exit_code: int | None = None
    #: it said it serves, at least once
    served: bool = False
    #: started by a reload: if it cannot start, the reload stops, not the supervisor
    on_trial: bool = False
    #: replaced by a reload: it stops, and is not started again
    retired: bool = False
    #: why it could not start (``on_trial`` only)
    rejection: WorkerFailure | None = None
    #: set once it serves, or once it stopped without ever serving
    settled: trio.Event = attrs.Factory(trio.Event)
    #: set once it stopped for good
    ended: trio.Event = attrs.Factory(trio.Event)
    #: the wait before it is started again, cancelled when it is retired
    pause: trio.CancelScope | None = None


@attrs.define
class _Run:
    # What one run of a worker said and did.
    ready: bool = False
    report: dict[str, Any] | None = None
    code: int = 0


class _Supervisor:
    def __init__(
        self,
        command: Sequence[str],
        sockets: Sequence[socket.socket],
        count: int,
        *,
        env: Mapping[str, str] | None,
        on_ready: Callable[[], None] | None,
        admin_socket: socket.socket | None = None,
    ):
        self.command = list(command)
        #: the first worker's admin listener (``--worker-admin-socket``), or None
        self.admin_socket = admin_socket
        self.env = env
        self.on_ready = on_ready
        #: the worker serving each slot; a reload puts a new one in its predecessor's place
        self.workers = [_Worker(n, sockets[n % len(sockets)]) for n in range(count)]
        #: every worker whose process runs or may run again (a retiring one included)
        self.live: set[_Worker] = set()
        self.waiting = count
        #: set once every first worker serves
        self.serving = trio.Event()
        self.stopping = trio.Event()
        self.failure: WorkerFailure | None = None
        self.reloads = Reloads(self)
        self._running: trio.Nursery | None = None

    async def run(self, stop: trio.Event | None) -> int:
        handled = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
        with trio.open_signal_receiver(*handled) as signals:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._forward, signals)
                if stop is not None:
                    nursery.start_soon(self._stop_on, stop)
                async with trio.open_nursery() as running:
                    self._running = running
                    for worker in self.workers:
                        self.start(worker)
                    nursery.start_soon(self.reloads.run)
                nursery.cancel_scope.cancel()
        if self.failure is not None:
            return self.failure.status
        return 0 if all(worker.exit_code == 0 for worker in self.workers) else 1

    def start(self, worker: _Worker) -> None:
        """Run ``worker`` (and run it again when it exits) until it stops for good."""
        assert self._running is not None
        self.live.add(worker)
        self._running.start_soon(self._keep_running, worker)

    def successor(self, worker: _Worker) -> _Worker:
        """Start a new worker, on trial, to take ``worker``'s place on its socket."""
        new = _Worker(worker.number, worker.listener, on_trial=True)
        self.start(new)
        return new

    def retire(self, worker: _Worker) -> None:
        """Stop ``worker`` gracefully, for good: a reload has replaced it."""
        worker.retired = True
        if worker.pause is not None:
            worker.pause.cancel()
        process = worker.process
        if process is not None and process.returncode is None:
            process.send_signal(RETIRE_SIGNAL)

    async def _forward(self, signals: AsyncIterator[int]) -> None:
        async for signum in signals:
            if signum == signal.SIGHUP:
                if not self.stopping.is_set():
                    self.reloads.ask()
                continue
            if not self.stopping.is_set():
                _log.info("%s: stopping the workers", signal.Signals(signum).name)
                self.stopping.set()
            else:
                _log.warning("second signal: the workers stop at once")
            self._signal_all()

    async def _stop_on(self, stop: trio.Event) -> None:
        await stop.wait()
        self.stopping.set()
        self._signal_all()

    def _signal_all(self) -> None:
        for worker in self.live:
            process = worker.process
            if process is not None and process.returncode is None:
                process.send_signal(signal.SIGTERM)

    def _fail(self, failure: WorkerFailure) -> None:
        # The first failure is the one said; the others' workers are being stopped.
        if self.failure is None:
            self.failure = failure
        self.stopping.set()
        self._signal_all()

    async def _keep_running(self, worker: _Worker) -> None:
        try:
            await self._keep_running_until_stopped(worker)
        finally:
            self.live.discard(worker)
            worker.settled.set()
            worker.ended.set()

    async def _keep_running_until_stopped(self, worker: _Worker) -> None:
        quick_exits = 0
        while not self.stopping.is_set() and not worker.retired:
            started = trio.current_time()
            run = await self._run_once(worker)
            worker.exit_code = run.code
            if self.stopping.is_set() or worker.retired:
                return
            ran = trio.current_time() - started
            if not run.ready and not worker.served:
                # It never served: every start would fail the same way.
                if worker.on_trial:
                    # Started by a reload: the workers it was to replace go on serving.
                    worker.rejection = _failure(worker.number, run)
                else:
                    self._fail(_failure(worker.number, run))
                return
            quick_exits = quick_exits + 1 if ran < _STABLE_AFTER or not run.ready else 0
            if not run.ready:
                for line in _failure(worker.number, run).lines:
                    _log.warning("worker %d could not start again: %s", worker.number, line)
            if quick_exits >= MAX_QUICK_EXITS:
                failure = _failure(worker.number, run)
                self._fail(
                    attrs.evolve(
                        failure,
                        status=1,
                        lines=(
                            f"worker {worker.number} exited {quick_exits} times in a row, "
                            f"each within {_STABLE_AFTER:.0f} s of its start (the last with "
                            f"code {run.code}); not starting it again",
                            *failure.lines,
                        ),
                    )
                )
                return
            delay = min(_MAX_DELAY, _FIRST_DELAY * 2 ** max(quick_exits - 1, 0))
            _log.warning(
                "worker %d exited with code %s after %.1f s; starting it again in %.1f s",
                worker.number,
                run.code,
                ran,
                delay,
            )
            with trio.move_on_after(delay) as worker.pause:
                await self.stopping.wait()
            worker.pause = None

    async def _run_once(self, worker: _Worker) -> _Run:
        run = _Run()
        lifeline, held = os.pipe()
        reading, status = os.pipe()
        listener = worker.listener.fileno()
        inherited = [listener, lifeline, status]
        command = [
            *self.command,
            "--worker-socket",
            str(listener),
            "--worker-lifeline",
            str(lifeline),
            "--worker-status",
            str(status),
            "--worker-number",
            str(worker.number),
        ]
        if worker.number == 0 and self.admin_socket is not None:
            inherited.append(self.admin_socket.fileno())
            command += ["--worker-admin-socket", str(inherited[-1])]
        try:
            try:
                process = await trio.lowlevel.open_process(
                    command,
                    pass_fds=inherited,
                    start_new_session=True,
                    env=self.env,
                )
            finally:
                os.close(lifeline)
                os.close(status)
            worker.process = process
            if self.stopping.is_set():
                process.send_signal(signal.SIGTERM)
            elif worker.retired:
                process.send_signal(RETIRE_SIGNAL)
            os.set_blocking(reading, False)
            said = bytearray()
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._listen, worker, run, reading, said)
                run.code = await process.wait()
                nursery.cancel_scope.cancel()
            # What it wrote before it exited is in the pipe still.
            _drain(reading, said)
            self._heard(worker, run, said)
            return run
        finally:
            worker.process = None
            os.close(reading)
            # The worker sees the lifeline close: if this task is cancelled, it stops.
            os.close(held)

    async def _listen(self, worker: _Worker, run: _Run, fd: int, said: bytearray) -> None:
        while True:
            await trio.lowlevel.wait_readable(fd)
            open_ = _drain(fd, said)
            self._heard(worker, run, said)
            if not open_:
                return

    def _heard(self, worker: _Worker, run: _Run, said: bytearray) -> None:
        # Each whole line the worker wrote: that it serves, or why it could not start.
        while b"\n" in said:
            line, _, rest = bytes(said).partition(b"\n")
            said[:] = rest
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if type(message) is not dict:
                continue
            if message.get("ready") is True and not run.ready:
                run.ready = True
                if not worker.served:
                    worker.served = True
                    worker.settled.set()
                    if not worker.on_trial:
                        self._first_served()
            elif "lines" in message:
                run.report = message

    def _first_served(self) -> None:
        self.waiting -= 1
        if self.waiting == 0 and not self.stopping.is_set():
            self.serving.set()
            if self.on_ready is not None:
                self.on_ready()


def _drain(fd: int, said: bytearray) -> bool:
    # Read what is there into ``said`` (bounded); False once the pipe is closed.
    while True:
        try:
            chunk = os.read(fd, 4096)
        except BlockingIOError:
            return True
        except OSError as exc:
            if exc.errno == errno.EINTR:
                continue
            return False
        if not chunk:
            return False
        if len(said) < _MAX_STATUS:
            said += chunk[: _MAX_STATUS - len(said)]


def _failure(number: int, run: _Run) -> WorkerFailure:
    # The worker's own report where it made one; else what its exit says.
    code = run.code
    status = code if code > 0 else 1
    report = run.report
    if report is not None:
        lines = report.get("lines")
        if type(lines) is list and lines and all(type(line) is str for line in lines):
            given = report.get("status")
            traceback = report.get("traceback")
            return WorkerFailure(
                worker=number,
                status=given if type(given) is int and given > 0 else status,
                lines=tuple(line[:_MAX_LINE] for line in lines[:_MAX_LINES]),
                traceback=traceback if type(traceback) is str else None,
            )
    if code < 0:
        try:
            how = f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            how = f"was killed by signal {-code}"
    else:
        how = f"exited with code {code}"
    return WorkerFailure(
        worker=number,
        status=status,
        lines=(f"worker {number} {how} before it served (its stderr says why)",),
    )


async def supervise(
    command: Sequence[str],
    sockets: Sequence[socket.socket],
    count: int,
    *,
    stop: trio.Event | None = None,
    env: Mapping[str, str] | None = None,
    on_ready: Callable[[], None] | None = None,
    on_failure: Callable[[WorkerFailure], None] | None = None,
    admin_socket: socket.socket | None = None,
) -> int:
    """Run ``count`` workers of ``command`` on ``sockets`` until a signal; return an exit code.

    Each worker runs ``command`` plus ``--worker-socket FD --worker-lifeline FD
    --worker-status FD --worker-number N``, in ``env`` (default: this process's).
    ``on_ready`` is called once every worker has said it serves. Setting ``stop`` stops
    them as a first SIGTERM does; SIGHUP replaces them one at a time (``Reloads``). A
    worker that exits before it served, or exits ``MAX_QUICK_EXITS`` times in a row soon
    after starting, stops them all: ``on_failure`` (default: log it) gets why, and the
    exit code is the worker's status. Otherwise it is 0 when every worker stopped
    cleanly, 1 if not. The first worker gets ``admin_socket`` too, for its admin page.
    """
    supervisor = _Supervisor(
        command, sockets, count, env=env, on_ready=on_ready, admin_socket=admin_socket
    )
    code = await supervisor.run(stop)
    failure = supervisor.failure
    if failure is not None:
        if on_failure is not None:
            on_failure(failure)
        else:
            for line in failure.lines:
                _log.error("worker %d: %s", failure.worker, line)
    return code
