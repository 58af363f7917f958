# Running a handler where its tool asked: on the event loop, in a worker thread, or in
# a worker process; and cancelling it at its deadline.
#
# Threads stop only where they call ``check_cancelled()``. Processes are the answer for
# code that never checks (CPU-bound loops, C extensions): the ``ProcessPool`` runs each
# call in a worker process it started with ``trio.lowlevel.open_process`` (the script
# ``_worker.py``, speaking length-prefixed pickles on its stdin/stdout), and when the
# call is cancelled, times out or breaks, the worker is killed and reaped before the
# call returns; the next call starts a fresh one. Idle workers are reused. A worker is
# owned by the call using it, or by the pool while idle: when the pool closes, idle
# workers are killed, and nothing the pool started outlives it.

from __future__ import annotations

import functools
import math
import os
import struct
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TypeVar

import trio

from .._exceptions import MCPActorError
from ..protocol import describe
from ..server import HandlerTimeout, Offload, function_path

if TYPE_CHECKING:
    from ._statistics import ProcessPoolStatistics

__all__ = [
    "OffloadError",
    "ProcessPool",
    "call_handler",
    "open_process_pool",
]

T = TypeVar("T")

_HEADER: Final = struct.Struct("!Q")
_WORKER: Final = str(Path(__file__).with_name("_worker.py"))


class OffloadError(MCPActorError):
    """A worker process failed: it died, or what it raised could not be brought back."""


class _Worker:
    __slots__ = ("_buffer", "process")

    def __init__(self, process: trio.Process) -> None:
        self.process = process
        self._buffer = bytearray()

    async def send(self, data: bytes) -> None:
        assert self.process.stdin is not None
        try:
            await self.process.stdin.send_all(_HEADER.pack(len(data)) + data)
        except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            raise OffloadError("the worker process exited before taking the call") from exc

    async def receive(self, limit: int) -> Any:
        (size,) = _HEADER.unpack(await self._read(_HEADER.size))
        if size > limit:
            raise OffloadError(f"a worker process answered with {size} bytes (limit {limit})")
        import pickle  # only servers that offload pay for importing it

        return pickle.loads(await self._read(size))

    async def _read(self, size: int) -> bytes:
        assert self.process.stdout is not None
        while len(self._buffer) < size:
            chunk = await self.process.stdout.receive_some(max(size - len(self._buffer), 65536))
            if not chunk:
                raise OffloadError("the worker process exited before answering")
            self._buffer += chunk
        data = bytes(self._buffer[:size])
        del self._buffer[:size]
        return data

    async def kill(self) -> None:
        # Shielded: a cancelled call still reaps its worker before it returns, so no
        # process outlives the call that owned it.
        with trio.CancelScope(shield=True):
            if self.process.returncode is None:
                self.process.kill()
            await self.process.wait()
            for pipe in (self.process.stdin, self.process.stdout):
                if pipe is not None:
                    await pipe.aclose()


@functools.cache
def _default_workers() -> int:
    return min(4, os.cpu_count() or 1)


class ProcessPool:
    """Worker processes for ``offload="process"`` tools; a cancelled call kills its worker.

    Args:
        max_workers: how many calls run at once (more wait their turn); defaults to the
            number of CPUs, at most 4.
        max_message_bytes: the largest answer a worker may send back.
    """

    def __init__(
        self, max_workers: int | None = None, *, max_message_bytes: int = 64 * 1024 * 1024
    ) -> None:
        if max_workers is None:
            max_workers = _default_workers()
        if max_workers < 1:
            raise ValueError(f"max_workers must be at least 1, got {describe(max_workers)}")
        # Every session without a shared pool has one of these, and most never use it:
        # the limiter is made on first use.
        self._max_workers = max_workers
        self._limiter: trio.CapacityLimiter | None = None
        self._max_message = max_message_bytes
        self._idle: list[_Worker] = []
        self._busy = 0
        self._started = 0
        self._killed = 0
        self._closed = False

    def statistics(self) -> ProcessPoolStatistics:
        """Return how many workers are idle, busy, started and killed."""
        from ._statistics import ProcessPoolStatistics

        return ProcessPoolStatistics(
            idle=len(self._idle), busy=self._busy, started=self._started, killed=self._killed
        )

    async def run(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """Call ``fn(*args, **kwargs)`` in a worker process and return its result.

        ``fn`` must be importable by module path, and its arguments and result
        picklable. What it raises is raised here (as OffloadError if it cannot be
        unpickled). If this call is cancelled, the worker is killed.
        """
        import pickle  # only servers that offload pay for importing it

        module, qualname = function_path(fn, what=f"{fn!r}")
        file = getattr(sys.modules[module], "__file__", None)
        data = pickle.dumps(
            ("call", list(sys.path), module, file, qualname, args, kwargs),
            pickle.HIGHEST_PROTOCOL,
        )
        if self._closed:
            raise OffloadError("the process pool is closed")
        if self._limiter is None:
            self._limiter = trio.CapacityLimiter(self._max_workers)
        async with self._limiter:
            worker = await self._take()
            self._busy += 1
            healthy = False
            try:
                await worker.send(data)
                reply = await worker.receive(self._max_message)
                healthy = True
            finally:
                self._busy -= 1
                if healthy and not self._closed:
                    self._idle.append(worker)
                else:
                    self._killed += 1
                    await worker.kill()
        return _unpack(reply)  # type: ignore[no-any-return]

    async def _take(self) -> _Worker:
        while self._idle:
            worker = self._idle.pop()
            if worker.process.returncode is None:
                return worker
            # It died while idle (killed from outside): reap it and try the next one.
            await worker.kill()
        return await self._start()

    async def _start(self) -> _Worker:
        process = await trio.lowlevel.open_process(
            [sys.executable, _WORKER, str(os.getpid())],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        self._started += 1
        return _Worker(process)

    async def aclose(self) -> None:
        """Kill the idle workers; calls still running kill theirs when they end."""
        self._closed = True
        while self._idle:
            await self._idle.pop().kill()

    async def __aenter__(self) -> ProcessPool:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


@asynccontextmanager
async def open_process_pool(
    max_workers: int | None = None, *, max_message_bytes: int = 64 * 1024 * 1024
) -> AsyncIterator[ProcessPool]:
    """Open a ProcessPool to share between sessions (``SessionOptions.process_pool``)."""
    async with ProcessPool(max_workers, max_message_bytes=max_message_bytes) as pool:
        yield pool


def _unpack(reply: Any) -> Any:
    if reply[0] == "ok":
        return reply[1]
    _, blob, type_name, message, text = reply
    exc = None
    if blob is not None:
        import pickle

        try:
            exc = pickle.loads(blob)
        except Exception:
            exc = None
    if not isinstance(exc, Exception):
        exc = OffloadError(f"{type_name}: {message}")
    exc.add_note(f"raised in a worker process:\n{text.rstrip()}")
    raise exc


async def call_handler(
    fn: Callable[..., Any],
    kwargs: Mapping[str, Any],
    *,
    offload: Offload,
    timeout: float | None,
    limiter: trio.CapacityLimiter | None,
    processes: ProcessPool,
) -> Any:
    """Run a handler as ``offload`` says, cancelled after ``timeout`` seconds.

    Raises:
        HandlerTimeout: the deadline passed first; the handler was cancelled (a worker
            thread at its next ``check_cancelled()``, a worker process killed).
    """
    if timeout is None or math.isinf(timeout):
        return await _dispatch(fn, kwargs, offload, limiter, processes)
    with trio.move_on_after(timeout):
        return await _dispatch(fn, kwargs, offload, limiter, processes)
    raise HandlerTimeout(timeout)


async def _dispatch(
    fn: Callable[..., Any],
    kwargs: Mapping[str, Any],
    offload: Offload,
    limiter: trio.CapacityLimiter | None,
    processes: ProcessPool,
) -> Any:
    if offload == "async":
        return await fn(**kwargs)
    if offload == "thread":
        return await trio.to_thread.run_sync(lambda: fn(**kwargs), limiter=limiter)
    return await processes.run(fn, **kwargs)
