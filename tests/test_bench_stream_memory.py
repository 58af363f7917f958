"""bench/stream_memory.py holds real streams on a real server and says what each costs."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from .bench_scripts import BENCH


@pytest.mark.parametrize(("flags", "shape"), [([], "GET"), (["--stateless"], "2026-07-28 listen")])
def test_it_reports_the_memory_of_each_held_stream_by_owner(flags: list[str], shape: str) -> None:
    done = subprocess.run(
        [sys.executable, str(BENCH / "stream_memory.py"), "--streams", "20", *flags],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    out = done.stdout
    assert f"# stream_memory: 20 streams, {shape}" in out
    assert "statuses {200: 20}, still open 20" in out
    held = re.search(r"## per held stream \(connection \+ stream\): ([\d.]+) KB", out)
    assert held is not None, out
    # Every held stream costs something (a connection and its request, at least).
    assert float(held.group(1)) > 1
    assert "| h1: parser, request (headers, body) |" in out
    assert ("## per session" in out) is (shape == "GET")
