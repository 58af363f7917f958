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
- Each worker is a trio task of the supervisor: a worker that exits on its own is started
  again, after a delay that doubles while it keeps failing soon after starting.
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

import logging
import os
import secrets
import signal
import socket
import sys
from collections.abc import AsyncIterator, Sequence
from typing import Final

import attrs
import trio

__all__ = [
    "USAGE_EXIT",
    "bind_sockets",
    "replica_id",
    "supervise",
    "watch_lifeline",
    "workers_refusal",
]

_log = logging.getLogger("mcpactor.workers")

#: the exit code of ``mcpactor serve`` when it cannot start (arguments, configuration),
#: and of a worker whose server does not reach serving (a lifespan fails): a worker that
#: exits with it soon after starting is not started again
USAGE_EXIT: Final = 2
# Seconds before a worker that exited is started again; doubled for each exit that
# followed its start within _STABLE_AFTER seconds, up to _MAX_DELAY.
_FIRST_DELAY: Final = 0.5
_MAX_DELAY: Final = 30.0
_STABLE_AFTER: Final = 30.0


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


async def watch_lifeline(fd: int, stop: trio.Event) -> None:
    """Set ``stop`` once the supervisor's end of the lifeline pipe ``fd`` closes."""
    try:
        # The supervisor never writes: readable means the pipe was closed.
        await trio.lowlevel.wait_readable(fd)
        stop.set()
    finally:
        os.close(fd)


@attrs.define
class _Worker:
    number: int
    listener: socket.socket
    process: trio.Process | None = None
    exit_code: int | None = None


class _Supervisor:
    def __init__(self, command: Sequence[str], sockets: Sequence[socket.socket], count: int):
        self.command = list(command)
        self.workers = [_Worker(n, sockets[n % len(sockets)]) for n in range(count)]
        self.stopping = trio.Event()
        self.failed: int | None = None

    async def run(self, stop: trio.Event | None) -> int:
        with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._forward, signals)
                if stop is not None:
                    nursery.start_soon(self._stop_on, stop)
                async with trio.open_nursery() as running:
                    for worker in self.workers:
                        running.start_soon(self._keep_running, worker)
                nursery.cancel_scope.cancel()
        if self.failed is not None:
            return self.failed
        return 0 if all(worker.exit_code == 0 for worker in self.workers) else 1

    async def _forward(self, signals: AsyncIterator[int]) -> None:
        async for signum in signals:
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
        for worker in self.workers:
            process = worker.process
            if process is not None and process.returncode is None:
                process.send_signal(signal.SIGTERM)

    async def _keep_running(self, worker: _Worker) -> None:
        quick_exits = 0
        while not self.stopping.is_set():
            started = trio.current_time()
            code = await self._run_once(worker)
            worker.exit_code = code
            if self.stopping.is_set():
                return
            ran = trio.current_time() - started
            if code == USAGE_EXIT and ran < _STABLE_AFTER:
                _log.error("worker %d could not start (exit code %d)", worker.number, code)
                self.failed = code
                self.stopping.set()
                self._signal_all()
                return
            quick_exits = quick_exits + 1 if ran < _STABLE_AFTER else 0
            delay = min(_MAX_DELAY, _FIRST_DELAY * 2 ** max(quick_exits - 1, 0))
            _log.warning(
                "worker %d exited with code %s after %.1f s; starting it again in %.1f s",
                worker.number,
                code,
                ran,
                delay,
            )
            with trio.move_on_after(delay):
                await self.stopping.wait()

    async def _run_once(self, worker: _Worker) -> int:
        lifeline, held = os.pipe()
        listener = worker.listener.fileno()
        command = [
            *self.command,
            "--worker-socket",
            str(listener),
            "--worker-lifeline",
            str(lifeline),
            "--worker-number",
            str(worker.number),
        ]
        try:
            try:
                process = await trio.lowlevel.open_process(
                    command, pass_fds=(listener, lifeline), start_new_session=True
                )
            finally:
                os.close(lifeline)
            worker.process = process
            if self.stopping.is_set():
                process.send_signal(signal.SIGTERM)
            return await process.wait()
        finally:
            worker.process = None
            # The worker sees the lifeline close: if this task is cancelled, it stops.
            os.close(held)


async def supervise(
    command: Sequence[str],
    sockets: Sequence[socket.socket],
    count: int,
    *,
    stop: trio.Event | None = None,
) -> int:
    """Run ``count`` workers of ``command`` on ``sockets`` until a signal; return an exit code.

    Each worker runs ``command`` plus ``--worker-socket FD --worker-lifeline FD``. Setting
    ``stop`` stops them as a first SIGTERM does. The exit code is 0 when every worker
    stopped cleanly, ``USAGE_EXIT`` when one could not start, and 1 otherwise.
    """
    return await _Supervisor(command, sockets, count).run(stop)
