"""The tests the harness knows, the targets it runs them on, and which test fits which target."""

from __future__ import annotations

import re
import shlex
import tomllib
from dataclasses import dataclass, field
from typing import Any

from .wire import Revision

STDIO_TESTS = [
    "stdio_lat1",
    "stdio_pipe64",
    "stdio_lat1_sync",
    "stdio_pipe64_sync",
    "stdio_sleep1000",
    "cold_start",
    "progress",
    "cancel",
]
# http_cC_sS: C connections, each with one call in flight, spread over S sessions.
HTTP_CELLS = [f"http_c{c}_s{s}" for s in (1, 64) for c in (1, 16, 64)]
HTTP_TESTS = [
    *HTTP_CELLS,
    "http_sleep1000",
    "http_sessions1000",
    "http_streams",
    "progress",
    "cancel",
]
ALL_TESTS = list(dict.fromkeys(STDIO_TESTS + HTTP_TESTS))
SUITES = {
    "quick": ["stdio_lat1", "stdio_pipe64", "cold_start", "http_c1_s1", "http_c16_s1"],
    # every row of the round-three table (the summary the report puts first)
    "round3": [
        "stdio_lat1",
        "stdio_pipe64",
        "cold_start",
        "http_c16_s1",
        "http_sessions1000",
        "http_streams",
    ],
    "all": ALL_TESTS,
}
# Closed-loop load on one server process, which serves all of them in one round.
THROUGHPUT_TESTS = frozenset(
    ["stdio_lat1", "stdio_pipe64", "stdio_lat1_sync", "stdio_pipe64_sync", *HTTP_CELLS]
)
# cancel waits out its sleeps; cold_start is cheap; http_streams opens --streams sessions
ROUNDS_OF = {"cancel": 1, "cold_start": 10, "http_streams": 1}


def http_cell_shape(test: str) -> tuple[int, int]:
    """(connections, sessions) of an http_cC_sS test."""
    match = re.fullmatch(r"http_c(\d+)_s(\d+)", test)
    if match is None:
        raise ValueError(f"not an HTTP throughput cell: {test!r}")
    return int(match[1]), int(match[2])


@dataclass
class Target:
    """One server as the harness runs it."""

    name: str
    kind: str  # "stdio" or "http"
    cmd: str = ""  # the stdio server's command, or the command that starts the HTTP server
    url: str = ""  # the HTTP endpoint; may hold {port}
    peer: str = ""  # the table it is reported in; ratios compare peers
    mode: str = ""  # what is compared across peers (stdio, http-json, http-sse, ...)
    modes: list[str] = field(default_factory=list)  # more modes this target stands in for
    stateless: bool = False
    skip: list[str] = field(default_factory=list)
    note: str = ""
    python: str = ""  # replaces {python} for this target
    pid: int | None = None  # an HTTP server already running, for its CPU and RSS
    revision: Revision = field(default_factory=Revision)  # what the driver speaks to it
    bearer: str = ""  # a file holding an access token every HTTP request carries; may hold {bench}
    npm: str = ""  # a folder whose locked npm packages the command needs; may hold {bench}

    def __post_init__(self) -> None:
        self.peer = self.peer or self.name
        self.mode = self.mode or self.kind
        # a revision without sessions has nothing for a session test to measure
        self.stateless = self.stateless or self.revision.stateless

    def runs(self, test: str) -> bool:
        """Whether test applies to this target."""
        if test in self.skip:
            return False
        if self.kind == "stdio":
            return test in STDIO_TESTS
        if test not in HTTP_TESTS:
            return False
        if self.stateless:  # one session is all a stateless server has
            if test == "http_sessions1000":
                return False
            # a session-era server without sessions has no stream per session to hold
            if test == "http_streams" and not self.revision.stateless:
                return False
            if test in HTTP_CELLS and http_cell_shape(test)[1] != 1:
                return False
        return True


KEYS = {
    "name",
    "stdio",
    "http",
    "cmd",
    "peer",
    "mode",
    "modes",
    "stateless",
    "skip",
    "note",
    "python",
    "revision",
    "bearer",
    "npm",
}


def parse_targets(text: str) -> list[Target]:
    """The [[target]] tables of a targets file."""
    out = []
    for i, table in enumerate(tomllib.loads(text).get("target", [])):
        unknown = set(table) - KEYS
        if unknown or "name" not in table:
            raise ValueError(f"target {i + 1}: needs a name; unknown keys {sorted(unknown)}")
        stdio = "stdio" in table
        if stdio == ("http" in table):
            raise ValueError(f"target {table['name']}: give exactly one of stdio, http")
        out.append(
            Target(
                name=table["name"],
                kind="stdio" if stdio else "http",
                cmd=table["stdio"] if stdio else table.get("cmd", ""),
                url=table.get("http", ""),
                peer=table.get("peer", ""),
                mode=table.get("mode", ""),
                modes=list(table.get("modes", [])),
                stateless=bool(table.get("stateless", False)),
                skip=list(table.get("skip", [])),
                note=table.get("note", ""),
                python=table.get("python", ""),
                revision=_revision(table),
                bearer=table.get("bearer", ""),
                npm=table.get("npm", ""),
            )
        )
    return out


def _revision(table: dict[str, Any]) -> Revision:
    try:
        return Revision(table["revision"]) if "revision" in table else Revision()
    except ValueError as exc:
        raise ValueError(f"target {table['name']}: {exc}") from None


def expand(text: str, values: dict[str, Any]) -> str:
    """Fill the {name} placeholders of text; an unknown one is an error."""

    def one(match: re.Match[str]) -> str:
        if match[1] not in values:
            raise ValueError(
                f"undefined placeholder {{{match[1]}}} in {text!r} (--set NAME=VALUE)"
            )
        return str(values[match[1]])

    return re.sub(r"\{([A-Za-z_]\w*)\}", one, text)


def command(target: Target, values: dict[str, Any]) -> list[str]:
    """The argv of target's command, {python} being the target's own python if it has one.

    Placeholder values are single words of the command even with spaces in them (a
    checkout under a folder with a space in its name).
    """
    if target.python:
        values = {**values, "python": expand(target.python, values)}
    quoted = {name: shlex.quote(str(value)) for name, value in values.items()}
    return shlex.split(expand(target.cmd, quoted))
