"""Cold start over stdio: spawn a server, send initialize, time the response line.

    python bench/cold_start.py [--runs N] [--bytecode MODE] [--baseline DIR] [-- COMMAND ...]
    python bench/cold_start.py --targets trio-stdio,ts-sdk-stdio,mcpactor-stdio [--runs N]

Without a COMMAND it measures, in turn, ``python -c "import trio"`` (the floor: an
interpreter that imports trio and exits), ``bench/mcpactor_server.py stdio`` and
``mcpactor serve clock``, N runs each, interleaved so a busy machine slows all of them
alike, and prints the median and quartiles of the time to the initialize response (to
exit, for the floor), the CPU the server had used when it answered (user + system of all
its threads: on a busy machine the steadier number), the idle RSS after it, the time to
exit after stdin EOF, and the CPU time the process used in all.

``--targets NAMES`` measures the stdio targets of bench/targets.toml of those names
instead (round three's three: the bare trio server, the TypeScript SDK and mcpactor's
bench server), with their commands as the harness runs them: {python} is --python,
{python_mcpactor} --python-mcpactor (default --python), {node} the node on PATH; the
TypeScript SDK is installed with npm ci first when missing. A target of a revision
without a handshake gets its opening request (server/discover) instead of initialize.

``--baseline DIR`` runs every server case a second time with the ``mcpactor`` package
found in DIR (for example ``git archive OLD mcpactor | tar -x -C DIR``), interleaved with
this checkout's, to compare two versions under the same load.

Byte code matters as much as anything here. ``--bytecode cached`` (the default) runs
everything with byte-code caching on, in a private ``PYTHONPYCACHEPREFIX``, as a package
installed by pip runs. ``--bytecode source`` runs a copy of the ``mcpactor`` package
with ``PYTHONDONTWRITEBYTECODE=1``, so it is compiled on every start while trio and the
rest of site-packages use their byte code: what an editable checkout costs when nothing
has written its ``__pycache__``. ``--bytecode inherit`` takes the environment as it is.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeAlias

HERE = Path(__file__).resolve().parent
INITIALIZE = (
    json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "cold-start", "version": "0"},
            },
        }
    ).encode()
    + b"\n"
)

#: ms to the initialize response (to exit, for the floor), idle RSS in MB, ms to exit
#: after stdin EOF, CPU ms of the whole process, CPU ms at the response (None: the floor)
Run: TypeAlias = tuple[float, float | None, float, float, float | None]
Case: TypeAlias = tuple[
    Callable[[list[str], dict[str, str], bytes], Run], list[str], dict[str, str], bytes
]


def _children_cpu_ms() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (usage.ru_utime + usage.ru_stime) * 1e3


def _rss_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def _cpu_ms(pid: int) -> float | None:
    """The CPU of a live process, all its threads, in ms: its CPU clock, exact (/proc's
    user and system times are whole 10 ms ticks), else those ticks."""
    try:
        return time.clock_gettime(((~pid) << 3) | 2) * 1e3  # CPUCLOCK_SCHED of pid
    except OSError:
        pass
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) * 1e3 / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def run_server(argv: list[str], env: dict[str, str], opening: bytes = INITIALIZE) -> Run:
    """Spawn a stdio server, time its initialize response, then close its stdin."""
    cpu = _children_cpu_ms()
    start = time.perf_counter()
    proc = subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
    )
    assert proc.stdin is not None
    assert proc.stdout is not None
    proc.stdin.write(opening)
    proc.stdin.flush()
    line = proc.stdout.readline()
    answered = time.perf_counter()
    answer_cpu = _cpu_ms(proc.pid)
    if b'"result"' not in line:
        proc.kill()
        raise RuntimeError(f"{argv}: no initialize result, got {line[:200]!r}")
    rss = _rss_mb(proc.pid)
    # A blocking wait: Popen.wait(timeout) polls with growing sleeps (0.5, 1, 2, 4, 8 ms),
    # which would round the exit time up to the next step.
    watchdog = threading.Timer(10, proc.kill)
    watchdog.start()
    eof = time.perf_counter()
    proc.stdin.close()
    proc.wait()
    exited = time.perf_counter()
    watchdog.cancel()
    proc.stdout.close()
    total = _children_cpu_ms() - cpu
    return (answered - start) * 1e3, rss, (exited - eof) * 1e3, total, answer_cpu


def run_floor(argv: list[str], env: dict[str, str], opening: bytes = b"") -> Run:
    """Spawn a command that just exits."""
    cpu = _children_cpu_ms()
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdin=subprocess.DEVNULL, env=env)
    return (time.perf_counter() - start) * 1e3, None, 0.0, _children_cpu_ms() - cpu, None


def target_commands(
    names: str, python: str, python_mcpactor: str
) -> dict[str, tuple[list[str], bytes]]:
    """The stdio targets of bench/targets.toml named in names: argv and opening request."""
    sys.path.insert(0, str(HERE))
    from harness.npm import ensure_installed
    from harness.targets import command, expand, parse_targets

    values = {
        "python": python,
        "python_mcpactor": python_mcpactor,
        "node": shutil.which("node") or "node",
        "bench": str(HERE),
    }
    found = {t.name: t for t in parse_targets((HERE / "targets.toml").read_text())}
    out = {}
    for name in names.split(","):
        target = found.get(name)
        if target is None or target.kind != "stdio":
            stdio = sorted(n for n, t in found.items() if t.kind == "stdio")
            raise SystemExit(f"no stdio target {name!r} in bench/targets.toml: {', '.join(stdio)}")
        if target.npm:
            ensure_installed(Path(expand(target.npm, values)))
        opening = target.revision.request(1, *target.revision.opening()) + b"\n"
        out[name] = (command(target, values), opening)
    return out


def _bytecode_env(mode: str, package: Path) -> dict[str, str]:
    env = dict(os.environ)
    if mode == "cached":
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = tempfile.mkdtemp(prefix="cold-start-pycache-")
    elif mode == "source":
        copy = tempfile.mkdtemp(prefix="cold-start-source-")
        shutil.copytree(
            package, Path(copy, "mcpactor"), ignore=shutil.ignore_patterns("__pycache__")
        )
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        env["PYTHONPATH"] = os.pathsep.join([copy, *filter(None, [env.get("PYTHONPATH")])])
    return env


def _with_package(env: dict[str, str], directory: str | None) -> dict[str, str]:
    if directory is None:
        return env
    # The baseline's package comes first on sys.path, before this checkout's.
    return {**env, "PYTHONPATH": os.pathsep.join(filter(None, [directory, env.get("PYTHONPATH")]))}


def _summary(values: list[float]) -> str:
    if len(values) < 4:
        return f"{statistics.median(values):7.1f}"
    q1, q2, q3 = statistics.quantiles(values, n=4)
    return f"{q2:7.1f} [{q1:6.1f} – {q3:6.1f}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--python-mcpactor", help="{python_mcpactor} of --targets")
    parser.add_argument("--targets", metavar="NAMES", help="stdio targets of bench/targets.toml")
    parser.add_argument("--bytecode", choices=["cached", "source", "inherit"], default="cached")
    parser.add_argument("--baseline", metavar="DIR", help="a directory holding another mcpactor")
    parser.add_argument("command", nargs="*", help="a stdio server command (after --)")
    args = parser.parse_args()
    python = args.python
    mcpactor = str(Path(python).with_name("mcpactor"))
    servers = (
        {" ".join(args.command): (args.command, INITIALIZE)}
        if args.command
        else {
            "bench/mcpactor_server.py stdio": (
                [python, str(HERE / "mcpactor_server.py"), "stdio"],
                INITIALIZE,
            ),
            "mcpactor serve clock": ([mcpactor, "serve", "clock"], INITIALIZE),
        }
    )
    if args.targets:
        servers = target_commands(args.targets, python, args.python_mcpactor or python)
    versions: dict[str, Path] = {"": HERE.parent / "mcpactor"}
    if args.baseline is not None:
        versions["baseline: "] = Path(args.baseline, "mcpactor")
    cases: dict[str, Case] = {}
    if not args.command:
        env = _bytecode_env(args.bytecode, versions[""])
        floor = [python, "-c", "import trio"]
        cases["python -c 'import trio' (floor)"] = (run_floor, floor, env, b"")
    if args.baseline is not None:
        # ``python -m mcpactor`` puts the working directory first on sys.path: from this
        # checkout's root the baseline's runs would import this checkout's package. Each
        # version is named on PYTHONPATH instead, from a directory holding neither.
        os.chdir(tempfile.mkdtemp(prefix="cold-start-cwd-"))
    for label, package in versions.items():
        env = _bytecode_env(args.bytecode, package)
        if args.bytecode != "source" and (label or args.baseline is not None):
            env = _with_package(env, str(package.parent))
        for name, (argv, opening) in servers.items():
            cases[label + name] = (run_server, argv, env, opening)
    for run, argv, env, opening in cases.values():  # one discarded run each: byte code, cache
        run(argv, env, opening)
    results: dict[str, list[Run]] = {name: [] for name in cases}
    for _ in range(args.runs):
        for name, (run, argv, env, opening) in cases.items():
            results[name].append(run(argv, env, opening))
    print(
        f"cold start ({args.runs} runs each, bytecode {args.bytecode}, {os.cpu_count()} CPUs, "
        f"load {os.getloadavg()[0]:.2f}): median [quartiles], ms"
    )
    for name, rows in results.items():
        start_ms = [row[0] for row in rows]
        rss = [row[1] for row in rows if row[1] is not None]
        exit_ms = [row[2] for row in rows]
        cpu_ms = statistics.median(row[3] for row in rows)
        line = f"  {name:46} start {_summary(start_ms)}  cpu {cpu_ms:6.1f}"
        at_answer = [row[4] for row in rows if row[4] is not None]
        if at_answer:
            line += f"  cpu@answer {_summary(at_answer)}"
        if rss:
            rss_mb, exit_median = statistics.median(rss), statistics.median(exit_ms)
            line += f"  rss {rss_mb:5.1f} MB  exit {exit_median:5.1f}"
        print(line)


if __name__ == "__main__":
    main()
