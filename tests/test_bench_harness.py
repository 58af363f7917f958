"""The benchmark harness's pure parts: targets, command line, figures and the report."""

from __future__ import annotations

import asyncio
import json
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from .bench_scripts import BENCH, load_harness

targets = load_harness("targets")
cli = load_harness("cli")
report = load_harness("report")
runs = load_harness("runs")

RUN_SH_VALUES = {
    "python": "/venvs/peers/bin/python",
    "python_mcpactor": "/venvs/mcpactor/bin/python",
    "node": "/usr/bin/node",
    "bench": str(BENCH),
    "port": 4242,
}


# --- targets ------------------------------------------------------------------------------


def test_every_target_of_the_targets_file_runs_a_script_of_this_repository() -> None:
    found = targets.parse_targets((BENCH / "targets.toml").read_text())
    peers = {"trio", "ts-sdk", "raw", "raw-hypercorn", "sdk", "fastmcp", "mcpactor"}
    assert {t.peer for t in found} >= peers
    for target in found:
        argv = targets.command(target, RUN_SH_VALUES)
        scripts = [Path(a) for a in argv if a.endswith((".py", ".mjs"))]
        assert scripts, target.name
        for script in scripts:
            assert script.is_file(), (target.name, script)
            assert script.resolve().is_relative_to(BENCH), (target.name, script)
        if target.peer.startswith("mcpactor"):
            expected = "/venvs/mcpactor/bin/python"
        elif target.peer == "ts-sdk":
            expected = "/usr/bin/node"
            # the harness installs the SDK from the lock committed beside the server
            folder = Path(targets.expand(target.npm, RUN_SH_VALUES))
            assert (folder / "package-lock.json").is_file(), target.name
            assert scripts[0].parent == folder, target.name
        else:
            expected = "/venvs/peers/bin/python"
        assert argv[0] == expected, target.name
        if target.kind == "http":
            assert "4242" in " ".join(argv)
            assert targets.expand(target.url, RUN_SH_VALUES) == "http://127.0.0.1:4242/mcp"


def test_a_target_table_is_parsed_with_its_defaults() -> None:
    (target,) = targets.parse_targets('[[target]]\nname = "x"\nhttp = "http://h:{port}/mcp"\n')
    assert (target.kind, target.peer, target.mode, target.cmd) == ("http", "x", "http", "")
    (guarded,) = targets.parse_targets(
        '[[target]]\nname = "y"\nhttp = "http://h/mcp"\nbearer = "{bench}/auth/token.txt"\n'
    )
    assert guarded.bearer == "{bench}/auth/token.txt"


@pytest.mark.parametrize(
    ("text", "complaint"),
    [
        ('[[target]]\nname = "x"\nstdio = "a"\nhttp = "b"\n', "exactly one"),
        ('[[target]]\nname = "x"\n', "exactly one"),
        ('[[target]]\nname = "x"\nstdio = "a"\nskp = []\n', "skp"),
        ('[[target]]\nstdio = "a"\n', "needs a name"),
    ],
)
def test_a_malformed_target_is_refused(text: str, complaint: str) -> None:
    with pytest.raises(ValueError, match=complaint):
        targets.parse_targets(text)


def test_an_undefined_placeholder_is_an_error_not_a_literal() -> None:
    assert targets.expand("{a}-{a} {b}", {"a": 1, "b": "x"}) == "1-1 x"
    with pytest.raises(ValueError, match=r"\{python_std\}"):
        targets.expand("{python_std} s.py", {"python": "p"})


def test_a_target_with_its_own_python_runs_with_it() -> None:
    target = targets.Target(name="t", kind="stdio", cmd="{python} s.py", python="{alt}")
    assert targets.command(target, {"python": "p", "alt": "/a b/py"}) == ["/a b/py", "s.py"]
    assert shlex.join(targets.command(target, {"python": "p", "alt": "q"})) == "q s.py"


def test_which_tests_a_target_runs() -> None:
    stdio = targets.Target(name="s", kind="stdio", skip=["cancel"])
    assert stdio.runs("stdio_lat1")
    assert stdio.runs("progress")
    assert not stdio.runs("cancel")
    assert not stdio.runs("http_c16_s1")
    stateful = targets.Target(name="h", kind="http")
    stateless = targets.Target(name="h", kind="http", stateless=True)
    for test in ("http_c16_s1", "http_c1_s64", "http_sessions1000", "cancel"):
        assert stateful.runs(test), test
    assert not stateful.runs("stdio_lat1")
    assert not stateful.runs("cold_start")
    assert stateless.runs("http_c64_s1")
    assert not stateless.runs("http_c16_s64")
    assert not stateless.runs("http_sessions1000")


def test_a_target_of_2026_is_stateless_and_an_unknown_revision_is_refused() -> None:
    (modern,) = targets.parse_targets(
        '[[target]]\nname = "m"\nhttp = "http://h/mcp"\nrevision = "2026-07-28"\n'
    )
    assert modern.revision.stateless
    assert modern.stateless
    assert modern.runs("http_c64_s1")
    assert not modern.runs("http_c1_s64")
    assert not modern.runs("http_sessions1000")
    (old,) = targets.parse_targets('[[target]]\nname = "o"\nstdio = "s"\n')
    assert old.revision.version == "2025-11-25"
    assert not old.stateless
    with pytest.raises(ValueError, match="target u: unknown revision '2025-03-26'"):
        targets.parse_targets('[[target]]\nname = "u"\nstdio = "s"\nrevision = "2025-03-26"\n')


def test_the_targets_of_2026_stand_beside_their_session_era_rows() -> None:
    found = {t.name: t for t in targets.parse_targets((BENCH / "targets.toml").read_text())}
    pairs = {
        "mcpactor-http-2026-json": "mcpactor-http-json",
        "sdk-http-2026-json": "sdk-http-json",
        "mcpactor-stdio-2026": "mcpactor-stdio",
        "sdk-stdio-2026": "sdk-stdio",
    }
    for modern_name, session_name in pairs.items():
        modern, session = found[modern_name], found[session_name]
        assert modern.revision.version == "2026-07-28", modern_name
        assert not session.revision.stateless, session_name
        assert session.mode in modern.modes, modern_name
        assert modern.peer == session.peer + "-2026", modern_name
        # the same server, spoken to at another revision
        assert targets.command(modern, RUN_SH_VALUES) == targets.command(session, RUN_SH_VALUES)
    # in the ratio table a later peer is set over an earlier one: the session era first
    order = list(dict.fromkeys(t.peer for t in found.values()))
    assert order.index("mcpactor") < order.index("sdk-2026") < order.index("mcpactor-2026")


def test_the_ratios_set_our_2026_path_over_our_session_path() -> None:
    def cell(target: str, peer: str, mode: str, modes: list[str], rps: float) -> dict:
        record = rec(peer, 0, rps, test="http_c16_s1")
        record.update(target=target, mode=mode, modes=modes, kind="http")
        return record

    records = [
        cell("mcpactor-http-json", "mcpactor", "http-json", [], 100.0),
        cell("sdk-http-2026-json", "sdk-2026", "http-2026-json", ["http-json"], 50.0),
        cell("mcpactor-http-2026-json", "mcpactor-2026", "http-2026-json", ["http-json"], 150.0),
    ]
    text = report.report(records, ["raw", "sdk"])
    header = "| mode | test | metric | sdk-2026 / mcpactor | mcpactor-2026 / mcpactor"
    assert header + " | mcpactor-2026 / sdk-2026 |" in text
    assert "| http-json | http_c16_s1 | req/s | 0.5 [1] | 1.5 [1] | 3 [1] |" in text
    assert "| http-2026-json | http_c16_s1 | req/s | – | – | 3 [1] |" in text


def test_the_shape_of_an_http_cell() -> None:
    assert targets.http_cell_shape("http_c16_s64") == (16, 64)
    assert [targets.http_cell_shape(t)[0] for t in targets.HTTP_CELLS] == [1, 16, 64] * 2
    with pytest.raises(ValueError, match="http_sleep1000"):
        targets.http_cell_shape("http_sleep1000")


# --- the command line and the order of a run ---------------------------------------------


def parse(*argv: str) -> Any:
    return cli.parser().parse_args(list(argv))


def test_the_command_line_selects_targets_tests_and_placeholders() -> None:
    args = parse(
        "--targets",
        str(BENCH / "targets.toml"),
        "--only",
        "sdk-stdio,raw-stdio",
        "--tests",
        "cold_start,stdio_lat1",
        "--set",
        "python_mcpactor=/x=y",
        "--python",
        "/p",
    )
    assert [t.name for t in cli.select_targets(args)] == ["raw-stdio", "sdk-stdio"]
    assert cli.select_tests(args) == ["cold_start", "stdio_lat1"]
    values = cli.placeholders(args)
    assert values["python_mcpactor"] == "/x=y"
    assert values["python"] == "/p"
    assert Path(values["bench"]) == BENCH
    assert cli.select_tests(parse("--stdio", "s")) == targets.SUITES["quick"]
    assert cli.select_tests(parse("--stdio", "s", "--suite", "all")) == targets.ALL_TESTS


@pytest.mark.parametrize(
    ("argv", "complaint"),
    [
        (["--stdio", "s", "--tests", "stdio_lat1,stdio_lat2"], "unknown tests: stdio_lat2"),
        (["--targets", str(BENCH / "targets.toml"), "--only", "sdk-stdo"], "sdk-stdo"),
        (["--http", "http://127.0.0.1:{port}/mcp"], "needs --server-cmd"),
        (["--stdio", "s", "--set", "novalue"], "NAME=VALUE"),
        ([], "give --stdio"),
    ],
)
def test_a_bad_command_line_is_refused_by_name(
    argv: list[str], complaint: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        cli.main(argv)
    assert exit_info.value.code == 2
    assert complaint in capsys.readouterr().err


def test_a_single_http_target_from_the_command_line() -> None:
    args = parse("--http", "http://h:1/mcp", "--stateless", "--server-pid", "7", "--name", "n")
    (target,) = cli.select_targets(args)
    assert (target.name, target.kind, target.url, target.stateless, target.pid) == (
        "n",
        "http",
        "http://h:1/mcp",
        True,
        7,
    )


def test_a_single_target_speaks_the_revision_it_is_told() -> None:
    (target,) = cli.select_targets(parse("--stdio", "s", "--revision", "2026-07-28"))
    assert target.revision.stateless
    (target,) = cli.select_targets(parse("--http", "http://h:1/mcp"))
    assert target.revision.version == "2025-11-25"
    with pytest.raises(SystemExit):
        parse("--stdio", "s", "--revision", "2024-01-01")


def test_throughput_tests_share_a_group_and_rounds_rotate_the_targets() -> None:
    tests = ["cancel", "stdio_lat1", "cold_start", "http_c16_s1"]
    assert runs.groups_of(tests) == [["stdio_lat1", "http_c16_s1"], ["cancel"], ["cold_start"]]
    ts = [targets.Target(name=n, kind="stdio") for n in "abc"]
    assert ["".join(t.name for t in runs.rotated(ts, r)) for r in range(4)] == [
        "abc",
        "bca",
        "cab",
        "abc",
    ]


# --- figures ------------------------------------------------------------------------------


def test_percentiles_interpolate_between_ranks() -> None:
    assert runs.percentile([], 50) is None
    assert runs.percentile([5.0], 99) == 5.0
    assert runs.percentile([4.0, 1.0, 3.0, 2.0], 50) == 2.5
    assert runs.percentile([float(i) for i in range(101)], 99) == 99.0
    assert runs.percentile([0.0, 10.0], 99) == pytest.approx(9.9)


def test_a_windows_figures_are_per_call_and_per_second() -> None:
    used = {
        "wall": 2.0,
        "cli_cpu": 0.5,
        "srv_cpu": 1.0,
        "srv_sys": 0.2,
        "other_pct": 3.0,
        "steal_pct": None,
    }
    out = runs.throughput_metrics([0.001] * 4000, 2, used)
    assert out["rps"] == 2000
    assert out["srv_cpu_us"] == 250
    assert out["srv_sys_us"] == 50
    assert out["srv_cpu_pct"] == 50
    assert out["cli_cpu_pct"] == 25
    assert out["p50_us"] == pytest.approx(1000)
    assert (out["errors"], out["n"], out["other_pct"]) == (2, 4000, 3.0)
    assert "steal_pct" not in out
    idle = runs.throughput_metrics([], 0, {**used, "srv_cpu": None})
    assert (idle["rps"], idle["p99_us"]) == (0, 0)
    assert "srv_cpu_us" not in idle
    assert "srv_sys_us" not in idle


def test_a_burst_is_timed_from_the_send() -> None:
    out = runs.burst_metrics(10.0, [11.5, 11.0, 12.0], 3, 2048, 3072, {"srv_cpu": 0.5})
    assert (out["first_s"], out["wall_s"], out["answered"], out["ok"]) == (1.0, 2.0, 3, 3)
    assert (out["rss_base_mb"], out["rss_peak_mb"], out["rss_delta_mb"]) == (2.0, 3.0, 1.0)
    none = runs.burst_metrics(10.0, [], 0, None, 0, {"srv_cpu": None})
    assert (none["wall_s"], none["rss_delta_mb"]) == (None, None)


def test_progress_figures_are_medians_over_the_repetitions() -> None:
    out = runs.progress_metrics([(0.2, 200, True), (0.1, 190, True), (0.4, 200, False)], 200)
    assert out["total_ms"] == pytest.approx(200)
    assert out["us_per_step"] == pytest.approx(1000)
    assert (out["notifs"], out["ok"]) == (200, False)


def test_the_event_log_is_read_as_the_contract_writes_it(tmp_path: Path) -> None:
    log = tmp_path / "events.log"
    log.write_text("start 1.5 10\nend 2.25 10 cancelled\ngarbage\n")
    assert runs.read_events(log) == [("start", 1.5, ""), ("end", 2.25, "cancelled")]


# --- the report ---------------------------------------------------------------------------


def rec(peer: str, rnd: int, rps: float, *, test: str = "stdio_lat1", run: str = "r") -> dict:
    return {
        "run": run,
        "target": f"{peer}-stdio",
        "peer": peer,
        "mode": "stdio",
        "modes": [],
        "kind": "stdio",
        "test": test,
        "round": rnd,
        "metrics": {"rps": rps, "p50_us": 1e6 / rps, "srv_cpu_us": 10.0},
        "note": "",
    }


def ratio_row(text: str, metric: str) -> list[str]:
    (row,) = [
        line for line in text.splitlines() if line.startswith(f"| stdio | stdio_lat1 | {metric} |")
    ]
    return [cell.strip() for cell in row.strip("|").split("|")][3:]


def test_ratios_are_medians_of_rounds_paired_in_the_same_round() -> None:
    records = [
        rec("raw", 0, 100.0),
        rec("raw", 1, 300.0),
        rec("raw", 2, 999.0),  # the other peer has no round 2: no pair
        rec("sdk", 0, 50.0),
        rec("sdk", 1, 300.0),
    ]
    text = report.report(records, ["raw", "sdk"])
    # per round 0.5 and 1.0: their median, not the ratio of the medians (175 / 300)
    assert ratio_row(text, "req/s") == ["0.75 [2]"]
    assert "| raw-stdio | stdio_lat1 | 3 | 300 (100–999) |" in text
    assert "| sdk-stdio | stdio_lat1 | 2 | 175 (50–300) |" in text


def test_every_later_peer_is_compared_with_every_earlier_one() -> None:
    records = [rec(p, 0, r) for p, r in (("sdk", 200.0), ("mcpactor", 800.0), ("raw", 1000.0))]
    text = report.report(records, ["raw", "sdk"])
    assert text.index("### raw") < text.index("### sdk") < text.index("### mcpactor")
    assert "| mode | test | metric | sdk / raw | mcpactor / raw | mcpactor / sdk |" in text
    assert ratio_row(text, "req/s") == ["0.2 [1]", "0.8 [1]", "4 [1]"]
    assert ratio_row(text, "srv CPU µs/req") == ["1 [1]"] * 3


def test_failed_rounds_are_shown_and_left_out_of_the_medians() -> None:
    failed = rec("sdk", 1, 1.0)
    failed["metrics"] = {"failed": "RuntimeError: boom"}
    records = [rec("raw", 0, 100.0), rec("sdk", 0, 50.0), failed]
    text = report.report(records, ["raw", "sdk"])
    assert "| sdk-stdio | stdio_lat1 | 2 (1 failed) | 50 (50–50) |" in text
    only_failed = [rec("raw", 0, 100.0), {**failed, "round": 0}]
    text = report.report(only_failed, ["raw", "sdk"])
    assert "| sdk-stdio | stdio_lat1 | 1 | FAILED: RuntimeError: boom |" in text
    assert "### ratios" not in text


def test_one_peer_has_no_ratios() -> None:
    assert "ratios" not in report.report([rec("raw", 0, 1.0), rec("raw", 1, 2.0)])


def test_a_stand_in_target_is_compared_in_the_modes_it_stands_in_for() -> None:
    raw = rec("raw", 0, 1000.0)
    raw.update(target="raw-http-json", mode="http-json", modes=["http-stateless-json"])
    sdk = rec("sdk", 0, 100.0)
    sdk.update(target="sdk-http-stateless-json", mode="http-stateless-json")
    text = report.report([raw, sdk], ["raw", "sdk"])
    assert "| http-stateless-json | stdio_lat1 | req/s | 0.1 [1] |" in text


def test_summaries_of_booleans_texts_and_numbers() -> None:
    assert report.summarize([True, True, None]) == (True, None)
    assert report.summarize([True, False]) == (False, None)
    assert report.summarize(["200:5", "404:1", "200:5"]) == ("200:5/404:1", None)
    assert report.summarize([3, 1, 2]) == (2, (1, 3))
    assert report.summarize([None]) == (None, None)


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (None, "–"),
        (True, "yes"),
        (False, "NO"),
        (1000, "1000"),
        (1000.0, "1,000"),
        (12345.6, "12,346"),
        (123.4, "123"),
        (12.34, "12.3"),
        (1.234, "1.23"),
        ("a/b", "a/b"),
    ],
)
def test_cells_are_formatted_to_about_three_figures(value: Any, shown: str) -> None:
    assert report.fmt(value) == shown


@pytest.mark.parametrize("name", ["closing", "workers", "final"])
def test_a_committed_run_reprints_as_its_committed_tables(name: str) -> None:
    records = json.loads((BENCH / "results" / f"{name}.json").read_text())
    expected = (BENCH / "results" / f"{name}.md").read_text()
    assert report.report(records, ["raw", "sdk", "fastmcp"]) + "\n" == expected


def test_a_closed_loop_keeps_each_lane_busy_until_stopped_or_broken() -> None:
    calls = {"ok": 0, "bad": 0, "broken": 0}

    async def scenario() -> Any:
        loop = asyncio.get_running_loop()
        load = runs.ClosedLoop()

        def ok_lane(done: Any) -> None:
            calls["ok"] += 1
            loop.call_soon(done, lambda: True)

        def bad_lane(done: Any) -> None:
            calls["bad"] += 1
            loop.call_soon(done, lambda: False)

        def broken_lane(done: Any) -> None:  # breaks on its third call
            calls["broken"] += 1
            loop.call_soon(done, None if calls["broken"] == 3 else (lambda: True))

        for lane in (ok_lane, bad_lane, broken_lane):
            load.start(lane)
        for _ in range(5):
            await asyncio.sleep(0)
        load.measuring = True
        for _ in range(10):
            await asyncio.sleep(0)
        load.measuring = False
        await load.finish(timeout=5)
        return load

    load = asyncio.run(scenario())
    assert calls["broken"] == 3
    assert calls["ok"] == calls["bad"] > 10
    measured = len(load.latencies)
    assert measured == 20  # ten answers each from the two lanes still working
    assert load.errors == 10


def test_a_servers_kernel_time_is_measured_apart_from_its_user_time() -> None:
    system = load_harness("system")
    # A child that spends its time in system calls, then waits to be read.
    script = (
        "import os, sys\n"
        "fd = os.open(os.devnull, os.O_WRONLY)\n"
        "for _ in range(300_000):\n"
        "    os.write(fd, b'x')\n"
        "print('done', flush=True)\n"
        "sys.stdin.read()\n"
    )
    with subprocess.Popen(
        [sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    ) as child:
        assert child.stdout is not None
        assert child.stdin is not None
        meter = system.Meter(child.pid)
        assert child.stdout.readline() == b"done\n"
        used = meter.read()
        user, kernel = system.cpu_times(child.pid)
        assert system.cpu_seconds(child.pid) == pytest.approx(user + kernel)
        # The CPU clock is exact where the ticks are rounded down, each of the two.
        clock = system.cpu_clock(child.pid)
        assert user + kernel <= clock < user + kernel + 2 * 1.5 / system.TICK
        child.stdin.close()
    assert kernel > 0
    assert 0 < used["srv_sys"] <= used["srv_cpu"]
    assert system.cpu_times(None) is None
    assert system.cpu_clock(None) is None


def test_the_kernel_column_is_shown_only_for_runs_that_measured_it() -> None:
    older = report.report([rec("raw", 0, 100.0)], ["raw"])
    assert "kernel" not in older
    measured = rec("raw", 0, 100.0)
    measured["metrics"]["srv_sys_us"] = 2.5
    text = report.report([measured], ["raw"])
    heading = next(line for line in text.splitlines() if line.startswith("| target |"))
    row = next(line for line in text.splitlines() if line.startswith("| raw-stdio |"))
    cells = dict(zip(heading.split("|"), row.split("|"), strict=True))
    assert cells[" of it kernel µs "].strip() == "2.50"
