"""``examples/extensions.py``: its extension declared, served, notified, in a session."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import trio
import trio.testing

from mcpactor.client import connect_memory
from mcpactor.config import load_server
from mcpactor.protocol import JSONValue

ROOT = Path(__file__).resolve().parents[1]


async def test_the_example_extension_in_a_session() -> None:
    server = load_server(str(ROOT / "examples" / "extensions.py"))
    heard: list[JSONValue] = []

    def hear(message: JSONValue, stream: str | None) -> None:
        heard.append(message)

    with trio.fail_after(10):
        async with connect_memory(server, on_server_message=hear) as client:
            declared = {"extensions": {"com.example/search": {"ranking": True}}}
            result = await client.initialize("2025-11-25", capabilities=declared)
            assert result["capabilities"]["extensions"] == {
                "com.example/search": {"ranking": False}
            }
            found = await client.request("com.example/search", {"query": "em"})
            assert found == {"hits": ["Emma", "Middlemarch"], "ranked": True}
            catalogue = await client.read_resource("search://catalogue")
            assert "Beloved" in catalogue["contents"][0]["text"]
            await client.notify("com.example/selected", {"title": "Emma"})
            await client.ping()
            await trio.testing.wait_all_tasks_blocked()
    notes = [m for m in heard if isinstance(m, dict) and m.get("method") == "com.example/found"]
    assert [n["params"] for n in notes] == [{"title": "Emma"}, {"title": "Middlemarch"}]
    handler: Any = server.extensions["com.example/search"].notifications[0].handler
    assert sys.modules[handler.__module__].SELECTED == ["Emma"]
