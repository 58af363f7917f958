"""Where start-up's import time goes, by top-level package: ``python -X importtime``, summed.

    python bench/importtime.py [--runs 5] [--top 25]            mcpactor serve clock over stdio
    python bench/importtime.py [--runs 5] -- COMMAND ...        any stdio server (a python command)
    python bench/importtime.py --exits -- COMMAND ...           a command that exits by itself
    python bench/importtime.py --file imports.txt               a saved -X importtime log

The server is started with ``-X importtime`` (a python COMMAND gets it after its
interpreter), sent initialize, and its stdin closed once it answered, so that what it
imports on the way to its first answer is in the log as well as what it imports at
start. Byte code is written and read in a private cache (``--inherit-env``: as the
environment says), so that compiling is not counted. Each module's *self* time is added
to its top-level package (``mcpactor.server._x`` to ``mcpactor``); the median over the
runs is printed per package with the number of modules and its share of the total.
Self times add up (cumulative times nest); the figures are wall time of a
single-threaded start, so run it on a quiet machine or compare only shares.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict
from collections.abc import Iterable

INITIALIZE = (
    b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",'
    b'"capabilities":{},"clientInfo":{"name":"importtime","version":"0"}}}\n'
)
LINE = re.compile(r"^import time:\s+(\d+)\s+\|\s+(\d+)\s+\|(\s*)(\S+)\s*$")


def by_package(log: Iterable[str]) -> dict[str, tuple[float, int]]:
    """Self import time in ms and module count per top-level package, from -X importtime lines."""
    totals: dict[str, float] = defaultdict(float)
    counts: dict[str, int] = defaultdict(int)
    for line in log:
        match = LINE.match(line)
        if match is None:  # the header, or anything else the server wrote to stderr
            continue
        package = match[4].split(".")[0]
        totals[package] += int(match[1]) / 1000
        counts[package] += 1
    return {name: (totals[name], counts[name]) for name in totals}


def importtime_argv(command: list[str]) -> list[str]:
    """command with -X importtime after its interpreter."""
    return [command[0], "-X", "importtime", *command[1:]]


def cached_env() -> dict[str, str]:
    """Our environment with byte code written and read (in a private cache), as pip installs run.

    Without it, where PYTHONDONTWRITEBYTECODE is set, an editable checkout is compiled from
    source on every start and the compiling would be counted as its imports.
    """
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = tempfile.mkdtemp(prefix="importtime-pycache-")
    return env


def one_run(argv: list[str], env: dict[str, str] | None = None) -> list[str]:
    """The stderr lines of a command that exits by itself (``mcpactor --version``, say)."""
    done = subprocess.run(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
        timeout=120,
        check=False,
    )
    return done.stderr.decode(errors="replace").splitlines()


def one_start(argv: list[str], env: dict[str, str] | None = None) -> list[str]:
    """The stderr lines of one start of a stdio server, to its initialize answer and exit."""
    # stderr to a file: a pipe nobody reads while we wait for the answer would fill up
    with tempfile.TemporaryFile() as err:
        process = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, env=env
        )
        assert process.stdin is not None
        assert process.stdout is not None
        process.stdin.write(INITIALIZE)
        process.stdin.flush()
        answer = process.stdout.readline()
        process.stdin.close()
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        process.stdout.close()
        if b'"result"' not in answer:
            raise SystemExit(f"{argv}: no initialize result, got {answer[:200]!r}")
        err.seek(0)
        return err.read().decode(errors="replace").splitlines()


def table(runs: list[dict[str, tuple[float, int]]], top: int) -> str:
    """The medians over runs per package, largest first, as a markdown table."""
    names = {name for run in runs for name in run}
    medians = {
        name: statistics.median(run.get(name, (0.0, 0))[0] for run in runs) for name in names
    }
    total = sum(medians.values())
    title = f"import self time by top-level package (median of {len(runs)} runs)"
    lines = [
        f"{title}: {total:.1f} ms in all",
        "",
        "| package | ms | share | modules |",
        "| --- | --- | --- | --- |",
    ]
    for name in sorted(names, key=lambda n: -medians[n])[:top]:
        modules = max(run.get(name, (0.0, 0))[1] for run in runs)
        share = 100 * medians[name] / total if total else 0.0
        lines.append(f"| {name} | {medians[name]:.1f} | {share:.1f} % | {modules} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--top", type=int, default=25, help="packages shown")
    parser.add_argument("--file", help="a saved -X importtime log instead of starting a server")
    parser.add_argument(
        "--inherit-env",
        action="store_true",
        help="run with the environment as it is (default: byte code cached in a private folder)",
    )
    parser.add_argument(
        "--exits", action="store_true", help="COMMAND exits by itself: no initialize is sent"
    )
    parser.add_argument("command", nargs="*", help="a python stdio server's command (after --)")
    args = parser.parse_args()
    if args.file:
        with open(args.file, encoding="utf-8", errors="replace") as log:
            print(table([by_package(log)], args.top))
        return
    command = args.command or [sys.executable, "-m", "mcpactor", "serve", "clock"]
    argv = importtime_argv(command)
    env = None if args.inherit_env else cached_env()
    once = one_run if args.exits else one_start
    once(argv, env)  # discarded: byte-compiling, the page cache
    print(table([by_package(once(argv, env)) for _ in range(args.runs)], args.top))


if __name__ == "__main__":
    main()
