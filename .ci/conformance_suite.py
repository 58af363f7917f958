"""Run the official MCP conformance suite against a running server and tabulate it.

    python .ci/conformance_suite.py --url http://127.0.0.1:PORT/mcp --version 0.1.16
    python .ci/conformance_suite.py --url ... --version 0.2.0-alpha.12 --requirements 2025-11-25
    python .ci/conformance_suite.py --url ... --version 0.2.0-alpha.12 --real-checks -- --suite all

The suite is the npm package ``@modelcontextprotocol/conformance``; it only speaks
Streamable HTTP to servers and needs Node 22 or newer. Both are installed from the npm
registry on first use, into a cache folder (``$CONFORMANCE_CACHE``, by default
``~/.cache/mcpactor-conformance``): the suite into ``suite-<version>/`` and, when the
``node`` on PATH is older than 22, the ``node-linux-<arch>@22`` package into ``node22/``.

It prints one row per scenario from the suite's ``checks.json`` files: a scenario passes
when none of its checks is a FAILURE (the suite's own rule); one with no scored check at
all shows as ``pass?`` so that a vacuous pass stays visible. Under ``--requirements`` the
scenarios the suite reports as not scored are listed but not counted. The last line is
``N passed, M failed`` (scenarios).

With ``--real-checks`` a scenario must also prove something: one that passed without a
single SUCCESS check of its own (the suite's ``wire-schema-valid``, added to every
scenario, does not count) is shown as ``EMPTY`` and counted as failed, unless it is
excused with ``--excuse NAME=REASON``, which shows it as ``pass?`` with the reason. An
excuse for a scenario that did not run, or that now proves something, fails the run.

Exit status: 0 if no counted scenario failed, 1 if one did (or was EMPTY, or an excuse
was stale, or other than ``--expect`` scenarios were counted), 2 if the suite could not be
installed or run.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import socket
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

SUITE_PACKAGE = "@modelcontextprotocol/conformance"
NODE_MAJOR = 22  # the suite imports fs.globSync, new in Node 22
NOTE_LIMIT = 100  # characters of a failure message shown in the table
TAIL_LINES = 40  # of the suite's output, shown when the run went wrong
TAIL_WIDTH = 300  # characters of each of those lines

# The check the suite adds to every scenario: what was sent validates against the schema.
SCHEMA_CHECK = "wire-schema-valid"

# server-<scenario>-<ISO timestamp, with '-' for ':' and '.'>
RESULT_DIR = re.compile(r"^server-(?P<name>.+)-(?P<stamp>\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z)$")
SUMMARY_LINE = re.compile(r"^[✓✗] (?P<name>\S+): (?P<passed>\d+) passed, (?P<failed>\d+) failed")
UNSCORED_LINE = re.compile(r"^\s+[✓✗] (?P<name>\S+) \((?P<why>[^)]*)\)")


class HarnessError(Exception):
    """The suite could not be installed or run: exit status 2."""


@dataclass
class Scenario:
    """What one scenario's checks came to."""

    name: str
    passed: int = 0
    failed: int = 0
    warnings: int = 0
    note: str = ""
    unscored: str = ""
    #: SUCCESS checks of the scenario's own (not the schema check every scenario gets)
    proven: int = 0
    #: why a scenario that proves nothing is accepted anyway (--excuse)
    excused: str = ""
    #: whether it must prove something (--real-checks)
    must_prove: bool = False

    @property
    def empty(self) -> bool:
        """Passed without proving anything, where that is not accepted."""
        return self.must_prove and not self.failed and not self.proven and not self.excused

    @property
    def verdict(self) -> str:
        """FAIL, EMPTY, pass, or pass? when nothing was scored (or it was excused)."""
        if self.failed:
            return "FAIL"
        if self.empty:
            return "EMPTY"
        if self.must_prove and not self.proven:
            return "pass?"
        return "pass" if self.passed else "pass?"

    @property
    def counts_as_failed(self) -> bool:
        """A FAILURE check, or nothing proven where something must be."""
        return bool(self.failed) or self.empty


def log(message: str) -> None:
    """Progress for the person reading CI output, on stderr."""
    print(f"[conformance_suite] {message}", file=sys.stderr, flush=True)


def node_major(node: str) -> int:
    """The major version of a node binary, 0 if it does not run."""
    try:
        done = subprocess.run(
            [node, "-p", "process.versions.node.split('.')[0]"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        )
        return int(done.stdout.strip())
    except (OSError, subprocess.SubprocessError, ValueError):
        return 0


def npm_install(prefix: Path, spec: str) -> None:
    """Install one npm package under ``prefix`` (npm's output goes to stderr)."""
    npm = shutil.which("npm")
    if npm is None:
        raise HarnessError("npm is needed to install the conformance suite and Node 22")
    log(f"installing {spec} from the npm registry into {prefix}")
    prefix.mkdir(parents=True, exist_ok=True)
    command = [npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund"]
    done = subprocess.run([*command, "--loglevel=error", spec], stdout=sys.stderr, check=False)
    if done.returncode != 0:
        raise HarnessError(f"npm install {spec} failed (exit {done.returncode})")


def find_node(cache: Path) -> str:
    """A node binary of at least NODE_MAJOR: the one on PATH, or one installed from npm."""
    on_path = shutil.which("node")
    if on_path is not None and node_major(on_path) >= NODE_MAJOR:
        return on_path
    arch = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(
        platform.machine().lower()
    )
    if sys.platform != "linux" or arch is None:
        raise HarnessError(f"install Node {NODE_MAJOR} or newer: no npm package for this platform")
    package = f"node-linux-{arch}"
    node = cache / "node22" / "node_modules" / package / "bin" / "node"
    if node_major(str(node)) < NODE_MAJOR:
        npm_install(cache / "node22", f"{package}@{NODE_MAJOR}")
    if node_major(str(node)) < NODE_MAJOR:
        raise HarnessError(f"{node} is not Node {NODE_MAJOR} or newer")
    return str(node)


def find_suite(cache: Path, version: str) -> Path:
    """The suite's entry point at exactly ``version``, installed if missing."""
    prefix = cache / f"suite-{version}"
    package = prefix / "node_modules" / SUITE_PACKAGE
    if installed_version(package) != version:
        npm_install(prefix, f"{SUITE_PACKAGE}@{version}")
    if installed_version(package) != version:
        raise HarnessError(f"{SUITE_PACKAGE}@{version} is not installed in {prefix}")
    entry = package / "dist" / "index.js"
    if not entry.is_file():
        raise HarnessError(f"the suite's entry point {entry} is missing")
    return entry


def installed_version(package: Path) -> str | None:
    """The version in an installed package's package.json, if there is one."""
    try:
        version = json.loads((package / "package.json").read_text(encoding="utf-8"))["version"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return version if isinstance(version, str) else None


def read_results(raw: Path, suite_log: str) -> list[Scenario]:
    """Every scenario the suite ran, in the order it ran them."""
    scenarios: dict[str, Scenario] = {}
    found = []
    for entry in raw.iterdir() if raw.is_dir() else ():
        match = RESULT_DIR.match(entry.name)
        if match is not None:
            found.append((match["stamp"], match["name"], entry / "checks.json"))
    for _, name, path in sorted(found):
        scenario = scenarios[name] = Scenario(name)
        try:
            checks = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            scenario.failed, scenario.note = 1, f"unreadable {path.name}"
            continue
        for check in checks if isinstance(checks, list) else ():
            status = check.get("status") if isinstance(check, dict) else None
            if status == "SUCCESS":
                scenario.passed += 1
                if check.get("id") != SCHEMA_CHECK:
                    scenario.proven += 1
            elif status == "WARNING":
                scenario.warnings += 1
            elif status == "FAILURE":
                scenario.failed += 1
                if not scenario.note:
                    message = check.get("errorMessage") or check.get("description") or ""
                    scenario.note = f"{check.get('id', '?')}: {message}"
    in_unscored = False
    for line in suite_log.splitlines():
        if line.startswith("Not scored for "):
            in_unscored = True
        elif in_unscored and (match := UNSCORED_LINE.match(line)):
            scenarios.setdefault(match["name"], Scenario(match["name"])).unscored = match["why"]
        elif (match := SUMMARY_LINE.match(line)) and match["name"] not in scenarios:
            # A scenario that ended before writing its checks: the summary is all there is.
            scenarios[match["name"]] = Scenario(
                match["name"],
                passed=int(match["passed"]),
                failed=int(match["failed"]),
                note="no checks.json written (see the suite's output)",
            )
    return list(scenarios.values())


def table(scenarios: list[Scenario]) -> list[str]:
    """The printed report: one row per scenario, then the totals."""
    width = max(len("scenario"), *(len(s.name) for s in scenarios))
    rows = [f"{'scenario':<{width}}  result  pass fail warn  note", "-" * (width + 30)]
    for s in scenarios:
        note = s.note or ("no scored checks" if not s.passed and not s.failed else "")
        if s.must_prove and not s.proven and not s.failed:
            note = f"excused: {s.excused}" if s.excused else "no check of its own succeeded"
        if s.unscored:
            note = f"[not scored: {s.unscored}] {note}".rstrip()
        note = " ".join(note.split())
        if len(note) > NOTE_LIMIT:
            note = note[: NOTE_LIMIT - 1] + "…"
        counts = f"{s.passed:>4} {s.failed:>4} {s.warnings:>4}"
        rows.append(f"{s.name:<{width}}  {s.verdict:<6}  {counts}  {note}".rstrip())
    counted = [s for s in scenarios if not s.unscored]
    failed = sum(1 for s in counted if s.counts_as_failed)
    rows.append(
        f"checks: {sum(s.passed for s in scenarios)} passed, "
        f"{sum(s.failed for s in scenarios)} failed, {sum(s.warnings for s in scenarios)} "
        f"warnings; scenarios not scored: {len(scenarios) - len(counted)}"
    )
    rows.append(f"{len(counted) - failed} passed, {failed} failed")
    return rows


def check_listening(url: str) -> None:
    """Fail as a harness error, not as 30 failed scenarios, when nothing serves ``url``."""
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        socket.create_connection((parts.hostname or "127.0.0.1", port), timeout=10).close()
    except OSError as exc:
        raise HarnessError(f"nothing accepts connections for {url}: {exc}") from exc


def print_tail(suite_log: str) -> None:
    """The end of the suite's output, each line cut short, for a run that went wrong."""
    for line in suite_log.splitlines()[-TAIL_LINES:]:
        print(line[:TAIL_WIDTH])


def run(args: argparse.Namespace, out: Path) -> int:
    """Install what is missing, run the suite into ``out``, print the table."""
    check_listening(args.url)
    cache = Path(args.cache).expanduser()
    node = find_node(cache)
    entry = find_suite(cache, args.version)
    command = [node, str(entry), "server", "--url", args.url, "-o", str(out / "raw")]
    if args.requirements:
        command += ["--requirements", args.requirements]
    command += args.extra
    log(f"suite {args.version}, node {node_major(node)}, against {args.url}")
    try:
        done = subprocess.run(
            command,
            cwd=out,
            capture_output=True,
            text=True,
            encoding="utf-8",
            errors="replace",
            timeout=args.timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise HarnessError(f"the suite did not finish within {args.timeout}s") from exc
    suite_log = done.stdout + done.stderr
    (out / "suite.log").write_text(suite_log, encoding="utf-8")
    scenarios = read_results(out / "raw", suite_log)
    if not scenarios:
        print_tail(suite_log)
        raise HarnessError(f"the suite reported no scenario (exit {done.returncode})")
    excuses = dict(args.excuse)
    for scenario in scenarios:
        scenario.must_prove = args.real_checks
        scenario.excused = excuses.pop(scenario.name, "")
    print("\n".join(table(scenarios)), flush=True)
    if excuses:
        print(f"excused scenarios the suite did not run: {', '.join(sorted(excuses))}")
        return 1
    # Like the suite's own baseline of expected failures: an excuse no longer needed is
    # stale, and goes, so that the list only ever names what still proves nothing.
    stale = sorted(s.name for s in scenarios if s.excused and s.proven)
    if stale:
        print(f"excused scenarios that now prove something (drop the excuse): {', '.join(stale)}")
        return 1
    counted = [s for s in scenarios if not s.unscored]
    if any(s.counts_as_failed for s in counted):
        return 1
    if done.returncode not in (0, 1) or (
        done.returncode == 1 and not any(s.failed for s in scenarios)
    ):
        print_tail(suite_log)
        raise HarnessError(f"the suite exited {done.returncode} with no failed check")
    if args.expect is not None and len(counted) != args.expect:
        print(f"expected {args.expect} scored scenarios, the suite scored {len(counted)}")
        return 1
    return 0


def excuse(text: str) -> tuple[str, str]:
    """``NAME=REASON`` of --excuse, split."""
    name, _, reason = text.partition("=")
    if not name or not reason.strip():
        raise argparse.ArgumentTypeError(f"expected NAME=REASON, got {text!r}")
    return name, reason.strip()


def main(argv: list[str] | None = None) -> int:
    """Parse the command line, run, and turn a harness failure into exit status 2."""
    default_cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", required=True, help="the server's Streamable HTTP endpoint")
    parser.add_argument("--version", required=True, help="the suite's npm version")
    parser.add_argument("--requirements", help="score exactly this revision's set (0.2 suites)")
    parser.add_argument("--expect", type=int, help="how many scored scenarios there must be")
    parser.add_argument("--out", help="keep the suite's output (checks.json files) here")
    parser.add_argument(
        "--real-checks",
        action="store_true",
        help="a scenario with no SUCCESS check of its own fails (see --excuse)",
    )
    parser.add_argument(
        "--excuse",
        action="append",
        default=[],
        type=excuse,
        metavar="NAME=REASON",
        help="accept that scenario NAME proves nothing, for REASON; repeatable",
    )
    parser.add_argument("--timeout", type=float, default=540.0, help="seconds for the run")
    parser.add_argument(
        "--cache",
        default=os.environ.get("CONFORMANCE_CACHE") or default_cache / "mcpactor-conformance",
        help="where Node 22 and the suite are installed",
    )
    parser.add_argument("extra", nargs="*", help="more arguments for the suite, after --")
    args = parser.parse_args(argv)
    try:
        if args.out:
            out = Path(args.out).resolve()
            shutil.rmtree(out / "raw", ignore_errors=True)
            out.mkdir(parents=True, exist_ok=True)
            return run(args, out)
        with tempfile.TemporaryDirectory(prefix="mcpactor-conformance-") as scratch:
            return run(args, Path(scratch))
    except HarnessError as exc:
        log(str(exc))
        return 2


if __name__ == "__main__":
    sys.exit(main())
