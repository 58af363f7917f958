"""MCP with no framework, for the framework-free HTTP ceilings: canned JSON-RPC on trio.

Hands out session ids on initialize (unless stateless) and checks them afterwards,
answers tools/call of echo, echo_sync and add, really sleeps for sleep (in a cancel
scope that notifications/cancelled cancels), answers other requests with an empty result
and notifications with 202. Everything HTTP is left to the two servers that use it.
"""

from __future__ import annotations

import uuid
from typing import Any

import orjson
import trio
from contract import init_result, log_event, text_result
from splice import call_result, response

SSE_CONTENT_TYPE = b"text/event-stream"
JSON_CONTENT_TYPE = b"application/json"
SLEPT = orjson.dumps(text_result("slept"))


def framed(body: bytes, sse: bool) -> bytes:
    """A JSON-RPC message as a response body: itself, or one SSE event carrying it."""
    return b"event: message\ndata: " + body + b"\n\n" if sse else body


class CannedMcp:
    """The state of one framework-free server: its sessions and the sleeps in flight."""

    def __init__(self, name: str, *, stateless: bool) -> None:
        self.name = name
        self.stateless = stateless
        self.sessions: set[bytes] = set()
        self.sleeping: dict[tuple[bytes | None, bytes], trio.CancelScope] = {}

    async def handle(
        self, verb: bytes, session: bytes | None, body: bytes
    ) -> tuple[int, bytes, bytes | None]:
        """One HTTP request: (status, JSON-RPC body or b"", session id to announce or None)."""
        if verb == b"DELETE":
            self.sessions.discard(session or b"")
            return 200, b"", None
        if verb != b"POST":
            return 405, b"", None
        message = orjson.loads(body)
        method = message.get("method")
        if method == "initialize":
            new = None
            if not self.stateless:
                new = uuid.uuid4().hex.encode()
                self.sessions.add(new)
            return 200, response(message["id"], orjson.dumps(init_result(self.name))), new
        if not self.stateless and session not in self.sessions:
            error = {"code": -32600, "message": "Session not found"}
            return 404, orjson.dumps({"jsonrpc": "2.0", "id": None, "error": error}), None
        if "id" not in message:
            if method == "notifications/cancelled":
                key = (session, orjson.dumps(message["params"]["requestId"]))
                scope = self.sleeping.get(key)
                if scope is not None:
                    scope.cancel()
            return 202, b"", None
        params = message.get("params") or {}
        if method != "tools/call":
            return 200, response(message["id"], b"{}"), None
        if params.get("name") != "sleep":
            return 200, response(message["id"], call_result(params)), None
        if not await self._sleep(session, message["id"], float(params["arguments"]["seconds"])):
            return 202, b"", None  # cancelled: no JSON-RPC response is owed
        return 200, response(message["id"], SLEPT), None

    async def _sleep(self, session: bytes | None, request_id: Any, seconds: float) -> bool:
        """Sleep unless cancelled; whether the sleep completed."""
        key = (session, orjson.dumps(request_id))
        log_event("start", seconds)
        with trio.CancelScope() as scope:
            self.sleeping[key] = scope
            try:
                await trio.sleep(seconds)
            finally:
                del self.sleeping[key]
                log_event("end", seconds, "cancelled" if scope.cancel_called else "completed")
        return not scope.cancelled_caught
