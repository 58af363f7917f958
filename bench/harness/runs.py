"""The measurements, one function per test, and the order the harness runs them in."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import IO, Any

from .npm import ensure_installed
from .system import Meter, cpu_clock, free_port, rss_kb, stop
from .targets import ROUNDS_OF, THROUGHPUT_TESTS, Target, command, expand, http_cell_shape
from .wire import (
    ECHO_TEXT,
    Endpoint,
    HttpConnection,
    Response,
    StdioClient,
    messages,
    notification,
)

Metrics = dict[str, Any]
ECHO = {"name": "echo", "arguments": {"text": ECHO_TEXT}}


class Run:
    """Settings of one run of the harness, and its scratch folder (server stderr, event logs)."""

    def __init__(
        self,
        values: dict[str, str],
        *,
        duration: float = 2.0,
        warmup: float = 0.5,
        max_other: float = 25.0,
        retries: int = 3,
        verbose: bool = False,
        streams: int = 10_000,
    ) -> None:
        self.values = values  # the {placeholders} of the targets' commands
        self.duration = duration
        self.warmup = warmup
        self.max_other = max_other
        self.retries = retries
        self.verbose = verbose
        self.streams = streams  # sessions holding a stream open in http_streams
        self.scratch = Path(tempfile.mkdtemp(prefix="mcpbench-"))
        self._serial = itertools.count()

    def log(self, text: str) -> None:
        """A progress line on stderr (stdout is the report)."""
        print(text, file=sys.stderr, flush=True)

    def argv(self, target: Target, **extra: Any) -> list[str]:
        """The target's command line."""
        return command(target, {**self.values, **extra})

    def env(self, event_log: Path | None = None) -> dict[str, str]:
        """The servers' environment: ours, with the event log the sleep tool writes to."""
        env = dict(os.environ)
        env.pop("MCPBENCH_EVENT_LOG", None)
        if event_log is not None:
            env["MCPBENCH_EVENT_LOG"] = str(event_log)
        return env

    def stderr(self, target: Target) -> IO[bytes]:
        """Where a server's stderr goes: a file per spawn, kept for a look after a failure."""
        return open(self.scratch / f"{target.name}-{next(self._serial)}.stderr", "ab")

    def event_log(self) -> Path:
        """A fresh, empty event log."""
        path = self.scratch / f"events-{next(self._serial)}.log"
        path.write_text("")
        return path


# --- small pieces ------------------------------------------------------------------------


def percentile(values: list[float], p: float) -> float | None:
    """The p-th percentile, interpolating linearly between the two nearest ranks."""
    if not values:
        return None
    ordered = sorted(values)
    rank = (len(ordered) - 1) * p / 100
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def megabytes(kb: int | None) -> float | None:
    """kB as MB."""
    return None if kb is None else kb / 1024


def read_events(path: Path) -> list[tuple[str, float, str]]:
    """The event log's lines as (kind, unix time, how)."""
    out = []
    for line in path.read_text().splitlines():
        words = line.split()
        if len(words) >= 3:
            out.append((words[0], float(words[1]), words[3] if len(words) > 3 else ""))
    return out


async def wait_event(path: Path, kind: str, count: int, timeout: float) -> float | None:
    """The time of the count-th event of kind, once logged; None after timeout seconds."""
    deadline = time.monotonic() + timeout
    while True:
        times = [when for k, when, _ in read_events(path) if k == kind]
        if len(times) >= count:
            return times[count - 1]
        if time.monotonic() > deadline:
            return None
        await asyncio.sleep(0.002)


class PeakRss:
    """Samples a process tree's RSS every 50 ms while it is entered; .peak is the highest, kB."""

    def __init__(self, pid: int | None) -> None:
        self.pid = pid
        self.peak = 0
        self._task: asyncio.Task[None] | None = None

    def _sample(self) -> None:
        self.peak = max(self.peak, rss_kb(self.pid) or 0)

    async def _loop(self) -> None:
        while True:
            self._sample()
            await asyncio.sleep(0.05)

    def __enter__(self) -> PeakRss:
        self._sample()
        self._task = asyncio.get_running_loop().create_task(self._loop())
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()
        self._sample()


# --- closed-loop load --------------------------------------------------------------------

# A lane makes one call and reports it: with a function telling whether it succeeded,
# or with None when the lane is broken (connection closed, server gone).
Done = Callable[[Callable[[], bool] | None], None]
Lane = Callable[[Done], None]


class ClosedLoop:
    """Keeps every lane busy, one call after the other; records the calls answered in a window."""

    def __init__(self) -> None:
        self.measuring = False
        self.stopping = False
        self.latencies: list[float] = []
        self.errors = 0
        self._live = 0
        self._idle = asyncio.get_running_loop().create_future()

    def start(self, lane: Lane) -> None:
        """Put lane to work."""
        self._live += 1
        clock = time.perf_counter

        def next_call() -> None:
            sent = clock()

            def done(check: Callable[[], bool] | None) -> None:
                if self.measuring:
                    self.latencies.append(clock() - sent)
                    if check is None or not check():
                        self.errors += 1
                if check is not None and not self.stopping:
                    next_call()
                    return
                self._live -= 1
                if self._live == 0 and not self._idle.done():
                    self._idle.set_result(None)

            lane(done)

        next_call()

    async def measure(self, run: Run, pid: int | None) -> Metrics:
        """Measure a window of run.duration; while other processes used more than run.max_other
        % of a core meanwhile, up to run.retries more. The quietest window is kept."""
        best: Metrics | None = None
        windows = 0
        for windows in range(1, run.retries + 2):  # noqa: B007 - the count is reported
            self.latencies, self.errors = [], 0
            meter = Meter(pid)
            self.measuring = True
            await asyncio.sleep(run.duration)
            self.measuring = False
            window = throughput_metrics(self.latencies, self.errors, meter.read())
            if best is None or window.get("other_pct", 0) < best.get("other_pct", 0):
                best = window
            if window.get("other_pct", 0) <= run.max_other:
                break
        assert best is not None
        best["windows"] = windows
        return best

    async def finish(self, timeout: float = 60) -> None:
        """Stop making calls and wait for the ones in flight."""
        self.stopping = True
        await asyncio.wait_for(self._idle, timeout)


def throughput_metrics(latencies: list[float], errors: int, used: dict[str, Any]) -> Metrics:
    """A window's figures: calls per second, latency percentiles, CPU per call, machine load."""
    wall, n = used["wall"], len(latencies)
    out: Metrics = {
        "rps": n / wall if wall else 0.0,
        "p50_us": (percentile(latencies, 50) or 0) * 1e6,
        "p99_us": (percentile(latencies, 99) or 0) * 1e6,
        "cli_cpu_pct": 100 * used["cli_cpu"] / wall,
        "errors": errors,
        "n": n,
    }
    if used["srv_cpu"] is not None and n:
        out["srv_cpu_us"] = 1e6 * used["srv_cpu"] / n
        out["srv_cpu_pct"] = 100 * used["srv_cpu"] / wall
        if used.get("srv_sys") is not None:
            # of it, in the kernel (system calls: pipes, sockets, epoll)
            out["srv_sys_us"] = 1e6 * used["srv_sys"] / n
    for key in ("other_pct", "steal_pct"):
        if used.get(key) is not None:
            out[key] = used[key]
    return out


async def closed_loop(run: Run, pid: int | None, lanes: list[Lane]) -> Metrics:
    """Warm up under the lanes' load, measure, and drain."""
    load = ClosedLoop()
    for lane in lanes:
        load.start(lane)
    await asyncio.sleep(run.warmup)
    result = await load.measure(run, pid)
    await load.finish()
    return result


def stdio_lanes(client: StdioClient, width: int, tool: str) -> list[Lane]:
    """width lanes of tools/call on one stdio client."""
    template = client.revision.call_template(tool, {"text": ECHO_TEXT})
    check = client.revision.succeeded
    ids = itertools.count(1)

    def lane(done: Done) -> None:
        if client.exited.done():
            done(None)
            return
        rid = next(ids)
        client.expect(rid, lambda message: done(lambda: check(message)))
        client.write(template(rid) + b"\n")

    return [lane] * width


def http_lanes(
    endpoint: Endpoint, sessions: list[str | None], connections: list[HttpConnection]
) -> list[Lane]:
    """A lane per connection; call k of all goes to session k mod len(sessions).

    A lane whose connection the server closed (after a number of requests, or idle) goes
    on over a new one, which it puts in its place in connections; its next call pays
    for the connect. A call whose response was lost counts as an error.
    """
    template = endpoint.revision.call_template("echo", {"text": ECHO_TEXT})
    heads = {s: endpoint.post_head(s, method="tools/call", name="echo") for s in sessions}
    ids = itertools.count(1)
    loop = asyncio.get_running_loop()

    def make(slot: int) -> Lane:
        k = slot

        def send(done: Done) -> None:
            nonlocal k
            session = sessions[k % len(sessions)]
            k += len(connections)
            rid = next(ids)
            body = template(rid)

            def on_response(response: Response | None) -> None:
                done(lambda: response is not None and endpoint.answered(rid, response))

            data = heads[session] + b"%d\r\n\r\n" % len(body) + body
            connections[slot].send(data, on_response)

        def reconnected(task: asyncio.Task[HttpConnection], done: Done) -> None:
            if task.cancelled() or task.exception() is not None:
                done(None)  # the server is gone
                return
            connections[slot] = task.result()
            send(done)

        def lane(done: Done) -> None:
            if not connections[slot].closed:
                send(done)
                return
            task = loop.create_task(endpoint.connect())
            task.add_done_callback(lambda t: reconnected(t, done))

        return lane

    return [make(i) for i in range(len(connections))]


# --- stdio tests -------------------------------------------------------------------------


async def spawn_stdio(run: Run, target: Target, event_log: Path | None = None) -> StdioClient:
    """Start a stdio target."""
    with run.stderr(target) as err:
        return await StdioClient.start(run.argv(target), run.env(event_log), err, target.revision)


async def stdio_throughput(run: Run, target: Target, tests: list[str]) -> dict[str, Metrics]:
    """stdio_lat1 (one call in flight), stdio_pipe64 (64), and their _sync twins on echo_sync."""
    client = await spawn_stdio(run, target)
    out = {}
    try:
        await client.open()
        for test in tests:
            tool = "echo_sync" if test.endswith("_sync") else "echo"
            width = 64 if "pipe64" in test else 1
            out[test] = await closed_loop(run, client.pid, stdio_lanes(client, width, tool))
    finally:
        await client.close()
    return out


def burst_metrics(
    t0: float, replies: list[float], ok: int, base: int | None, peak: int, used: dict[str, Any]
) -> Metrics:
    """The figures of n calls sent at once: when the first and the last reply came, memory."""
    return {
        "wall_s": max(replies) - t0 if replies else None,
        "first_s": min(replies) - t0 if replies else None,
        "ok": ok,
        "answered": len(replies),
        "rss_base_mb": megabytes(base),
        "rss_peak_mb": megabytes(peak),
        "rss_delta_mb": megabytes(peak - base) if base else None,
        "srv_cpu_s": used["srv_cpu"],
    }


async def stdio_sleep1000(
    run: Run, target: Target, n: int = 1000, seconds: float = 1.0
) -> Metrics:
    """n calls of sleep(seconds) written at once: how long until all are answered, and memory."""
    client = await spawn_stdio(run, target)
    try:
        await client.open()
        for i in range(20):
            await client.call(
                f"w{i}", "tools/call", {"name": "sleep", "arguments": {"seconds": 0}}
            )
        await asyncio.sleep(0.3)
        base = rss_kb(client.pid)
        template = client.revision.call_template("sleep", {"seconds": seconds})
        replies: list[float] = []
        ok = 0
        all_in = asyncio.get_running_loop().create_future()

        def on_reply(message: dict[str, Any]) -> None:
            nonlocal ok
            replies.append(time.perf_counter())
            ok += client.revision.succeeded(message)
            if len(replies) == n and not all_in.done():
                all_in.set_result(None)

        for i in range(n):
            client.expect(i, on_reply)
        with PeakRss(client.pid) as rss:
            meter = Meter(client.pid)
            client.write(b"".join(template(i) + b"\n" for i in range(n)))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(all_in, seconds + 60)
            used = meter.read()
        return burst_metrics(meter.t0, replies, ok, base, rss.peak, used)
    finally:
        await client.close()


def cold_start(run: Run, target: Target) -> Metrics:
    """Spawn to the initialize reply (server/discover's where there is no handshake), in wall
    time and in the CPU the server used to get there; idle RSS; stdin closed to the exit."""
    with run.stderr(target) as err:
        t0 = time.perf_counter()
        process = subprocess.Popen(
            run.argv(target),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err,
            env=run.env(),
        )
        assert process.stdin is not None
        assert process.stdout is not None
        process.stdin.write(target.revision.request(1, *target.revision.opening()) + b"\n")
        process.stdin.flush()
        line = process.stdout.readline()
        t1 = time.perf_counter()
    # the CPU of all of the server's threads (Node's too) up to its answer: on a shared
    # machine the steadier figure, as waiting for a core is not in it; read from the CPU
    # clock, as whole ticks would make a start of 100-150 ms a few steps of 10
    cpu = cpu_clock(process.pid)
    rss = rss_kb(process.pid)
    t2 = time.perf_counter()
    process.stdin.close()
    try:
        process.wait(10)
        exit_ms: float | None = (time.perf_counter() - t2) * 1e3
    except subprocess.TimeoutExpired:
        exit_ms = None
        stop(process)
    process.stdout.close()
    answered = b'"result"' in line
    return {
        "init_ms": (t1 - t0) * 1e3 if answered else None,
        "init_cpu_ms": cpu * 1e3 if answered and cpu is not None else None,
        "rss_idle_mb": megabytes(rss),
        "exit_on_eof_ms": exit_ms,
    }


def progress_params(steps: int, token: str) -> dict[str, Any]:
    """A tools/call of progress(steps) asking for progress under token."""
    return {"name": "progress", "arguments": {"steps": steps}, "_meta": {"progressToken": token}}


def progress_metrics(reps: list[tuple[float, int, bool]], steps: int) -> Metrics:
    """Medians over the repetitions (duration, notifications seen, success)."""
    total = statistics.median(r[0] for r in reps)
    return {
        "total_ms": total * 1e3,
        "notifs": statistics.median(r[1] for r in reps),
        "us_per_step": total * 1e6 / steps,
        "ok": all(r[2] for r in reps),
    }


async def stdio_progress(run: Run, target: Target, steps: int = 200, reps: int = 3) -> Metrics:
    """progress(steps) with a progress token: time per step, notifications delivered."""
    client = await spawn_stdio(run, target)
    try:
        await client.open()
        results = []
        for rep in range(reps + 1):  # the first is a warm-up
            token = f"tok{rep}"
            seen = [0]

            def on_notification(
                message: dict[str, Any], token: str = token, seen: list[int] = seen
            ) -> None:
                params = message.get("params")
                if message.get("method") == "notifications/progress" and isinstance(params, dict):
                    seen[0] += params.get("progressToken") == token

            client.on_notification = on_notification
            t0 = time.perf_counter()
            reply = await client.call(f"p{rep}", "tools/call", progress_params(steps, token))
            elapsed = time.perf_counter() - t0
            await asyncio.sleep(0.05)  # notifications that trail the reply
            if rep:
                results.append((elapsed, seen[0], client.revision.succeeded(reply)))
        return progress_metrics(results, steps)
    finally:
        await client.close()


def sleep_call(seconds: float) -> dict[str, Any]:
    """The params of a tools/call of sleep."""
    return {"name": "sleep", "arguments": {"seconds": seconds}}


def cancelled(rid: str) -> bytes:
    """notifications/cancelled for rid."""
    return notification("notifications/cancelled", {"requestId": rid, "reason": "mcpbench"})


async def stdio_cancel(run: Run, target: Target, reps: int = 3, seconds: float = 10.0) -> Metrics:
    """Cancel a running sleep: until its finally ran, and until a next call is answered."""
    log = run.event_log()
    client = await spawn_stdio(run, target, log)
    try:
        await client.open()
        await client.call("warm", "tools/call", {"name": "echo", "arguments": {"text": "x"}})
        late: dict[str, list[dict[str, Any]]] = {}
        stop_ms: list[float] = []
        followup_ms: list[float] = []
        ends: list[str] = []
        last_sent = 0.0
        for k in range(reps):
            rid = f"cancel-{k}"
            late[rid] = []
            last_sent = time.time()
            client.expect(rid, late[rid].append)
            client.write(client.revision.request(rid, "tools/call", sleep_call(seconds)) + b"\n")
            if await wait_event(log, "start", k + 1, 5) is None:
                ends.append("never-started")
                continue
            t_cancel = time.time()
            client.write(cancelled(rid) + b"\n")
            reply = await client.call(f"follow-{k}", "tools/call", ECHO)
            if client.revision.succeeded(reply):
                followup_ms.append((time.time() - t_cancel) * 1e3)
            t_end = await wait_event(log, "end", k + 1, 1.5)
            if t_end is None:
                ends.append("still-running")
            else:
                stop_ms.append((t_end - t_cancel) * 1e3)
                ends.append([how for kind, _, how in read_events(log) if kind == "end"][k])
        # a response to a cancelled call would come when its sleep ended: wait past that
        await asyncio.sleep(max(0.0, last_sent + seconds + 0.8 - time.time()))
        kinds = {"error" if "error" in got[0] else "result" for got in late.values() if got}
        logged = [how for kind, _, how in read_events(log) if kind == "end"]
        return {
            "stop_ms": statistics.median(stop_ms) if stop_ms else None,
            "followup_ms": statistics.median(followup_ms) if followup_ms else None,
            "handler_end": ",".join(sorted(set(ends))),
            "late_responses": sum(1 for got in late.values() if got),
            "late_kinds": ",".join(sorted(kinds)) or "-",
            "ends_logged": len(logged),
            "ends_completed": logged.count("completed"),
        }
    finally:
        await client.close()


# --- HTTP tests --------------------------------------------------------------------------


class HttpServer:
    """An HTTP target for the time of a test: spawned on a free port, stopped afterwards."""

    def __init__(self, run: Run, target: Target, event_log: Path | None = None) -> None:
        self.run, self.target, self.event_log = run, target, event_log
        self.port = free_port() if target.cmd else None
        url = expand(target.url, {**run.values, "port": self.port})
        token = ""
        if target.bearer:
            token = Path(expand(target.bearer, run.values)).read_text().strip()
        self.endpoint = Endpoint(url, target.revision, token)
        self.process: subprocess.Popen[bytes] | None = None
        self.pid = target.pid

    async def __aenter__(self) -> HttpServer:
        if not self.target.cmd:
            return self
        with self.run.stderr(self.target) as err:
            self.process = subprocess.Popen(  # noqa: ASYNC220 - returns once spawned
                self.run.argv(self.target, port=self.port),
                stdin=subprocess.DEVNULL,
                stdout=err,
                stderr=err,
                env=self.run.env(self.event_log),
            )
        self.pid = self.process.pid
        deadline = time.monotonic() + 60
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"server exited with {self.process.returncode}")
            try:
                (await self.endpoint.connect()).close()
                return self
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("server did not listen within 60 s") from None
                await asyncio.sleep(0.02)

    async def __aexit__(self, *exc: object) -> None:
        if self.process is not None:
            await asyncio.get_running_loop().run_in_executor(None, stop, self.process)


async def open_sessions(endpoint: Endpoint, n: int, at_once: int = 16) -> list[str | None]:
    """n sessions, opened over at_once connections."""
    connections = await endpoint.connect_many(min(at_once, n))
    left = itertools.count(n, -1)
    out: list[str | None] = []

    async def worker(connection: HttpConnection) -> None:
        while next(left) > 0:
            out.append(await endpoint.open_session(connection))

    try:
        await asyncio.gather(*(worker(c) for c in connections))
    finally:
        for c in connections:
            c.close()
    return out


async def http_throughput(run: Run, target: Target, tests: list[str]) -> dict[str, Metrics]:
    """http_cC_sS: C connections with one echo in flight each, over S sessions."""
    out = {}
    async with HttpServer(run, target) as server:
        endpoint = server.endpoint
        wanted = 1 if target.stateless else max(http_cell_shape(t)[1] for t in tests)
        sessions = await open_sessions(endpoint, wanted)
        warm = await endpoint.connect()
        for i in range(50):
            await endpoint.call(warm, f"w{i}", "tools/call", ECHO, sessions[0])
        warm.close()
        for test in tests:
            width, count = http_cell_shape(test)
            connections = await endpoint.connect_many(width)
            try:
                lanes = http_lanes(endpoint, sessions[:count], connections)
                out[test] = await closed_loop(run, server.pid, lanes)
            finally:
                for c in connections:
                    c.close()
            await asyncio.sleep(0.1)
    return out


async def http_sleep1000(run: Run, target: Target, n: int = 1000, seconds: float = 1.0) -> Metrics:
    """n calls of sleep(seconds) at once, each on its own connection, in one session."""
    async with HttpServer(run, target) as server:
        endpoint = server.endpoint
        (session,) = await open_sessions(endpoint, 1)
        connections = await endpoint.connect_many(n)
        try:
            for c in connections[:20]:
                await endpoint.call(c, "w", "tools/call", sleep_call(0), session)
            await asyncio.sleep(0.3)
            base = rss_kb(server.pid)
            template = endpoint.revision.call_template("sleep", {"seconds": seconds})
            replies: list[float] = []
            statuses: dict[int | None, int] = {}
            ok = 0
            all_in = asyncio.get_running_loop().create_future()

            def on_reply(rid: int) -> Callable[[Response | None], None]:
                def got(response: Response | None) -> None:
                    nonlocal ok
                    replies.append(time.perf_counter())
                    status = None if response is None else response[0]
                    statuses[status] = statuses.get(status, 0) + 1
                    ok += response is not None and endpoint.answered(rid, response)
                    if len(replies) == n and not all_in.done():
                        all_in.set_result(None)

                return got

            posts = [endpoint.post(template(i), session) for i in range(n)]
            with PeakRss(server.pid) as rss:
                meter = Meter(server.pid)
                for i, (c, data) in enumerate(zip(connections, posts, strict=True)):
                    c.send(data, on_reply(i))
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(all_in, seconds + 60)
                used = meter.read()
            out = burst_metrics(meter.t0, replies, ok, base, rss.peak, used)
            out["statuses"] = ",".join(
                f"{k}:{v}" for k, v in sorted(statuses.items(), key=lambda kv: str(kv[0]))
            )
            return out
        finally:
            for c in connections:
                c.close()


async def http_sessions1000(run: Run, target: Target, n: int = 1000) -> Metrics:
    """Open n sessions: time and CPU per session, memory per session, and are they alive."""
    async with HttpServer(run, target) as server:
        endpoint = server.endpoint
        connection = await endpoint.connect()
        for s in await open_sessions(endpoint, 5):
            await endpoint.call(connection, "w", "tools/call", ECHO, s)
        connection.close()
        await asyncio.sleep(0.3)
        base = rss_kb(server.pid)
        meter = Meter(server.pid)
        sessions = await open_sessions(endpoint, n)
        used = meter.read()
        await asyncio.sleep(1.0)
        after = rss_kb(server.pid)
        alive = 0
        connection = await endpoint.connect()
        for s in random.Random(1).sample(sessions, 20):
            response = await endpoint.call(connection, "chk", "tools/call", ECHO, s)
            alive += response is not None and endpoint.answered("chk", response)
        connection.close()
        return {
            "create_s": used["wall"],
            "per_session_ms": 1e3 * used["wall"] / n,
            "unique_ids": len(set(sessions)),
            "rss_base_mb": megabytes(base),
            "rss_after_mb": megabytes(after),
            "kb_per_session": (after - base) / n if base and after else None,
            "srv_cpu_ms_per_session": (
                1e3 * used["srv_cpu"] / n if used["srv_cpu"] is not None else None
            ),
            "alive_of_20": alive,
        }


async def http_progress(run: Run, target: Target, steps: int = 200, reps: int = 3) -> Metrics:
    """progress(steps) with a progress token, over one POST."""
    async with HttpServer(run, target) as server:
        endpoint = server.endpoint
        (session,) = await open_sessions(endpoint, 1)
        connection = await endpoint.connect()
        results = []
        for rep in range(reps + 1):  # the first is a warm-up
            params = progress_params(steps, f"tok{rep}")
            t0 = time.perf_counter()
            response = await endpoint.call(
                connection, f"p{rep}", "tools/call", params, session, 60
            )
            elapsed = time.perf_counter() - t0
            got = [] if response is None else messages(response[1], response[2])
            notes = sum(
                1
                for m in got
                if isinstance(m, dict) and m.get("method") == "notifications/progress"
            )
            if rep:
                ok = response is not None and endpoint.answered(f"p{rep}", response)
                results.append((elapsed, notes, ok))
        connection.close()
        return progress_metrics(results, steps)


def describe_post(rid: str, response: Response | None) -> tuple[str, bool]:
    """What came back on a cancelled call's POST, and whether it was a JSON-RPC response."""
    if response is None:
        return "conn-closed", False
    status, headers, body = response
    mine = [m for m in messages(headers, body) if isinstance(m, dict) and m.get("id") == rid]
    if not mine:
        return (f"{status}-empty" if not body else f"{status}-no-jsonrpc-reply"), False
    error = mine[0].get("error")
    if isinstance(error, dict):
        return f"{status}+error({error.get('code')}: {str(error.get('message'))[:40]})", True
    return f"{status}+result", True


async def http_cancel(run: Run, target: Target, reps: int = 3, seconds: float = 10.0) -> Metrics:
    """Cancel a running sleep (its POST held open) with a notification on another connection."""
    log = run.event_log()
    async with HttpServer(run, target, log) as server:
        endpoint = server.endpoint
        (session,) = await open_sessions(endpoint, 1)
        control = await endpoint.connect()
        posts: dict[str, list[Response | None]] = {}
        held: list[HttpConnection] = []
        stop_ms: list[float] = []
        followup_ms: list[float] = []
        ends: list[str] = []
        notify_status: set[int | None] = set()
        last_sent = 0.0
        try:
            for k in range(reps):
                rid = f"cancel-{k}"
                connection = await endpoint.connect()
                held.append(connection)
                posts[rid] = []
                last_sent = time.time()
                data = endpoint.post(
                    endpoint.revision.request(rid, "tools/call", sleep_call(seconds)), session
                )
                connection.send(data, posts[rid].append)
                if await wait_event(log, "start", k + 1, 5) is None:
                    ends.append("never-started")
                    continue
                t_cancel = time.time()
                response = await control.exchange(endpoint.post(cancelled(rid), session))
                notify_status.add(None if response is None else response[0])
                response = await endpoint.call(control, f"follow-{k}", "tools/call", ECHO, session)
                if response is not None and endpoint.answered(f"follow-{k}", response):
                    followup_ms.append((time.time() - t_cancel) * 1e3)
                t_end = await wait_event(log, "end", k + 1, 1.5)
                if t_end is None:
                    ends.append("still-running")
                else:
                    stop_ms.append((t_end - t_cancel) * 1e3)
                    ends.append([how for kind, _, how in read_events(log) if kind == "end"][k])
                await asyncio.sleep(0.3)
            await asyncio.sleep(max(0.0, last_sent + seconds + 0.8 - time.time()))
        finally:
            for c in [*held, control]:
                c.close()
        kinds, late = set(), 0
        for rid, got in posts.items():
            if not got:
                kinds.add("no-reply(open)")
                continue
            kind, is_reply = describe_post(rid, got[0])
            kinds.add(kind)
            late += is_reply
        logged = [how for kind, _, how in read_events(log) if kind == "end"]
        return {
            "stop_ms": statistics.median(stop_ms) if stop_ms else None,
            "followup_ms": statistics.median(followup_ms) if followup_ms else None,
            "handler_end": ",".join(sorted(set(ends))),
            "cancel_http_status": ",".join(str(s) for s in sorted(notify_status, key=str)),
            "late_responses": late,
            "orig_post": ",".join(sorted(kinds)),
            "ends_logged": len(logged),
            "ends_completed": logged.count("completed"),
        }


# --- the order of a run ------------------------------------------------------------------

Record = Callable[[Target, str, int, Metrics], None]


def groups_of(tests: list[str]) -> list[list[str]]:
    """The throughput tests as one group (one server serves them all), then each other test."""
    throughput = [t for t in tests if t in THROUGHPUT_TESTS]
    return ([throughput] if throughput else []) + [[t] for t in tests if t not in THROUGHPUT_TESTS]


def rotated(targets: list[Target], round_no: int) -> list[Target]:
    """The targets in the order of a round: each round starts one further along."""
    k = round_no % len(targets)
    return targets[k:] + targets[:k]


SINGLE: dict[tuple[str, str], Callable[[Run, Target], Awaitable[Metrics]]] = {
    ("stdio", "stdio_sleep1000"): stdio_sleep1000,
    ("stdio", "progress"): stdio_progress,
    ("stdio", "cancel"): stdio_cancel,
    ("http", "http_sleep1000"): http_sleep1000,
    ("http", "http_sessions1000"): http_sessions1000,
    ("http", "progress"): http_progress,
    ("http", "cancel"): http_cancel,
}


async def run_group(
    run: Run, target: Target, tests: list[str], round_no: int
) -> dict[str, Metrics]:
    """One target's share of a round: the tests of one group."""
    if tests == ["cold_start"]:
        if round_no == 0:
            cold_start(run, target)  # discarded: byte-compiling, filling the page cache
        return {"cold_start": cold_start(run, target)}
    if tests[0] in THROUGHPUT_TESTS:
        runner = stdio_throughput if target.kind == "stdio" else http_throughput
        return await runner(run, target, tests)
    (test,) = tests
    if test == "http_streams":
        from .streams import http_streams  # it builds on this module

        return {test: await http_streams(run, target)}
    return {test: await SINGLE[target.kind, test](run, target)}


async def run_all(
    run: Run, targets: list[Target], tests: list[str], rounds: int, record: Record
) -> None:
    """Every test on every target it applies to, round after round; failures are recorded.

    A target needing npm packages gets them installed first; one that cannot fails each
    of its tests with the reason, and the rest run.
    """
    targets = list(targets)
    for target in [t for t in targets if t.npm]:
        todo = [t for t in tests if target.runs(t)]
        try:
            ensure_installed(Path(expand(target.npm, run.values)))
        except (OSError, RuntimeError, subprocess.SubprocessError) as exc:
            run.log(f"  !! {target.name}: {exc}")
            for test in todo:
                record(target, test, 0, {"failed": f"npm: {exc}"[:120]})
            targets.remove(target)
    if not targets:
        return
    for group in groups_of(tests):
        group_rounds = ROUNDS_OF.get(group[0], rounds) if len(group) == 1 else rounds
        for round_no in range(group_rounds):
            for target in rotated(targets, round_no):
                todo = [t for t in group if target.runs(t)]
                if not todo:
                    continue
                at = f"[{time.strftime('%H:%M:%S')}] round {round_no + 1}/{group_rounds}"
                run.log(f"{at} {target.name}: {','.join(todo)}")
                try:
                    results = await run_group(run, target, todo, round_no)
                except Exception as exc:  # the table shows the failure; the run goes on
                    run.log(f"  !! {target.name} {todo}: {type(exc).__name__}: {exc}")
                    failed = {"failed": f"{type(exc).__name__}: {exc}"[:120]}
                    results = dict.fromkeys(todo, failed)
                for test, metrics in results.items():
                    record(target, test, round_no, metrics)
