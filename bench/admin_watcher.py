"""Watch a server's admin page as a browser would: hold its SSE stream open at the page's
update rate (two snapshots a second) until the server goes away.

    MCPBENCH_ADMIN_TOKEN=... python bench/admin_watcher.py http://127.0.0.1:PORT/

It detaches at once (a double fork into a session of its own), so its CPU and memory are
not counted in the server's process tree: what the bench measures is what watching costs
the server, not the browser. Bounded: it stops when the stream ends or stalls for 10 s,
and after an hour at most. With MCPBENCH_ADMIN_LOG=FILE it appends "watching PID" once
connected, then each event's time and size, then "done EVENTS".
"""

from __future__ import annotations

import http.client
import os
import sys
import time
import urllib.parse
from typing import TextIO

#: the page's own rate (api/stream?interval=0.5 in mcpactor/admin/static/app.js)
INTERVAL = 0.5
MAX_SECONDS = 3600.0
CONNECT_SECONDS = 30.0
STALL_SECONDS = 10.0


def _detach() -> None:
    # The parent returns to the server at once; the grandchild is nobody's child there.
    if os.fork() > 0:
        os._exit(0)
    os.setsid()
    if os.fork() > 0:
        os._exit(0)
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1):
        os.dup2(devnull, fd)


def _connect(url: urllib.parse.SplitResult, token: str) -> http.client.HTTPResponse:
    deadline = time.monotonic() + CONNECT_SECONDS
    while True:
        connection = http.client.HTTPConnection(
            url.hostname or "127.0.0.1", url.port or 80, timeout=STALL_SECONDS
        )
        try:
            connection.request(
                "GET",
                f"{url.path.rstrip('/')}/api/stream?interval={INTERVAL}",
                headers={"Authorization": f"Bearer {token}", "Accept": "text/event-stream"},
            )
            response = connection.getresponse()
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
            continue
        if response.status != 200:
            raise SystemExit(f"admin_watcher: the stream answered {response.status}")
        return response


def _open_log(path: str) -> TextIO | None:
    # Never blocks: a FIFO nobody reads (ENXIO) means no log, not a watcher stuck forever.
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK, 0o644)
    except OSError:
        return None
    os.set_blocking(fd, True)
    return open(fd, "a", buffering=1)


def watch(base: str, token: str, log: str | None) -> int:
    """Read the stream until it ends, stalls or MAX_SECONDS pass; the events read."""
    url = urllib.parse.urlsplit(base)
    response = _connect(url, token)
    started = time.monotonic()
    events = 0
    size = 0
    out = _open_log(log) if log else None
    if out is not None:
        out.write(f"watching {os.getpid()}\n")
    try:
        while time.monotonic() - started < MAX_SECONDS:
            try:
                line = response.readline(1 << 22)
            except OSError:
                break
            if not line:
                break
            size += len(line)
            if line == b"\n":
                events += 1
                if out is not None:
                    out.write(f"{time.time():.3f} {size}\n")
                size = 0
    finally:
        if out is not None:
            out.write(f"done {events}\n")
            out.close()
    return events


def main(argv: list[str]) -> None:
    """Detach, then watch the admin page at ``argv[1]`` with MCPBENCH_ADMIN_TOKEN."""
    if len(argv) != 2:
        sys.exit(f"usage: MCPBENCH_ADMIN_TOKEN=... {argv[0]} ADMIN_URL")
    token = os.environ.get("MCPBENCH_ADMIN_TOKEN", "")
    if not token:
        sys.exit("admin_watcher: MCPBENCH_ADMIN_TOKEN is not set")
    _detach()
    watch(argv[1], token, os.environ.get("MCPBENCH_ADMIN_LOG"))


if __name__ == "__main__":
    main(sys.argv)
