"""What the process-pool leak test runs in worker processes (a module of its own, so a
worker imports nothing heavy)."""

from __future__ import annotations

import os
import socket


def hold(address: str) -> int:
    """Check in at ``address`` (a Unix socket) with our pid, wait for a byte, return the pid.

    The test holds each worker busy until it sends the byte, or kills it by cancelling.
    """
    with socket.socket(socket.AF_UNIX) as sock:
        sock.connect(address)
        sock.sendall(f"{os.getpid()}\n".encode())
        sock.recv(1)
    return os.getpid()
