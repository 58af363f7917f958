"""The admin page lists every replica sharing a store: the summaries in Redis, the route,
and two ``mcpactor serve --store --admin`` processes that see each other."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import coredis
import httpx
import orjson
import pytest
import trio

from mcpactor.admin import create_admin_app
from mcpactor.runtime import Observatory
from mcpactor.store._summaries import (
    MAX_ENTRY_BYTES,
    RedisReplicaSummaries,
    replica_summary,
)

from ..store.conftest import (  # noqa: F401
    free_port,
    needs_redis,
    redis,
    redis_port,
    redis_socket,
    running_redis,
)
from ..store.test_sessions import ignoring_unclosed_buffers

TOKEN = "a-token-for-the-replicas-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


async def test_published_summaries_are_listed_and_expire(
    redis: coredis.Redis[bytes],  # noqa: F811
) -> None:
    one = RedisReplicaSummaries(redis, replica="host-a:1:x", ttl=0.4)
    two = RedisReplicaSummaries(redis, replica="host-b:2:y", ttl=30)
    await one.publish({"counts": {"sessions": 3}})
    await two.publish({"counts": {"sessions": 5}})
    listed = await two.replicas()
    assert [entry["replica"] for entry in listed] == ["host-a:1:x", "host-b:2:y"]
    assert listed[0]["counts"] == {"sessions": 3}
    assert 0 <= listed[0]["age"] < 5
    assert not two.unavailable
    # The short-lived one is not renewed: its key and then its note go.
    with trio.fail_after(10):
        while len(await two.replicas()) != 1:  # noqa: ASYNC110 (the store expires it)
            await trio.sleep(0.1)
    await two.publish({"counts": {}})
    assert await redis.zrange("mcpactor:admin-replicas", 0, -1) == (b"host-b:2:y",)
    await two.withdraw()
    assert await two.replicas() == []
    assert await redis.exists(["mcpactor:admin-replica:host-b:2:y"]) == 0


async def test_damaged_and_oversized_entries_are_skipped(
    redis: coredis.Redis[bytes],  # noqa: F811
) -> None:
    reader = RedisReplicaSummaries(redis, replica="reader")
    await reader.publish({"counts": {}})
    index = "mcpactor:admin-replicas"
    now_ms = int(time.time() * 1000)
    bad = {
        "not-json": b"{nope",
        "a-list": b"[1, 2]",
        "other-name": orjson.dumps({"replica": "someone-else", "published": time.time()}),
        "no-time": orjson.dumps({"replica": "no-time"}),
        "huge": orjson.dumps(
            {"replica": "huge", "published": time.time(), "pad": "x" * MAX_ENTRY_BYTES}
        ),
    }
    for name, value in bad.items():
        await redis.set(f"mcpactor:admin-replica:{name}", value, px=30000)
        await redis.zadd(index, {name: now_ms + 30000})
    # Noted, but its key is gone.
    await redis.zadd(index, {"vanished": now_ms + 30000})
    assert [entry["replica"] for entry in await reader.replicas()] == ["reader"]
    with pytest.raises(ValueError, match="at most"):
        await reader.publish({"pad": "x" * MAX_ENTRY_BYTES})


@needs_redis
async def test_a_store_that_cannot_be_reached_lists_nothing_unavailable() -> None:
    with ignoring_unclosed_buffers():
        port = free_port()
        client: coredis.Redis[bytes] = coredis.Redis(
            host="127.0.0.1", port=port, connect_timeout=1, stream_timeout=1
        )
        snapshots = RedisReplicaSummaries(client, replica="alone")
        async with client:
            with running_redis("--port", str(port), "--bind", "127.0.0.1"):
                await snapshots.publish({"counts": {}})
                assert [e["replica"] for e in (await snapshots.listing())["replicas"]] == ["alone"]
            # The server stopped: the listing is empty and says why, and comes back.
            with trio.fail_after(10):
                listing = await snapshots.listing()
    assert listing == {"shared": True, "unavailable": True, "self": "alone", "replicas": []}


async def test_the_summary_holds_counts_and_where_it_runs() -> None:
    observatory = Observatory(replica="r-1")
    observatory.install()
    summary = replica_summary(observatory, admin_url="http://127.0.0.1:9/")
    assert summary["replica"] == "r-1"
    assert summary["admin"] == "http://127.0.0.1:9/"
    assert set(summary["counts"]) >= {"sessions", "requests", "tasks_running", "listens"}
    assert all(type(value) is int for value in summary["counts"].values())
    assert set(summary) == {"replica", "host", "pid", "started", "admin", "counts"}


async def test_without_a_store_the_route_says_one_process() -> None:
    observatory = Observatory()
    observatory.install()
    app = create_admin_app(observatory, token=TOKEN)
    client = app.test_client()
    assert (await client.get("/api/replicas")).status_code == 401
    answer = await client.get("/api/replicas", headers=AUTH)
    assert answer.status_code == 200
    assert await answer.get_json() == {"shared": False, "unavailable": False, "replicas": []}


def _serve_with_admin(store_port: int, token_file: Path, *extra: str) -> list[str]:
    # `mcpactor serve clock` over HTTP with a store and the admin listener, on free ports.
    return [
        sys.executable,
        "-m",
        "mcpactor",
        "serve",
        "--http",
        "127.0.0.1:0",
        *extra,
        "--store",
        f"redis://127.0.0.1:{store_port}",
        "--admin",
        "127.0.0.1:0",
        "--admin-token-file",
        str(token_file),
        "clock",
    ]


async def _start(command: list[str]) -> tuple[trio.Process, str]:
    process = await trio.lowlevel.open_process(command, stderr=subprocess.PIPE)
    assert process.stderr is not None
    said = b""
    with trio.fail_after(30):
        while b"mcpactor: serving" not in said:
            chunk = await process.stderr.receive_some(4096)
            assert chunk, said.decode(errors="replace")
            said += chunk
    match = re.search(rb"admin page (http://127\.0\.0\.1:\d+/)", said)
    assert match is not None, said.decode(errors="replace")
    return process, match.group(1).decode()


async def _stop(process: trio.Process) -> None:
    if process.returncode is None:
        process.send_signal(signal.SIGTERM)
    with trio.fail_after(30):
        await process.wait()
    if process.stderr is not None:
        await process.stderr.aclose()


async def _listed(admin: httpx.AsyncClient, count: int, within: float = 20) -> dict[str, Any]:
    # Publishing is periodic: ask until the listing has ``count`` replicas.
    with trio.fail_after(within):
        while True:
            answer = await admin.get("api/replicas", headers=AUTH)
            assert answer.status_code == 200, answer.text
            listing: dict[str, Any] = answer.json()
            if len(listing["replicas"]) == count:
                return listing
            await trio.sleep(0.2)


async def test_two_served_replicas_see_each_other(
    tmp_path: Path,
    redis_port: int,  # noqa: F811
) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")

    def command() -> list[str]:
        return _serve_with_admin(redis_port, token_file)

    first, first_url = await _start(command())
    try:
        second, second_url = await _start(command())
        try:
            async with httpx.AsyncClient(base_url=first_url, timeout=10) as admin:
                assert (await admin.get("api/replicas")).status_code == 401
                listing = await _listed(admin, 2)
                assert listing["shared"] is True
                assert listing["unavailable"] is False
                pids = {entry["pid"] for entry in listing["replicas"]}
                assert pids == {first.pid, second.pid}
                admins = {entry["admin"] for entry in listing["replicas"]}
                assert admins == {first_url, second_url}
                ours = [e for e in listing["replicas"] if e["replica"] == listing["self"]]
                assert [entry["pid"] for entry in ours] == [first.pid]
                for entry in listing["replicas"]:
                    assert entry["counts"]["sessions"] >= 0
                    assert 0 <= entry["age"] < 15
        finally:
            await _stop(second)
        async with httpx.AsyncClient(base_url=first_url, timeout=10) as admin:
            # A replica that stops cleanly takes its entry away at once: well before its
            # summary's 10 seconds would have run out (it was renewed at most 2 ago).
            listing = await _listed(admin, 1, within=5)
            assert [entry["pid"] for entry in listing["replicas"]] == [first.pid]
            page = await admin.get("", headers=AUTH)
            assert page.status_code == 200
            assert b'id="replicas"' in page.content
    finally:
        await _stop(first)


async def test_the_first_of_several_workers_lists_them_all(
    tmp_path: Path,
    redis_port: int,  # noqa: F811
) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    command = _serve_with_admin(redis_port, token_file, "--workers", "2")
    process = await trio.lowlevel.open_process(command, stderr=subprocess.PIPE)
    try:
        assert process.stderr is not None
        said = b""
        # The supervisor says it serves; the first worker then says where its page is.
        with trio.fail_after(30):
            while (match := re.search(rb"admin page (http://127\.0\.0\.1:\d+/)", said)) is None:
                chunk = await process.stderr.receive_some(4096)
                assert chunk, said.decode(errors="replace")
                said += chunk
        async with httpx.AsyncClient(base_url=match.group(1).decode(), timeout=10) as admin:
            listing = await _listed(admin, 2)
            pids = {entry["pid"] for entry in listing["replicas"]}
            assert process.pid not in pids, "the supervisor serves nothing itself"
            assert len(pids) == 2
            # Only the first worker has a page; the other publishes its counts.
            assert sum(entry["admin"] is not None for entry in listing["replicas"]) == 1
    finally:
        await _stop(process)


async def test_admin_with_workers_and_no_store_is_refused(tmp_path: Path) -> None:
    command = [
        sys.executable,
        "-m",
        "mcpactor",
        "serve",
        "--http",
        "127.0.0.1:0",
        "--workers",
        "2",
        "--stateless",
        "--admin",
        "127.0.0.1:0",
        "clock",
    ]
    done = await trio.run_process(command, capture_stderr=True, check=False)
    assert done.returncode != 0
    assert b"--admin with --workers needs --store" in done.stderr
