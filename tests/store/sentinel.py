"""A Redis primary, its replica and a Sentinel watching them, as real processes.

Debian's ``redis-sentinel`` is a link to the redis-server binary, which runs as a
Sentinel when named so or given ``--sentinel``: the first is used when installed, the
second otherwise, so that the tests need only the redis-server CI installs. Every
process listens on loopback, in a temporary directory, with persistence off; the primary
is killed (SIGKILL) by the test, as a crash would.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import attrs
import coredis
import trio

from .conftest import REDIS, free_port

#: the service the Sentinel knows the primary by
SERVICE = "mymaster"
SENTINEL = shutil.which("redis-sentinel")
#: milliseconds without an answer before the Sentinel holds the primary down
DOWN_AFTER_MS = 1000


def _started(
    command: list[str], log: Path, ready: bytes = b"eady to accept connections"
) -> subprocess.Popen[bytes]:
    # Started, and waited for until its log says it serves.
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 20
    while ready not in log.read_bytes():
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            process.wait(timeout=10)
            raise RuntimeError(f"{command[0]} did not start: {log.read_text()[-2000:]}")
        time.sleep(0.05)
    return process


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
    process.wait(timeout=10)


@attrs.define
class Sentinelled:
    """The processes, their ports, and the URL mcpactor is given."""

    directory: Path
    primary_port: int
    replica_port: int
    sentinel_port: int
    primary: subprocess.Popen[bytes]
    replica: subprocess.Popen[bytes]
    sentinel: subprocess.Popen[bytes]
    #: how the primary was started, to start it again after a crash
    primary_command: list[str]
    #: what stops every process when the block ends
    stack: ExitStack

    def url(self, query: str = "") -> str:
        """The store's URL: a Sentinel nobody runs, then the real one (a list of nodes)."""
        nodes = f"127.0.0.1:{free_port()},127.0.0.1:{self.sentinel_port}"
        return f"redis+sentinel://{nodes}/{SERVICE}" + (f"?{query}" if query else "")

    def kill_primary(self) -> None:
        """SIGKILL the primary, as a crash would."""
        self.primary.kill()
        self.primary.wait(timeout=10)

    def freeze_primary(self) -> None:
        """SIGSTOP the primary: its host hangs, its sockets stay open and nothing answers."""
        self.primary.send_signal(signal.SIGSTOP)
        # Thawed before it is stopped, so that SIGTERM ends it.
        self.stack.callback(self.primary.send_signal, signal.SIGCONT)

    def restart_primary(self) -> None:
        """Start the killed primary again on its port (the Sentinel makes it a replica)."""
        self.primary = _started(self.primary_command, self.directory / "restarted.log")
        self.stack.callback(_stop, self.primary)


def _redis(directory: Path, name: str, port: int, *extra: str) -> list[str]:
    assert REDIS is not None
    folder = directory / name
    folder.mkdir()
    return [
        REDIS,
        "--port",
        str(port),
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--appendonly",
        "no",
        "--dir",
        str(folder),
        *extra,
    ]


@contextmanager
def sentinelled() -> Iterator[Sentinelled]:
    """Run a primary, a replica of it and a Sentinel (quorum 1) until the block ends."""
    with tempfile.TemporaryDirectory(prefix="mcpactor-sentinel-") as holder, ExitStack() as stack:
        directory = Path(holder)
        primary_port, replica_port, sentinel_port = free_port(), free_port(), free_port()
        primary_command = _redis(directory, "primary", primary_port)
        primary = _started(primary_command, directory / "primary.log")
        stack.callback(_stop, primary)
        replica = _started(
            _redis(
                directory, "replica", replica_port, "--replicaof", "127.0.0.1", str(primary_port)
            ),
            directory / "replica.log",
        )
        stack.callback(_stop, replica)
        config = directory / "sentinel.conf"
        config.write_text(
            f"port {sentinel_port}\n"
            "bind 127.0.0.1\n"
            f"dir {directory}\n"
            f"sentinel monitor {SERVICE} 127.0.0.1 {primary_port} 1\n"
            f"sentinel down-after-milliseconds {SERVICE} {DOWN_AFTER_MS}\n"
            f"sentinel failover-timeout {SERVICE} 10000\n"
            f"sentinel parallel-syncs {SERVICE} 1\n"
        )
        command = [SENTINEL, str(config)] if SENTINEL else [str(REDIS), str(config), "--sentinel"]
        # A Sentinel says it monitors, not that it accepts connections.
        sentinel = _started(command, directory / "sentinel.log", b"+monitor master")
        stack.callback(_stop, sentinel)
        running = Sentinelled(
            directory,
            primary_port,
            replica_port,
            sentinel_port,
            primary,
            replica,
            sentinel,
            primary_command,
            stack,
        )
        yield running


async def watched(setup: Sentinelled) -> None:
    """Wait until the replica is in sync and the Sentinel counts it among the replicas."""
    sentinel: coredis.Redis[str] = coredis.Redis(
        "127.0.0.1", setup.sentinel_port, decode_responses=True
    )
    replica: coredis.Redis[str] = coredis.Redis(
        "127.0.0.1", setup.replica_port, decode_responses=True
    )
    async with sentinel, replica:
        with trio.fail_after(30):
            while True:
                link = (await replica.info("replication")).get("master_link_status")
                known = await sentinel.sentinel_replicas(SERVICE)
                usable = [
                    node
                    for node in known
                    if not (node["is_sdown"] or node["is_odown"] or node["is_disconnected"])
                ]
                if link == "up" and usable:
                    return
                await trio.sleep(0.1)


async def primary_port(setup: Sentinelled) -> int:
    """The port of the primary the Sentinel names now."""
    sentinel: coredis.Redis[str] = coredis.Redis(
        "127.0.0.1", setup.sentinel_port, decode_responses=True
    )
    async with sentinel:
        _, port = await sentinel.sentinel_get_master_addr_by_name(SERVICE)
    return int(port)
