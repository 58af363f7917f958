"""The references of round three answer the harness: bare trio on stdio, the TypeScript SDK.

Each is driven by the harness's own client through a short exchange (the opening, then
tools/call of echo) and its answer checked; the TypeScript SDK's tests install the locked
SDK with npm first, as the harness does.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from .bench_scripts import BENCH, load_harness, load_peer

wire = load_harness("wire")
runs = load_harness("runs")
targets = load_harness("targets")
npm = load_harness("npm")
report = load_harness("report")
contract = load_peer("contract")
trio_stdio = load_peer("trio_stdio")

TRIO = [sys.executable, str(BENCH / "peers" / "trio_stdio.py"), "stdio"]
TS = BENCH / "peers" / "ts"
STATELESS = wire.Revision("2026-07-28")
ECHOED = contract.text_result(wire.ECHO_TEXT)


def targets_file() -> dict[str, Any]:
    return {t.name: t for t in targets.parse_targets((BENCH / "targets.toml").read_text())}


def run_of(**values: str) -> Any:
    values = {"python": sys.executable, "python_mcpactor": sys.executable, **values}
    return runs.Run({"bench": str(BENCH), **values}, duration=0.3, warmup=0.05, streams=5)


async def exchange(argv: list[str], revision: Any = wire.SESSION, pipelined: int = 64) -> Any:
    """Open, one echo, then pipelined echoes written at once: the replies."""
    client = await wire.StdioClient.start(argv, dict(os.environ), None, revision)
    try:
        await asyncio.wait_for(client.open(), 30)
        first = await client.call("first", "tools/call", runs.ECHO)
        template = revision.call_template("echo", {"text": wire.ECHO_TEXT})
        replies: list[dict[str, Any]] = []
        all_in = asyncio.get_running_loop().create_future()

        def got(message: dict[str, Any]) -> None:
            replies.append(message)
            if len(replies) == pipelined and not all_in.done():
                all_in.set_result(None)

        for rid in range(pipelined):
            client.expect(rid, got)
        client.write(b"".join(template(rid) + b"\n" for rid in range(pipelined)))
        await asyncio.wait_for(all_in, 30)
        return first, replies
    finally:
        await client.close()


# --- bare trio on stdio ----------------------------------------------------------------


def reply(line: bytes) -> Any:
    answer = trio_stdio.answer(line)
    assert answer is not None
    assert answer.endswith(b"\n")
    assert answer.count(b"\n") == 1
    return orjson.loads(answer)


def test_the_trio_reference_answers_each_line_of_both_revisions() -> None:
    envelope = {"_meta": {wire.PROTOCOL_VERSION_KEY: "2026-07-28"}}
    init = reply(wire.request(1, "initialize", wire.INIT_PARAMS))
    assert init["result"]["protocolVersion"] == "2025-11-25"
    tools = reply(wire.request(2, "tools/list"))["result"]["tools"]
    assert [t["name"] for t in tools] == ["echo", "echo_sync", "add"]
    echo = reply(wire.call_template("echo", {"text": "hé"})(3))
    assert echo == {"jsonrpc": "2.0", "id": 3, "result": contract.text_result("hé")}
    added = reply(wire.request("a", "tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}}))
    assert added["result"]["content"][0]["text"] == "5"
    assert trio_stdio.answer(wire.notification("notifications/initialized")) is None
    # at 2026-07-28 every result says it is complete
    modern = reply(STATELESS.call_template("echo", {"text": "x"})(4))
    assert modern["result"] == {**contract.text_result("x"), "resultType": "complete"}
    assert STATELESS.succeeded(modern)
    assert reply(wire.request(5, "ping", {}, envelope["_meta"]))["result"] == {
        "resultType": "complete"
    }
    discovered = reply(STATELESS.request(6, "server/discover"))
    STATELESS.check_opening(discovered)
    # what is not a request gets an error, not an exception
    assert reply(b"{not json")["error"]["code"] == -32700
    assert reply(b"[1, 2]")["error"]["code"] == -32600
    assert reply(b'{"jsonrpc":"2.0","id":7}')["error"]["code"] == -32600


def test_the_trio_reference_answers_a_harness_exchange_and_64_pipelined_calls() -> None:
    first, replies = asyncio.run(exchange(TRIO))
    assert first["result"] == ECHOED
    assert sorted(r["id"] for r in replies) == list(range(64))
    assert all(r["result"] == ECHOED for r in replies)


def test_the_trio_reference_answers_the_harness_at_2026() -> None:
    first, replies = asyncio.run(exchange(TRIO, STATELESS, pipelined=8))
    assert STATELESS.succeeded(first)
    assert len(replies) == 8
    assert all(STATELESS.succeeded(r) for r in replies)


def test_cold_start_times_the_servers_cpu_to_its_initialize_answer() -> None:
    run = run_of()
    metrics = runs.cold_start(run, targets_file()["trio-stdio"])
    assert metrics["init_ms"] > 0
    # the CPU of the process that answered: less than the wall time it took, on any machine
    assert 0 < metrics["init_cpu_ms"] <= metrics["init_ms"] + 20
    assert metrics["rss_idle_mb"] > 5
    assert metrics["exit_on_eof_ms"] is not None


# --- the TypeScript SDK on Node --------------------------------------------------------


@pytest.fixture(scope="module")
def node() -> str:
    """The node the TypeScript reference runs on, its locked SDK installed."""
    found, npm_path = shutil.which("node"), shutil.which("npm")
    if found is None or npm_path is None:
        pytest.skip("the TypeScript SDK reference needs node and npm, not on PATH")
    npm.ensure_installed(TS, npm_path)
    assert npm.missing(TS) == []
    return found


def test_the_typescript_reference_answers_a_stdio_exchange_and_64_pipelined_calls(
    node: str,
) -> None:
    first, replies = asyncio.run(exchange([node, str(TS / "server.mjs"), "stdio"]))
    assert first["result"]["content"] == ECHOED["content"]
    assert sorted(r["id"] for r in replies) == list(range(64))
    assert all(wire.succeeded(r) for r in replies)


@pytest.mark.parametrize("name", ["ts-sdk-http-json", "ts-sdk-http-stateless-json"])
def test_the_typescript_reference_answers_over_http_with_json(node: str, name: str) -> None:
    target = targets_file()[name]

    async def scenario() -> list[Any]:
        async with runs.HttpServer(run_of(node=node), target) as server:
            endpoint = server.endpoint
            sessions = await runs.open_sessions(endpoint, 2)
            connection = await endpoint.connect()
            try:
                return [
                    (s, await endpoint.call(connection, i, "tools/call", runs.ECHO, s))
                    for i, s in enumerate(sessions)
                ]
            finally:
                connection.close()

    answers = asyncio.run(scenario())
    ids = [session for session, _ in answers]
    if target.stateless:
        assert ids == [None, None]
    else:
        assert None not in ids
        assert len(set(ids)) == 2
    for i, (_, response) in enumerate(answers):
        _status, headers, body = response
        assert headers[b"content-type"].startswith(b"application/json")
        assert wire.answered(i, response)
        assert orjson.loads(body)["result"]["content"] == ECHOED["content"]


def test_sessions_hold_their_get_streams_on_the_typescript_reference(node: str) -> None:
    metrics = asyncio.run(
        runs.run_group(run_of(node=node), targets_file()["ts-sdk-http-json"], ["http_streams"], 0)
    )["http_streams"]
    assert (metrics["streams"], metrics["statuses"], metrics["still_open"]) == (5, "200:5", 5)
    assert metrics["errors"] == 0
    assert metrics["held_p99_us"] > 0
    assert metrics["idle_p99_us"] > 0


# --- the harness around them ------------------------------------------------------------


def test_sessions_hold_their_get_streams_on_mcpactor() -> None:
    target = targets_file()["mcpactor-http-json"]
    metrics = asyncio.run(runs.run_group(run_of(), target, ["http_streams"], 0))["http_streams"]
    assert (metrics["streams"], metrics["statuses"], metrics["still_open"]) == (5, "200:5", 5)
    assert metrics["errors"] == 0
    assert metrics["rss_held_mb"] >= metrics["rss_base_mb"] > 0


def test_a_revision_without_sessions_holds_listen_requests_instead() -> None:
    target = targets.Target(
        name="sse-2026",
        kind="http",
        cmd="{python} {bench}/mcpactor_server.py http 127.0.0.1 {port}",
        url="http://127.0.0.1:{port}/mcp",
        revision=STATELESS,
    )
    assert target.runs("http_streams")
    held = asyncio.run(runs.run_group(run_of(), target, ["http_streams"], 0))["http_streams"]
    assert (held["statuses"], held["still_open"], held["errors"]) == ("200:5", 5, 0)
    endpoint = wire.Endpoint("http://h:1/mcp", STATELESS)
    streams = load_harness("streams")
    request = streams.stream_request(endpoint, None, 3)
    assert request.startswith(b"POST /mcp HTTP/1.1")
    assert b"Mcp-Method: subscriptions/listen" in request
    get = streams.stream_request(wire.Endpoint("http://h:1/mcp"), "sid", 0)
    assert get.startswith(b"GET /mcp HTTP/1.1\r\n")
    assert b"Mcp-Session-Id: sid\r\n" in get
    assert get.endswith(b"\r\n\r\n")


def test_a_session_era_server_without_sessions_has_no_streams_to_hold() -> None:
    found = targets_file()
    assert not found["mcpactor-http-stateless-json"].runs("http_streams")
    assert not found["raw-http-json"].runs("http_streams")
    assert found["mcpactor-http-json"].runs("http_streams")
    assert found["ts-sdk-http-json"].runs("http_streams")


def test_npm_packages_are_missing_until_their_locked_versions_are_installed(
    tmp_path: Path,
) -> None:
    lock = {
        "packages": {
            "": {"dependencies": {"a": "1.0.0", "@s/b": "2.0.0"}},
            "node_modules/a": {"version": "1.0.0"},
            "node_modules/@s/b": {"version": "2.0.0"},
        }
    }
    (tmp_path / "package-lock.json").write_text(json.dumps(lock))
    assert npm.missing(tmp_path) == ["a", "@s/b"]
    for name, version in (("a", "1.0.0"), ("@s/b", "1.9.0")):
        folder = tmp_path / "node_modules" / name
        folder.mkdir(parents=True)
        (folder / "package.json").write_text(json.dumps({"version": version}))
    assert npm.missing(tmp_path) == ["@s/b"]
    with pytest.raises(RuntimeError, match=r"npm ci in .* failed \(1\)"):
        npm.ensure_installed(tmp_path, shutil.which("false"))
    (tmp_path / "node_modules" / "@s" / "b" / "package.json").write_text('{"version": "2.0.0"}')
    npm.ensure_installed(tmp_path, "/nonexistent/npm")  # nothing missing: npm is not run


def test_a_target_whose_npm_install_fails_fails_its_tests_with_the_reason(tmp_path: Path) -> None:
    target = targets.Target(name="t", kind="stdio", cmd="node x.mjs", npm=str(tmp_path))
    recorded: list[tuple[str, str, Any]] = []

    def record(t: Any, test: str, round_no: int, metrics: Any) -> None:
        recorded.append((t.name, test, metrics))

    asyncio.run(runs.run_all(run_of(), [target], ["cold_start", "stdio_lat1"], 1, record))
    assert [(name, test) for name, test, _ in recorded] == [
        ("t", "cold_start"),
        ("t", "stdio_lat1"),
    ]
    assert all(m["failed"].startswith("npm: ") for _, _, m in recorded)
    assert "No such file" in recorded[0][2]["failed"]


def test_the_summary_sets_ours_beside_each_reference() -> None:
    def rec(target: str, peer: str, mode: str, test: str, round_no: int, **metrics: Any) -> Any:
        return {
            "run": "r",
            "target": target,
            "peer": peer,
            "mode": mode,
            "modes": [],
            "kind": "stdio",
            "test": test,
            "round": round_no,
            "metrics": metrics,
        }

    records = [
        rec("m", "mcpactor", "stdio", "stdio_pipe64", 0, rps=20_000.0, srv_cpu_us=50.0),
        rec("t", "trio", "stdio", "stdio_pipe64", 0, rps=60_000.0, srv_cpu_us=15.0),
        rec("s", "ts-sdk", "stdio", "stdio_pipe64", 0, rps=35_000.0, srv_cpu_us=30.0),
        rec("m", "mcpactor", "stdio", "cold_start", 0, init_cpu_ms=270.0, rss_idle_mb=31.7),
        rec("t", "trio", "stdio", "cold_start", 0, init_cpu_ms=150.0, rss_idle_mb=25.7),
        rec("m", "mcpactor", "http-json", "http_streams", 0, streams=10_000, rss_held_mb=40.0),
    ]
    text = report.report(records, ["trio", "ts-sdk"], report.HEADLINE)
    lines = text.splitlines()
    assert lines[0].startswith("### mcpactor beside trio, ts-sdk")
    assert "| measure | mcpactor | trio | mcpactor / trio | ts-sdk | mcpactor / ts-sdk |" in lines
    assert (
        "| stdio, 64 pipelined, req/s | 20,000 | 60,000 | 0.333 [1] | 35,000 | 0.571 [1] |"
        in lines
    )
    assert "| idle RSS after initialize, MB | 31.7 | 25.7 | 1.23 [1], +6.0 | – | – |" in lines
    assert "| 10,000 sessions holding a stream: RSS MB | 40 | – | – | – | – |" in lines
    assert not any("mcpactor-2026 beside" in line for line in lines)  # none of those peers ran
    assert not report.report(records, ["trio"]).startswith("### mcpactor beside")


def test_the_cold_start_script_measures_targets_of_the_targets_file() -> None:
    done = subprocess.run(
        [sys.executable, str(BENCH / "cold_start.py"), "--targets", "trio-stdio", "--runs", "1"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    (row,) = [line for line in done.stdout.splitlines() if line.strip().startswith("trio-stdio")]
    assert "cpu@answer" in row
    assert " MB " in row
    refused = subprocess.run(
        [sys.executable, str(BENCH / "cold_start.py"), "--targets", "raw-http-json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert refused.returncode != 0
    assert "no stdio target 'raw-http-json'" in refused.stderr
