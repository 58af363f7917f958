"""Cancellation that reaches blocking work, and deadlines.

Async handlers and their timeouts run on virtual time. Worker threads and processes run
on the real clock (the clock must not jump while they work); the tests wait on events,
never on sleeps, and assert behaviour, not durations. Worker processes run the functions
of ``offload_functions.py``.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

import pytest
import trio
import trio.testing

import mcpactor
from mcpactor import Server, SessionOptions
from mcpactor.cli import load_server
from mcpactor.runtime import OffloadError, ProcessPool, ProcessPoolStatistics, open_process_pool

from . import offload_functions
from .conftest import assert_idle, open_session, tool_text
from .test_tasks import create_task, status_of

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "long_jobs.py"

# --- deadlines of async handlers (virtual time) ---------------------------------------


def deadline_server(log: list[str]) -> Server:
    server = Server("deadlines", tool_timeout=30)

    @server.tool(timeout=2)
    async def hurried(seconds: float) -> str:
        """Sleep, within two seconds."""
        try:
            await trio.sleep(seconds)
        finally:
            log.append(f"hurried ended at {trio.current_time():g}")
        return "in time"

    @server.tool()
    async def default_deadline(seconds: float) -> str:
        """Sleep, within the server's default."""
        await trio.sleep(seconds)
        return "in time"

    @server.tool(timeout=float("inf"))
    async def unhurried(seconds: float) -> str:
        """Sleep as long as it takes."""
        await trio.sleep(seconds)
        return "in time"

    @server.tool(timeout=2, task_support="optional")
    async def hurried_job(seconds: float) -> str:
        """Sleep, within two seconds, as a task if asked."""
        await trio.sleep(seconds)
        return "in time"

    return server


async def test_a_tool_past_its_timeout_is_cancelled_and_answers_with_an_error(
    autojump_clock: trio.testing.MockClock,
) -> None:
    log: list[str] = []
    async with open_session(deadline_server(log)) as h:
        await h.initialize()
        result = await h.call_tool("hurried", {"seconds": 10})
        assert trio.current_time() == 2
        assert result["isError"] is True
        assert tool_text(result) == "tool 'hurried' timed out after 2 s"
        assert log == ["hurried ended at 2"]
        assert tool_text(await h.call_tool("hurried", {"seconds": 1.5})) == "in time"
        await trio.testing.wait_all_tasks_blocked()
        assert_idle(h.actor)


async def test_the_servers_default_timeout_applies_unless_a_tool_sets_its_own(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_session(deadline_server([])) as h:
        await h.initialize()
        start = trio.current_time()
        result = await h.call_tool("default_deadline", {"seconds": 100})
        assert trio.current_time() - start == 30
        assert tool_text(result) == "tool 'default_deadline' timed out after 30 s"
        assert tool_text(await h.call_tool("unhurried", {"seconds": 100})) == "in time"


@pytest.mark.parametrize("revision", ["2024-11-05", "2025-06-18"])
async def test_a_timeout_is_an_error_result_at_every_revision(
    revision: str, autojump_clock: trio.testing.MockClock
) -> None:
    async with open_session(deadline_server([])) as h:
        await h.initialize(revision)
        result = await h.call_tool("hurried", {"seconds": 3})
        assert result["isError"] is True


async def test_a_task_past_its_tools_timeout_fails(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with open_session(deadline_server([])) as h:
        await h.initialize("2025-11-25")
        task_id = (await create_task(h, "hurried_job", {"seconds": 5}))["taskId"]
        failed = await status_of(h, task_id)
        assert trio.current_time() == 2
        assert failed["status"] == "failed"
        assert failed["statusMessage"] == "tool 'hurried_job' timed out after 2 s"


def test_bad_timeouts_are_refused() -> None:
    with pytest.raises(ValueError, match="tool_timeout must be positive"):
        Server("bad", tool_timeout=0)
    server = Server("bad")
    for timeout in (0, -1, float("nan"), True, "5"):
        with pytest.raises(mcpactor.SchemaError, match="timeout must be a positive number"):
            server.add_tool(offload_functions.add, timeout=timeout)  # type: ignore[arg-type]


# --- worker threads (real time) ---------------------------------------------------------


def spinning_server(started: trio.Event, finished: threading.Event) -> Server:
    server = Server("spinning")
    token = trio.lowlevel.current_trio_token()

    def spin_until_cancelled() -> str:
        trio.from_thread.run_sync(started.set, trio_token=token)
        try:
            while True:
                mcpactor.check_cancelled()
        finally:
            finished.set()

    server.add_tool(spin_until_cancelled, name="spin", timeout=0.2)
    server.add_tool(spin_until_cancelled, name="spin_job", task_support="optional")
    return server


async def test_a_spinning_sync_tool_stops_at_its_timeout() -> None:
    finished = threading.Event()
    async with open_session(spinning_server(trio.Event(), finished)) as h:
        await h.initialize()
        result = await h.call_tool("spin")
        assert tool_text(result) == "tool 'spin' timed out after 0.2 s"
        assert finished.is_set()


async def test_tasks_cancel_reaches_a_sync_tool_in_a_thread() -> None:
    started, finished = trio.Event(), threading.Event()
    async with open_session(spinning_server(started, finished)) as h:
        await h.initialize("2025-11-25")
        task_id = (await create_task(h, "spin_job"))["taskId"]
        with trio.fail_after(10):
            await started.wait()
        cancelled = await h.request("tasks/cancel", {"taskId": task_id})
        assert cancelled["status"] == "cancelled"
        with trio.fail_after(10):
            await h.actor.tasks.wait_idle()
        assert finished.is_set()
        assert h.actor.tasks.statistics().running == 0


# --- worker processes (real time) -------------------------------------------------------


@contextmanager
def short_tempdir() -> Iterator[str]:
    # Unix socket paths are short (about 100 bytes): pytest's tmp_path may be too long.
    path = tempfile.mkdtemp(prefix="mcpa")
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


class Rendezvous:
    """A Unix socket a worker connects to, to say it started (and with which pid)."""

    def __init__(self, directory: str) -> None:
        self.address = os.path.join(directory, "s")
        self._sock = trio.socket.socket(socket.AF_UNIX)

    async def __aenter__(self) -> Rendezvous:
        await self._sock.bind(self.address)
        self._sock.listen()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self._sock.close()

    async def wait_started(self) -> int:
        """Wait for the worker to check in; return its pid."""
        with trio.fail_after(30):
            conn, _ = await self._sock.accept()
            with conn:
                return int(await conn.recv(64))


@asynccontextmanager
async def rendezvous() -> AsyncIterator[Rendezvous]:
    with short_tempdir() as directory:
        async with Rendezvous(directory) as meeting:
            yield meeting


def process_server() -> Server:
    server = Server("processes")
    server.add_tool(offload_functions.spin_forever, name="spin", offload="process")
    server.add_tool(
        offload_functions.spin_forever, name="spin_briefly", offload="process", timeout=0.3
    )
    server.add_tool(offload_functions.worker_pid, name="pid", offload="process")
    server.add_tool(offload_functions.fail, name="fail", offload="process")
    server.add_tool(offload_functions.fail_opaquely, name="fail_opaquely", offload="process")
    server.add_tool(offload_functions.chatty, name="chatty", offload="process")
    return server


def is_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def test_a_cpu_bound_tool_in_a_process_is_killed_on_cancel_and_the_pool_recovers() -> None:
    async with (
        open_process_pool(max_workers=1) as pool,
        open_session(process_server(), SessionOptions(process_pool=pool)) as h,
        rendezvous() as meeting,
    ):
        await h.initialize()
        call = await h.start_tool("spin", {"address": meeting.address})
        spinning = await meeting.wait_started()
        assert pool.statistics().busy == 1
        await h.cancel(call)
        # With one worker, the next call runs only once the spinning one is gone.
        pid = (await h.call_tool("pid"))["structuredContent"]["result"]
        assert pid != spinning
        assert not is_alive(spinning)
        assert pool.statistics() == ProcessPoolStatistics(idle=1, busy=0, started=2, killed=1)
        await h.expect_nothing()  # the cancelled call got no response
        assert_idle(h.actor)


async def test_a_process_tool_past_its_timeout_is_killed() -> None:
    async with (
        open_process_pool(max_workers=1) as pool,
        open_session(process_server(), SessionOptions(process_pool=pool)) as h,
        rendezvous() as meeting,
    ):
        await h.initialize()
        # A warm worker: the timed call reuses it, however slowly processes start here.
        warm = (await h.call_tool("pid"))["structuredContent"]["result"]
        result = await h.call_tool("spin_briefly", {"address": meeting.address})
        assert tool_text(result) == "tool 'spin_briefly' timed out after 0.3 s"
        assert not is_alive(warm)
        assert pool.statistics() == ProcessPoolStatistics(idle=0, busy=0, started=1, killed=1)


async def test_what_a_process_tool_raises_or_prints_comes_back_as_it_would_in_a_thread() -> None:
    async with open_session(process_server()) as h:
        await h.initialize()
        failed = await h.call_tool("fail", {"message": "no such row"})
        assert failed["isError"] is True
        assert tool_text(failed) == "tool 'fail' failed: ValueError: no such row"
        opaque = await h.call_tool("fail_opaquely")
        assert tool_text(opaque) == (
            "tool 'fail_opaquely' failed: OffloadError: OpaqueError: custom failure"
        )
        # Printing in a worker goes to stderr, not into the pipe to the server.
        assert tool_text(await h.call_tool("chatty", {"text": "ok"})) == "OK"
        # Every call above was served by the session's own pool, which closes with it.
        assert h.actor.peer.processes.statistics().started == 1


async def test_a_task_running_in_a_process_is_killed_by_tasks_cancel() -> None:
    server = Server("process-tasks")
    server.add_tool(
        offload_functions.spin_forever, name="spin", offload="process", task_support="optional"
    )
    async with (
        open_process_pool(max_workers=1) as pool,
        open_session(server, SessionOptions(process_pool=pool)) as h,
        rendezvous() as meeting,
    ):
        await h.initialize("2025-11-25")
        task_id = (await create_task(h, "spin", {"address": meeting.address}))["taskId"]
        spinning = await meeting.wait_started()
        await h.request("tasks/cancel", {"taskId": task_id})
        with trio.fail_after(30):
            await h.actor.tasks.wait_idle()
        assert not is_alive(spinning)
        assert pool.statistics().killed == 1


async def test_the_pool_kills_a_cancelled_worker_before_the_call_returns() -> None:
    async with ProcessPool(max_workers=1) as pool, rendezvous() as meeting:
        assert await pool.run(offload_functions.add, 2, 3) == 5
        first = await pool.run(offload_functions.worker_pid)
        with trio.CancelScope() as scope:
            async with trio.open_nursery() as nursery:

                async def cancel_once_started() -> None:
                    await meeting.wait_started()
                    cancelled_at[0] = time.perf_counter()
                    scope.cancel()

                cancelled_at = [0.0]
                nursery.start_soon(cancel_once_started)
                await pool.run(offload_functions.spin_forever, meeting.address)
        # The call returned only once its worker was reaped: nothing outlives it.
        dead_after = time.perf_counter() - cancelled_at[0]
        assert scope.cancelled_caught
        assert not is_alive(first)
        assert pool.statistics().killed == 1
        assert await pool.run(offload_functions.add, 1, 1) == 2
        print(f"cancel to dead worker: {dead_after * 1000:.1f} ms")


async def test_a_worker_that_dies_mid_call_is_an_error_and_is_replaced() -> None:
    async with ProcessPool(max_workers=1) as pool:
        with pytest.raises(OffloadError, match="exited before answering"):
            await pool.run(offload_functions.leave)
        assert await pool.run(offload_functions.add, 2, 2) == 4
        assert pool.statistics().started == 2


async def test_a_closed_pool_kills_its_idle_workers_and_refuses_calls() -> None:
    pool = ProcessPool(max_workers=2)
    pid = await pool.run(offload_functions.worker_pid)
    assert pool.statistics().idle == 1
    await pool.aclose()
    assert not is_alive(pid)
    with pytest.raises(OffloadError, match="closed"):
        await pool.run(offload_functions.add, 1, 2)


def test_process_offload_is_checked_at_registration() -> None:
    server = Server("checks")

    def nested() -> None:
        """Not importable by module path."""

    def with_context(ctx: mcpactor.Context) -> None:
        """Wants a Context."""

    async def coroutine() -> None:
        """Runs on the event loop."""

    def in_main() -> None:
        """Defined in a script, which a worker cannot import."""

    in_main.__module__ = "__main__"
    in_main.__qualname__ = "in_main"

    cases = [
        (nested, "process", "lambda or nested function"),
        (lambda: None, "process", "lambda or nested function"),
        (with_context, "process", "cannot pass a Context"),
        (in_main, "process", "lives in '__main__'"),
        (coroutine, "process", "cannot be offloaded to a process"),
        (coroutine, "thread", "cannot be offloaded to a thread"),
        (offload_functions.add, "fork", "offload must be 'thread' or 'process'"),
        (offload_functions.add, "async", "would block the event loop"),
    ]
    for fn, offload, message in cases:
        with pytest.raises(mcpactor.SchemaError, match=message):
            server.add_tool(fn, name="checked", offload=offload)  # type: ignore[arg-type]
    with pytest.raises(mcpactor.SchemaError, match="task_support must be one of"):
        server.add_tool(offload_functions.add, task_support="sometimes")  # type: ignore[arg-type]
    assert server._registry.tools == {}


async def test_a_served_files_process_tool_runs_in_a_worker_that_loads_the_file(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # ``mcpactor serve FILE`` imports the file under a name no import can find; the
    # worker loads the same file under the same name.
    monkeypatch.setattr(sys, "path", list(sys.path))
    server = load_server(str(EXAMPLE))
    try:
        async with open_session(server) as h:
            await h.initialize("2025-11-25")
            result = await h.call_tool("proof_of_work", {"prefix": "mcp", "zeros": 2})
            nonce = result["structuredContent"]["result"]
            digest = hashlib.sha256(f"mcp{nonce}".encode()).hexdigest()
            assert digest.startswith("00")
            task_id = (await create_task(h, "proof_of_work", {"prefix": "x", "zeros": 1}))[
                "taskId"
            ]
            assert (await status_of(h, task_id))["status"] == "completed"
    finally:
        sys.modules.pop("_mcpactor_target_long_jobs", None)


async def test_an_idle_worker_killed_from_outside_is_replaced() -> None:
    async with ProcessPool(max_workers=1) as pool:
        pid = await pool.run(offload_functions.worker_pid)
        os.kill(pid, signal.SIGKILL)
        # Wait for it to die without reaping it: reaping is the pool's job.
        await trio.to_thread.run_sync(os.waitid, os.P_PID, pid, os.WEXITED | os.WNOWAIT)
        assert await pool.run(offload_functions.worker_pid) != pid
        assert pool.statistics() == ProcessPoolStatistics(idle=1, busy=0, started=2, killed=0)
        assert not is_alive(pid)
