"""How fast cancellation reaches blocking work, over a real stdio server (issue 5).

    python bench/cancel_latency.py [--runs 20]

Linux only (it watches the worker process with a pidfd). Each run calls a tool of
``cancel_latency_server.py`` (served with ``python -m mcpactor serve``), waits until the
tool says it started, then sends ``notifications/cancelled`` and measures the time until:

- ``spin`` — a sync tool in a worker thread spinning on ``mcpactor.check_cancelled()``:
  its ``finally`` has run (the server reports the moment);
- ``burn`` — a CPU-bound tool with ``offload="process"`` that never checks: its worker
  process is dead; then the pool answers the next call (a fresh worker), timed too.

Prints the median and maximum of each, in milliseconds. Reported, not asserted: the
numbers depend on the machine.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path

import trio

from mcpactor.client import ClientSession, RequestCancelled, connect_stdio

SERVER = Path(__file__).with_name("cancel_latency_server.py")


class Reports:
    """The datagrams the server's tools send: ``(event, pid, monotonic time)``."""

    def __init__(self, address: str) -> None:
        self.address = address
        self._sock = trio.socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)

    async def open(self) -> None:
        await self._sock.bind(self.address)

    def close(self) -> None:
        self._sock.close()

    async def next(self, event: str) -> tuple[int, float]:
        with trio.fail_after(30):
            data = await self._sock.recv(256)
        name, pid, when = data.decode().split()
        assert name == event, (name, event)
        return int(pid), float(when)


async def cancel_once(
    client: ClientSession, reports: Reports, tool: str, nursery: trio.Nursery
) -> tuple[int, float]:
    """Call ``tool``, wait until it started, cancel it; return (pid, when it was cancelled)."""

    async def call() -> None:
        with contextlib.suppress(RequestCancelled):
            await client.call_tool(tool)

    nursery.start_soon(call)
    pid, _ = await reports.next("started")
    (request_id,) = client.statistics().requests_pending
    cancelled_at = time.monotonic()
    await client.cancel(request_id, "measuring")
    return pid, cancelled_at


async def measure(runs: int, reports: Reports, env: dict[str, str]) -> dict[str, list[float]]:
    command = [sys.executable, "-m", "mcpactor", "serve", str(SERVER)]
    results: dict[str, list[float]] = {"spin": [], "burn": [], "next call": []}
    async with (
        connect_stdio(command, env=env, initialize=True) as client,
        trio.open_nursery() as nursery,
    ):
        await client.call_tool("worker_pid")  # a warm pool: the first burn reuses it
        for _ in range(runs):
            _, cancelled_at = await cancel_once(client, reports, "spin", nursery)
            _, ended_at = await reports.next("ended")
            results["spin"].append(ended_at - cancelled_at)

            pid, cancelled_at = await cancel_once(client, reports, "burn", nursery)
            pidfd = os.pidfd_open(pid)
            try:
                with trio.fail_after(30):
                    await trio.lowlevel.wait_readable(pidfd)
                died_at = time.monotonic()
            finally:
                os.close(pidfd)
            results["burn"].append(died_at - cancelled_at)
            started = time.monotonic()
            result = await client.call_tool("worker_pid")
            results["next call"].append(time.monotonic() - started)
            assert result["structuredContent"]["result"] != pid
    return results


async def main(runs: int) -> None:
    directory = tempfile.mkdtemp(prefix="mcpa")
    try:
        reports = Reports(os.path.join(directory, "reports"))
        await reports.open()
        env = {**os.environ, "CANCEL_LATENCY_SOCKET": reports.address}
        try:
            results = await measure(runs, reports, env)
        finally:
            reports.close()
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    print(f"{runs} runs, Python {sys.version.split()[0]}, {os.cpu_count()} CPUs")
    print("| from notifications/cancelled to ... | median ms | max ms |")
    print("| --- | ---: | ---: |")
    labels = {
        "spin": "the sync tool's finally (thread, check_cancelled)",
        "burn": "the CPU-bound tool's worker process dead (offload=process)",
        "next call": "(then) the pool answering the next call, fresh worker",
    }
    for key, label in labels.items():
        times = [t * 1000 for t in results[key]]
        print(f"| {label} | {statistics.median(times):.2f} | {max(times):.2f} |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    trio.run(main, parser.parse_args().runs)
