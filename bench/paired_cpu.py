"""Server CPU per tools/call of two stdio servers, measured under the same load.

    python bench/paired_cpu.py [A B] [--pairs 6] [--windows 1000] [--width 64]
        [--python-a PYTHON] [--python-b PYTHON] [--path-a DIR] [--path-b DIR]

A and B are stdio (a 2025-11-25 session) or stdio-2026 (every call with its 2026-07-28
envelope); the default compares the two. On a shared machine the CPU a call costs moves
by 5-20 % from one few-second cell to the next, which hides differences of a few per
cent between cells run one after the other. Here one driver sends a window of WIDTH
pipelined calls of echo to A, then one to B, back and forth, so that both servers run
under the same load at every moment, and reads each server's CPU time (user and kernel,
from /proc) around the measured windows. A pair is two fresh server processes; each
pair prints A's and B's CPU per call and B/A, and the last line the median of B/A.

``--path-a``/``--path-b`` put a checkout first on a server's PYTHONPATH, to compare two
commits of mcpactor (the servers run from the bench folder, so the checkout's package is
imported rather than the one installed).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from instructions import SERVER, call_params, open_stdio  # noqa: E402

MODES = {"stdio": False, "stdio-2026": True}  # mode: stateless?
WARM_UP_WINDOWS = 100
_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


class StdioServer:
    """bench/mcpactor_server.py on a pipe, opened at its revision, driven a window at a time."""

    def __init__(self, mode: str, python: str, path: str | None) -> None:
        self.stateless = MODES[mode]
        env = dict(os.environ)
        if path is not None:
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [path, env.get("PYTHONPATH")]))
        self.process = subprocess.Popen(
            [python, SERVER, "stdio"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        self._stdin, self._stdout = self.process.stdin, self.process.stdout
        self._next_id = 0
        self._check(open_stdio(self._stdin, self._stdout, self.stateless))
        body = {"method": "tools/call", "params": call_params(self.stateless, "paired")}
        # Everything after the id, encoded once: the driver's cost per call stays small.
        self._after_id = b"," + json.dumps(body, separators=(",", ":")).encode()[1:]

    @staticmethod
    def _check(line: bytes) -> None:
        if not line:
            raise SystemExit("the server closed its output")
        if b'"result"' not in line:
            raise SystemExit(f"not a result: {line[:200]!r}")

    def window(self, width: int) -> None:
        """Send ``width`` calls in one write and read their answers."""
        frames = []
        for _ in range(width):
            self._next_id += 1
            frames.append(b'{"jsonrpc":"2.0","id":%d%s\n' % (self._next_id, self._after_id))
        self._stdin.write(b"".join(frames))
        self._stdin.flush()
        for _ in range(width):
            self._check(self._stdout.readline())

    def cpu_seconds(self) -> float:
        """The server's CPU time so far, user and kernel."""
        with open(f"/proc/{self.process.pid}/stat", encoding="ascii") as stat:
            # Fields 14 and 15 (utime, stime), counted after the command's closing paren.
            fields = stat.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / _TICKS

    def close(self) -> bytes:
        """End the server's input, wait for it to exit; return what it wrote after its
        last answer (nothing, from a server that answered every call once)."""
        self._stdin.close()
        rest = self._stdout.read()
        self._stdout.close()
        if self.process.wait(60) != 0:
            raise SystemExit(f"the server exited with {self.process.returncode}")
        return rest


def measure_pair(args: argparse.Namespace) -> tuple[float, float]:
    """CPU µs per call of a fresh A and a fresh B, their windows taking turns."""
    servers = [
        StdioServer(args.a, args.python_a, args.path_a),
        StdioServer(args.b, args.python_b, args.path_b),
    ]
    try:
        for _ in range(WARM_UP_WINDOWS):
            for server in servers:
                server.window(args.width)
        before = [server.cpu_seconds() for server in servers]
        for _ in range(args.windows):
            for server in servers:
                server.window(args.width)
        after = [server.cpu_seconds() for server in servers]
    finally:
        for server in servers:
            server.close()
    calls = args.windows * args.width
    a, b = ((end - start) / calls * 1e6 for start, end in zip(before, after, strict=True))
    return a, b


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("a", nargs="?", default="stdio", help=" or ".join(MODES))
    parser.add_argument("b", nargs="?", default="stdio-2026", help=" or ".join(MODES))
    parser.add_argument("--pairs", type=int, default=6)
    parser.add_argument("--windows", type=int, default=1000, help="measured windows per server")
    parser.add_argument("--width", type=int, default=64, help="calls per window")
    parser.add_argument("--python-a", default=sys.executable)
    parser.add_argument("--python-b", default=sys.executable)
    parser.add_argument("--path-a", default=None, help="a checkout to import mcpactor from")
    parser.add_argument("--path-b", default=None, help="a checkout to import mcpactor from")
    args = parser.parse_args(argv)
    for mode in (args.a, args.b):
        if mode not in MODES:
            raise SystemExit(f"unknown mode {mode!r}: one of {', '.join(MODES)}")
    if min(args.pairs, args.windows, args.width) < 1:
        raise SystemExit("--pairs, --windows and --width want positive numbers")
    if not os.path.exists("/proc/self/stat"):
        raise SystemExit("a server's CPU time is read from /proc: Linux only")
    ratios = []
    for pair in range(1, args.pairs + 1):
        a, b = measure_pair(args)
        if a <= 0:
            raise SystemExit("too few windows to measure A's CPU time: raise --windows")
        ratios.append(b / a)
        print(f"pair {pair}: A {a:.2f} µs/call, B {b:.2f} µs/call, B/A {b / a:.3f}", flush=True)
    print(f"B/A median {statistics.median(ratios):.3f} over {len(ratios)} pairs")


if __name__ == "__main__":
    main(sys.argv[1:])
