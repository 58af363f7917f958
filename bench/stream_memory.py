"""What one held stream costs the server, by owner: tracemalloc bytes and objects.

    python bench/stream_memory.py [--streams N] [--stateless] [--top K] [--frames F]

Starts bench/mcpactor_server.py's server (--json, as http_streams runs it) in a
subprocess with tracemalloc on, opens N sessions (2025-11-25; with --stateless none,
the 2026-07-28 shape), then holds N streams the way bench/harness/streams.py does (each
session's GET stream, or a ``subscriptions/listen`` POST, on its own connection), and
compares the server's heap before and after the streams. Printed: KB and objects per
held stream by owner (the innermost frame that says who allocated it), the biggest
allocation sites, and the types of the objects the cycle collector tracks. Counts, not
RSS: they do not move with the machine's load. (With sessions, the per-session figure
of the step before the streams is printed too.)
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import gc
import json
import linecache
import os
import socket
import subprocess
import sys
import tempfile
import time
import tracemalloc

HERE = os.path.dirname(os.path.abspath(__file__))

# Owners, by the innermost frame that matches (path fragment, function or "", owner).
OWNERS: list[tuple[str, str, str]] = [
    ("trio/_core/_io_epoll.py", "", "trio: epoll registration (wait_readable)"),
    ("trio/_core/_run.py", "spawn_impl", "trio: task objects + coroutine made by start_soon"),
    ("trio/_core/_run.py", "", "trio: nurseries, cancel scopes, task state"),
    ("trio/_core/_parking_lot.py", "", "trio: parking lots"),
    ("trio/_sync.py", "", "trio: events, locks"),
    ("trio/_channel.py", "", "trio: memory channels"),
    ("trio/", "", "trio: other"),
    ("mcpactor/transports/h1/_protocol.py", "", "h1: parser, request (headers, body)"),
    ("mcpactor/transports/h1/_connection.py", "", "h1: connection, exchange, socket reads"),
    ("mcpactor/transports/h1/_listener.py", "", "h1: listener (accept, socket object)"),
    ("mcpactor/transports/_http_writer.py", "", "stream writer (write_stream)"),
    ("mcpactor/transports/_streamable.py", "", "streamable endpoint (GET/POST)"),
    ("mcpactor/transports/_stateless_http.py", "", "stateless listen"),
    ("mcpactor/transports/", "", "transports: other"),
    ("mcpactor/runtime/http/_streams.py", "", "session stream + attachment"),
    ("mcpactor/runtime/http/_event_store.py", "", "event store / replay"),
    ("mcpactor/runtime/http/", "", "http session runtime"),
    ("mcpactor/runtime/", "", "runtime: other"),
    ("mcpactor/", "", "mcpactor: other"),
    ("socket.py", "", "socket objects"),
]


# --- the server side ---------------------------------------------------------------------


def serve(port: int, stateless: bool, frames: int) -> None:
    """Run the bench server with tracemalloc on; take snapshots when stdin asks."""
    sys.path.insert(0, HERE)
    import functools

    import mcpactor_server as bench
    import trio

    from mcpactor.transports.http import serve_http

    host, port, options = bench.http_args(["127.0.0.1", str(port), "--json"])

    async def snapshots() -> None:
        stdin = trio.lowlevel.FdStream(os.dup(0))
        pending = b""
        while True:
            data = await stdin.receive_some()
            if not data:
                return
            pending += data
            while b"\n" in pending:
                line, pending = pending.split(b"\n", 1)
                path = line.decode().strip()
                gc.collect()
                tracemalloc.take_snapshot().dump(path)
                kinds = collections.Counter(type(o).__qualname__ for o in gc.get_objects())
                await trio.Path(path + ".types").write_text(json.dumps(kinds))
                sys.stdout.write("ok\n")
                sys.stdout.flush()

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(snapshots)
            await serve_http(bench.server, host=host, port=port, options=options)

    del stateless  # the revision is the client's: one server serves both shapes
    tracemalloc.start(frames)
    trio.run(functools.partial(main))


# --- the client side ---------------------------------------------------------------------


class Server:
    """The server subprocess and its snapshots."""

    def __init__(self, stateless: bool, frames: int) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        args = [sys.executable, __file__, "--serve", str(self.port), "--frames", str(frames)]
        self.proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.dir = tempfile.mkdtemp(prefix="stream-memory-")
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    raise RuntimeError("the server did not start") from None
                time.sleep(0.1)

    def snap(self, name: str) -> tuple[tracemalloc.Snapshot, collections.Counter[str]]:
        path = os.path.join(self.dir, name)
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        self.proc.stdin.write(path.encode() + b"\n")
        self.proc.stdin.flush()
        if self.proc.stdout.readline().strip() != b"ok":
            raise RuntimeError("no snapshot")
        with open(path + ".types") as file:
            kinds = collections.Counter(json.load(file))
        return tracemalloc.Snapshot.load(path), kinds

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


def owner(traceback: tracemalloc.Traceback) -> tuple[str, str]:
    """Who allocated it (by OWNERS), and the innermost frame as file:line."""
    frames = list(traceback)  # oldest first
    site = ""
    for frame in reversed(frames):
        name = frame.filename.replace("\\", "/")
        if not site and ("mcpactor/" in name or "trio/" in name or "socket.py" in name):
            site = f"{_short(name)}:{frame.lineno}"
        for fragment, function, label in OWNERS:
            if fragment in name and (not function or _function(frame) == function):
                if label.startswith(("trio: task objects", "trio: nurseries")):
                    return label + _caller(frames), site
                return label, site
    return "other: " + (f"{_short(frames[-1].filename)}" if frames else "?"), site


def _caller(frames: list[tracemalloc.Frame]) -> str:
    # The mcpactor frame below trio's: whose task, scope or nursery it is.
    for frame in reversed(frames):
        if "mcpactor/" in frame.filename:
            return f" <- {_short(frame.filename)}:{frame.lineno}"
    return ""


def _function(frame: tracemalloc.Frame) -> str:
    # tracemalloc has no function names: the nearest "def" above the line says.
    for lineno in range(frame.lineno, 0, -1):
        line = linecache.getline(frame.filename, lineno).strip()
        if line.startswith(("def ", "async def ")):
            return line.split("def ", 1)[1].split("(", 1)[0]
    return ""


def _short(name: str) -> str:
    for marker in ("mcpactor/", "trio/", "lib/python"):
        at = name.find(marker)
        if at >= 0:
            return name[at:]
    return name


def report(
    title: str,
    before: tuple[tracemalloc.Snapshot, collections.Counter[str]],
    after: tuple[tracemalloc.Snapshot, collections.Counter[str]],
    n: int,
    top: int,
) -> None:
    """Print KB and objects per unit of what changed between the two snapshots."""
    stats = after[0].compare_to(before[0], "traceback")
    by_owner: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0])
    by_site: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0])
    for stat in stats:
        label, site = owner(stat.traceback)
        for table, key in ((by_owner, label), (by_site, site or label)):
            table[key][0] += stat.size_diff
            table[key][1] += stat.count_diff
    total = sum(v[0] for v in by_owner.values())
    count = sum(v[1] for v in by_owner.values())
    print(f"\n## {title}: {total / n / 1024:.2f} KB, {count / n:.1f} blocks per unit (n={n})\n")
    print("| owner | KB per unit | blocks per unit |\n| --- | ---: | ---: |")
    for label, (size, blocks) in sorted(by_owner.items(), key=lambda kv: -kv[1][0]):
        if abs(size) / n >= 16:
            print(f"| {label} | {size / n / 1024:.2f} | {blocks / n:.1f} |")
    print(f"\nTop {top} allocation sites (innermost mcpactor/trio frame):\n")
    print("| site | B per unit | blocks per unit | line |\n| --- | ---: | ---: | --- |")
    for site, (size, blocks) in sorted(by_site.items(), key=lambda kv: -kv[1][0])[:top]:
        path, _, lineno = site.rpartition(":")
        line = ""
        if lineno.isdigit():
            for stat in stats:
                for frame in stat.traceback:
                    if frame.filename.endswith(path):
                        line = linecache.getline(frame.filename, int(lineno)).strip()
                        break
                if line:
                    break
        print(f"| {site} | {size / n:.0f} | {blocks / n:.1f} | `{line[:70]}` |")
    kinds = after[1] - before[1]
    print("\nObjects the cycle collector tracks, per unit:\n")
    print(
        ", ".join(f"{k} {v / n:.1f}" for k, v in kinds.most_common() if v / n >= 0.5)
        + f" (total {sum(kinds.values()) / n:.1f})"
    )


async def hold(server: Server, n: int, stateless: bool, top: int) -> None:
    """Open n sessions, snapshot, hold a stream per session, snapshot, report."""
    sys.path.insert(0, HERE)
    from harness.runs import open_sessions
    from harness.streams import hold_streams
    from harness.wire import Endpoint, Revision

    revision = Revision("2026-07-28") if stateless else Revision()
    endpoint = Endpoint(f"http://127.0.0.1:{server.port}/mcp", revision)
    (warm,) = await open_sessions(endpoint, 1)
    del warm
    base = server.snap("base")
    sessions = await open_sessions(endpoint, n) if not stateless else [None] * n
    opened = server.snap("sessions")
    held = await hold_streams(endpoint, sessions)
    await asyncio.sleep(1.0)
    streams = server.snap("held")
    statuses = collections.Counter(h.opened.result() for h in held)
    print(f"# stream_memory: {n} streams, {'2026-07-28 listen' if stateless else 'GET'}")
    print(f"statuses {dict(statuses)}, still open {sum(not h.closed for h in held)}")
    if not stateless:
        report("per session (initialized, no stream)", base, opened, n, top // 2)
    report("per held stream (connection + stream)", opened, streams, n, top)
    for h in held:
        h.close()


def main() -> None:
    """Parse the arguments: the client by default, the server with --serve."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--streams", type=int, default=2000)
    parser.add_argument("--stateless", action="store_true", help="listen (2026-07-28), not GET")
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--frames", type=int, default=30)
    parser.add_argument("--serve", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve, args.stateless, args.frames)
        return
    server = Server(args.stateless, args.frames)
    try:
        asyncio.run(hold(server, args.streams, args.stateless, args.top))
    finally:
        server.close()


if __name__ == "__main__":
    main()
