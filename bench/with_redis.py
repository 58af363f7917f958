"""Run a command beside a Redis server of its own, started for it and stopped after it.

    python bench/with_redis.py [--unix] [--] CMD ARG... @store@ ...

A ``redis-server`` from PATH listens on a free loopback port (``--unix``: a Unix socket
in a scratch folder instead) with persistence off (``--save ""``, ``--appendonly no``);
once it answers PING, CMD runs with every ``@store@`` in its arguments replaced by the
store's URL (``redis://127.0.0.1:PORT/0``, or ``unix:///PATH?db=0``). When CMD exits,
or this process is sent SIGTERM or SIGINT (which it passes on to CMD), Redis is stopped
and the exit status is CMD's. Redis is started with a parent-death signal, so it never
outlives this process, even one that was killed.

Redis is a child of this process: a benchmark that sums CPU and memory over this
process's tree counts Redis's with the server's, as a deployment's bill would.
``bench/store_ops.py`` tells them apart.

The placeholder is ``@store@`` and not ``{store}`` because bench/targets.toml fills
``{names}`` itself and refuses ones it does not know.
"""

from __future__ import annotations

import contextlib
import ctypes
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

PLACEHOLDER = "@store@"
#: seconds Redis gets to answer its first PING, and to exit once told to
START_SECONDS = 10.0
STOP_SECONDS = 3.0
#: seconds CMD gets to exit after the SIGTERM passed on, before it is killed
CMD_GRACE_SECONDS = 2.5
_PR_SET_PDEATHSIG = 1


class RedisMissing(SystemExit):
    """No redis-server on PATH: the one line saying so is the exit message."""


def _die_with_parent(signo: int) -> None:
    # Linux's prctl(PR_SET_PDEATHSIG): the kernel signals the child if this process dies
    # first (killed before it could stop Redis and CMD itself).
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signo, 0, 0, 0)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nobody listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class Redis:
    """One redis-server process, and how to reach it."""

    def __init__(self, process: subprocess.Popen[bytes], address: str | tuple[str, int]) -> None:
        self.process = process
        self.address = address

    @property
    def url(self) -> str:
        """The store URL ``mcpactor serve --store`` takes."""
        if isinstance(self.address, str):
            return f"unix://{self.address}?db=0"
        host, port = self.address
        return f"redis://{host}:{port}/0"

    def connect(self, timeout: float = 5.0) -> socket.socket:
        """A new connection to it."""
        family = socket.AF_UNIX if isinstance(self.address, str) else socket.AF_INET
        s = socket.socket(family, socket.SOCK_STREAM)
        s.settimeout(timeout)
        try:
            s.connect(self.address)
        except OSError:
            s.close()
            raise
        return s

    def command(self, *words: str) -> bytes:
        """One command's raw RESP reply (read until the reply is complete)."""
        with self.connect() as s:
            s.sendall(_resp(words))
            return _read_reply(s)

    def ping(self) -> bool:
        """Whether it answers PING now."""
        try:
            return self.command("PING").startswith(b"+PONG")
        except OSError:
            return False


def _resp(words: tuple[str, ...]) -> bytes:
    parts = [b"*%d\r\n" % len(words)]
    for word in words:
        data = word.encode()
        parts.append(b"$%d\r\n%s\r\n" % (len(data), data))
    return b"".join(parts)


def _read_reply(s: socket.socket) -> bytes:
    # A simple string, error or integer ends at its first CRLF; a bulk string ($n) after
    # n more bytes. That is every reply this file asks for (PING, INFO, CONFIG RESETSTAT).
    data = b""
    while b"\r\n" not in data:
        chunk = s.recv(65536)
        if not chunk:
            return data
        data += chunk
    if not data.startswith(b"$"):
        return data
    head, _, rest = data.partition(b"\r\n")
    size = int(head[1:])
    while len(rest) < size + 2 and size >= 0:
        chunk = s.recv(65536)
        if not chunk:
            break
        rest += chunk
    return rest[: max(size, 0)]


def redis_server() -> str:
    """The redis-server on PATH.

    Raises:
        RedisMissing: there is none.
    """
    found = shutil.which("redis-server")
    if found is None:
        raise RedisMissing(
            "with_redis: no redis-server on PATH; the store targets need one "
            "(Debian: apt-get install redis-server)"
        )
    return found


@contextlib.contextmanager
def running_redis(*, unix: bool = False) -> Iterator[Redis]:
    """A fresh redis-server for the block, answering PING when it is entered."""
    binary = redis_server()
    scratch = Path(tempfile.mkdtemp(prefix="bench-redis-"))
    args = [
        binary,
        "--save",
        "",
        "--appendonly",
        "no",
        "--dir",
        str(scratch),
        "--logfile",
        str(scratch / "redis.log"),
        "--daemonize",
        "no",
    ]
    address: str | tuple[str, int]
    if unix:
        address = str(scratch / "redis.sock")
        args += ["--port", "0", "--unixsocket", address, "--unixsocketperm", "700"]
    else:
        address = ("127.0.0.1", free_port())
        args += ["--port", str(address[1]), "--bind", "127.0.0.1"]
    process = subprocess.Popen(
        args,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        preexec_fn=lambda: _die_with_parent(signal.SIGKILL),
    )
    redis = Redis(process, address)
    try:
        deadline = time.monotonic() + START_SECONDS
        while not redis.ping():
            if process.poll() is not None:
                log = (scratch / "redis.log").read_text(errors="replace")[-2000:]
                raise SystemExit(
                    f"with_redis: redis-server exited with {process.returncode}\n{log}"
                )
            if time.monotonic() > deadline:
                raise SystemExit(
                    f"with_redis: redis-server did not answer PING in {START_SECONDS:g} s"
                )
            time.sleep(0.02)
        yield redis
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(STOP_SECONDS)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        shutil.rmtree(scratch, ignore_errors=True)


def fill(argv: list[str], url: str) -> list[str]:
    """argv with every @store@ replaced by url.

    Raises:
        SystemExit: no argument holds the placeholder (the command would not use the store).
    """
    if not any(PLACEHOLDER in a for a in argv):
        raise SystemExit(f"with_redis: no {PLACEHOLDER} in the command: {argv!r}")
    return [a.replace(PLACEHOLDER, url) for a in argv]


def run_beside(argv: list[str], redis: Redis) -> int:
    """Run argv with the store filled in until it exits; SIGTERM and SIGINT are passed on."""
    child = subprocess.Popen(
        fill(argv, redis.url), preexec_fn=lambda: _die_with_parent(signal.SIGTERM)
    )
    stopping = False

    def pass_on(signo: int, _frame: object) -> None:
        nonlocal stopping
        stopping = True
        with contextlib.suppress(ProcessLookupError):
            child.send_signal(signo)

    signal.signal(signal.SIGTERM, pass_on)
    signal.signal(signal.SIGINT, pass_on)
    while True:
        try:
            return child.wait(CMD_GRACE_SECONDS if stopping else None)
        except subprocess.TimeoutExpired:
            child.kill()
        # a signal interrupts the wait; the handler has passed it on and the loop waits again


def main(argv: list[str]) -> int:
    """The command line: ``[--unix] [--] CMD...``."""
    unix = False
    while argv and argv[0].startswith("--"):
        option = argv.pop(0)
        if option == "--":
            break
        if option == "--unix":
            unix = True
        else:
            raise SystemExit(f"with_redis: unknown option {option}")
    if not argv:
        raise SystemExit(__doc__)
    with running_redis(unix=unix) as redis:
        return run_beside(argv, redis)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
