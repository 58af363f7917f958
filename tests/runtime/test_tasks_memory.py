"""Issue 5: "After 1 000 tasks complete, fail or are cancelled, no task actor or worker is
left and memory returns to its baseline."

Tasks run on virtual time through a SessionActor driven by a lean client that keeps
nothing but counters (the schema-checking harness of ``conftest.py`` remembers every
message, which is what this test must not do). Memory is measured with ``tracemalloc``
after a warm-up wave of the same shape as the measured ones, so every table, set and
free list has already grown to its working size: what is left above the baseline is
what the tasks leaked.

The process pool runs on the real clock (its workers are real processes), synchronised
through a Unix socket the workers check in at.
"""

from __future__ import annotations

import collections
import gc
import os
import socket
import tracemalloc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Final

import trio
import trio.testing

from mcpactor import ProtocolError, RequestError, Server, SessionOptions, ToolError
from mcpactor.protocol import JSONObject, JSONValue
from mcpactor.runtime import (
    Outbound,
    ProcessPoolStatistics,
    SessionActor,
    TaskOptions,
    open_process_pool,
)

from . import pool_functions
from .conftest import assert_idle, live_tasks, open_session
from .test_offload import short_tempdir

WAVE: Final = 50
WAVES: Final = 20  # 1 000 measured tasks
TTL_MS: Final = 30_000
#: what 1 000 tasks may leave above the baseline: a leak of 1 KiB per task is 1 000 KiB
LEAK_BOUND: Final = 128 * 1024


def memory_server() -> Server:
    server = Server("memory")

    @server.tool(task_support="optional")
    async def complete(n: int) -> str:
        """Finish after a second."""
        await trio.sleep(1)
        return f"done {n}"

    @server.tool(task_support="optional")
    async def fail(n: int) -> str:
        """Fail after a second, as a tool or with a JSON-RPC error."""
        await trio.sleep(1)
        if n % 2:
            raise ToolError(f"tool failure {n}")
        raise RequestError(-32000, f"request failure {n}")

    @server.tool(task_support="optional")
    async def forever(n: int) -> None:
        """Wait until cancelled."""
        await trio.sleep_forever()

    return server


class _Slot:
    __slots__ = ("done", "message")

    def __init__(self) -> None:
        self.done = trio.Event()
        self.message: Any = None


class LeanClient:
    """Sends requests into a session actor; keeps only counters of what came back."""

    def __init__(
        self,
        inbox: trio.MemorySendChannel[JSONValue | ProtocolError],
        outbox: trio.MemoryReceiveChannel[Outbound],
    ) -> None:
        self.inbox = inbox
        self.outbox = outbox
        self.statuses: collections.Counter[str] = collections.Counter()
        self._slots: dict[int, _Slot] = {}
        self._next_id = 0

    async def read(self) -> None:
        async for item in self.outbox:
            message: Any = item.payload
            if "method" not in message:
                slot = self._slots.pop(message["id"])
                slot.message = message
                slot.done.set()
            elif message["method"] == "notifications/tasks/status":
                self.statuses[message["params"]["status"]] += 1

    async def request(self, method: str, params: JSONObject) -> Any:
        self._next_id += 1
        slot = self._slots[self._next_id] = _Slot()
        await self.inbox.send(
            {"jsonrpc": "2.0", "id": self._next_id, "method": method, "params": params}
        )
        await slot.done.wait()
        return slot.message

    async def result(self, method: str, params: JSONObject) -> Any:
        message = await self.request(method, params)
        assert "result" in message, message
        return message["result"]


@asynccontextmanager
async def lean_session(
    server: Server, options: SessionOptions
) -> AsyncIterator[tuple[SessionActor, LeanClient]]:
    outbox_send, outbox_receive = trio.open_memory_channel[Outbound](256)
    inbox_send, inbox_receive = trio.open_memory_channel[JSONValue | ProtocolError](64)
    actor = SessionActor(server, outbox_send, options)
    client = LeanClient(inbox_send, outbox_receive)
    async with trio.open_nursery() as nursery:
        await nursery.start(actor.run, inbox_receive)
        nursery.start_soon(client.read)
        await client.result(
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "lean", "version": "1"},
            },
        )
        await inbox_send.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        try:
            yield actor, client
        finally:
            await inbox_send.aclose()


async def run_wave(actor: SessionActor, client: LeanClient, first: int) -> None:
    """Run one wave: a third complete, a third fail, a third are cancelled; fetch each
    outcome; then let their TTL pass."""
    created: list[tuple[str, str]] = []
    for n in range(first, first + WAVE):
        kind = ("complete", "fail", "forever")[n % 3]
        result = await client.result(
            "tools/call", {"name": kind, "arguments": {"n": n}, "task": {"ttl": TTL_MS}}
        )
        created.append((kind, result["task"]["taskId"]))
    for kind, task_id in created:
        if kind == "forever":
            await client.result("tasks/cancel", {"taskId": task_id})
    for kind, task_id in created:
        outcome = await client.request("tasks/result", {"taskId": task_id})
        if kind == "complete":
            assert outcome["result"]["content"][0]["text"].startswith("done")
        elif kind == "fail":
            assert outcome.get("error") or outcome["result"]["isError"] is True
        else:
            assert outcome["error"]["data"]["status"] == "cancelled"
    del created, outcome
    await trio.sleep(TTL_MS / 1000)
    await trio.testing.wait_all_tasks_blocked()
    stats = actor.tasks.statistics()
    assert (stats.running, stats.stored, stats.waiting) == (0, 0, 0), stats


def traced_bytes() -> int:
    gc.collect()
    return tracemalloc.get_traced_memory()[0]


async def test_a_thousand_tasks_leave_no_task_actor_and_no_memory(
    autojump_clock: trio.testing.MockClock,
) -> None:
    options = SessionOptions(tasks=TaskOptions(max_running=WAVE, max_stored=WAVE))
    async with lean_session(memory_server(), options) as (actor, client):
        tracemalloc.start()
        try:
            await run_wave(actor, client, 0)  # the warm-up
            tasks_before = live_tasks()
            baseline = traced_bytes()
            for wave in range(1, WAVES + 1):
                await run_wave(actor, client, wave * WAVE)
            grown = traced_bytes() - baseline
        finally:
            tracemalloc.stop()
        assert live_tasks() == tasks_before
        assert actor.tasks.view() == ()
        assert not actor.tasks._expiry
        assert_idle(actor)
        total = (WAVES + 1) * WAVE
        assert sum(client.statuses.values()) == total
        assert client.statuses["cancelled"] == len(range(2, total, 3))
        assert client.statuses["completed"] == len(range(0, total, 3))
        assert client.statuses["failed"] == len(range(1, total, 3))
        print(f"traced memory after {WAVES * WAVE} more tasks: {grown:+d} bytes")
        assert grown < LEAK_BOUND, f"{grown} bytes left after {WAVES * WAVE} tasks"


# --- the process pool (real time) -------------------------------------------------------


class CheckIn:
    """A Unix socket the ``hold`` workers check in at; each stays busy until released."""

    def __init__(self, directory: str) -> None:
        self.address = os.path.join(directory, "s")
        self._sock = trio.socket.socket(socket.AF_UNIX)

    async def open(self) -> None:
        await self._sock.bind(self.address)
        self._sock.listen()

    def close(self) -> None:
        self._sock.close()

    async def arrival(self) -> tuple[int, trio.socket.SocketType]:
        """Wait for a worker; return its pid and the connection that releases it."""
        with trio.fail_after(30):
            conn, _ = await self._sock.accept()
            data = b""
            while not data.endswith(b"\n"):
                chunk = await conn.recv(64)
                assert chunk, "the worker hung up before checking in"
                data += chunk
        return int(data), conn


@asynccontextmanager
async def check_in() -> AsyncIterator[CheckIn]:
    with short_tempdir() as directory:
        gate = CheckIn(directory)
        await gate.open()
        try:
            yield gate
        finally:
            gate.close()


def worker_children() -> dict[int, str]:
    """The pool workers that are our children: pid -> process state (``Z`` is a zombie)."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue  # it ended while we looked
        fields = dict(line.split(":\t", 1) for line in status.splitlines() if ":\t" in line)
        if int(fields["PPid"]) == os.getpid() and b"_worker.py" in cmdline:
            found[int(entry.name)] = fields["State"].split()[0]
    return found


async def test_twenty_offloaded_calls_leave_exactly_the_pools_workers() -> None:
    server = Server("pool")
    server.add_tool(pool_functions.hold, offload="process", task_support="optional")
    rounds, cancelled_rounds = 10, {1, 4, 7}
    with trio.fail_after(120):
        async with (
            open_process_pool(max_workers=2) as pool,
            open_session(server, SessionOptions(process_pool=pool)) as h,
            check_in() as gate,
        ):
            await h.initialize("2025-11-25")
            seen: set[int] = set()
            for number in range(rounds):
                # Two calls at once, so both workers of the pool are busy: a plain call
                # and a task.
                call = await h.start_tool("hold", {"address": gate.address})
                created = await h.request(
                    "tools/call",
                    {"name": "hold", "arguments": {"address": gate.address}, "task": {}},
                )
                task_id = created["task"]["taskId"]
                arrivals = [await gate.arrival(), await gate.arrival()]
                pids = {pid for pid, _ in arrivals}
                assert len(pids) == 2
                seen |= pids
                if number in cancelled_rounds:
                    await h.cancel(call)
                    await h.request("tasks/cancel", {"taskId": task_id})
                    # Both calls end only once their workers are reaped.
                    await h.actor.tasks.wait_idle()
                    await h.actor.wait_idle()
                    # Killed and reaped before their calls ended: gone, not zombies.
                    assert not pids & set(worker_children())
                else:
                    for _, conn in arrivals:
                        await conn.send(b"x")
                    answered = (await h.result_of(call))["structuredContent"]["result"]
                    result = await h.request("tasks/result", {"taskId": task_id})
                    assert {answered, result["structuredContent"]["result"]} == pids
                for _, conn in arrivals:
                    conn.close()
            assert pool.statistics() == ProcessPoolStatistics(
                idle=2, busy=0, started=2 + 2 * len(cancelled_rounds), killed=6
            )
            workers = worker_children()
            assert len(workers) == 2
            assert set(workers) <= seen
            assert "Z" not in workers.values(), workers
            assert h.actor.tasks.statistics().running == 0
            await trio.testing.wait_all_tasks_blocked()
            assert_idle(h.actor)
        # The pool closed with its block: no worker is left at all.
        assert worker_children() == {}
