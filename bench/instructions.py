"""Instructions per tools/call of mcpactor's benchmark server, counted by callgrind.

    python bench/instructions.py http-json|http-sse|http-2026|stdio|stdio-2026
        [--calls 1000,4000] [--connections 16] [--pipelined 64] [--python PYTHON] [--keep DIR]
        [--functions N] [--middleware]

Wall-clock figures move with the machine's load (steal, other tenants); instruction counts
do not. The server (bench/mcpactor_server.py) runs under ``valgrind --tool=callgrind``
twice, serving N1 and then N2 calls of echo after the same opening, and what one call
costs is the difference of the two totals over N2 - N1: start-up, the opening and the
shutdown cancel out. The driver here is plain blocking Python (threads for HTTP
connections, one pipe for stdio); only the server's instructions are counted.

What depends on the clock is counted at valgrind's pace, some fifty times slower than
native: a timer falls due after fewer calls, and a wait with a deadline runs out more
often. In SSE mode about 1 % of POSTs outlast the 5 ms coalescing window under callgrind
and are streamed (none do in the harness's runs), and the coalescing timer wakes about
every tenth call (every sixteenth natively), so the SSE figure is a few thousand
instructions above what the same calls cost natively.

``--functions N`` prints the N C functions (the interpreter's, orjson's, the C library's)
with the most instructions per call, each the difference of the two runs' counts
(callgrind_annotate's, exclusive) over N2 - N1; ``--keep DIR`` leaves the two callgrind
files of each mode in DIR for a closer look. ``--middleware`` serves with one pass-through
middleware (the server's ``--middleware``): the difference to a run without it is what one
layer costs per call.
"""

from __future__ import annotations

import argparse
import http.client
import itertools
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from typing import IO, Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from harness.system import free_port  # noqa: E402

SERVER = os.path.join(HERE, "mcpactor_server.py")
REVISION = "2025-11-25"
STATELESS = "2026-07-28"
ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": STATELESS,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "instructions", "version": "1.0"},
}
INITIALIZE = {
    "protocolVersion": REVISION,
    "capabilities": {},
    "clientInfo": {"name": "instructions", "version": "1.0"},
}
MODES = {
    # mode: (server arguments after "http HOST PORT", or None for stdio; stateless?)
    "http-json": (["--json"], False),
    "http-sse": ([], False),
    "http-2026": (["--json"], True),
    "stdio": (None, False),
    "stdio-2026": (None, True),
}


def call_params(stateless: bool, text: str = "hello") -> dict[str, Any]:
    """The params of one echo call, with the 2026-07-28 envelope when stateless."""
    params: dict[str, Any] = {"name": "echo", "arguments": {"text": text}}
    if stateless:
        params["_meta"] = ENVELOPE
    return params


def wait_for_port(port: int, process: subprocess.Popen[bytes], timeout: float = 600) -> None:
    """Wait until the server (slow under valgrind, slower still on a busy machine) listens."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"the server exited early ({process.returncode})")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.2)
    raise SystemExit("the server did not start listening")


class HttpDriver:
    """A session (or none, at 2026-07-28) over keep-alive connections, one thread each."""

    def __init__(self, port: int, stateless: bool) -> None:
        self.port = port
        self.stateless = stateless
        self.headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": STATELESS if stateless else REVISION,
        }
        if not stateless:
            connection = self.connect()
            reply = self.post(connection, "initialize", INITIALIZE, request_id=0)
            self.headers["Mcp-Session-Id"] = reply["session"]
            self.post(connection, "notifications/initialized", None, request_id=None)
            connection.close()
        else:
            self.headers["Mcp-Method"] = "tools/call"
            self.headers["Mcp-Name"] = "echo"

    def connect(self) -> http.client.HTTPConnection:
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=600)

    def post(
        self,
        connection: http.client.HTTPConnection,
        method: str,
        params: dict[str, Any] | None,
        request_id: int | None,
    ) -> dict[str, Any]:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        if request_id is not None:
            message["id"] = request_id
        connection.request("POST", "/mcp", json.dumps(message), self.headers)
        response = connection.getresponse()
        body = response.read()
        if response.status >= 300:
            raise SystemExit(f"{method}: HTTP {response.status}: {body[:200]!r}")
        if request_id is not None and b'"result"' not in body:
            raise SystemExit(f"{method}: no result: {body[:200]!r}")
        return {"session": response.getheader("Mcp-Session-Id"), "body": body}

    def drive(self, calls: int, connections: int) -> None:
        ids = itertools.count(1)
        lock = threading.Lock()
        params = call_params(self.stateless)

        def lane() -> None:
            connection = self.connect()
            while True:
                with lock:
                    request_id = next(ids)
                if request_id > calls:
                    break
                self.post(connection, "tools/call", params, request_id)
            connection.close()

        threads = [threading.Thread(target=lane) for _ in range(connections)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()


def open_stdio(stdin: IO[bytes], stdout: IO[bytes], stateless: bool) -> bytes:
    """The opening on a pipe: server/discover when stateless, else initialize and
    initialized. Returns the line that answered it."""

    def send(message: dict[str, Any]) -> None:
        stdin.write(json.dumps(message).encode() + b"\n")

    if stateless:
        send(
            {"jsonrpc": "2.0", "id": 0, "method": "server/discover", "params": {"_meta": ENVELOPE}}
        )
    else:
        send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INITIALIZE})
    stdin.flush()
    answer = stdout.readline()
    if not stateless:
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        stdin.flush()
    return answer


def drive_stdio(
    process: subprocess.Popen[bytes], calls: int, pipelined: int, stateless: bool
) -> None:
    """The opening, then ``calls`` echo calls with ``pipelined`` of them in flight."""
    assert process.stdin is not None
    assert process.stdout is not None
    stdin, stdout = process.stdin, process.stdout

    def send(message: dict[str, Any]) -> None:
        stdin.write(json.dumps(message).encode() + b"\n")

    open_stdio(stdin, stdout, stateless)
    params = call_params(stateless)
    sent = 0
    for _ in range(min(pipelined, calls)):
        sent += 1
        send({"jsonrpc": "2.0", "id": sent, "method": "tools/call", "params": params})
    stdin.flush()
    answered = 0
    while answered < calls:
        line = stdout.readline()
        if not line:
            raise SystemExit("the server closed its output")
        if b'"result"' not in line:
            raise SystemExit(f"not a result: {line[:200]!r}")
        answered += 1
        if sent < calls:
            sent += 1
            send({"jsonrpc": "2.0", "id": sent, "method": "tools/call", "params": params})
            stdin.flush()


def count(mode: str, calls: int, args: argparse.Namespace) -> int:
    """The server's total instructions for the opening and ``calls`` calls."""
    server_args, stateless = MODES[mode]
    with tempfile.TemporaryDirectory() as scratch:
        out = os.path.join(scratch, "callgrind.out")
        valgrind = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"]
        env = dict(os.environ, PYTHONHASHSEED="0")
        extra = ["--middleware"] if args.middleware else []
        if server_args is None:
            process = subprocess.Popen(
                [*valgrind, args.python, SERVER, "stdio", *extra],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=env,
            )
            drive_stdio(process, calls, args.pipelined, stateless)
            assert process.stdin is not None
            process.stdin.close()
        else:
            port = free_port()
            process = subprocess.Popen(
                [
                    *valgrind,
                    args.python,
                    SERVER,
                    "http",
                    "127.0.0.1",
                    str(port),
                    *server_args,
                    *extra,
                ],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env=env,
            )
            try:
                wait_for_port(port, process)
                HttpDriver(port, stateless).drive(calls, args.connections)
            except BaseException:
                # Leave no server behind under valgrind when the run is given up.
                process.kill()
                process.wait()
                raise
            process.send_signal(signal.SIGINT)
        if process.wait(600) not in (0, -signal.SIGINT):
            raise SystemExit(f"the server exited with {process.returncode}")
        if args.keep:
            # for callgrind_annotate: which C functions the instructions are spent in
            os.makedirs(args.keep, exist_ok=True)
            shutil.copy(out, os.path.join(args.keep, f"callgrind.{mode}.{calls}.out"))
        return totals(out)


ANNOTATED = re.compile(r"^\s*([\d,]+) \(\s*[\d.]+%\)\s+(\S.*?)(?: \[[^\]]*\])?$")


def by_function(annotated: str) -> dict[str, int]:
    """Instructions per function in callgrind_annotate's output (the function's own, exclusive).

    A function is named ``file:function`` with the file's folders left out, so that the
    same function of two runs has one name.
    """
    out: dict[str, int] = {}
    for line in annotated.splitlines():
        match = ANNOTATED.match(line)
        if match is None or match[2] == "PROGRAM TOTALS":
            continue
        where, _, function = match[2].rpartition(":")
        name = f"{os.path.basename(where)}:{function}" if where else function
        out[name] = out.get(name, 0) + int(match[1].replace(",", ""))
    return out


def per_call_functions(low: str, high: str, calls: int) -> list[tuple[str, float]]:
    """Instructions per call by function: the second file's counts less the first's, over calls."""

    def annotate(path: str) -> dict[str, int]:
        done = subprocess.run(
            ["callgrind_annotate", "--threshold=100", "--auto=no", path],
            capture_output=True,
            text=True,
            check=True,
        )
        return by_function(done.stdout)

    first, second = annotate(low), annotate(high)
    rows = [(name, (n - first.get(name, 0)) / calls) for name, n in second.items()]
    return sorted(rows, key=lambda row: -row[1])


def totals(path: str) -> int:
    """The ``summary:`` (or ``totals:``) line of a callgrind output file."""
    with open(path, encoding="utf-8", errors="replace") as file:
        for line in file:
            found = re.match(r"(?:summary|totals): (\d+)", line)
            if found:
                return int(found.group(1))
    raise SystemExit(f"no totals in {path}")


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("modes", help="comma-separated: " + ", ".join(MODES))
    parser.add_argument("--calls", default="1000,4000", help="N1,N2")
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--pipelined", type=int, default=64)
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument(
        "--keep", metavar="DIR", help="keep the callgrind files here (callgrind.MODE.CALLS.out)"
    )
    parser.add_argument(
        "--functions",
        type=int,
        default=0,
        metavar="N",
        help="also print the N functions with the most instructions per call",
    )
    parser.add_argument(
        "--middleware", action="store_true", help="serve with one pass-through middleware"
    )
    args = parser.parse_args(argv)
    try:
        low, high = (int(n) for n in args.calls.split(","))
    except ValueError:
        low = high = 0
    if not 0 <= low < high:
        raise SystemExit(f"--calls wants N1,N2 with 0 <= N1 < N2, got {args.calls!r}")
    modes = args.modes.split(",")
    for mode in modes:
        if mode not in MODES:
            raise SystemExit(f"unknown mode {mode!r}: one of {', '.join(MODES)}")
    if shutil.which("valgrind") is None:
        raise SystemExit("no valgrind on PATH (Debian's valgrind package)")
    if args.functions and not args.keep:
        args.keep = tempfile.mkdtemp(prefix="instructions-")
    for mode in modes:
        first, second = count(mode, low, args), count(mode, high, args)
        per_call = (second - first) / (high - low)
        print(
            f"{mode}: {per_call:,.0f} instructions per call",
            f"({first:,} at {low}, {second:,} at {high})",
        )
        if args.functions:
            kept = [os.path.join(args.keep, f"callgrind.{mode}.{n}.out") for n in (low, high)]
            for name, n in per_call_functions(*kept, high - low)[: args.functions]:
                print(f"  {n:10,.0f}  {name}")


if __name__ == "__main__":
    main(sys.argv[1:])
