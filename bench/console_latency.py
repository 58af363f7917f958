"""The admin console's latency beside the load driver's: do their p95s agree?

    python bench/console_latency.py [--connections 16] [--seconds 20] [--out FILE.json]
        [--tolerance 0.10]

Starts ``mcpactor serve --http ... --json-response --admin ...`` on bench/mcpactor_server.py
and drives it as bench/mcpbench.py does (its asyncio lanes of raw HTTP/1.1 keep-alive, one
call in flight per connection): half the connections call the quick ``echo`` back to back,
the other half ``sleep`` for 20 ms. Each call's time is taken by the driver from the
request written to the response read whole. Then the console's ``/api/rates`` is read
(its window covers the whole run) and its requests, rate and p95 per tool are set beside
the driver's. The console times a call from its request read whole to its answer handed
to the socket (docs/operations.md, *Rates and latency*): what remains between the two is
outside the server's process. Exit status 1 when a tool's p95 or rate differs from the
driver's by more than ``--tolerance`` (the bench's check; unit tests assert no timing).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from harness.runs import percentile  # noqa: E402
from harness.system import free_port, stop  # noqa: E402
from harness.wire import Endpoint, HttpConnection, Response  # noqa: E402

TOKEN = "console-latency-bench-token-0123456789"
#: the slow tool's time
SLOW = 0.020


def _serve(port: int, admin: int, token_file: str) -> subprocess.Popen[bytes]:
    argv = [
        sys.executable,
        "-m",
        "mcpactor",
        "serve",
        "--http",
        f"127.0.0.1:{port}",
        "--json-response",
        "--admin",
        f"127.0.0.1:{admin}",
        "--admin-token-file",
        token_file,
        "-q",
        f"{HERE / 'mcpactor_server.py'}:server",
    ]
    return subprocess.Popen(argv, stdin=subprocess.DEVNULL)


async def _ready(endpoint: Endpoint, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited with {process.returncode}")
        try:
            (await endpoint.connect()).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError("the server did not listen within 60 s") from None
            await asyncio.sleep(0.05)


async def _lane(
    endpoint: Endpoint,
    session: str | None,
    tool: str,
    arguments: dict[str, Any],
    ids: itertools.count[int],
    until: float,
    times: list[float],
    errors: list[int],
) -> None:
    # One connection, one call in flight, back to back until ``until``.
    connection: HttpConnection = await endpoint.connect()
    template = endpoint.revision.call_template(tool, arguments)
    head = endpoint.post_head(session, method="tools/call", name=tool)
    loop = asyncio.get_running_loop()
    clock = time.perf_counter
    try:
        while clock() < until:
            rid = next(ids)
            body = template(rid)
            answered: asyncio.Future[Response | None] = loop.create_future()
            sent = clock()
            connection.send(head + b"%d\r\n\r\n" % len(body) + body, answered.set_result)
            response = await answered
            times.append(clock() - sent)
            if response is None or not endpoint.answered(rid, response):
                errors.append(rid)
    finally:
        connection.close()


def _rates(admin: int, window: float) -> dict[str, Any]:
    request = urllib.request.Request(
        f"http://127.0.0.1:{admin}/api/rates?window={window:.0f}",
        headers={"Authorization": f"Bearer {TOKEN}"},
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        return json.loads(answer.read())  # type: ignore[no-any-return]


async def measure(connections: int, seconds: float) -> dict[str, Any]:
    """Run the load, read the console, and return both sides' figures per tool."""
    port, admin = free_port(), free_port()
    with tempfile.NamedTemporaryFile("w", suffix=".token", delete=False) as file:
        file.write(TOKEN + "\n")
    process = _serve(port, admin, file.name)
    try:
        endpoint = Endpoint(f"http://127.0.0.1:{port}/mcp")
        await _ready(endpoint, process)
        opener = await endpoint.connect()
        sessions = [await endpoint.open_session(opener) for _ in range(connections)]
        opener.close()
        tools = {"echo": {"text": "ping"}, "sleep": {"seconds": SLOW}}
        times: dict[str, list[float]] = {tool: [] for tool in tools}
        errors: list[int] = []
        ids = itertools.count(1000)
        started = time.perf_counter()
        until = started + seconds
        await asyncio.gather(
            *(
                _lane(endpoint, session, tool, tools[tool], ids, until, times[tool], errors)
                for session, tool in zip(sessions, itertools.cycle(list(tools)), strict=False)
            )
        )
        wall = time.perf_counter() - started
        console = _rates(admin, max(60.0, seconds + 10))
    finally:
        stop(process)
        os.unlink(file.name)
    rows = {row["name"]: row for row in console["tools"] if row["method"] == "tools/call"}
    out: dict[str, Any] = {
        "connections": connections,
        "seconds": round(wall, 2),
        "errors": len(errors),
        "tools": {},
    }
    for tool, measured in times.items():
        row = rows.get(tool, {})
        out["tools"][tool] = {
            "driver": {
                "calls": len(measured),
                "rate": round(len(measured) / wall, 1),
                "p50_ms": round((percentile(measured, 50) or 0) * 1e3, 3),
                "p95_ms": round((percentile(measured, 95) or 0) * 1e3, 3),
                "p99_ms": round((percentile(measured, 99) or 0) * 1e3, 3),
            },
            "console": {
                "calls": row.get("requests"),
                "rate": row.get("rate"),
                "p50_ms": _ms(row.get("p50")),
                "p95_ms": _ms(row.get("p95")),
                "p99_ms": _ms(row.get("p99")),
            },
        }
    return out


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1e3, 3)


def judged(figures: dict[str, Any], tolerance: float) -> list[str]:
    """What differs by more than ``tolerance``: one line per tool and figure."""
    wrong = []
    for tool, sides in figures["tools"].items():
        driver, console = sides["driver"], sides["console"]
        if console["calls"] != driver["calls"]:
            wrong.append(f"{tool}: {console['calls']} calls counted, {driver['calls']} made")
        p95 = console["p95_ms"]
        if p95 is None or abs(p95 - driver["p95_ms"]) > tolerance * driver["p95_ms"]:
            wrong.append(f"{tool}: p95 {p95} ms on the console, {driver['p95_ms']} ms measured")
    return wrong


def table(figures: dict[str, Any]) -> str:
    """The comparison as a Markdown table."""
    lines = [
        "| tool | calls (driver / console) | p50 ms (driver / console) "
        "| p95 ms (driver / console) | p99 ms (driver / console) |",
        "|---|---|---|---|---|",
    ]
    for tool, sides in figures["tools"].items():
        d, c = sides["driver"], sides["console"]
        lines.append(
            f"| {tool} | {d['calls']} / {c['calls']} | {d['p50_ms']} / {c['p50_ms']} "
            f"| {d['p95_ms']} / {c['p95_ms']} | {d['p99_ms']} / {c['p99_ms']} |"
        )
    return "\n".join(lines)


def main() -> int:
    """Run the comparison, print it, and judge it."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--connections", type=int, default=16)
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--tolerance", type=float, default=0.10)
    ap.add_argument("--out", help="write the figures (JSON) here")
    args = ap.parse_args()
    figures = asyncio.run(measure(args.connections, args.seconds))
    print(table(figures))
    if args.out:
        Path(args.out).write_text(json.dumps(figures, indent=2) + "\n")
    wrong = judged(figures, args.tolerance)
    for line in wrong:
        print("differs:", line)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
