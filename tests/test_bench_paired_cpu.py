"""bench/paired_cpu.py: two real benchmark servers driven in turns, their CPU per call."""

from __future__ import annotations

import re

import pytest

from .bench_scripts import load_bench_script

paired_cpu = load_bench_script("paired_cpu.py", "bench_paired_cpu")


@pytest.mark.parametrize("modes", [["stdio", "stdio-2026"], ["stdio-2026", "stdio-2026"]])
def test_a_pair_of_servers_is_measured_under_the_same_load(
    modes: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    paired_cpu.main([*modes, "--pairs", "2", "--windows", "300", "--width", "8"])
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3
    for pair, line in enumerate(lines[:2], 1):
        found = re.fullmatch(
            rf"pair {pair}: A ([\d.]+) µs/call, B ([\d.]+) µs/call, B/A ([\d.]+)", line
        )
        assert found is not None, line
        a, b, ratio = (float(value) for value in found.groups())
        assert a > 0
        assert b > 0
        assert ratio == pytest.approx(b / a, abs=0.002)
    assert re.fullmatch(r"B/A median [\d.]+ over 2 pairs", lines[2])


def test_a_window_gets_every_call_answered() -> None:
    server = paired_cpu.StdioServer("stdio-2026", paired_cpu.sys.executable, None)
    try:
        server.window(5)
        server.window(3)
        assert server.cpu_seconds() > 0
    finally:
        rest = server.close()
    assert rest == b""  # every answer was read, nothing more came


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["stdio", "sse"], "unknown mode 'sse'"),
        (["--pairs", "0"], "want positive numbers"),
        (["--width", "-1"], "want positive numbers"),
    ],
)
def test_bad_arguments_are_refused(argv: list[str], message: str) -> None:
    with pytest.raises(SystemExit, match=message):
        paired_cpu.main(argv)
