"""``serve --store``: /readyz is 503 while the store does not answer, 200 once it does."""

from __future__ import annotations

import contextlib
from pathlib import Path

import httpx
import trio

from ..transports._cli import server_file, serving
from .conftest import free_port, needs_redis, running_redis

SERVER = """
from mcpactor import Server

server = Server("ready", "1.0.0")


@server.tool()
async def echo(text: str) -> str:
    \"\"\"Say it back.\"\"\"
    return text
"""


async def _until(http: httpx.AsyncClient, status: int, body: dict[str, str]) -> None:
    # The check's answer stands a couple of seconds; a probe sees the change after that.
    with trio.fail_after(20):
        while True:
            answer = await http.get("/readyz")
            if (answer.status_code, answer.json()) == (status, body):
                return
            await trio.sleep(0.2)


@needs_redis
async def test_readyz_follows_the_store(tmp_path: Path) -> None:
    port = free_port()
    redis_arguments = ("--port", str(port), "--bind", "127.0.0.1")
    path = server_file(tmp_path, "ready.py", SERVER)
    arguments = [str(path), "--http", "127.0.0.1:0", "--store", f"redis://127.0.0.1:{port}"]
    with contextlib.ExitStack() as redis:
        redis.enter_context(running_redis(*redis_arguments))
        async with serving(arguments) as served:
            assert "serving http://" in served.line, served.line
            base = served.url.rsplit("/", 1)[0]
            async with httpx.AsyncClient(base_url=base, timeout=10) as http:
                await _until(http, 200, {"status": "ready"})
                redis.close()
                await _until(http, 503, {"status": "unavailable"})
                # Not ready is not dead: the process answers its liveness probe.
                assert (await http.get("/healthz")).status_code == 200
                with running_redis(*redis_arguments):
                    await _until(http, 200, {"status": "ready"})
