"""The server ``bench/cancel_latency.py`` runs with ``python -m mcpactor serve``.

Its tools tell the bench what happens, and when, with a datagram on the Unix socket named
by ``CANCEL_LATENCY_SOCKET``: ``<event> <pid> <time.monotonic()>``. On Linux that clock
is CLOCK_MONOTONIC, one clock for every process of the machine, so the bench can
subtract its own readings from the server's.
"""

from __future__ import annotations

import os
import socket
import time

import mcpactor
from mcpactor import Server

server = Server("cancel-latency", version="1.0.0")


def _report(event: str) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        message = f"{event} {os.getpid()} {time.monotonic()!r}"
        sock.sendto(message.encode(), os.environ["CANCEL_LATENCY_SOCKET"])


@server.tool()
def spin() -> str:
    """Spin in a worker thread, calling check_cancelled() until the call is cancelled."""
    _report("started")
    try:
        while True:
            mcpactor.check_cancelled()
    finally:
        _report("ended")


@server.tool(offload="process")
def burn() -> int:
    """Count forever in a worker process, never checking for cancellation."""
    _report("started")
    count = 0
    while True:
        count += 1


@server.tool(offload="process")
def worker_pid() -> int:
    """Return the pid of the worker process that ran the call."""
    return os.getpid()
