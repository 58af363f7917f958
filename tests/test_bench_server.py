"""The benchmark server (bench/mcpactor_server.py) follows the harness contract."""

from __future__ import annotations

import functools
import sys
from pathlib import Path
from types import ModuleType

import orjson
import pytest
import trio

from mcpactor.transports import serve_http

from .bench_scripts import load_bench_script
from .spec_schema import check_server_message
from .transports._http_client import McpClient, SocketClient

BENCH_SERVER = Path(__file__).resolve().parent.parent / "bench" / "mcpactor_server.py"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "bench-test", "version": "1"},
    },
}
TOOLS = {"echo", "echo_sync", "add", "sleep", "progress"}


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return load_bench_script(BENCH_SERVER.name, "mcpactor_bench_server")


def test_the_bench_server_registers_the_contract(bench: ModuleType) -> None:
    assert set(bench.server._registry.tools) == TOOLS
    assert set(bench.server._registry.resources) == {"bench://static"}
    assert set(bench.server._registry.prompts) == {"greet"}


async def test_the_bench_server_answers_initialize_over_stdio() -> None:
    message = orjson.dumps(INITIALIZE) + b"\n"
    with trio.fail_after(60):
        done = await trio.run_process(
            [sys.executable, str(BENCH_SERVER), "stdio"], stdin=message, capture_stdout=True
        )
    lines = done.stdout.splitlines()
    assert len(lines) == 1
    reply = orjson.loads(lines[0])
    check_server_message(reply, "2025-11-25", request_method="initialize")
    assert reply["result"]["serverInfo"]["name"] == "bench-mcpactor"


@pytest.mark.parametrize(
    ("flags", "mode", "stateless"),
    [([], "sse", False), (["--json"], "json", False), (["--json", "--stateless"], "json", True)],
)
def test_http_arguments_pick_the_sdk_modes(
    bench: ModuleType, flags: list[str], mode: str, stateless: bool
) -> None:
    host, port, options = bench.http_args(["127.0.0.2", "8123", *flags])
    assert (host, port) == ("127.0.0.2", 8123)
    assert options.response_mode == mode
    assert options.stateless is stateless


def test_http_arguments_refuse_unknown_flags(bench: ModuleType) -> None:
    with pytest.raises(ValueError, match="--fast"):
        bench.http_args(["127.0.0.1", "8000", "--fast"])


@pytest.mark.parametrize("flags", [[], ["--json"], ["--json", "--stateless"]])
async def test_the_bench_server_answers_initialize_over_http(
    bench: ModuleType, flags: list[str]
) -> None:
    _, _, options = bench.http_args(["127.0.0.1", "0", *flags])
    async with trio.open_nursery() as nursery:
        host, port = await nursery.start(
            functools.partial(serve_http, bench.server, port=0, options=options)
        )
        http = SocketClient(host, port, nursery)
        try:
            with trio.fail_after(30):
                response = await McpClient(http).post(INITIALIZE)
                assert response.status == 200
                if options.response_mode == "sse":
                    assert response.content_type.startswith("text/event-stream")
                    (reply,) = [m for m in await response.messages() if m.get("id") == 1]
                else:
                    assert response.content_type.startswith("application/json")
                    reply = await response.json()
        finally:
            await http.aclose()
        nursery.cancel_scope.cancel()
    check_server_message(reply, "2025-11-25", request_method="initialize")
    assert reply["result"]["serverInfo"]["name"] == "bench-mcpactor"
