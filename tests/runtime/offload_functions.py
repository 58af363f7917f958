"""Functions the process-offload tests run in worker processes.

They live in a module of their own because a worker imports a function by its module
path; the module imports nothing heavy, so a fresh worker starts quickly.
"""

from __future__ import annotations

import os
import socket


class OpaqueError(Exception):
    """An exception whose constructor does not take its ``args``: it cannot be unpickled."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def worker_pid() -> int:
    """Return the id of the process running this."""
    return os.getpid()


def spin_forever(address: str) -> None:
    """Tell ``address`` (a Unix socket) our pid, then spin without ever checking back."""
    with socket.socket(socket.AF_UNIX) as sock:
        sock.connect(address)
        sock.sendall(str(os.getpid()).encode())
    count = 0
    while True:
        count += 1


def fail(message: str) -> None:
    """Raise ValueError(message)."""
    raise ValueError(message)


def fail_opaquely() -> None:
    """Raise an exception that does not survive pickling."""
    raise OpaqueError(-32000, "custom failure")


def chatty(text: str) -> str:
    """Print to stdout (which must not reach the pipe to the parent), then answer."""
    print("this goes to stderr, not into the protocol")
    return text.upper()


def leave() -> None:
    """End the worker process in the middle of a call."""
    os._exit(3)


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b
