"""An elicitation round started on one ``mcpactor serve --http`` and finished on another.

Two server processes share nothing but a state key file: the first answers the call with
``input_required`` and a sealed ``requestState``; the retry, sent to the second, opens it
and completes. A third process with another key refuses the same retry.
"""

from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import Any

import orjson
import trio

from ..spec_schema import check
from ..transports._cli import Served, server_file, serving
from ..transports._http_client import ACCEPT_BOTH, SocketClient

REVISION = "2026-07-28"
ENVELOPE: dict[str, Any] = {
    "io.modelcontextprotocol/protocolVersion": REVISION,
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
}

SERVER = """
    from mcpactor import Context, Server

    server = Server("two-processes", "1.0.0")
    calls = []


    @server.tool()
    async def book(city: str, ctx: Context) -> str:
        \"\"\"Book a trip, once the user confirms it.\"\"\"
        calls.append(city)
        answer = await ctx.elicit(
            f"book {city}?",
            {"type": "object", "properties": {"seats": {"type": "integer"}}},
        )
        seats = (answer.content or {}).get("seats")
        return f"{answer.action}: {seats} seats to {city} (asked {len(calls)} times here)"
"""


def _key_file(directory: Path, name: str) -> Path:
    path = directory / name
    path.write_text("# the state key\n" + base64.b64encode(os.urandom(32)).decode() + "\n")
    return path


async def _call(served: Served, nursery: trio.Nursery, params: dict[str, Any]) -> Any:
    client = SocketClient("127.0.0.1", served.port, nursery)
    try:
        message = {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": {**params, "_meta": ENVELOPE},
        }
        response = await client.request(
            "POST",
            "/mcp",
            {
                "accept": ACCEPT_BOTH,
                "content-type": "application/json",
                "mcp-protocol-version": REVISION,
                "mcp-method": "tools/call",
                "mcp-name": params["name"],
            },
            orjson.dumps(message),
        )
        assert "mcp-session-id" not in response.headers
        return response.status, await response.json()
    finally:
        await client.aclose()


async def test_a_retry_completes_on_another_process_sharing_the_key(tmp_path: Path) -> None:
    target = server_file(tmp_path, "trips.py", SERVER)
    keys = _key_file(tmp_path, "state.keys")
    other_keys = _key_file(tmp_path, "other.keys")
    common = [str(target), "--http", "127.0.0.1:0"]
    async with (
        serving([*common, "--state-key-file", str(keys)]) as first,
        serving([*common, "--state-key-file", str(keys)]) as second,
        serving([*common, "--state-key-file", str(other_keys)]) as stranger,
        trio.open_nursery() as nursery,
    ):
        call = {"name": "book", "arguments": {"city": "Lyon"}}
        status, asked = await _call(first, nursery, call)
        assert status == 200
        result = asked["result"]
        check(result, REVISION, "InputRequiredResult")
        (key,) = result["inputRequests"]
        assert result["inputRequests"][key]["method"] == "elicitation/create"
        retry = {
            **call,
            "inputResponses": {key: {"action": "accept", "content": {"seats": 2}}},
            "requestState": result["requestState"],
        }
        status, done = await _call(second, nursery, retry)
        assert status == 200
        assert done["result"]["resultType"] == "complete"
        # The second process ran the handler once, with the answer the first one asked for.
        assert (
            done["result"]["content"][0]["text"] == "accept: 2 seats to Lyon (asked 1 times here)"
        )
        # A process with another key cannot open the state: a clear refusal, not a new round.
        _, refused = await _call(stranger, nursery, retry)
        assert refused["id"] == 7
        assert refused["error"]["code"] == -32602
        assert "key" in refused["error"]["message"]
        # A state altered on the way is refused by a process that holds the key.
        state = result["requestState"]
        middle = len(state) // 2
        altered = state[:middle] + ("A" if state[middle] != "A" else "B") + state[middle + 1 :]
        forged = {**retry, "requestState": altered}
        _, refused = await _call(second, nursery, forged)
        assert refused["error"]["code"] == -32602
        nursery.cancel_scope.cancel()
