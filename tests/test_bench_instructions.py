"""bench/instructions.py: its drivers against the real benchmark server (without valgrind),
and the reading of callgrind's totals."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from .bench_scripts import load_bench_script

instructions = load_bench_script("instructions.py", "bench_instructions")


@pytest.mark.parametrize("mode", ["stdio", "stdio-2026"])
def test_the_stdio_driver_gets_every_call_answered(mode: str) -> None:
    _, stateless = instructions.MODES[mode]
    with subprocess.Popen(
        [sys.executable, instructions.SERVER, "stdio"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    ) as process:
        assert process.stdin is not None
        assert process.stdout is not None
        # More calls than are pipelined: answers must keep the loop going.
        instructions.drive_stdio(process, 40, 8, stateless)
        process.stdin.close()
        assert process.wait(30) == 0
        assert process.stdout.read() == b""  # every answer was read, nothing more came


@pytest.mark.parametrize("mode", ["http-json", "http-sse", "http-2026"])
def test_the_http_driver_gets_every_call_answered(mode: str) -> None:
    server_args, stateless = instructions.MODES[mode]
    port = instructions.free_port()
    with subprocess.Popen(
        [sys.executable, instructions.SERVER, "http", "127.0.0.1", str(port), *server_args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    ) as process:
        try:
            instructions.wait_for_port(port, process, timeout=60)
            driver = instructions.HttpDriver(port, stateless)
            assert ("Mcp-Session-Id" in driver.headers) is not stateless
            driver.drive(30, 4)
        finally:
            process.send_signal(signal.SIGINT)
            process.wait(30)


def test_a_result_missing_from_an_answer_stops_the_driver() -> None:
    # A server that answers with an error: the count would be of the wrong work.
    error = '{"jsonrpc":"2.0","id":0,"error":{}}'
    script = f"import sys\nfor line in sys.stdin:\n    print({error!r}, flush=True)\n"
    with subprocess.Popen(
        [sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    ) as process:
        with pytest.raises(SystemExit, match="not a result"):
            instructions.drive_stdio(process, 2, 1, False)
        process.kill()


def test_callgrind_totals_are_read_from_the_summary_or_totals_line(tmp_path: Path) -> None:
    summary = tmp_path / "summary.out"
    summary.write_text("version: 1\ncmd: python\nevents: Ir\nsummary: 123456\n")
    assert instructions.totals(str(summary)) == 123456
    old = tmp_path / "totals.out"
    old.write_text("events: Ir\nfn=main\n1 5\ntotals: 789\n")
    assert instructions.totals(str(old)) == 789
    empty = tmp_path / "empty.out"
    empty.write_text("events: Ir\n")
    with pytest.raises(SystemExit, match="no totals"):
        instructions.totals(str(empty))


def test_bad_arguments_are_refused_before_anything_runs() -> None:
    with pytest.raises(SystemExit, match="unknown mode 'ftp'"):
        instructions.main(["stdio,ftp", "--calls", "1,2"])
    with pytest.raises(SystemExit, match="N1,N2"):
        instructions.main(["stdio", "--calls", "5,5"])
    with pytest.raises(SystemExit, match="N1,N2"):
        instructions.main(["stdio", "--calls", "1000"])


ANNOTATED = """\
--------------------------------------------------------------------------------
Ir                   file:function
--------------------------------------------------------------------------------
1,635,154,243 (100.0%)  PROGRAM TOTALS
95,894,580 ( 5.86%)  /tmp/build/Python/ceval.c:_PyEval_EvalFrameDefault'2 [/lib/libpython3.so]
    1,000 ( 0.00%)  /tmp/build/Objects/dictobject.c:_Py_dict_lookup [/lib/libpython3.11.so.1.0]
      500 ( 0.00%)  /other/build/Objects/dictobject.c:_Py_dict_lookup [/lib/libpython3.11.so.1.0]
       20 ( 0.00%)  ???:0x0000000000123456 [/lib/orjson.so]
"""


def test_instructions_by_function_are_read_from_callgrind_annotate() -> None:
    assert instructions.by_function(ANNOTATED) == {
        "ceval.c:_PyEval_EvalFrameDefault'2": 95_894_580,
        "dictobject.c:_Py_dict_lookup": 1_500,
        "???:0x0000000000123456": 20,
    }
