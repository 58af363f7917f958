"""The draft SEP-2636 tool manifests, through the real ``mcpactor serve`` over stdio."""

from __future__ import annotations

import functools
import hashlib
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import orjson
import pytest
import trio

from mcpactor import ExtensionError, Server, tool_manifests
from mcpactor.server import TOOL_MANIFESTS, tool_digest

ROOT = Path(__file__).resolve().parents[2]
SERVE = [sys.executable, "-m", "mcpactor", "serve", "tests/catalogs/catalog_server.py:server"]
DECLARED = {"extensions": {TOOL_MANIFESTS: {}}}
STATELESS = "2026-07-28"


class Wire:
    """JSON-RPC over a child's stdin and stdout, one line a message, as a client writes it."""

    def __init__(self, process: trio.Process, version: str, capabilities: Any) -> None:
        self._process = process
        self._buffer = b""
        self._next = 0
        self.version = version
        self.capabilities = capabilities

    async def _line(self) -> Any:
        assert self._process.stdout is not None
        while b"\n" not in self._buffer:
            chunk = await self._process.stdout.receive_some(1 << 16)
            assert chunk, "the server closed its output"
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return orjson.loads(line)

    async def send(self, message: Any) -> None:
        assert self._process.stdin is not None
        await self._process.stdin.send_all(orjson.dumps(message) + b"\n")

    async def request(self, method: str, params: dict[str, Any] | None = None) -> Any:
        """The response (its ``result`` or ``error`` object) to one request."""
        self._next += 1
        params = dict(params or {})
        if self.version == STATELESS:
            params["_meta"] = {
                "io.modelcontextprotocol/protocolVersion": STATELESS,
                "io.modelcontextprotocol/clientCapabilities": self.capabilities,
                "io.modelcontextprotocol/clientInfo": {"name": "wire", "version": "1"},
            }
        await self.send({"jsonrpc": "2.0", "id": self._next, "method": method, "params": params})
        while True:
            message = await self._line()
            if message.get("id") == self._next:
                return message


@asynccontextmanager
async def served(version: str, capabilities: Any, *extra: str) -> AsyncIterator[Wire]:
    command = [*SERVE, "--extension", TOOL_MANIFESTS, *extra]
    async with trio.open_nursery() as nursery:
        run = functools.partial(
            trio.run_process, command, stdin=-1, stdout=-1, cwd=ROOT, check=False
        )
        process = await nursery.start(run)
        wire = Wire(process, version, capabilities)
        try:
            if version != STATELESS:
                init = await wire.request(
                    "initialize",
                    {
                        "protocolVersion": version,
                        "capabilities": capabilities,
                        "clientInfo": {"name": "wire", "version": "1"},
                    },
                )
                assert init["result"]["capabilities"]["extensions"][TOOL_MANIFESTS] == {
                    "manifest": True,
                    "maxNames": 100,
                }
                await wire.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            yield wire
        finally:
            assert process.stdin is not None
            await process.stdin.aclose()
            with trio.move_on_after(10):
                await process.wait()
            process.kill()


async def walk(wire: Wire, method: str, key: str) -> list[Any]:
    items: list[Any] = []
    params: dict[str, Any] = {}
    while True:
        result = (await wire.request(method, params))["result"]
        items += result[key]
        if "nextCursor" not in result:
            return items
        params = {"cursor": result["nextCursor"]}


@pytest.mark.parametrize("version", ["2025-11-25", STATELESS])
async def test_manifest_and_describe_follow_the_draft(version: str) -> None:
    async with served(version, DECLARED) as wire:
        tools = await walk(wire, "tools/list", "tools")
        entries = await walk(wire, "tools/manifest", "entries")
        # The same set as tools/list; entries carry no schema or description.
        assert {e["name"] for e in entries} == {t["name"] for t in tools}
        assert len(entries) == 501
        assert all(set(entry) <= {"name", "title", "digest", "annotations"} for entry in entries)
        digests = {entry["name"]: entry["digest"] for entry in entries}
        # Describe, in the order asked; each definition is tools/list's, of that digest.
        names = ["hr_get_payslip", "ping", "crm_create_deal"]
        described = (await wire.request("tools/describe", {"names": names}))["result"]["tools"]
        assert [tool["name"] for tool in described] == names
        by_name = {tool["name"]: tool for tool in tools}
        for tool in described:
            assert tool == by_name[tool["name"]]
            canonical = orjson.dumps(tool, option=orjson.OPT_SORT_KEYS)
            expected = "sha256:" + hashlib.sha256(canonical).hexdigest()
            assert digests[tool["name"]] == expected
        # Errors as the draft says: every unknown name, an empty list, the batch bound.
        unknown = await wire.request("tools/describe", {"names": ["ping", "nope", "gone"]})
        assert unknown["error"]["code"] == -32602
        assert unknown["error"]["data"]["unknownNames"] == ["nope", "gone"]
        empty = await wire.request("tools/describe", {"names": []})
        assert (empty["error"]["code"], empty["error"]["data"]) == (-32602, {"reason": "empty"})
        many = await wire.request("tools/describe", {"names": ["ping"] * 101})
        assert (many["error"]["code"], many["error"]["data"]) == (-32602, {"maxNames": 100})


@pytest.mark.parametrize("version", ["2025-11-25", STATELESS])
async def test_a_client_that_does_not_declare_it_is_not_served(version: str) -> None:
    async with served(version, {}) as wire:
        answer = await wire.request("tools/manifest", {})
        assert answer["error"]["code"] == -32601
        assert TOOL_MANIFESTS in answer["error"]["message"]
        # tools/list, the floor, is as before.
        assert len(await walk(wire, "tools/list", "tools")) == 501


async def test_with_search_mode_the_manifest_still_indexes_every_tool() -> None:
    async with served("2025-11-25", DECLARED, "--tool-search") as wire:
        listed = (await wire.request("tools/list"))["result"]["tools"]
        assert [tool["name"] for tool in listed] == ["search_tools", "call_tool"]
        entries = await walk(wire, "tools/manifest", "entries")
        assert len(entries) == 503


def test_digest_is_canonical() -> None:
    one = {"name": "a", "inputSchema": {"type": "object", "properties": {"x": {"maximum": 2.0}}}}
    other = {"inputSchema": {"properties": {"x": {"maximum": 2}}, "type": "object"}, "name": "a"}
    assert tool_digest(one) == tool_digest(other)
    assert tool_digest(one).startswith("sha256:")
    assert len(tool_digest(one)) == len("sha256:") + 64
    assert tool_digest(one) != tool_digest({**one, "_meta": {"k": 1}})


def test_settings_are_checked() -> None:
    with pytest.raises(ValueError, match="max_names"):
        tool_manifests(max_names=10)
    server = Server("twice", extensions=[tool_manifests()])
    with pytest.raises(ExtensionError):
        server.extensions.enable(tool_manifests())
