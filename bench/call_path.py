"""The mcpactor functions and modules that one warm tools/call runs on ``mcpactor serve``.

    python bench/call_path.py [CASE ...] [--list] [--warm N] [--settle SECONDS]

CASE is ``http`` (Streamable HTTP in a session: initialize, JSON answers, the built-in
server), ``stdio-2026`` (stdio, every call with its 2026-07-28 envelope), ``http-2026`` or
``stdio`` (a 2025-11-25 session on a pipe); the default is ``http stdio-2026``.

The server is the real command line, ``mcpactor serve bench/mcpactor_server.py``, started
through this script (``--serve``), which installs two signal handlers and then runs the
command line's ``main``; nothing in the package knows about it. SIGUSR1 switches
``sys.setprofile`` on (and ``threading.setprofile`` for threads started while it is on),
SIGUSR2 switches it off and writes down every Python function of the ``mcpactor`` package
that was entered in between. The driver opens the connection, makes WARM calls of
``echo``, switches the profile on, makes one call, reads its answer and switches the
profile off. What the server does right after writing the answer is done before the
signal lands (it cannot read the signal before it is idle again); ``--settle SECONDS``
waits that long before switching off, and then timers due in that time count too (the
collector's look for a quiet spell, every 0.1 s, adds ``collect_when_quiet``).

Printed per case: the distinct functions (module and qualified name; a coroutine resumed
counts as entered, a C function does not, the tool's own code in bench/ does not), the
distinct modules, and the changes of module along the order in which the functions were
entered. ``--list`` adds every function, module by module.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from types import FrameType
from typing import IO, Any

import attrs

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from harness.system import free_port  # noqa: E402
from instructions import (  # noqa: E402
    ENVELOPE,
    INITIALIZE,
    REVISION,
    SERVER,
    STATELESS,
    call_params,
    wait_for_port,
)

#: case: (transport, stateless?, what it is)
CASES = {
    "http": ("http", False, "Streamable HTTP, a session, JSON answers, built-in server"),
    "http-2026": ("http", True, "Streamable HTTP at 2026-07-28, JSON answers, built-in server"),
    "stdio": ("stdio", False, "stdio, a 2025-11-25 session"),
    "stdio-2026": ("stdio", True, "stdio at 2026-07-28"),
}
DEFAULT_CASES = ("http", "stdio-2026")
WAIT_SECONDS = 60.0


# --- in the server: the profile, switched by signals --------------------------------------


class Recorder:
    """Notes each function of the package entered while it is on, in order."""

    def __init__(self, package_dir: str, out: str) -> None:
        self.package_dir = package_dir
        self.out = out
        self.entered: list[tuple[str, str]] = []

    def profile(self, frame: FrameType, event: str, arg: object) -> None:
        if event == "call":
            code = frame.f_code
            if code.co_filename.startswith(self.package_dir):
                module = frame.f_globals.get("__name__", "?")
                self.entered.append((module, code.co_qualname))

    def switch_on(self, signum: int, frame: FrameType | None) -> None:
        import threading

        self.entered = []
        threading.setprofile(self.profile)
        sys.setprofile(self.profile)
        _write_atomically(self.out + ".on", "on")

    def switch_off(self, signum: int, frame: FrameType | None) -> None:
        import threading

        sys.setprofile(None)
        threading.setprofile(None)
        _write_atomically(self.out, json.dumps(self.entered))


def _write_atomically(path: str, text: str) -> None:
    with open(path + ".part", "w", encoding="utf-8") as file:
        file.write(text)
    os.replace(path + ".part", path)


def serve(out: str, argv: Sequence[str]) -> int:
    """Run ``mcpactor`` with ``argv``, its profile switched by SIGUSR1 and SIGUSR2."""
    import mcpactor
    from mcpactor.cli import main

    recorder = Recorder(os.path.dirname(os.path.abspath(mcpactor.__file__)) + os.sep, out)
    signal.signal(signal.SIGUSR1, recorder.switch_on)
    signal.signal(signal.SIGUSR2, recorder.switch_off)
    return main(list(argv))


# --- in the driver ------------------------------------------------------------------------


@attrs.frozen
class Profile:
    """The functions one call entered, in the order it entered them (repeats included)."""

    entered: tuple[tuple[str, str], ...]

    @property
    def functions(self) -> frozenset[tuple[str, str]]:
        return frozenset(self.entered)

    @property
    def modules(self) -> frozenset[str]:
        return frozenset(module for module, _ in self.entered)

    @property
    def module_changes(self) -> int:
        return sum(1 for a, b in itertools.pairwise(self.entered) if a[0] != b[0])

    def summary(self) -> str:
        return (
            f"{len(self.functions)} functions in {len(self.modules)} modules, "
            f"{self.module_changes} changes of module"
        )

    def listing(self) -> Iterator[str]:
        for module in sorted(self.modules):
            names = sorted(name for owner, name in self.functions if owner == module)
            yield f"  {module} ({len(names)})"
            for name in names:
                yield f"      {name}"


def _wait_for(path: str, process: subprocess.Popen[bytes]) -> str:
    deadline = time.monotonic() + WAIT_SECONDS
    while not os.path.exists(path):
        if process.poll() is not None:
            raise RuntimeError(f"the server exited ({process.returncode})")
        if time.monotonic() > deadline:
            raise RuntimeError(f"the server did not write {os.path.basename(path)}")
        time.sleep(0.01)
    with open(path, encoding="utf-8") as file:
        return file.read()


@contextmanager
def _server(out: str, cli: list[str], *, pipes: bool) -> Iterator[subprocess.Popen[bytes]]:
    command = [sys.executable, os.path.abspath(__file__), "--serve", out, "--", *cli]
    pipe = subprocess.PIPE if pipes else subprocess.DEVNULL
    process = subprocess.Popen(command, stdin=pipe, stdout=pipe, stderr=subprocess.DEVNULL)
    try:
        yield process
    finally:
        if process.stdin is not None:
            process.stdin.close()
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()


def _profiled(
    process: subprocess.Popen[bytes], out: str, call: Callable[[], None], settle: float
) -> Profile:
    process.send_signal(signal.SIGUSR1)
    _wait_for(out + ".on", process)
    call()
    time.sleep(settle)
    process.send_signal(signal.SIGUSR2)
    entered = json.loads(_wait_for(out, process))
    return Profile(tuple((module, name) for module, name in entered))


def _check_answer(body: bytes, request_id: int) -> None:
    answer = json.loads(body)
    if answer.get("id") != request_id or "result" not in answer:
        raise RuntimeError(f"not the answer to call {request_id}: {body[:200]!r}")
    if answer["result"].get("isError"):
        raise RuntimeError(f"the call failed: {body[:200]!r}")


def _profile_http(stateless: bool, warm: int, settle: float, scratch: str) -> Profile:
    import http.client

    port = free_port()
    out = os.path.join(scratch, "profile.json")
    cli = ["serve", SERVER, "--http", f"127.0.0.1:{port}", "--response-mode", "json"]
    with _server(out, cli, pipes=False) as process:
        wait_for_port(port, process)
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=WAIT_SECONDS)
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": STATELESS if stateless else REVISION,
        }

        def post(message: dict[str, Any]) -> bytes:
            connection.request("POST", "/mcp", json.dumps(message), headers)
            response = connection.getresponse()
            body = response.read()
            if response.status >= 300:
                raise RuntimeError(f"HTTP {response.status}: {body[:200]!r}")
            if message.get("method") == "initialize":
                headers["Mcp-Session-Id"] = response.getheader("Mcp-Session-Id") or ""
            return body

        if stateless:
            headers.update({"Mcp-Method": "tools/call", "Mcp-Name": "echo"})
        else:
            post({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INITIALIZE})
            post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        params = call_params(stateless)
        for request_id in range(1, warm + 1):
            _check_answer(post(_call(request_id, params)), request_id)

        def one_call() -> None:
            _check_answer(post(_call(warm + 1, params)), warm + 1)

        try:
            return _profiled(process, out, one_call, settle)
        finally:
            connection.close()


def _profile_stdio(stateless: bool, warm: int, settle: float, scratch: str) -> Profile:
    out = os.path.join(scratch, "profile.json")
    with _server(out, ["serve", SERVER], pipes=True) as process:
        assert process.stdin is not None
        assert process.stdout is not None
        stdin, stdout = process.stdin, process.stdout

        def send(message: dict[str, Any]) -> None:
            stdin.write(json.dumps(message).encode() + b"\n")
            stdin.flush()

        if stateless:
            params = {"_meta": ENVELOPE}
            send({"jsonrpc": "2.0", "id": 0, "method": "server/discover", "params": params})
            _read_line(stdout)
        else:
            send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INITIALIZE})
            _read_line(stdout)
            send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        params = call_params(stateless)
        for request_id in range(1, warm + 1):
            send(_call(request_id, params))
            _check_answer(_read_line(stdout), request_id)

        def one_call() -> None:
            send(_call(warm + 1, params))
            _check_answer(_read_line(stdout), warm + 1)

        return _profiled(process, out, one_call, settle)


def _call(request_id: int, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def _read_line(stdout: IO[bytes]) -> bytes:
    line = stdout.readline()
    if not line:
        raise RuntimeError("the server closed its output")
    return line


def profile_call(case: str, *, warm: int = 20, settle: float = 0.0) -> Profile:
    """Serve ``case``, make ``warm`` calls, and profile the one after them."""
    transport, stateless, _ = CASES[case]
    with tempfile.TemporaryDirectory() as scratch:
        if transport == "http":
            return _profile_http(stateless, warm, settle, scratch)
        return _profile_stdio(stateless, warm, settle, scratch)


def main(argv: Sequence[str]) -> int:
    if argv[:1] == ["--serve"]:
        if len(argv) < 3 or argv[2] != "--":
            sys.exit("usage: call_path.py --serve OUT -- MCPACTOR_ARGUMENTS...")
        return serve(argv[1], argv[3:])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="*", metavar="CASE", help=" | ".join(CASES))
    parser.add_argument("--list", action="store_true", help="list every function")
    parser.add_argument("--warm", type=int, default=20, help="calls before the profiled one")
    parser.add_argument(
        "--settle", type=float, default=0.0, help="seconds profiled after the answer is read"
    )
    args = parser.parse_args(argv)
    unknown = set(args.cases) - set(CASES)
    if unknown:
        parser.error(f"unknown cases {sorted(unknown)}; choose from {', '.join(CASES)}")
    for case in args.cases or DEFAULT_CASES:
        profile = profile_call(case, warm=args.warm, settle=args.settle)
        print(f"{case} ({CASES[case][2]}): {profile.summary()}")
        if args.list:
            for line in profile.listing():
                print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
