"""Draw how throughput and CPU per call scale with HTTP connections, as an SVG.

    python bench/plot_scaling.py bench/results/scaling.json docs/scaling.svg

Reads the harness's raw records (``--out`` of ``bench/run.sh``), takes the
``http_c<N>_s1`` cells, and plots the median over rounds of req/s and of server CPU
per call against N for every target, on log scales, side by side. Only the standard
library: the project does not depend on a plotting package for one figure.
"""

from __future__ import annotations

import json
import math
import re
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

_CELL = re.compile(r"^http_c(\d+)_s1$")
_COLOURS = ["#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02", "#a6761d"]
_PANEL_W, _PANEL_H, _MARGIN = 380, 260, 60


def medians(records: list[dict[str, Any]], metric: str) -> dict[str, dict[int, float]]:
    """Return target -> connections -> median of ``metric`` over rounds."""
    values: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for record in records:
        match = _CELL.match(record.get("test", ""))
        value = (record.get("metrics") or {}).get(metric)
        if match and isinstance(value, (int, float)) and value > 0:
            values[record["target"]][int(match.group(1))].append(float(value))
    return {
        target: {conns: statistics.median(vs) for conns, vs in sorted(by_conns.items())}
        for target, by_conns in values.items()
    }


def _panel(
    series: dict[str, dict[int, float]], title: str, left: float, colours: dict[str, str]
) -> list[str]:
    xs = sorted({conns for points in series.values() for conns in points})
    ys = [value for points in series.values() for value in points.values()]
    if not xs or not ys:
        return []
    low, high = math.floor(math.log10(min(ys))), math.ceil(math.log10(max(ys)))
    high = max(high, low + 1)

    def x_of(conns: int) -> float:
        span = math.log10(xs[-1] / xs[0]) or 1.0
        return left + _MARGIN + (_PANEL_W - _MARGIN) * math.log10(conns / xs[0]) / span

    def y_of(value: float) -> float:
        return 30 + (_PANEL_H - 30) * (high - math.log10(value)) / (high - low)

    out = [
        f'<text x="{left + _MARGIN}" y="18" font-size="13">{title}</text>',
        f'<line x1="{left + _MARGIN}" y1="{_PANEL_H}" x2="{left + _PANEL_W}" '
        f'y2="{_PANEL_H}" stroke="#444"/>',
        f'<line x1="{left + _MARGIN}" y1="30" x2="{left + _MARGIN}" y2="{_PANEL_H}" '
        f'stroke="#444"/>',
    ]
    for power in range(low, high + 1):
        y = y_of(10.0**power)
        out.append(
            f'<line x1="{left + _MARGIN}" y1="{y:.1f}" x2="{left + _PANEL_W}" y2="{y:.1f}" '
            f'stroke="#ddd"/><text x="{left + _MARGIN - 6}" y="{y + 4:.1f}" font-size="11" '
            f'text-anchor="end">{10**power:g}</text>'
        )
    for conns in xs:
        out.append(
            f'<text x="{x_of(conns):.1f}" y="{_PANEL_H + 16}" font-size="11" '
            f'text-anchor="middle">{conns}</text>'
        )
    out.append(
        f'<text x="{left + (_PANEL_W + _MARGIN) / 2}" y="{_PANEL_H + 32}" font-size="11" '
        f'text-anchor="middle">connections</text>'
    )
    for target, points in sorted(series.items()):
        colour = colours[target]
        path = " ".join(f"{x_of(c):.1f},{y_of(v):.1f}" for c, v in points.items())
        out.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
        for conns, value in points.items():
            out.append(
                f'<circle cx="{x_of(conns):.1f}" cy="{y_of(value):.1f}" r="3" fill="{colour}"/>'
            )
    return out


def render(records: list[dict[str, Any]]) -> str:
    """Return the SVG of both panels and a legend for ``records``."""
    rps = medians(records, "rps")
    cpu = medians(records, "srv_cpu_us")
    targets = sorted(set(rps) | set(cpu))
    colours = {target: _COLOURS[i % len(_COLOURS)] for i, target in enumerate(targets)}
    width, height = 2 * _PANEL_W + 60, _PANEL_H + 50 + 18 * len(targets)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'font-family="sans-serif">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        *_panel(rps, "tools/call req/s (higher is better)", 0, colours),
        *_panel(cpu, "server CPU µs per call (lower is better)", _PANEL_W + 40, colours),
    ]
    for index, target in enumerate(targets):
        y = _PANEL_H + 52 + 18 * index
        out.append(
            f'<rect x="{_MARGIN}" y="{y - 9}" width="14" height="10" fill="{colours[target]}"/>'
            f'<text x="{_MARGIN + 20}" y="{y}" font-size="12">{target}</text>'
        )
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main(argv: list[str]) -> None:
    """Read the records named by argv[1] and write the SVG to argv[2]."""
    if len(argv) != 3:
        raise SystemExit(__doc__)
    records = json.loads(Path(argv[1]).read_text())
    Path(argv[2]).write_text(render(records))


if __name__ == "__main__":
    main(sys.argv)
