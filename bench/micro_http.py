"""Micro-benchmark of mcpactor's HTTP path, in process (not part of the unit tests).

    python bench/micro_http.py [--mode json|sse|stateless|2026] [--calls N] [--concurrency C]
                               [--sessions] [--memory] [--wake] [--profile]

Drives the ASGI app (``open_http_app``) directly with in-memory ``receive``/``send``
callables, so the number (CPU time, which other load on the machine does not inflate)
is what mcpactor adds per tools/call on top of the HTTP server: header checks, body
decoding, session lookup, the session and request actors, routing and the response.
``--sessions`` measures initialize (session creation) instead; ``--burst N`` the CPU of N
``sleep(1)`` calls in flight at once (on a MockClock, the best of ``--rounds``), the
in-process part of the harness's ``http_sleep1000``; ``--memory`` what an idle
session holds: the RSS growth over ``--calls`` sessions (at most 2 000) and, in a second
round under tracemalloc, the Python allocations they keep, by source line; ``--wake`` what
a request costs when it has to wake its sleeping session, and putting it back to sleep.
The HTTP server's own
share (hypercorn, h11) is measured by the harness: see docs/performance.md.
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import gc
import linecache
import os
import pstats
import time
import tracemalloc
from typing import Any

import orjson
import trio
import trio.testing

from mcpactor import Server
from mcpactor.transports.http import HttpOptions, McpHttpApp, open_http_app

server = Server("micro-http")


@server.tool()
async def echo(text: str) -> str:
    """Return text unchanged."""
    return text


@server.tool()
async def sleep(seconds: float) -> str:
    """Sleep for ``seconds``."""
    await trio.sleep(seconds)
    return "slept"


INIT = orjson.dumps(
    {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "bench", "version": "1"},
        },
    }
)
INITIALIZED = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'


def call(i: int) -> bytes:
    """One tools/call request body."""
    return (
        b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":'
        b'{"name":"echo","arguments":{"text":"hello, mcp benchmark"}}}' % i
    )


def call_2026(i: int) -> bytes:
    """One tools/call request body at 2026-07-28: the envelope in ``_meta``."""
    return (
        b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":'
        b'{"name":"echo","arguments":{"text":"hello, mcp benchmark"},"_meta":'
        b'{"io.modelcontextprotocol/protocolVersion":"2026-07-28",'
        b'"io.modelcontextprotocol/clientCapabilities":{}}}}' % i
    )


def scope_2026() -> dict[str, Any]:
    """The ASGI scope of one 2026-07-28 POST /mcp: the version and mirrored headers."""
    request_scope = scope(None)
    request_scope["headers"] = [
        (b"host", b"127.0.0.1:8000"),
        (b"content-type", b"application/json"),
        (b"accept", b"application/json, text/event-stream"),
        (b"mcp-protocol-version", b"2026-07-28"),
        (b"mcp-method", b"tools/call"),
        (b"mcp-name", b"echo"),
    ]
    return request_scope


def scope(session_id: str | None, *, initialize: bool = False) -> dict[str, Any]:
    """The ASGI scope of one POST /mcp, as hypercorn builds it."""
    headers = [
        (b"host", b"127.0.0.1:8000"),
        (b"content-type", b"application/json"),
        (b"accept", b"application/json, text/event-stream"),
    ]
    if not initialize:
        headers.append((b"mcp-protocol-version", b"2025-11-25"))
    if session_id is not None:
        headers.append((b"mcp-session-id", session_id.encode()))
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/mcp",
        "raw_path": b"/mcp",
        "query_string": b"",
        "root_path": "",
        "headers": headers,
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
    }


async def post(app: McpHttpApp, body: bytes, request_scope: dict[str, Any]) -> tuple[int, bytes]:
    """POST one body through the app; return the status and the whole response body."""
    sent = False

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        await trio.sleep_forever()
        raise AssertionError("unreachable")

    status = 0
    chunks: list[bytes] = []
    headers: list[tuple[bytes, bytes]] = []

    async def send(message: dict[str, Any]) -> None:
        nonlocal status, headers
        if message["type"] == "http.response.start":
            status = message["status"]
            headers = message["headers"]
        else:
            chunks.append(message.get("body", b""))

    await app(request_scope, receive, send)
    if request_scope is not None and status == 200:
        for name, value in headers:
            if name == b"mcp-session-id":
                request_scope["session_id"] = value.decode()
    return status, b"".join(chunks)


async def open_session(app: McpHttpApp, stateless: bool) -> str | None:
    """Initialize a session; return its id (None when stateless)."""
    init_scope = scope(None, initialize=True)
    status, _ = await post(app, INIT, init_scope)
    assert status == 200, status
    session_id = init_scope.get("session_id")
    if not stateless:
        assert session_id is not None
        status, _ = await post(app, INITIALIZED, scope(session_id))
        assert status == 202, status
    return session_id


async def run_calls(mode: str, calls: int, concurrency: int) -> float:
    """Return CPU seconds per tools/call with ``concurrency`` requests in flight."""
    stateless = mode == "stateless"
    options = HttpOptions(response_mode="sse" if mode == "sse" else "json", stateless=stateless)
    async with open_http_app(server, options=options) as app:
        if mode == "2026":
            request_scope = scope_2026()
            body_of = call_2026
        else:
            session_id = await open_session(app, stateless)
            request_scope = scope(session_id)
            body_of = call
        ids = iter(range(1, calls + 1))

        async def worker() -> None:
            for i in ids:
                status, body = await post(app, body_of(i), dict(request_scope))
                assert status == 200, (status, body)
                assert b"hello, mcp benchmark" in body, body

        for i in range(200):  # warm up
            await post(app, body_of(-i - 1), dict(request_scope))
        start = time.process_time()
        async with trio.open_nursery() as nursery:
            for _ in range(concurrency):
                nursery.start_soon(worker)
        elapsed = time.process_time() - start
        app.manager.stop()
    return elapsed / calls


def sleep_call(i: int) -> bytes:
    """One tools/call body that sleeps a second."""
    return (
        b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":'
        b'{"name":"sleep","arguments":{"seconds":1}}}' % i
    )


async def run_burst(count: int, rounds: int) -> tuple[float, float]:
    """Return (best, median) CPU seconds per call of ``count`` sleeps in flight at once."""
    async with open_http_app(server, options=HttpOptions(response_mode="json")) as app:
        session_id = await open_session(app, False)
        request_scope = scope(session_id)
        answered = 0

        async def one(i: int) -> None:
            nonlocal answered
            status, body = await post(app, sleep_call(i), dict(request_scope))
            assert status == 200, (status, body)
            assert b"slept" in body, body
            answered += 1

        costs = []
        for number in range(rounds + 1):  # the first round warms up
            answered = 0
            start = time.process_time()
            async with trio.open_nursery() as nursery:
                for i in range(count):
                    nursery.start_soon(one, number * count + i)
            costs.append((time.process_time() - start) / count)
            assert answered == count
        app.manager.stop()
    costs = sorted(costs[1:])
    return costs[0], costs[len(costs) // 2]


async def run_sessions(count: int, *, memory: bool) -> tuple[float, float]:
    """Return (CPU seconds, bytes of Python allocations or 0) per idle session created."""
    async with open_http_app(server, options=HttpOptions(response_mode="json")) as app:
        for _ in range(50):  # warm up
            await open_session(app, False)
        start = time.process_time()
        for _ in range(count):
            await open_session(app, False)
        elapsed = time.process_time() - start
        size = 0.0
        if memory:
            gc.collect()
            tracemalloc.start()
            before = tracemalloc.get_traced_memory()[0]
            for _ in range(count):
                await open_session(app, False)
            gc.collect()
            size = (tracemalloc.get_traced_memory()[0] - before) / count
            tracemalloc.stop()
        app.manager.stop()
    return elapsed / count, size


async def run_wakes(count: int) -> None:
    """Print the CPU cost of waking a sleeping session, serving a call, and sleeping."""
    async with open_http_app(server, options=HttpOptions(response_mode="json")) as app:
        sessions = [await open_session(app, False) for _ in range(count)]
        scopes = [scope(session_id) for session_id in sessions]

        async def call_each(first: int) -> float:
            start = time.process_time()
            for number, request_scope in enumerate(scopes):
                status, body = await post(app, call(first + number), dict(request_scope))
                assert status == 200, (status, body)
            return (time.process_time() - start) / count

        for _ in range(2):  # warm up: wake, call, sleep
            await call_each(0)
            await _sleep_all(app, sessions)
        waking = await call_each(1_000_000)
        awake = await call_each(2_000_000)
        start = time.process_time()
        await _sleep_all(app, sessions)
        sleeping = (time.process_time() - start) / count
        app.manager.stop()
    print(f"tools/call on a sleeping session (wakes it): {waking * 1e6:6.0f} µs of CPU")
    print(f"tools/call on an awake session:              {awake * 1e6:6.0f} µs of CPU")
    print(f"falling asleep again:                        {sleeping * 1e6:6.0f} µs of CPU")


async def _sleep_all(app: McpHttpApp, sessions: list[str | None]) -> None:
    # What the manager does once a session has been quiet for SLEEP_AFTER seconds.
    await trio.testing.wait_all_tasks_blocked()
    for session_id in sessions:
        session = app.manager.get(session_id or "")
        assert session is not None
        assert session.may_sleep()
        session.sleep()
    await trio.testing.wait_all_tasks_blocked()
    assert app.manager.statistics().awake_sessions == 0


def _rss_kib() -> int:
    # Resident set size of this process, from /proc (Linux).
    with open(f"/proc/{os.getpid()}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS in /proc/self/status")


async def run_memory(mode: str, count: int, *, top: int) -> None:
    """Print what ``count`` idle sessions (initialize + initialized) keep, per session."""
    options = HttpOptions(response_mode="sse" if mode == "sse" else "json")
    async with open_http_app(server, options=options) as app:
        for _ in range(100):  # warm up: caches, free lists, the first pages of every arena
            await open_session(app, False)
        gc.collect()
        before = _rss_kib()
        for _ in range(count):
            await open_session(app, False)
        gc.collect()
        rss = (_rss_kib() - before) * 1024 / count
        tracemalloc.start(1)
        first = tracemalloc.take_snapshot()
        for _ in range(count):
            await open_session(app, False)
        gc.collect()
        second = tracemalloc.take_snapshot()
        tracemalloc.stop()
        live = trio.lowlevel.current_root_task()
        tasks = 0
        todo = [live]
        while todo:
            task = todo.pop()
            tasks += 1
            for nursery in task.child_nurseries:
                todo.extend(nursery.child_tasks)
        sessions = app.manager.statistics().sessions
        app.manager.stop()
    print(f"{mode}: {sessions} idle sessions, {tasks} live tasks in the whole run")
    print(f"  RSS growth per idle session:   {rss / 1024:6.1f} KiB")
    _print_allocations(second.compare_to(first, "lineno"), count, top)


def _print_allocations(stats: list[tracemalloc.StatisticDiff], count: int, top: int) -> None:
    total = sum(stat.size_diff for stat in stats)
    print(f"  Python allocations kept:       {total / count / 1024:6.1f} KiB per session")
    for stat in stats[:top]:
        frame = stat.traceback[0]
        line = linecache.getline(frame.filename, frame.lineno).strip()
        where = f"{os.path.relpath(frame.filename)}:{frame.lineno}"
        print(f"  {stat.size_diff / count:8.0f} B  {where:60.60}  {line[:60]}")


async def passing(call: Any, call_next: Any) -> Any:
    """A middleware that passes every message through unchanged (``--middleware pass``)."""
    async for message in call_next(call):
        yield message


def main() -> None:
    """Run the benchmark and print µs per call (optionally the top of a profile)."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--mode", choices=["json", "sse", "stateless", "2026"], default="json")
    parser.add_argument("--calls", type=int, default=10000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--sessions", action="store_true", help="measure session creation")
    parser.add_argument("--memory", action="store_true", help="measure idle sessions' memory")
    parser.add_argument("--wake", action="store_true", help="measure waking a sleeping session")
    parser.add_argument("--burst", type=int, default=0, help="measure N sleep(1) calls at once")
    parser.add_argument("--rounds", type=int, default=9, help="rounds of --burst")
    parser.add_argument("--top", type=int, default=15, help="source lines shown by --memory")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument(
        "--middleware",
        choices=["none", "pass"],
        default="none",
        help="pass: one middleware that passes every message through",
    )
    args = parser.parse_args()
    if args.middleware == "pass":
        server.middleware.use(passing)
    if args.memory:
        trio.run(functools.partial(run_memory, args.mode, min(args.calls, 2000), top=args.top))
        return
    if args.wake:
        trio.run(run_wakes, min(args.calls, 2000))
        return
    if args.burst:
        clock = trio.testing.MockClock(autojump_threshold=0)
        best, median = trio.run(run_burst, args.burst, args.rounds, clock=clock)
        print(
            f"burst of {args.burst}: {best * 1e6:.1f} µs of CPU per call at best, "
            f"{median * 1e6:.1f} median"
        )
        return
    profiler = cProfile.Profile()
    if args.profile:
        profiler.enable()
    if args.sessions:
        seconds, size = trio.run(
            functools.partial(run_sessions, min(args.calls, 2000), memory=not args.profile)
        )
        per = f"{seconds * 1e6:.0f} µs of CPU and {size / 1024:.1f} KiB allocated per session"
    else:
        seconds = trio.run(functools.partial(run_calls, args.mode, args.calls, args.concurrency))
        per = f"{seconds * 1e6:.1f} µs of CPU per tools/call ({1 / seconds:,.0f} per CPU s)"
    if args.profile:
        profiler.disable()
        # MICRO_SORT and MICRO_LINES choose the profile's order and length.
        order = os.environ.get("MICRO_SORT", "tottime")
        pstats.Stats(profiler).sort_stats(order).print_stats(
            int(os.environ.get("MICRO_LINES", "30"))
        )
    print(f"{args.mode if not args.sessions else 'sessions'}: {per}")


if __name__ == "__main__":
    main()
