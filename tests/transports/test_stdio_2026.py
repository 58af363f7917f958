"""Stdio at a stateless revision (2026-07-28): routed by the envelope, beside a session."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import orjson
import trio
import trio.testing

from mcpactor import Context, Server
from mcpactor.protocol import JSONObject

from ..runtime.conftest import live_tasks
from ..spec_schema import check
from .test_stdio import LineClient, serving

REVISION = "2026-07-28"
ENVELOPE: dict[str, Any] = {
    "io.modelcontextprotocol/protocolVersion": REVISION,
    "io.modelcontextprotocol/clientCapabilities": {},
}
SUBSCRIPTION = "io.modelcontextprotocol/subscriptionId"


class Probe:
    def __init__(self) -> None:
        self.started = trio.Event()
        self.cancelled = trio.Event()


def make_server(probe: Probe) -> Server:
    server = Server("pipe-2026", "1.0.0")

    @server.tool()
    async def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    @server.tool()
    async def hold(ctx: Context) -> str:
        """Report progress, then wait to be cancelled."""
        await ctx.report_progress(1, 2)
        probe.started.set()
        try:
            await trio.sleep_forever()
        except trio.Cancelled:
            probe.cancelled.set()
            raise
        return "never"

    @server.tool()
    async def change() -> str:
        """Register a tool, so that the tool list changes."""
        server.add_tool(_extra, name="extra")
        return "changed"

    return server


async def _extra() -> str:
    """An extra tool."""
    return "extra"


def stateless(client: LineClient, method: str, params: JSONObject | None = None) -> JSONObject:
    message = client.request_message(method, {**(params or {}), "_meta": dict(ENVELOPE)})
    # Checked below against the 2026-07-28 schema, not the session's.
    client.methods.pop(message["id"])
    return message


class PipeClient(LineClient):
    """A line client whose 2026-07-28 messages are checked against that schema."""

    def __init__(self, client: LineClient) -> None:
        self.__dict__.update(client.__dict__)
        self.stateless_ids: set[Any] = set()

    def check(self, message: JSONObject) -> None:
        params = message.get("params")
        tagged = isinstance(params, dict) and SUBSCRIPTION in params.get("_meta", {})
        if message.get("id") in self.stateless_ids or tagged:
            if "error" in message:
                check(message, REVISION, "JSONRPCErrorResponse")
            elif "result" not in message:
                method = str(message["method"])
                name = {
                    "notifications/subscriptions/acknowledged": (
                        "SubscriptionsAcknowledgedNotification"
                    ),
                    "notifications/tools/list_changed": "ToolListChangedNotification",
                    "notifications/progress": "ProgressNotification",
                }[method]
                check(message, REVISION, name)
            return
        if message.get("method") == "notifications/progress":
            check(message, REVISION, "ProgressNotification")
            return
        super().check(message)

    async def post(self, method: str, params: JSONObject | None = None) -> Any:
        message = stateless(self, method, params)
        self.stateless_ids.add(message["id"])
        await self.send(message)
        return message["id"]


async def test_requests_with_an_envelope_are_served_without_a_session() -> None:
    async with serving(make_server(Probe())) as line:
        client = PipeClient(line)
        request_id = await client.post(
            "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}}
        )
        reply = await client.receive()
        assert reply["id"] == request_id
        assert reply["result"]["resultType"] == "complete"
        assert reply["result"]["structuredContent"] == {"result": 3}
        ping = await client.post("ping")
        refused = await client.receive()
        assert (refused["id"], refused["error"]["code"]) == (ping, -32601)


async def test_a_session_and_stateless_requests_share_the_pipe() -> None:
    async with serving(make_server(Probe())) as line:
        client = PipeClient(line)
        await client.initialize()
        await client.send(client.tool_call("add", {"a": 1, "b": 1}))
        session_reply = await client.receive()
        assert "resultType" not in session_reply["result"]
        assert session_reply["result"]["structuredContent"] == {"result": 2}
        await client.post("tools/call", {"name": "add", "arguments": {"a": 2, "b": 2}})
        stateless_reply = await client.receive()
        assert stateless_reply["result"]["resultType"] == "complete"
        await client.send(client.tool_call("add", {"a": 3, "b": 3}))
        assert (await client.receive())["result"]["structuredContent"] == {"result": 6}


async def test_cancelled_ends_a_stateless_request_and_nothing_is_sent() -> None:
    probe = Probe()
    async with serving(make_server(probe)) as line:
        client = PipeClient(line)
        request_id = await client.post("tools/call", {"name": "hold", "arguments": {}})
        await probe.started.wait()
        await client.send(
            {
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": request_id},
            }
        )
        with trio.fail_after(5):
            await probe.cancelled.wait()
        # The next message is the next answer: nothing came for the cancelled request.
        after = await client.post("tools/call", {"name": "add", "arguments": {"a": 0, "b": 0}})
        assert (await client.receive())["id"] == after


async def test_a_listen_stream_on_the_pipe_ends_with_cancelled() -> None:
    async with serving(make_server(Probe())) as line:
        client = PipeClient(line)
        await trio.testing.wait_all_tasks_blocked()
        baseline = len(live_tasks())
        listen = await client.post(
            "subscriptions/listen", {"notifications": {"toolsListChanged": True}}
        )
        ack = await client.receive()
        assert ack["method"] == "notifications/subscriptions/acknowledged"
        assert ack["params"]["_meta"][SUBSCRIPTION] == listen
        call = await client.post("tools/call", {"name": "change", "arguments": {}})
        seen = [await client.receive(), await client.receive()]
        notice = next(m for m in seen if m.get("method"))
        assert notice["method"] == "notifications/tools/list_changed"
        assert notice["params"]["_meta"][SUBSCRIPTION] == listen
        assert any(m.get("id") == call for m in seen)
        await client.send(
            {
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": listen},
            }
        )
        await trio.testing.wait_all_tasks_blocked()
        assert len(live_tasks()) <= baseline


async def test_a_listen_stream_ends_with_its_result_at_end_of_input() -> None:
    async with serving(make_server(Probe())) as line:
        client = PipeClient(line)
        listen = await client.post("subscriptions/listen", {"notifications": {}})
        assert (await client.receive())["method"] == "notifications/subscriptions/acknowledged"
        await client.to_server.aclose()
        rest = await client.receive_rest()
        assert rest[-1]["id"] == listen
        check(rest[-1], REVISION, "SubscriptionsListenResultResponse")


async def test_requests_read_before_the_input_ends_are_all_answered(tmp_path: Path) -> None:
    # A real process beside a session, reading a file: its end of input is seen in the
    # scheduling batch where the requests' tasks first run, in trio's random order, so a
    # request taken before the end must be served in the grace period, never refused as
    # "shutting down".
    envelope = {"_meta": dict(ENVELOPE)}
    session = [
        {
            "jsonrpc": "2.0",
            "id": "open",
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    ]
    lines = b"".join(orjson.dumps(message) + b"\n" for message in session) + b"".join(
        orjson.dumps({"jsonrpc": "2.0", "id": n, "method": "server/discover", "params": envelope})
        + b"\n"
        for n in range(20)
    )
    requests = tmp_path / "requests.jsonl"
    requests.write_bytes(lines)
    for _ in range(3):
        with requests.open("rb") as stdin:
            done = await trio.run_process(
                [sys.executable, "-m", "mcpactor", "serve", "clock"],
                stdin=stdin,
                capture_stdout=True,
                capture_stderr=True,
            )
        replies = [orjson.loads(line) for line in done.stdout.splitlines()]
        answers = [reply for reply in replies if reply["id"] != "open"]
        assert sorted(answer["id"] for answer in answers) == list(range(20))
        assert all("result" in answer for answer in answers), [
            answer["error"] for answer in answers if "error" in answer
        ]


def subscribable_server() -> Server:
    server = Server("subscribable", "1.0.0")

    @server.resource("mem://{name}")
    async def item(name: str) -> str:
        """Any name is a resource."""
        return name

    return server


async def test_subscribe_and_listen_refuse_the_same_uris_with_the_same_error() -> None:
    # Issue 43, item 17: the session's resources/subscribe had none of the listen path's
    # limits. Both eras now hold the URIs a client subscribes to in one bounded table.
    from mcpactor.protocol import MAX_RESOURCE_SUBSCRIPTIONS, MAX_URI_BYTES

    wide = "mem://" + "é" * 4096  # under the limit in characters, over it in bytes
    many = [f"mem://{n}" for n in range(MAX_RESOURCE_SUBSCRIPTIONS + 1)]
    async with serving(subscribable_server()) as line:
        client = PipeClient(line)
        await client.initialize()
        refusals = []
        for uris in ([wide], many):
            for uri in uris:
                subscribe = await client.request("resources/subscribe", {"uri": uri})
                answer = await client.receive()
                assert answer["id"] == subscribe
            listen = await client.post(
                "subscriptions/listen", {"notifications": {"resourceSubscriptions": uris}}
            )
            refused = await client.receive()
            assert refused["id"] == listen
            assert "error" in answer
            assert refused["error"] == answer["error"]
            refusals.append(answer["error"])
        assert [error["data"] for error in refusals] == [
            {"limit": MAX_URI_BYTES},
            {"limit": MAX_RESOURCE_SUBSCRIPTIONS},
        ]
        assert all(error["code"] == -32602 for error in refusals)
        assert line.actor is not None
        assert line.actor.statistics().subscriptions == MAX_RESOURCE_SUBSCRIPTIONS
