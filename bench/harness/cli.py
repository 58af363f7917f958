"""The command line of the harness.

    bench/mcpbench.py --targets bench/targets.toml [--only a,b] [--tests x,y | --suite quick|all]
    bench/mcpbench.py --stdio "CMD" ...                       one stdio server
    bench/mcpbench.py --http URL [--server-cmd "CMD {port}"]  one HTTP server
    ... --revision 2026-07-28                                 speak it (no handshake)
    bench/mcpbench.py --report a.json [b.json ...]            the tables of saved records

In a command, {python} is --python (or the target's own python), {node} the node on PATH,
{bench} the folder of this harness's bench/, {port} a free port per spawn, and any
--set NAME=VALUE fills {NAME}.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from .report import HEADLINE, report
from .runs import Metrics, Run, run_all
from .system import raise_fd_limit
from .targets import ALL_TESTS, SUITES, Target, parse_targets
from .wire import PROTOCOL_VERSION, STATELESS_VERSIONS, Revision

BENCH_DIR = Path(__file__).resolve().parent.parent


def parser() -> argparse.ArgumentParser:
    """The argument parser."""
    ap = argparse.ArgumentParser(
        prog="mcpbench",
        description="Load driver for MCP servers: targets side by side, medians and ratios.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__,
    )
    source = ap.add_mutually_exclusive_group()
    source.add_argument("--stdio", metavar="CMD", help="one stdio server's command line")
    source.add_argument("--http", metavar="URL", help="one Streamable HTTP endpoint")
    source.add_argument("--targets", metavar="TOML", help="a file of [[target]] tables")
    ap.add_argument("--server-cmd", metavar="CMD", help="with --http: start this per test")
    ap.add_argument("--server-pid", type=int, help="with --http: the running server's PID")
    ap.add_argument("--stateless", action="store_true", help="with --http: no sessions")
    ap.add_argument(
        "--revision",
        default=PROTOCOL_VERSION,
        choices=[PROTOCOL_VERSION, *STATELESS_VERSIONS],
        help="with --stdio or --http: the protocol revision to speak (2026-07-28: no handshake)",
    )
    ap.add_argument("--name", default="target", help="the name of a --stdio or --http target")
    ap.add_argument("--only", help="comma list of target names to run from --targets")
    ap.add_argument("--suite", choices=sorted(SUITES), default="quick")
    ap.add_argument("--tests", help=f"comma list instead of a suite: {', '.join(ALL_TESTS)}")
    ap.add_argument(
        "--rounds", type=int, default=3, help="rounds per test (cold_start: 10, cancel: 1)"
    )
    ap.add_argument(
        "--duration", type=float, default=2.0, help="seconds measured per throughput cell"
    )
    ap.add_argument(
        "--streams",
        type=int,
        default=10_000,
        metavar="N",
        help="sessions holding a stream open in http_streams",
    )
    ap.add_argument(
        "--warmup", type=float, default=0.5, help="seconds of load before a cell is measured"
    )
    ap.add_argument(
        "--max-other",
        type=float,
        default=25.0,
        metavar="PCT",
        help="a window is noisy when other processes used more than PCT %% of a core",
    )
    ap.add_argument("--retries", type=int, default=3, help="more windows to try when one is noisy")
    ap.add_argument(
        "--python",
        default=os.environ.get("MCPBENCH_PYTHON", sys.executable),
        help="{python} in commands (default: $MCPBENCH_PYTHON, else this python)",
    )
    ap.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="define {NAME} for commands",
    )
    ap.add_argument("--out", help="write the raw records (JSON) here as they come")
    ap.add_argument("--report", nargs="+", metavar="JSON", help="print the tables of records")
    ap.add_argument(
        "--peer-order",
        default="trio,ts-sdk,raw,sdk,fastmcp",
        help="peers first in tables and ratios",
    )
    ap.add_argument(
        "--headline",
        default=HEADLINE,
        metavar="OURS:REF,...;...",
        help="summary tables: a peer's figures beside the references' (empty: none)",
    )
    ap.add_argument("-v", "--verbose", action="store_true", help="print each round's figures")
    return ap


def placeholders(args: argparse.Namespace) -> dict[str, str]:
    """The {names} commands may use."""
    values = {
        "python": args.python,
        "bench": str(BENCH_DIR),
        "node": shutil.which("node") or "node",
    }
    for item in args.set:
        name, eq, value = item.partition("=")
        if not eq or not name.isidentifier():
            raise ValueError(f"--set wants NAME=VALUE, not {item!r}")
        values[name] = value
    return values


def select_targets(args: argparse.Namespace) -> list[Target]:
    """The targets the command line names."""
    if args.targets:
        targets = parse_targets(Path(args.targets).read_text())
        if args.only:
            wanted = args.only.split(",")
            missing = sorted(set(wanted) - {t.name for t in targets})
            if missing:
                raise ValueError(f"no such targets in {args.targets}: {', '.join(missing)}")
            targets = [t for t in targets if t.name in wanted]
        return targets
    if args.stdio:
        return [
            Target(name=args.name, kind="stdio", cmd=args.stdio, revision=Revision(args.revision))
        ]
    if args.http:
        if args.server_cmd is None and "{port}" in args.http:
            raise ValueError("{port} in --http needs --server-cmd")
        return [
            Target(
                name=args.name,
                kind="http",
                cmd=args.server_cmd or "",
                url=args.http,
                stateless=args.stateless,
                pid=args.server_pid,
                revision=Revision(args.revision),
            )
        ]
    raise ValueError("give --stdio, --http, --targets or --report")


def select_tests(args: argparse.Namespace) -> list[str]:
    """The tests the command line names, in the harness's order of groups."""
    tests = args.tests.split(",") if args.tests else SUITES[args.suite]
    unknown = [t for t in tests if t not in ALL_TESTS]
    if unknown:
        raise ValueError(f"unknown tests: {', '.join(unknown)}")
    return tests


def recorder(
    run: Run, run_id: str, records: list[dict[str, Any]], out: str | None
) -> Callable[[Target, str, int, Metrics], None]:
    """Where each round's figures go: the records, the --out file, and with -v stderr."""

    def record(target: Target, test: str, round_no: int, metrics: Metrics) -> None:
        records.append(
            {
                "run": run_id,
                "target": target.name,
                "peer": target.peer,
                "mode": target.mode,
                "modes": target.modes,
                "kind": target.kind,
                "test": test,
                "round": round_no,
                "metrics": metrics,
                "note": target.note,
            }
        )
        if out:
            Path(out).write_bytes(orjson.dumps(records, option=orjson.OPT_INDENT_2))
        if run.verbose:
            short = {k: round(v, 1) if isinstance(v, float) else v for k, v in metrics.items()}
            run.log(f"  r{round_no} {target.name:28s} {test:20s} {short}")

    return record


def main(argv: list[str] | None = None) -> int:
    """Run the harness; the report goes to stdout."""
    ap = parser()
    args = ap.parse_args(argv)
    order = [p for p in args.peer_order.split(",") if p]
    if args.report:
        records = []
        for name in args.report:
            records += orjson.loads(Path(name).read_bytes())
        print(report(records, order, args.headline))
        return 0
    try:
        values = placeholders(args)
        targets = select_targets(args)
        tests = select_tests(args)
    except (ValueError, OSError) as exc:
        ap.error(str(exc))
    if not targets:
        ap.error("no targets selected")
    raise_fd_limit()
    run = Run(
        values,
        duration=args.duration,
        warmup=args.warmup,
        max_other=args.max_other,
        retries=args.retries,
        verbose=args.verbose,
        streams=args.streams,
    )
    records: list[dict[str, Any]] = []
    record = recorder(run, time.strftime("%Y%m%d-%H%M%S"), records, args.out)
    try:
        import uvloop

        runner: Callable[[Any], Any] = uvloop.run
        loop = "uvloop"
    except ImportError:
        runner, loop = asyncio.run, "asyncio"
    run.log(
        f"mcpbench: {len(targets)} target(s), tests {tests}, rounds {args.rounds}, "
        f"{args.duration}s/cell, loop {loop}, scratch {run.scratch}"
    )
    runner(run_all(run, targets, tests, args.rounds, record))
    print(report(records, order, args.headline))
    return 0
