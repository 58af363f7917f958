"""http_streams: many sessions each holding a stream open in one server process.

Each session holds what a client that waits for notifications holds: the GET stream of
its session (2025-11-25), or a ``subscriptions/listen`` request's open response at a
revision without sessions. Measured: the server's memory with all of them open, and
the latency of calls on one more session, alone (the idle server's) and then beside
the held streams.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from .runs import HttpServer, Metrics, Run, closed_loop, http_lanes, megabytes, open_sessions
from .system import rss_kb
from .wire import Endpoint

LISTEN = "subscriptions/listen"
LISTEN_PARAMS = {"notifications": {"toolsListChanged": True}}


class HeldStream(asyncio.Protocol):
    """A connection holding one stream: .opened is its status once its head is in."""

    def __init__(self) -> None:
        self.opened: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self.head = bytearray()
        self.closed = False
        self.transport: Any = None

    def connection_made(self, transport: Any) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        if self.opened.done():
            return  # events (keep-alives, notifications): not kept
        self.head += data[:16384]
        if b"\r\n\r\n" in self.head:
            line = bytes(self.head.split(b"\r\n", 1)[0])
            parts = line.split(b" ", 2)
            status = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0
            self.opened.set_result(status)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if not self.opened.done():
            self.opened.set_result(0)

    def close(self) -> None:
        """Close the connection."""
        self.closed = True
        if self.transport is not None:
            self.transport.close()


def stream_request(endpoint: Endpoint, session: str | None, serial: int) -> bytes:
    """The request that opens a held stream: GET of the session, or a listen POST."""
    if endpoint.revision.stateless:
        body = endpoint.revision.request(f"listen-{serial}", LISTEN, LISTEN_PARAMS)
        return endpoint.post(body, None)
    lines = [
        b"GET " + endpoint.path + b" HTTP/1.1",
        b"Host: " + endpoint.authority,
        b"Accept: text/event-stream",
        b"Mcp-Protocol-Version: " + endpoint.revision.version.encode(),
    ]
    if session:
        lines.append(b"Mcp-Session-Id: " + session.encode())
    if endpoint.authorization:
        lines.append(endpoint.authorization)
    return b"\r\n".join(lines) + b"\r\n\r\n"


async def hold_streams(
    endpoint: Endpoint, sessions: list[str | None], at_once: int = 64, timeout: float = 30
) -> list[HeldStream]:
    """A held stream per session, opened at_once at a time; each once its head is in.

    If one cannot be opened, all are closed and the first failure is raised.
    """
    gate = asyncio.Semaphore(at_once)
    loop = asyncio.get_running_loop()
    opened: list[HeldStream] = []

    async def one(serial: int, session: str | None) -> None:
        async with gate:
            _, held = await loop.create_connection(HeldStream, endpoint.host, endpoint.port)
            opened.append(held)
            held.transport.write(stream_request(endpoint, session, serial))
            try:
                await asyncio.wait_for(asyncio.shield(held.opened), timeout)
            except TimeoutError:
                raise RuntimeError(f"stream {serial}: no response head in {timeout} s") from None

    results = await asyncio.gather(
        *(one(i, s) for i, s in enumerate(sessions)), return_exceptions=True
    )
    failures = [r for r in results if isinstance(r, BaseException)]
    if failures:
        for held in opened:
            held.close()
        raise failures[0]
    return opened


async def probe(run: Run, endpoint: Endpoint, pid: int | None, session: str | None) -> Metrics:
    """One call in flight after the other on session, for run.duration: latencies, CPU."""
    connection = await endpoint.connect()
    try:
        return await closed_loop(run, pid, http_lanes(endpoint, [session], [connection]))
    finally:
        connection.close()


async def http_streams(run: Run, target: Any) -> Metrics:
    """run.streams sessions each holding a stream open: RSS, and a call's latency beside them."""
    n = run.streams
    async with HttpServer(run, target) as server:
        endpoint = server.endpoint
        (session,) = await open_sessions(endpoint, 1)
        idle = await probe(run, endpoint, server.pid, session)
        await asyncio.sleep(0.3)
        base = rss_kb(server.pid)
        t0 = time.perf_counter()
        sessions = await open_sessions(endpoint, n) if not target.stateless else [None] * n
        held = await hold_streams(endpoint, sessions)
        opened_s = time.perf_counter() - t0
        try:
            await asyncio.sleep(1.0)
            after = rss_kb(server.pid)
            busy = await probe(run, endpoint, server.pid, session)
            statuses: dict[int, int] = {}
            for h in held:
                status = h.opened.result()
                statuses[status] = statuses.get(status, 0) + 1
            still_open = sum(not h.closed for h in held)
        finally:
            for h in held:
                h.close()
    return {
        "streams": n,
        "open_s": opened_s,
        "statuses": ",".join(f"{k}:{v}" for k, v in sorted(statuses.items())),
        "still_open": still_open,
        "rss_base_mb": megabytes(base),
        "rss_held_mb": megabytes(after),
        "kb_per_stream": (after - base) / n if base and after else None,
        "idle_p50_us": idle["p50_us"],
        "idle_p99_us": idle["p99_us"],
        "held_p50_us": busy["p50_us"],
        "held_p99_us": busy["p99_us"],
        "p99_over_idle": busy["p99_us"] / idle["p99_us"] if idle["p99_us"] else None,
        "errors": idle["errors"] + busy["errors"],
    }
