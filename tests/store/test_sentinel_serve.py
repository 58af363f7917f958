"""``serve --store redis+sentinel://``: a session outlives the primary's crash.

Two replicas of mcpactor share a store behind Sentinel (``sentinel.py``). A session is
opened on one (its record acknowledged by the Redis replica: ``?wait=1``), the Redis
primary is killed, and the other replica serves the session once the Sentinel has
promoted the Redis replica; every request made meanwhile is answered within a bound,
as a result or as an error that names the store, and none hangs.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import httpx
import pytest
import trio

from ..transports._cli import server_file, serving
from .conftest import needs_redis
from .sentinel import Sentinelled, sentinelled, watched
from .test_serve_store import SERVER, _call, _initialize, _post

pytestmark = [
    needs_redis,
    # Connections that never opened, during the switch (as in test_sentinel.py).
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]

_log = logging.getLogger(__name__)

#: a request's answer, during the switch, comes within this many seconds or it hangs
ANSWER_BOUND = 20.0
RECOVERY_BOUND = 45.0
ECHO = {"name": "echo", "arguments": {"text": "still here"}}


@pytest.fixture
def setup() -> Sentinelled:  # type: ignore[misc]
    with sentinelled() as running:
        yield running


async def test_a_session_opened_before_the_primary_died_is_served_after_the_failover(
    tmp_path: Path, setup: Sentinelled
) -> None:
    await watched(setup)
    path = server_file(tmp_path, "shared.py", SERVER)
    arguments = [str(path), "--http", "127.0.0.1:0", "--json-response"]
    arguments += ["--store", setup.url("wait=1"), "--store-prefix", "failover"]
    async with serving(arguments) as a, serving(arguments) as b:
        assert "serving http://" in a.line, a.line
        assert "serving http://" in b.line, b.line
        async with (
            httpx.AsyncClient(base_url=a.url, timeout=ANSWER_BOUND) as http_a,
            httpx.AsyncClient(base_url=b.url, timeout=ANSWER_BOUND) as http_b,
        ):
            session = await _initialize(http_a)
            echoed = await _call(http_a, session, 1, "tools/call", ECHO)
            assert echoed["result"]["content"][0]["text"] == "still here"
            # B has not seen the session: it must read its record from the store.
            setup.kill_primary()
            killed = time.monotonic()
            refused: list[str] = []
            with trio.fail_after(RECOVERY_BOUND):
                while True:
                    # httpx's timeout is the bound: a request that hangs fails the test.
                    reply = await _post(
                        http_b,
                        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": ECHO},
                        session,
                    )
                    if reply.status_code == 200 and "result" in reply.json():
                        break
                    refused.append(f"{reply.status_code} {reply.text[:300]}")
                    await trio.sleep(0.2)
            recovered = time.monotonic() - killed
            _log.warning(
                "failover: the session served again %.1f s after the kill; %d requests "
                "refused meanwhile: %s",
                recovered,
                len(refused),
                refused[:3],
            )
            assert reply.json()["result"]["content"][0]["text"] == "still here"
            # What was refused said why, in the store's words (never a bare 500).
            for said in refused:
                assert "store" in said, said
