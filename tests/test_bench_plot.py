"""The scaling plot (bench/plot_scaling.py) draws what the harness's records say."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from types import ModuleType
from typing import Any

from .bench_scripts import load_bench_script

SVG = "{http://www.w3.org/2000/svg}"


def load_plot() -> ModuleType:
    return load_bench_script("plot_scaling.py", "plot_scaling")


def record(target: str, test: str, rps: float, cpu: float) -> dict[str, Any]:
    return {"target": target, "test": test, "metrics": {"rps": rps, "srv_cpu_us": cpu}}


RECORDS = [
    record("fast", "http_c1_s1", 1000, 100),
    record("fast", "http_c1_s1", 3000, 300),
    record("fast", "http_c1_s1", 2000, 200),
    record("fast", "http_c16_s1", 5000, 50),
    record("slow", "http_c16_s1", 500, 900),
    record("slow", "http_c16_s64", 1, 1),  # not a one-session cell: left out
    record("slow", "stdio_lat1", 1, 1),
]


def test_medians_over_rounds_of_the_one_session_cells() -> None:
    plot = load_plot()
    assert plot.medians(RECORDS, "rps") == {"fast": {1: 2000, 16: 5000}, "slow": {16: 500}}
    assert plot.medians(RECORDS, "srv_cpu_us") == {"fast": {1: 200, 16: 50}, "slow": {16: 900}}


def test_the_svg_has_a_line_per_target_in_each_panel_and_a_legend(tmp_path: Path) -> None:
    plot = load_plot()
    records = tmp_path / "records.json"
    records.write_text(json.dumps(RECORDS))
    out = tmp_path / "scaling.svg"
    plot.main(["plot_scaling.py", str(records), str(out)])
    root = ET.parse(out).getroot()
    lines = root.findall(f"{SVG}polyline")
    assert len(lines) == 4  # two targets, two panels
    # The same colour for a target in both panels and in the legend.
    colours = {line.get("stroke") for line in lines}
    assert len(colours) == 2
    legend = [text.text for text in root.findall(f"{SVG}text")]
    assert "fast" in legend
    assert "slow" in legend
    width = float(root.get("width", "0"))
    for circle in root.findall(f"{SVG}circle"):
        assert 0 < float(circle.get("cx", "-1")) < width
