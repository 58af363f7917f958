"""The markdown report: per peer, a table per kind of test (medians over rounds), then the
paired ratios between peers, each the median over rounds of A/B measured in the same round."""

from __future__ import annotations

import statistics
from typing import Any

from .targets import ALL_TESTS, THROUGHPUT_TESTS

COLUMNS = {
    "throughput": [
        "rps",
        "p50_us",
        "p99_us",
        "srv_cpu_us",
        "srv_sys_us",
        "srv_cpu_pct",
        "cli_cpu_pct",
        "other_pct",
        "steal_pct",
        "windows",
        "errors",
    ],
    "stdio_sleep1000": [
        "wall_s",
        "first_s",
        "ok",
        "rss_base_mb",
        "rss_peak_mb",
        "rss_delta_mb",
        "srv_cpu_s",
    ],
    "http_sleep1000": [
        "wall_s",
        "first_s",
        "ok",
        "statuses",
        "rss_base_mb",
        "rss_peak_mb",
        "rss_delta_mb",
        "srv_cpu_s",
    ],
    "http_sessions1000": [
        "create_s",
        "per_session_ms",
        "srv_cpu_ms_per_session",
        "rss_base_mb",
        "rss_after_mb",
        "kb_per_session",
        "unique_ids",
        "alive_of_20",
    ],
    "http_streams": [
        "streams",
        "open_s",
        "statuses",
        "still_open",
        "rss_base_mb",
        "rss_held_mb",
        "kb_per_stream",
        "idle_p50_us",
        "idle_p99_us",
        "held_p50_us",
        "held_p99_us",
        "p99_over_idle",
        "errors",
    ],
    "cold_start": ["init_ms", "init_cpu_ms", "rss_idle_mb", "exit_on_eof_ms"],
    "progress": ["total_ms", "notifs", "us_per_step", "ok"],
    "cancel": [
        "stop_ms",
        "followup_ms",
        "handler_end",
        "late_responses",
        "cancel_http_status",
        "orig_post",
        "ends_completed",
    ],
}
# Columns that runs recorded before they existed do not have: shown only where some row does.
NEWER_COLUMNS = frozenset({"srv_sys_us", "init_cpu_ms"})
HEADINGS = {
    "rps": "req/s (min–max)",
    "p50_us": "p50 µs",
    "p99_us": "p99 µs",
    "srv_cpu_us": "srv CPU µs/req",
    "srv_sys_us": "of it kernel µs",
    "srv_cpu_pct": "srv CPU %",
    "cli_cpu_pct": "client CPU %",
    "errors": "errors",
    "other_pct": "other load %",
    "steal_pct": "steal %",
}
# What the ratios compare, per kind of test: for req/s higher is better, for the rest lower.
RATIO_METRICS = {
    "throughput": ["rps", "p50_us", "srv_cpu_us"],
    "stdio_sleep1000": ["wall_s", "rss_delta_mb"],
    "http_sleep1000": ["wall_s", "rss_delta_mb"],
    "http_sessions1000": ["per_session_ms", "kb_per_session"],
    "http_streams": ["rss_held_mb", "p99_over_idle"],
    "cold_start": ["init_ms", "init_cpu_ms", "rss_idle_mb"],
    "progress": ["us_per_step"],
    "cancel": ["stop_ms"],
}
RANK = {test: i for i, test in enumerate(ALL_TESTS)}

# The summary tables of a run: our peer beside the references (--headline OURS:REF,...;...),
# a row per figure of the round-three table: (label, mode, test, metric, show difference).
HEADLINE = "mcpactor:trio,ts-sdk;mcpactor-2026:trio-2026"
HEADLINE_ROWS = [
    ("stdio, 64 pipelined, req/s", "stdio", "stdio_pipe64", "rps", False),
    ("stdio, 64 pipelined, server CPU µs per call", "stdio", "stdio_pipe64", "srv_cpu_us", False),
    ("stdio, 1 in flight, p50 µs", "stdio", "stdio_lat1", "p50_us", False),
    ("HTTP JSON, 16 connections, req/s", "http-json", "http_c16_s1", "rps", False),
    (
        "memory per idle HTTP session, kB",
        "http-json",
        "http_sessions1000",
        "kb_per_session",
        False,
    ),
    (
        "cold start to the initialize answer, server CPU ms",
        "stdio",
        "cold_start",
        "init_cpu_ms",
        False,
    ),
    ("idle RSS after initialize, MB", "stdio", "cold_start", "rss_idle_mb", True),
    ("sessions holding a stream: RSS MB", "http-json", "http_streams", "rss_held_mb", False),
    ("… a call's p99 beside them / idle", "http-json", "http_streams", "p99_over_idle", False),
]


def kind_of(test: str) -> str:
    """The table a test goes in ("test@engine" names count as the test)."""
    base = test.split("@")[0]
    return "throughput" if base in THROUGHPUT_TESTS else base


def test_order(test: str) -> tuple[int, str]:
    """Sort key: the harness's order of tests."""
    return RANK.get(test.split("@")[0], len(RANK)), test


def fmt(value: Any) -> str:
    """A cell: about three significant figures, thousands separated."""
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "NO"
    if not isinstance(value, float):
        return str(value)
    if value.is_integer() and abs(value) < 1e9:
        return f"{int(value):,}"
    size = abs(value)
    if size >= 1000:
        return f"{value:,.0f}"
    if size >= 100:
        return f"{value:.0f}"
    if size >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def fmt_ratio(q: float, pairs: int) -> str:
    """A ratio cell: the ratio and, in brackets, how many paired rounds it is the median of."""
    return (f"{q:.0f}" if q >= 100 else f"{q:.3g}") + f" [{pairs}]"


def summarize(values: list[Any]) -> tuple[Any, tuple[Any, Any] | None]:
    """A metric over rounds: (median, (min, max)) of numbers, all() of booleans, else the
    distinct values joined with "/"."""
    present = [v for v in values if v is not None]
    if not present:
        return None, None
    if all(isinstance(v, bool) for v in present):
        return all(present), None
    if all(isinstance(v, (int, float)) for v in present):
        return statistics.median(present), (min(present), max(present))
    return "/".join(sorted({str(v) for v in present})), None


class Cell:
    """One (target, test): where it belongs and its metrics over the rounds."""

    def __init__(self, record: dict[str, Any]) -> None:
        self.target, self.test = record["target"], record["test"]
        self.peer, self.mode = record["peer"], record["mode"]
        self.modes: list[str] = list(record.get("modes", []))
        self.rounds: dict[tuple[str, int], dict[str, Any]] = {}  # (run, round) -> good metrics
        self.failures: list[str] = []
        self.count = 0

    def add(self, record: dict[str, Any]) -> None:
        """One more round."""
        self.count += 1
        metrics = record["metrics"]
        if "failed" in metrics:
            self.failures.append(str(metrics["failed"]))
        else:
            self.rounds[record["run"], record["round"]] = metrics

    def median(self) -> dict[str, tuple[Any, tuple[Any, Any] | None]]:
        """metric -> (summary, range) over the good rounds."""
        good = list(self.rounds.values())
        names = dict.fromkeys(k for m in good for k in m)
        return {k: summarize([m.get(k) for m in good]) for k in names}

    def row(self, columns: list[str]) -> str:
        """The table row."""
        if not self.rounds:
            return (
                f"| {self.target} | {self.test} | {self.count} | FAILED: {self.failures[0]} |"
                + (" |" * (len(columns) - 1))
            )
        n = str(self.count) + (f" ({len(self.failures)} failed)" if self.failures else "")
        values = self.median()
        cells = []
        for column in columns:
            value, spread = values.get(column, (None, None))
            cell = fmt(value)
            if column == "rps" and spread is not None and self.count > 1:
                cell += f" ({fmt(float(spread[0]))}–{fmt(float(spread[1]))})"
            cells.append(cell)
        return f"| {self.target} | {self.test} | {n} | " + " | ".join(cells) + " |"


def collect(records: list[dict[str, Any]]) -> dict[tuple[str, str], Cell]:
    """The records grouped by (target, test), in the order they first appear."""
    cells: dict[tuple[str, str], Cell] = {}
    for r in records:
        key = (r["target"], r["test"])
        if key not in cells:
            cells[key] = Cell(r)
        cells[key].add(r)
    return cells


def peer_order(cells: list[Cell], preferred: list[str]) -> list[str]:
    """The peers: the preferred ones first, in that order, then the rest as they appear."""
    seen = list(dict.fromkeys(c.peer for c in cells))
    return [p for p in preferred if p in seen] + [p for p in seen if p not in preferred]


def paired_ratio(a: Cell, b: Cell, metric: str) -> tuple[float, int] | None:
    """Median over the rounds both measured of a's metric over b's, and how many rounds."""
    quotients = []
    for key in a.rounds.keys() & b.rounds.keys():
        x, y = a.rounds[key].get(metric), b.rounds[key].get(metric)
        if isinstance(x, (int, float)) and isinstance(y, (int, float)) and y:
            quotients.append(x / y)
    return (statistics.median(quotients), len(quotients)) if quotients else None


def peer_tables(peer: str, cells: list[Cell]) -> list[str]:
    """The tables of one peer."""
    mine = [c for c in cells if c.peer == peer]
    targets = list(dict.fromkeys(c.target for c in mine))
    lines = [f"### {peer}\n"]
    for kind, columns in COLUMNS.items():
        rows = [c for c in mine if kind_of(c.test) == kind]
        if not rows:
            continue
        rows.sort(key=lambda c: (targets.index(c.target), test_order(c.test)))
        columns = [
            column
            for column in columns
            if column not in NEWER_COLUMNS
            or any(column in metrics for c in rows for metrics in c.rounds.values())
        ]
        title = "throughput / latency" if kind == "throughput" else kind
        lines.append(f"{title} (median of rounds):\n")
        lines.append(
            "| target | test | n | " + " | ".join(HEADINGS.get(c, c) for c in columns) + " |"
        )
        lines.append("|" + "---|" * (len(columns) + 3))
        lines += [c.row(columns) for c in rows]
        lines.append("")
    return lines


def find_cell(cells: list[Cell], peer: str, mode: str, test: str) -> Cell | None:
    """peer's cell of test in mode: its target of that mode, else one standing in for it."""
    exact = [c for c in cells if c.peer == peer and c.mode == mode and c.test == test]
    stand_in = [c for c in cells if c.peer == peer and mode in c.modes and c.test == test]
    return (exact or stand_in or [None])[0]


def headline_table(spec: str, cells: list[Cell]) -> list[str]:
    """The summary: OURS's medians beside each reference's, with the paired ratio and, where
    asked, the difference; [] when the records hold neither side."""
    ours, _, refs = spec.partition(":")
    references = [r for r in refs.split(",") if r]
    present = {c.peer for c in cells}
    if not ours or ours not in present or not present & set(references):
        return []

    def value(cell: Cell | None, metric: str) -> Any:
        return None if cell is None else cell.median().get(metric, (None, None))[0]

    rows = []
    for label, mode, test, metric, difference in HEADLINE_ROWS:
        mine = find_cell(cells, ours, mode, test)
        if mine is None:
            continue
        shown = [fmt(value(mine, metric))]
        for ref in references:
            theirs = find_cell(cells, ref, mode, test)
            shown.append(fmt(value(theirs, metric)))
            q = paired_ratio(mine, theirs, metric) if theirs is not None else None
            cell = fmt_ratio(*q) if q else "–"
            a, b = value(mine, metric), value(theirs, metric)
            if difference and isinstance(a, (int, float)) and isinstance(b, (int, float)):
                cell += f", {a - b:+.1f}"
            shown.append(cell)
        streams = value(mine, "streams")
        if metric == "rss_held_mb" and isinstance(streams, (int, float)):
            label = f"{int(streams):,} {label}"
        rows.append(f"| {label} | " + " | ".join(shown) + " |")
    if not rows:
        return []
    heads = [h for ref in references for h in (ref, f"{ours} / {ref}")]
    return [
        f"### {ours} beside {', '.join(references)} (medians; ratios paired, [n pairs])\n",
        f"| measure | {ours} | " + " | ".join(heads) + " |",
        "|" + "---|" * (len(heads) + 2),
        *rows,
        "",
    ]


def ratio_table(peers: list[str], cells: list[Cell]) -> list[str]:
    """Every later peer over every earlier one, per mode, test and metric; [] if none compare."""
    pairs = [(later, earlier) for i, earlier in enumerate(peers) for later in peers[i + 1 :]]

    def find(peer: str, mode: str, test: str) -> Cell | None:
        return find_cell(cells, peer, mode, test)

    rows = []
    modes = list(dict.fromkeys(c.mode for c in cells))
    tests = sorted({c.test for c in cells}, key=test_order)
    for mode in modes:
        for test in tests:
            for metric in RATIO_METRICS.get(kind_of(test), []):
                found = []
                for a, b in pairs:
                    ca, cb = find(a, mode, test), find(b, mode, test)
                    found.append(paired_ratio(ca, cb, metric) if ca and cb else None)
                if any(found):
                    label = "req/s" if metric == "rps" else HEADINGS.get(metric, metric)
                    shown = [fmt_ratio(*q) if q else "–" for q in found]
                    rows.append(f"| {mode} | {test} | {label} | " + " | ".join(shown) + " |")
    if not rows:
        return []
    return [
        "### ratios (paired: median over rounds of A/B measured in the same run and round, "
        "[n pairs]; for req/s higher is better, for the rest lower)\n",
        "| mode | test | metric | " + " | ".join(f"{a} / {b}" for a, b in pairs) + " |",
        "|" + "---|" * (len(pairs) + 3),
        *rows,
    ]


def report(
    records: list[dict[str, Any]], preferred: list[str] | None = None, headline: str = ""
) -> str:
    """The whole report of a list of records; headline (OURS:REF,...;...) puts summaries first."""
    cells = list(collect(records).values())
    peers = peer_order(cells, preferred or [])
    lines: list[str] = []
    for spec in filter(None, headline.split(";")):
        lines += headline_table(spec, cells)
    for peer in peers:
        lines += peer_tables(peer, cells)
    if len(peers) > 1:
        lines += ratio_table(peers, cells)
        lines.append("")
    return "\n".join(lines)
