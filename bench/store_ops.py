"""Redis operations per tools/call, and whose CPU a call costs, for the store targets.

    python bench/store_ops.py [--python PY] [--calls 1000] [--connections 16] [--idle 2] [--sse]

For the in-memory server, then one and two workers sharing a Redis store (each beside a
fresh ``redis-server``, bench/with_redis.py), it serves bench/mcpactor_server.py as
``mcpactor serve --http ... --response-mode json [--store URL] [--workers 2]``, opens one
session, warms every worker up, and makes --calls echo calls over --connections
keep-alive connections, one call in flight on each. Around the calls it reads Redis's
``INFO commandstats`` (reset first with ``CONFIG RESETSTAT``) and the CPU time of the
server's process tree and of redis-server, each on its own: the harness's CPU figure
for a store target is their sum. It prints markdown: the commands per call by command,
Redis's own time in them, and CPU per call (server, Redis), plus the commands Redis
sees per second with no calls at all (the replicas' background: subscriptions,
heartbeats), measured for --idle seconds before the calls and not subtracted. With --sse
the server answers every call in SSE (``--response-mode sse``): each call's stream is
stored for resumption, and holds a lease while it runs.

PY is a python with mcpactor and its redis extra installed (default: the bench venv's,
.bench-venvs/mcpactor). It runs with the driver's python (orjson), as bench/run.sh does.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from harness.system import cpu_seconds, free_port, stop  # noqa: E402
from harness.wire import ECHO_TEXT, Endpoint, HttpConnection  # noqa: E402
from with_redis import Redis, running_redis  # noqa: E402

ECHO = {"name": "echo", "arguments": {"text": ECHO_TEXT}}
# Commands this script sends itself, left out of the counts.
OWN = {"info", "config"}
CONFIGS = {  # name -> (workers, with a store)
    "memory": (1, False),
    "redis-w1": (1, True),
    "redis-w2": (2, True),
}


def command_stats(redis: Redis) -> dict[str, tuple[int, int]]:
    """command -> (calls, microseconds) since the last CONFIG RESETSTAT, without ours."""
    out = {}
    for line in redis.command("INFO", "commandstats").decode().splitlines():
        if not line.startswith("cmdstat_"):
            continue
        name, _, fields = line[len("cmdstat_") :].partition(":")
        values = dict(f.split("=", 1) for f in fields.split(","))
        if name.split("|")[0] not in OWN:
            out[name] = (int(values["calls"]), int(values["usec"]))
    return out


def reset_stats(redis: Redis) -> None:
    """Zero Redis's command statistics."""
    redis.command("CONFIG", "RESETSTAT")


def relay_subscribers(redis: Redis, channel: str = "mcpactor:relay") -> int:
    """How many processes listen on the replicas' shared relay channel."""
    with redis.connect() as s:
        s.sendall(b"PUBSUB NUMSUB %s\r\n" % channel.encode())
        data = b""
        while data.count(b"\r\n") < 4:  # *2, $len, the name, :count
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
    return int(data.rstrip().rpartition(b":")[2])


async def wait_replicas(redis: Redis, count: int, timeout: float = 60) -> None:
    """Until count processes have subscribed to the relay: every worker is up."""
    deadline = time.monotonic() + timeout
    while relay_subscribers(redis) < count:
        if time.monotonic() > deadline:
            raise RuntimeError(f"fewer than {count} replicas subscribed within {timeout:g} s")
        await asyncio.sleep(0.05)


@contextlib.contextmanager
def maybe_redis(wanted: bool) -> Iterator[Redis | None]:
    """A fresh redis-server for the block, or None."""
    if not wanted:
        yield None
        return
    with running_redis() as redis:
        yield redis


async def started(argv: list[str], port: int, log: Path) -> subprocess.Popen[bytes]:
    """argv, spawned and listening on port."""
    with log.open("ab") as err:
        process = subprocess.Popen(  # noqa: ASYNC220 - returns once spawned
            argv, stdin=subprocess.DEVNULL, stdout=err, stderr=err
        )
    endpoint = Endpoint(f"http://127.0.0.1:{port}/mcp")
    deadline = time.monotonic() + 60
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"{argv!r} exited with {process.returncode}; see {log}")
        try:
            (await endpoint.connect()).close()
            return process
        except OSError:
            if time.monotonic() > deadline:
                stop(process)
                raise RuntimeError(f"{argv!r} did not listen within 60 s") from None
            await asyncio.sleep(0.05)


async def calls(
    endpoint: Endpoint, connections: list[HttpConnection], session: str | None, n: int
) -> int:
    """n echo calls, one in flight per connection; how many failed."""
    left = itertools.count(n, -1)
    ids = itertools.count()
    failed = 0

    async def lane(connection: HttpConnection) -> None:
        nonlocal failed
        while next(left) > 0:
            rid = next(ids)
            response = await endpoint.call(connection, rid, "tools/call", ECHO, session)
            failed += response is None or not endpoint.answered(rid, response)

    await asyncio.gather(*(lane(c) for c in connections))
    return failed


async def measure(
    python: str,
    workers: int,
    store: bool,
    *,
    n: int,
    cpu_calls: int,
    width: int,
    idle: float,
    log: Path,
    sse: bool = False,
) -> dict[str, Any]:
    """One configuration's figures."""
    with maybe_redis(store) as redis:
        port = free_port()
        argv = [python, "-m", "mcpactor", "serve", str(BENCH / "mcpactor_server.py")]
        argv += ["--http", f"127.0.0.1:{port}"]
        argv += ["--response-mode", "sse" if sse else "json"]
        if redis is not None:
            argv += ["--store", redis.url]
        if workers > 1:
            argv += ["--workers", str(workers)]
        process = await started(argv, port, log)
        try:
            endpoint = Endpoint(f"http://127.0.0.1:{port}/mcp")
            connections = await endpoint.connect_many(width)
            out: dict[str, Any] = {}
            if redis is not None:
                await wait_replicas(redis, workers)
                reset_stats(redis)
            session = await endpoint.open_session(connections[0])
            # the first calls: every worker (the kernel spreads the connections over them)
            # meets the session and reads its record
            failed = await calls(endpoint, connections, session, n)
            if redis is not None:
                out["first"] = command_stats(redis)
                reset_stats(redis)
                await asyncio.sleep(idle)
                out["idle"] = command_stats(redis)
                out["idle_s"] = idle
                reset_stats(redis)
            failed += await calls(endpoint, connections, session, n)
            if redis is not None:
                out["calls"] = command_stats(redis)
            # CPU over more calls: /proc counts it in ticks of 10 ms
            redis_cpu0 = cpu_seconds(redis.process.pid) if redis else None
            server_cpu0 = cpu_seconds(process.pid)
            t0 = time.perf_counter()
            failed += await calls(endpoint, connections, session, cpu_calls)
            out["wall_s"] = time.perf_counter() - t0
            out["server_cpu_s"] = (cpu_seconds(process.pid) or 0) - (server_cpu0 or 0)
            if redis is not None:
                out["redis_cpu_s"] = (cpu_seconds(redis.process.pid) or 0) - (redis_cpu0 or 0)
            out["failed"] = failed
            for c in connections:
                c.close()
            return out
        finally:
            stop(process)


def per_call(value: float, n: int) -> str:
    """A figure per call, to two decimals."""
    return f"{value / n:.2f}"


def counted(count: int, n: int) -> str:
    """Commands per call, and how many there were in all."""
    return f"{count / n:.3f} ({count})"


def row(label: str, cells: list[str]) -> str:
    """A markdown table row."""
    return f"| {label} | " + " | ".join(cells) + " |"


def command_rows(stats: list[dict[str, tuple[int, int]]], n: int, what: str) -> list[str]:
    """Commands per call by command, their sum and Redis's time in them."""
    commands = sorted({c for s in stats for c in s})
    lines = [
        row(f"{what}: {c}", [counted(s.get(c, (0, 0))[0], n) for s in stats]) for c in commands
    ]
    lines.append(
        row(f"{what}: **all**", [counted(sum(c for c, _ in s.values()), n) for s in stats])
    )
    lines.append(
        row(
            f"{what}: Redis µs per call",
            [per_call(sum(u for _, u in s.values()), n) for s in stats],
        )
    )
    return lines


def report(results: dict[str, dict[str, Any]], n: int, cpu_calls: int, width: int) -> str:
    """The markdown tables."""
    names = list(results)
    stored = [name for name in names if "calls" in results[name]]
    first = [results[name]["first"] for name in stored]
    steady = [results[name]["calls"] for name in stored]
    idle = [
        sum(c for c, _ in results[name]["idle"].values()) / results[name]["idle_s"]
        for name in stored
    ]
    lines = [
        f"tools/call (echo) in one session over {width} keep-alive connections. Redis "
        "commands per call (INFO commandstats): over the session's opening and its first "
        f"{n} calls, then over {n} more; CPU per call over {cpu_calls} calls after them.\n",
        row("Redis commands per call (in all)", stored),
        "|---|" + "---|" * len(stored),
        *command_rows(first, n, f"opening + first {n}"),
        *command_rows(steady, n, f"next {n}"),
        row("commands per second with no calls", [f"{i:.1f}" for i in idle]),
        "",
        row("CPU per call, µs", names),
        "|---|" + "---|" * len(names),
        row(
            "server (its process tree)",
            [per_call(1e6 * results[name]["server_cpu_s"], cpu_calls) for name in names],
        ),
        row(
            "redis-server",
            [
                per_call(1e6 * results[name]["redis_cpu_s"], cpu_calls) if name in stored else "–"
                for name in names
            ],
        ),
        row(
            "calls/s here (a check, not the benchmark)",
            [f"{cpu_calls / results[name]['wall_s']:,.0f}" for name in names],
        ),
        row("failed calls", [str(results[name]["failed"]) for name in names]),
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """The command line."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--python", default=str(BENCH.parent / ".bench-venvs/mcpactor/bin/python"))
    ap.add_argument("--calls", type=int, default=1000, help="calls whose commands are counted")
    ap.add_argument("--cpu-calls", type=int, default=10000, help="calls whose CPU is measured")
    ap.add_argument("--connections", type=int, default=16)
    ap.add_argument("--idle", type=float, default=2.0, help="seconds of no calls, measured")
    ap.add_argument("--only", help=f"comma list of {', '.join(CONFIGS)}")
    ap.add_argument("--sse", action="store_true", help="answer in SSE, not JSON")
    args = ap.parse_args(argv)
    wanted = args.only.split(",") if args.only else list(CONFIGS)
    log = Path(tempfile.mkdtemp(prefix="store-ops-")) / "server.stderr"
    results = {}
    for name in wanted:
        workers, store = CONFIGS[name]
        print(f"store_ops: {name}", file=sys.stderr, flush=True)
        results[name] = asyncio.run(
            measure(
                args.python,
                workers,
                store,
                n=args.calls,
                cpu_calls=args.cpu_calls,
                width=args.connections,
                idle=args.idle,
                log=log,
                sse=args.sse,
            )
        )
    print(report(results, args.calls, args.cpu_calls, args.connections))
    return 0


if __name__ == "__main__":
    sys.exit(main())
