"""The cost of the middleware chain on the hot path, beside the code before it, in one run.

    python bench/middleware.py BASE [--rounds 7] [--calls 20000] [--out bench/results/x.md]

For each hot-path micro-benchmark (``micro.py``: tools/call over the stdio pump, in a
session and at 2026-07-28; ``micro_http.py --mode json|2026``: over the Streamable HTTP
app) it runs, round after round in turn: the package at commit BASE (exported with
``git archive``, first on ``PYTHONPATH``; the benchmark scripts are this checkout's), this
checkout with no middleware, and this checkout with one middleware that passes every
message through (``--middleware pass``). Each figure is the median over the rounds of µs
of CPU per call; the differences are what the chain adds.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

BENCHES = {
    "stdio, session (2025-11-25)": ["micro.py"],
    "stdio, 2026-07-28": ["micro.py", "--revision", "2026-07-28"],
    "HTTP json, session": ["micro_http.py", "--mode", "json"],
    "HTTP, 2026-07-28": ["micro_http.py", "--mode", "2026"],
}
VARIANTS = ("before", "none", "pass")
FIGURE = re.compile(r"([0-9.]+) µs of CPU per tools/call")


def export(rev: str, into: Path) -> Path:
    """REV's ``mcpactor`` package, extracted under ``into``."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", rev, "mcpactor"], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def once(script: list[str], calls: int, variant: str, base: Path) -> float:
    """µs of CPU per call of one run of a benchmark script."""
    env = dict(os.environ)
    first = str(base) if variant == "before" else str(ROOT)
    env["PYTHONPATH"] = os.pathsep.join([first, env.get("PYTHONPATH", "")])
    command = [sys.executable, str(HERE / script[0]), *script[1:], "--calls", str(calls)]
    if variant == "pass":
        command += ["--middleware", "pass"]
    done = subprocess.run(command, env=env, check=True, capture_output=True, text=True)
    found = FIGURE.search(done.stdout)
    if found is None:
        raise SystemExit(f"no figure in {done.stdout!r}")
    return float(found.group(1))


def main() -> None:
    """Run every benchmark in every variant, round after round, and print the table."""
    parser = argparse.ArgumentParser()
    parser.add_argument("base", help="the commit before the chain (e.g. the merge base)")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--out", type=Path, default=None, help="also write the table here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        base = export(args.base, Path(folder))
        figures: dict[tuple[str, str], list[float]] = {}
        for _ in range(args.rounds):
            for name, script in BENCHES.items():
                for variant in VARIANTS:
                    value = once(script, args.calls, variant, base)
                    figures.setdefault((name, variant), []).append(value)
    lines = [
        f"| hot path ({args.rounds} rounds, median µs of CPU per tools/call) | before "
        "| no middleware | one pass-through | added: none | added: pass |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name in BENCHES:
        before, none, passing = (
            statistics.median(figures[(name, variant)]) for variant in VARIANTS
        )
        lines.append(
            f"| {name} | {before:.1f} | {none:.1f} | {passing:.1f} "
            f"| {none - before:+.1f} | {passing - before:+.1f} |"
        )
    table = "\n".join(lines)
    print(table)
    if args.out is not None:
        args.out.write_text(table + "\n")


if __name__ == "__main__":
    main()
