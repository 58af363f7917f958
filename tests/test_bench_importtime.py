"""bench/importtime.py: -X importtime's self times summed by top-level package."""

from __future__ import annotations

import subprocess
import sys

from .bench_scripts import BENCH, load_bench_script

importtime = load_bench_script("importtime.py", "bench_importtime")

LOG = """\
import time: self [us] | cumulative | imported package
import time:       120 |        120 |   _io
import time:      1500 |       2000 |     trio._core._run
import time:       500 |       2500 |   trio
import time:      3000 |       3000 | mcpactor.server._schema
a line the server wrote to its stderr
import time:      1000 |       4000 | mcpactor
"""


def test_self_times_are_summed_by_top_level_package() -> None:
    found = importtime.by_package(LOG.splitlines())
    assert found == {"_io": (0.12, 1), "trio": (2.0, 2), "mcpactor": (4.0, 2)}
    text = importtime.table([found, {"trio": (4.0, 2), "mcpactor": (4.0, 2)}], top=2)
    lines = text.splitlines()
    assert "median of 2 runs" in lines[0]
    # medians: mcpactor 4.0, trio 3.0, _io 0.06; the top two shown, largest first
    assert lines[4].startswith("| mcpactor | 4.0 | ")
    assert lines[5].startswith("| trio | 3.0 | ")
    assert len(lines) == 6


def test_a_python_command_gets_importtime_after_its_interpreter() -> None:
    argv = importtime.importtime_argv(["py", "server.py", "stdio"])
    assert argv == ["py", "-X", "importtime", "server.py", "stdio"]


def test_the_imports_of_a_stdio_server_to_its_first_answer() -> None:
    server = [sys.executable, str(BENCH / "peers" / "trio_stdio.py"), "stdio"]
    done = subprocess.run(
        [
            sys.executable,
            str(BENCH / "importtime.py"),
            "--runs",
            "1",
            "--top",
            "999",
            "--",
            *server,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    rows = [line.split(" | ")[0] for line in done.stdout.splitlines() if line.startswith("| ")]
    assert "| trio" in rows
    assert "| orjson" in rows


def test_the_imports_of_a_command_that_exits_by_itself() -> None:
    command = [sys.executable, "-c", "import json"]
    done = subprocess.run(
        [
            sys.executable,
            str(BENCH / "importtime.py"),
            "--runs",
            "1",
            "--exits",
            "--top",
            "99",
            "--",
            *command,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    rows = [line.split(" | ")[0] for line in done.stdout.splitlines()]
    assert "| json" in rows
    assert "| trio" not in rows
