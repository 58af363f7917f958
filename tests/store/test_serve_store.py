"""``mcpactor serve --http --store``: two processes on two ports serve the same sessions.

Each process is a replica of its own; only the Redis store joins them. A session opened
on one is served by the other, ended by the other, and a task made on one is read on the
other.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio

from mcpactor._exceptions import ConfigError
from mcpactor.config import load_config

from ..transports._cli import Served, server_file, serving
from .conftest import free_port

VERSION = "2025-11-25"
ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}

SERVER = '''
import os

import trio

from mcpactor import Server

server = Server("shared", "1.0.0")


@server.tool()
async def echo(text: str) -> str:
    """Say it back."""
    return text


@server.tool()
async def pid() -> int:
    """The serving process's id."""
    return os.getpid()


@server.tool(task_support="optional")
async def job(key: str) -> str:
    """A short job, run as a task."""
    await trio.sleep(0.2)
    return f"job {key} done"
'''


def _needs_the_store() -> None:
    # The store's pieces are written beside the command line; until all are in, skip.
    for name in ("_bus", "_events", "_relay", "_sessions"):
        pytest.importorskip(f"mcpactor.store.{name}")


@contextlib.asynccontextmanager
async def _replica(
    tmp_path: Path, redis_port: int, *extra: str
) -> AsyncIterator[tuple[Served, httpx.AsyncClient]]:
    path = server_file(tmp_path, "shared.py", SERVER)
    arguments = [str(path), "--http", "127.0.0.1:0", "--json-response"]
    arguments += ["--store", f"redis://127.0.0.1:{redis_port}", *extra]
    async with serving(arguments) as served:
        assert "serving http://" in served.line, served.line
        async with httpx.AsyncClient(base_url=served.url, timeout=20) as http:
            yield served, http


async def _post(
    http: httpx.AsyncClient, message: dict[str, Any], session: str | None = None
) -> httpx.Response:
    headers = dict(ACCEPT)
    if session is not None:
        headers |= {"mcp-session-id": session, "mcp-protocol-version": VERSION}
    return await http.post("", json=message, headers=headers)


async def _initialize(http: httpx.AsyncClient) -> str:
    reply = await _post(
        http,
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": VERSION,
                "capabilities": {},
                "clientInfo": {"name": "test", "version": "1"},
            },
        },
    )
    assert reply.status_code == 200, reply.text
    session = reply.headers["mcp-session-id"]
    done = await _post(http, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
    assert done.status_code == 202, done.text
    return session


async def _call(
    http: httpx.AsyncClient, session: str, number: int, method: str, params: dict[str, Any]
) -> Any:
    reply = await _post(
        http, {"jsonrpc": "2.0", "id": number, "method": method, "params": params}, session
    )
    assert reply.status_code == 200, reply.text
    return reply.json()


async def test_a_session_opened_on_one_replica_is_served_and_ended_by_the_other(
    tmp_path: Path, redis_port: int
) -> None:
    _needs_the_store()
    prefix = ["--store-prefix", "sessions-test"]
    async with (
        _replica(tmp_path, redis_port, *prefix) as (a, http_a),
        _replica(tmp_path, redis_port, *prefix) as (b, http_b),
    ):
        assert a.port != b.port
        session = await _initialize(http_a)
        echoed = await _call(
            http_b, session, 1, "tools/call", {"name": "echo", "arguments": {"text": "hi"}}
        )
        assert echoed["result"]["content"][0]["text"] == "hi"
        ended = await http_b.delete(
            "", headers={"mcp-session-id": session, "mcp-protocol-version": VERSION}
        )
        assert ended.status_code in (200, 204), ended.text
        # Ended on B, it is gone on A too, once the relay has told A (pub/sub: A's copy
        # may serve a request that overtakes the message, never one long after it).
        with trio.fail_after(10):
            while True:
                after = await _post(
                    http_a,
                    {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}},
                    session,
                )
                if after.status_code == 404:
                    break
                assert after.status_code == 200, after.text
                await trio.sleep(0.05)


async def test_a_task_made_on_one_replica_is_read_on_the_other(
    tmp_path: Path, redis_port: int
) -> None:
    _needs_the_store()
    prefix = ["--store-prefix", "tasks-test"]
    async with (
        _replica(tmp_path, redis_port, *prefix) as (_, http_a),
        _replica(tmp_path, redis_port, *prefix) as (_, http_b),
    ):
        session = await _initialize(http_a)
        created = await _call(
            http_a,
            session,
            1,
            "tools/call",
            {"name": "job", "arguments": {"key": "k"}, "task": {"ttl": 60_000}},
        )
        task_id = created["result"]["task"]["taskId"]
        got = await _call(http_b, session, 2, "tasks/get", {"taskId": task_id})
        assert got["result"]["taskId"] == task_id
        assert got["result"]["status"] in ("working", "completed")
        # B waits for the task A runs, and hands back its result.
        result = await _call(http_b, session, 3, "tasks/result", {"taskId": task_id})
        assert result["result"]["content"][0]["text"] == "job k done"


async def test_an_unreachable_store_stops_the_start_with_one_line(tmp_path: Path) -> None:
    path = server_file(tmp_path, "shared.py", SERVER)
    port = free_port()
    command = [sys.executable, "-m", "mcpactor", "serve", str(path), "--http", "127.0.0.1:0"]
    command += ["--store", f"redis://:hunter2@127.0.0.1:{port}/0"]
    with trio.fail_after(60):
        done = await trio.run_process(
            command, capture_stdout=True, capture_stderr=True, check=False
        )
    assert done.returncode == 1
    said = done.stderr.decode()
    assert f"the store redis://:***@127.0.0.1:{port}/0 is unreachable" in said
    assert "hunter2" not in said
    assert "Traceback" not in said


async def test_a_store_over_stdio_is_refused(tmp_path: Path) -> None:
    path = server_file(tmp_path, "shared.py", SERVER)
    command = [sys.executable, "-m", "mcpactor", "serve", str(path), "--store", "redis://x"]
    with trio.fail_after(60):
        done = await trio.run_process(
            command, stdin=subprocess.DEVNULL, capture_stderr=True, check=False
        )
    assert done.returncode == 2
    assert "--store needs --http" in done.stderr.decode()


def test_the_store_table_is_read(tmp_path: Path) -> None:
    config = tmp_path / "mcpactor.toml"
    config.write_text(
        'transport = "http"\n[store]\nurl = "rediss://:pw@db.example:6380/2?verify=none"\n'
        'prefix = "blue"\n'
    )
    store = load_config(config).store
    assert store is not None
    assert store.url is not None
    assert (store.url.host, store.url.port, store.url.db) == ("db.example", 6380, 2)
    assert store.url.tls
    assert not store.url.verify
    assert store.url.password == "pw"
    assert store.prefix == "blue"


@pytest.mark.parametrize(
    ("table", "said"),
    [
        ('url = "http://:pw@db.example"', "store.url: store URL 'http://***@db.example'"),
        ("url = 5", "store.url: expected a string"),
        ('prefix = "a b"', "store.prefix: expected 1 to 64 letters"),
        ('host = "x"', "store.host: unknown key"),
    ],
)
def test_a_wrong_store_table_names_the_key_and_line(tmp_path: Path, table: str, said: str) -> None:
    config = tmp_path / "mcpactor.toml"
    config.write_text(f'transport = "http"\n\n[store]\n{table}\n')
    with pytest.raises(ConfigError) as caught:
        load_config(config)
    message = str(caught.value)
    assert said in message
    assert "(line 4)" in message
    assert ":pw@" not in message


async def test_the_store_table_over_stdio_is_refused(tmp_path: Path) -> None:
    path = server_file(tmp_path, "shared.py", SERVER)
    config = tmp_path / "mcpactor.toml"
    config.write_text(f'[servers.shared]\ntarget = "{path}"\n\n[store]\nurl = "redis://x"\n')
    command = [sys.executable, "-m", "mcpactor", "serve", "--config", str(config)]
    with trio.fail_after(60):
        done = await trio.run_process(
            command, stdin=subprocess.DEVNULL, capture_stderr=True, check=False
        )
    assert done.returncode == 2
    assert "store.url needs transport = 'http'" in done.stderr.decode()


async def test_workers_sharing_the_store_serve_one_session(
    tmp_path: Path, redis_port: int
) -> None:
    _needs_the_store()
    path = server_file(tmp_path, "shared.py", SERVER)
    arguments = [str(path), "--http", "127.0.0.1:0", "--json-response", "--workers", "2"]
    arguments += ["--store", f"redis://127.0.0.1:{redis_port}", "--store-prefix", "workers"]
    async with serving(arguments) as served:
        assert "with 2 workers" in served.line, served.line
        async with httpx.AsyncClient(base_url=served.url, timeout=20) as http:
            session = await _initialize(http)
        # A fresh connection for each call: the kernel hands each to either worker,
        # and calls go on until both have served the session.
        pids: set[str] = set()
        for number in range(1, 41):
            async with httpx.AsyncClient(base_url=served.url, timeout=20) as http:
                reply = await _call(
                    http, session, number, "tools/call", {"name": "pid", "arguments": {}}
                )
            pids.add(reply["result"]["content"][0]["text"])
            if len(pids) == 2:
                break
        assert len(pids) == 2


async def test_a_2026_request_is_served_with_the_store(tmp_path: Path, redis_port: int) -> None:
    _needs_the_store()
    async with _replica(tmp_path, redis_port, "--store-prefix", "era-2026") as (_, http):
        message = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {
                "name": "echo",
                "arguments": {"text": "new era"},
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientCapabilities": {},
                    "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
                },
            },
        }
        headers = ACCEPT | {
            "mcp-protocol-version": "2026-07-28",
            "mcp-method": "tools/call",
            "mcp-name": "echo",
        }
        reply = await http.post("", json=message, headers=headers)
        assert reply.status_code == 200, reply.text
        assert "mcp-session-id" not in reply.headers
        assert reply.json()["result"]["content"][0]["text"] == "new era"
