"""The official SDK's client answers an elicitation whose retry lands on another process.

Two ``mcpactor serve --http`` processes share only a state key file; a round-robin proxy
(round_robin.py) sends each request of the SDK's client to the next one. The first round
of ``tools/call`` is answered ``input_required`` by one process, the SDK's retry with the
user's answer is served by the other, which opens the sealed ``requestState`` and
completes the call. Nothing else is shared: no store, no session.
"""

from __future__ import annotations

import base64
import os
import socket
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import anyio
import mcp.types as types
import pytest
from mcp.client import Client

from ._sdk_client import TIMEOUT

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

SERVER = '''
import os

from mcpactor import Context, Server

server = Server("elsewhere", "1.0.0")
asked = []


@server.tool()
async def book(city: str, ctx: Context) -> str:
    """Book a trip, once the user says how many seats."""
    asked.append(city)
    answer = await ctx.elicit(
        f"book {city}?", {"type": "object", "properties": {"seats": {"type": "integer"}}}
    )
    seats = (answer.content or {}).get("seats")
    return f"{answer.action}: {seats} seats to {city}; process {os.getpid()}, run {len(asked)}"
'''


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait_for(stream: IO[bytes], marker: bytes, process: subprocess.Popen[bytes]) -> bytes:
    for line in stream:
        if marker in line:
            return line
    raise AssertionError(f"exited with {process.wait()} before printing {marker!r}")


@pytest.fixture
def balanced(tmp_path: Path) -> Iterator[tuple[str, list[int], IO[bytes]]]:
    target = tmp_path / "elsewhere.py"
    target.write_text(textwrap.dedent(SERVER))
    keys = tmp_path / "state.keys"
    keys.write_text(base64.b64encode(os.urandom(32)).decode() + "\n")
    ports = [_free_port(), _free_port()]
    processes: list[subprocess.Popen[bytes]] = []
    try:
        for port in ports:
            server = subprocess.Popen(
                [
                    sys.executable,
                    *("-m", "mcpactor", "serve", str(target)),
                    *("--http", f"127.0.0.1:{port}", "--state-key-file", str(keys)),
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )
            processes.append(server)
            assert server.stderr is not None
            _wait_for(server.stderr, b"serving http://", server)
        proxy = subprocess.Popen(
            [
                sys.executable,
                str(Path(__file__).with_name("round_robin.py")),
                *(f"127.0.0.1:{port}" for port in ports),
            ],
            stdout=subprocess.PIPE,
        )
        processes.append(proxy)
        assert proxy.stdout is not None
        proxy_port = int(_wait_for(proxy.stdout, b"listening", proxy).split()[1])
        yield f"http://127.0.0.1:{proxy_port}/mcp", [p.pid for p in processes[:2]], proxy.stdout
    finally:
        for process in processes:
            process.terminate()
            process.wait(timeout=TIMEOUT)
            for stream in (process.stdout, process.stderr):
                if stream is not None:
                    stream.close()


async def _elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={"seats": 2})


async def _book(url: str) -> tuple[str, str]:
    with anyio.fail_after(TIMEOUT):
        async with Client(url, mode="auto", elicitation_callback=_elicit) as client:  # type: ignore[arg-type]
            booked = await client.call_tool("book", {"city": "Lyon"})
            assert not booked.is_error
            return client.protocol_version, booked.content[0].text  # type: ignore[union-attr]


def test_the_sdk_retry_of_an_elicitation_completes_on_the_other_process(
    balanced: tuple[str, list[int], IO[bytes]],
) -> None:
    url, pids, served = balanced
    revision, text = anyio.run(_book, url)
    assert revision == "2026-07-28"
    calls = []
    for line in iter(served.readline, b""):
        _, index, method = line.decode().split()
        if method == "tools/call":
            calls.append(int(index))
        if len(calls) == 2:
            break
    # The question was asked by one process and the answer taken by the other ...
    assert calls[0] != calls[1]
    # ... which ran the handler once, from the start, with the answer in hand.
    assert text == f"accept: 2 seats to Lyon; process {pids[calls[1]]}, run 1"
