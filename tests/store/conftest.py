"""A real redis-server for the store's tests, started once per test module.

The server listens on a Unix socket in a temporary directory, with persistence off; a
test that needs TCP (a replica process given ``--store redis://...``) asks for
``redis_port`` instead, which starts one listening on a free loopback port.
"""

from __future__ import annotations

import random
import shutil
import socket
import subprocess
import tempfile
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path

import coredis
import pytest

REDIS = shutil.which("redis-server")
#: for a test that starts a redis-server of its own (``running_redis``) outside the fixtures
needs_redis = pytest.mark.skipif(
    REDIS is None, reason="redis-server is not installed (CI installs Debian's redis-server)"
)


class PortTaken(Exception):
    """The port a redis-server was given was taken before it could bind it."""


@contextmanager
def running_redis(*arguments: str) -> Iterator[str]:
    """Run a redis-server with ``arguments`` until the block ends; yields its directory."""
    assert REDIS is not None, "no redis-server: mark the test with needs_redis"
    with tempfile.TemporaryDirectory(prefix="mcpactor-redis-") as directory:
        process = subprocess.Popen(
            [REDIS, *arguments, "--save", "", "--appendonly", "no", "--dir", directory],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert process.stdout is not None
            said: list[str] = []
            for line in process.stdout:
                if "ready to accept connections" in line.lower():
                    break
                said = [*said[-9:], line.rstrip()]
            else:
                if any("address already in use" in line.lower() for line in said):
                    raise PortTaken(" ".join(arguments))
                last = "\n".join(said)
                pytest.fail(f"redis-server exited with {process.wait()}:\n{last}")
            yield directory
        finally:
            process.terminate()
            process.wait(timeout=10)
            if process.stdout is not None:
                process.stdout.close()


def free_port() -> int:
    """A loopback TCP port nobody listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def free_cluster_port() -> int:
    """A loopback port a Redis Cluster node may take: it and its bus port, 10 000 higher, free."""
    for _ in range(100):
        port = random.randint(20_000, 55_535)
        try:
            with socket.socket() as node, socket.socket() as bus:
                node.bind(("127.0.0.1", port))
                bus.bind(("127.0.0.1", port + 10_000))
        except OSError:
            continue
        return port
    raise RuntimeError("no port pair free for a Redis Cluster node in 100 tries")


@pytest.fixture(scope="module")
def redis_socket() -> Iterator[str]:
    """A redis-server of this module's own on a Unix socket, persistence off."""
    if REDIS is None:
        pytest.skip("redis-server is not installed (CI installs Debian's redis-server)")
    with tempfile.TemporaryDirectory(prefix="mcpactor-redis-sock-") as holder:
        path = str(Path(holder) / "redis.sock")
        with running_redis("--port", "0", "--unixsocket", path):
            yield path


@pytest.fixture(scope="module")
def redis_port() -> Iterator[int]:
    """A redis-server of this module's own on a loopback TCP port, persistence off."""
    if REDIS is None:
        pytest.skip("redis-server is not installed (CI installs Debian's redis-server)")
    port = free_port()
    with running_redis("--port", str(port), "--bind", "127.0.0.1"):
        yield port


@pytest.fixture
async def redis(redis_socket: str) -> AsyncIterator[coredis.Redis[bytes]]:
    """A client of the module's redis-server, emptied before the test."""
    client: coredis.Redis[bytes] = coredis.Redis(unix_socket_path=redis_socket)
    async with client:
        await client.flushdb()
        yield client
