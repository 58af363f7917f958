"""What the harness reads from Linux's /proc: CPU and memory of a process tree, the machine's load.

Only for processes the harness started (or was given the PID of); a server that forks
workers is measured with all of them.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

TICK = os.sysconf("SC_CLK_TCK")


def process_tree(pid: int) -> list[int]:
    """pid and all its descendants that are alive now."""
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        found.append(p)
        try:
            threads = os.listdir(f"/proc/{p}/task")
        except OSError:
            continue
        for tid in threads:
            with contextlib.suppress(OSError):
                todo += map(int, Path(f"/proc/{p}/task/{tid}/children").read_text().split())
    return found


def rss_kb(pid: int | None) -> int | None:
    """Resident memory of pid's tree, in kB."""
    if pid is None:
        return None
    total = 0
    for p in process_tree(pid):
        try:
            status = Path(f"/proc/{p}/status").read_text()
        except OSError:
            continue
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                total += int(line.split()[1])
    return total


def cpu_seconds(pid: int | None) -> float | None:
    """User plus system CPU time of pid's tree so far."""
    times = cpu_times(pid)
    return None if times is None else times[0] + times[1]


def cpu_clock(pid: int | None) -> float | None:
    """CPU seconds of pid's tree so far, to the nanosecond: each process's CPU clock.

    /proc's user and system times are whole clock ticks (10 ms), each rounded down: too
    coarse for a start of a tenth of a second. A process's CPU clock (the clock id
    clock_getcpuclockid makes, read with clock_gettime) is the scheduler's exact sum over
    all its threads, ended ones included. Where it cannot be read, the ticks are used.
    """
    if pid is None:
        return None
    total = 0.0
    for p in process_tree(pid):
        try:
            total += time.clock_gettime(((~p) << 3) | 2)  # CPUCLOCK_SCHED of process p
        except OSError:
            if p == pid:
                return cpu_seconds(pid)
    return total


def cpu_times(pid: int | None) -> tuple[float, float] | None:
    """User and system (kernel) CPU time of pid's tree so far, apart."""
    if pid is None:
        return None
    user = system = 0
    for p in process_tree(pid):
        try:
            # the command name may hold spaces and parentheses: the fields follow the last ")"
            fields = Path(f"/proc/{p}/stat").read_text().rpartition(")")[2].split()
            user += int(fields[11])
            system += int(fields[12])
        except (OSError, IndexError, ValueError):
            pass
    return user / TICK, system / TICK


def machine_cpu() -> tuple[float, float]:
    """(busy, stolen) CPU seconds of the whole machine so far."""
    try:
        first = Path("/proc/stat").read_text().split("\n", 1)[0].split()
        user, nice, system, _idle, _iowait, irq, softirq, *rest = map(int, first[1:])
    except (OSError, ValueError):
        return 0.0, 0.0
    steal = rest[0] if rest else 0
    return (user + nice + system + irq + softirq) / TICK, steal / TICK


class Meter:
    """Wall time, the driver's CPU, the server's CPU and everybody else's load over a window."""

    def __init__(self, pid: int | None) -> None:
        self.pid = pid
        self.machine0 = machine_cpu()
        self.server0 = cpu_times(pid)
        self.client0 = time.process_time()
        self.t0 = time.perf_counter()

    def read(self) -> dict[str, Any]:
        """What was used since the meter was made: wall, cli_cpu, srv_cpu (srv_sys of it in
        the kernel), steal_pct, other_pct."""
        wall = time.perf_counter() - self.t0
        client = time.process_time() - self.client0
        server1 = cpu_times(self.pid)
        busy, steal = machine_cpu()
        server = kernel = None
        if server1 is not None and self.server0 is not None:
            kernel = server1[1] - self.server0[1]
            server = server1[0] - self.server0[0] + kernel
        out: dict[str, Any] = {
            "wall": wall,
            "cli_cpu": client,
            "srv_cpu": server,
            "srv_sys": kernel,
        }
        out["steal_pct"] = 100 * (steal - self.machine0[1]) / wall if wall else None
        if server is not None and wall:
            # the rest of the machine's busy time: other processes and the kernel, % of one core
            others = busy - self.machine0[0] - server - client
            out["other_pct"] = max(0.0, 100 * others / wall)
        return out


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nobody listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def stop(process: subprocess.Popen[bytes], grace: float = 3.0) -> None:
    """SIGTERM, then SIGKILL after grace seconds."""
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(grace)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def raise_fd_limit() -> None:
    """As many open files as allowed: the HTTP tests hold 1 000 connections on each side."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 65536)), hard))
