"""The stdio transport: newline-delimited JSON over byte streams, and the real thing."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import orjson
import pytest
import trio
import trio.testing

from mcpactor import Context, RequestError, Server
from mcpactor.protocol import LATEST, JSONObject, JSONValue, RequestId
from mcpactor.runtime import SessionActor, SessionOptions
from mcpactor.transports import serve_streams
from tests.spec_schema import check_server_message

SERVER_FILE = Path(__file__).with_name("stdio_server.py")


class LineClient:
    """The client end of a stdio session: writes bytes, reads and checks JSON lines."""

    def __init__(self, to_server: trio.abc.SendStream, from_server: trio.abc.ReceiveStream):
        self.to_server = to_server
        self.from_server = from_server
        self.revision = LATEST.version
        self.methods: dict[RequestId, str] = {}
        self.ended = trio.Event()
        self.ended_at: float | None = None
        self.actor: SessionActor | None = None
        self._buffer = bytearray()
        self._next_id = 0

    async def write(self, data: bytes) -> None:
        """Write raw bytes to the server."""
        await self.to_server.send_all(data)

    async def send(self, message: JSONValue, *, newline: bool = True) -> None:
        """Write one message as a line."""
        await self.write(orjson.dumps(message) + (b"\n" if newline else b""))

    def request_message(self, method: str, params: JSONObject | None = None) -> JSONObject:
        """Build a request with a fresh id, remembering its method."""
        self._next_id += 1
        self.methods[self._next_id] = method
        message: JSONObject = {"jsonrpc": "2.0", "id": self._next_id, "method": method}
        if params is not None:
            message["params"] = params
        return message

    async def request(self, method: str, params: JSONObject | None = None) -> RequestId:
        """Send a request; return its id."""
        message = self.request_message(method, params)
        await self.send(message)
        request_id: RequestId = message["id"]
        return request_id

    async def receive(self) -> JSONObject:
        """Read the next message the server wrote (checked against the schema)."""
        with trio.fail_after(1000):
            while b"\n" not in self._buffer:
                data = await self.from_server.receive_some()
                assert data, "the server's output ended"
                self._buffer += data
        line, _, rest = bytes(self._buffer).partition(b"\n")
        self._buffer[:] = rest
        message: JSONObject = orjson.loads(line)
        self.check(message)
        return message

    def check(self, message: JSONObject) -> None:
        method = self.methods.get(message.get("id"))  # type: ignore[arg-type]
        if method == "initialize" and "result" in message:
            self.revision = message["result"]["protocolVersion"]
        check_server_message(message, self.revision, request_method=method)

    async def receive_rest(self) -> list[JSONObject]:
        """Read every message until the server's output ends."""
        messages = []
        while True:
            with trio.fail_after(1000):
                data = await self.from_server.receive_some()
            if not data:
                break
            self._buffer += data
        assert self._buffer.endswith(b"\n") or not self._buffer, bytes(self._buffer)
        for line in bytes(self._buffer).splitlines():
            message = orjson.loads(line)
            self.check(message)
            messages.append(message)
        self._buffer.clear()
        return messages

    async def initialize(self) -> None:
        """Open the session at the latest revision."""
        init = await self.request(
            "initialize",
            {
                "protocolVersion": LATEST.version,
                "capabilities": {},
                "clientInfo": {"name": "line-client", "version": "1"},
            },
        )
        assert (await self.receive())["id"] == init
        await self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def tool_call(self, name: str, arguments: JSONObject) -> JSONObject:
        """Build a ``tools/call`` request."""
        return self.request_message("tools/call", {"name": name, "arguments": arguments})

    async def wait_ended(self) -> float:
        """Wait until ``serve_streams`` returns; return when it did."""
        with trio.fail_after(1000):
            await self.ended.wait()
        assert self.ended_at is not None
        return self.ended_at


def tiny_server() -> Server:
    server = Server("tiny")

    @server.tool()
    async def slow(seconds: float) -> str:
        """Sleep, then answer."""
        await trio.sleep(seconds)
        return f"slept {seconds:g}"

    return server


@asynccontextmanager
async def serving(
    server: Server,
    *,
    server_output: tuple[trio.abc.SendStream, trio.abc.ReceiveStream] | None = None,
    **kwargs: Any,
) -> AsyncIterator[LineClient]:
    """Serve ``server`` over in-memory streams; the client's output is the server's input."""
    to_server, server_input = trio.testing.memory_stream_one_way_pair()
    server_writes, from_server = server_output or trio.testing.memory_stream_one_way_pair()
    client = LineClient(to_server, from_server)

    async def run(task_status: trio.TaskStatus[SessionActor]) -> None:
        await serve_streams(server, server_input, server_writes, task_status=task_status, **kwargs)
        client.ended_at = trio.current_time()
        client.ended.set()
        # serve_streams leaves the streams to their owner; closing ours ends the output.
        await server_writes.aclose()

    async with trio.open_nursery() as nursery:
        client.actor = await nursery.start(run)
        try:
            yield client
        finally:
            await to_server.aclose()


def result_text(message: JSONObject) -> str:
    text: str = message["result"]["content"][0]["text"]
    return text


# --- framing ----------------------------------------------------------------------


async def test_serve_streams_reports_its_session_actor() -> None:
    async with serving(tiny_server()) as client:
        assert isinstance(client.actor, SessionActor)
        await client.initialize()


async def test_a_message_split_across_many_reads_is_reassembled() -> None:
    async with serving(tiny_server()) as client:
        await client.initialize()
        line = orjson.dumps(client.tool_call("slow", {"seconds": 0})) + b"\n"
        for start in range(0, len(line), 7):
            await client.write(line[start : start + 7])
            await trio.testing.wait_all_tasks_blocked()  # each piece is its own read
        assert result_text(await client.receive()) == "slept 0"


async def test_many_messages_in_one_write_are_all_served() -> None:
    async with serving(tiny_server()) as client:
        await client.initialize()
        messages = [client.request_message("ping") for _ in range(3)]
        await client.write(b"".join(orjson.dumps(m) + b"\n" for m in messages))
        replies = [await client.receive() for _ in messages]
        assert [r["id"] for r in replies] == [m["id"] for m in messages]


async def test_blank_lines_and_crlf_are_tolerated() -> None:
    async with serving(tiny_server()) as client:
        await client.initialize()
        ping = client.request_message("ping")
        await client.write(b"\n  \n" + orjson.dumps(ping) + b"\r\n")
        assert await client.receive() == {"jsonrpc": "2.0", "id": ping["id"], "result": {}}


@pytest.mark.parametrize(
    "garbage",
    [b"{not json", b"\xff\xfe\xfd", b'{"jsonrpc": "2.0", "id": 1, "method": "ping"'],
    ids=["invalid-json", "invalid-utf8", "truncated"],
)
async def test_unparsable_lines_get_a_parse_error_and_the_session_continues(
    garbage: bytes,
) -> None:
    async with serving(tiny_server()) as client:
        await client.initialize()
        await client.write(garbage + b"\n")
        error = await client.receive()
        assert "id" not in error
        assert error["error"]["code"] == -32700
        await client.request("ping")
        assert (await client.receive())["result"] == {}


async def test_an_over_long_line_is_refused_and_the_session_continues() -> None:
    async with serving(tiny_server(), max_line_bytes=200) as client:
        await client.initialize()
        huge = client.request_message("ping", {"_meta": {"pad": "x" * 1000}})
        line = orjson.dumps(huge) + b"\n"
        for start in range(0, len(line), 300):
            await client.write(line[start : start + 300])
            await trio.testing.wait_all_tasks_blocked()
        error = await client.receive()
        assert error["error"]["code"] == -32700
        assert error["error"]["data"] == {"limit": 200}
        # A line just under the limit is served.
        fits = client.request_message("ping", {"_meta": {"pad": "y" * 120}})
        assert len(orjson.dumps(fits)) <= 200
        await client.send(fits)
        assert (await client.receive())["id"] == fits["id"]


async def test_a_final_line_without_a_newline_is_still_served() -> None:
    async with serving(tiny_server()) as client:
        await client.initialize()
        call = client.tool_call("slow", {"seconds": 0})
        await client.send(call, newline=False)
        await trio.testing.wait_all_tasks_blocked()
        await client.to_server.aclose()
        [reply] = await client.receive_rest()
        assert reply["id"] == call["id"]
        assert result_text(reply) == "slept 0"


# --- asking the client -----------------------------------------------------------------


async def test_a_request_to_the_client_given_up_on_is_cancelled_with_a_notice() -> None:
    server = Server("asks")

    @server.tool()
    async def roots(ctx: Context) -> str:
        """Ask the client for its roots."""
        await ctx.list_roots()
        return "answered"

    async with serving(server) as client:
        init = await client.request(
            "initialize",
            {
                "protocolVersion": LATEST.version,
                "capabilities": {"roots": {}},
                "clientInfo": {"name": "line-client", "version": "1"},
            },
        )
        assert (await client.receive())["id"] == init
        await client.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        call = client.tool_call("roots", {})
        await client.send(call)
        asked = await client.receive()
        assert asked["method"] == "roots/list"
        # The client gives up on its call, so the handler that asked is cancelled ...
        await client.send(
            {
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": call["id"]},
            }
        )
        # ... and the server tells the client that its own request is gone.
        notice = await client.receive()
        assert notice["method"] == "notifications/cancelled"
        assert notice["params"]["requestId"] == asked["id"]


# --- ending the session -------------------------------------------------------------


async def test_eof_ends_the_session_after_the_grace_period(
    autojump_clock: trio.testing.MockClock,
) -> None:
    options = SessionOptions(shutdown_grace=5)
    async with serving(tiny_server(), options=options) as client:
        await client.initialize()
        quick = client.tool_call("slow", {"seconds": 2})
        stuck = client.tool_call("slow", {"seconds": 60})
        await client.send(quick)
        await client.send(stuck)
        await trio.testing.wait_all_tasks_blocked()
        await client.to_server.aclose()
        replies = await client.receive_rest()
        assert [r["id"] for r in replies] == [quick["id"]]
        assert await client.wait_ended() == 5


async def test_eof_with_nothing_in_flight_ends_the_session_at_once(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with serving(tiny_server()) as client:
        await client.initialize()
        await client.to_server.aclose()
        assert await client.receive_rest() == []
        assert await client.wait_ended() == 0


async def test_the_stop_event_ends_the_session_like_eof(
    autojump_clock: trio.testing.MockClock,
) -> None:
    stop = trio.Event()
    options = SessionOptions(shutdown_grace=5)
    async with serving(tiny_server(), options=options, stop=stop) as client:
        await client.initialize()
        call = client.tool_call("slow", {"seconds": 3})
        await client.send(call)
        await trio.testing.wait_all_tasks_blocked()
        stop.set()
        await trio.testing.wait_all_tasks_blocked()
        # Input after the stop is no longer read.
        await client.request("ping")
        replies = await client.receive_rest()
        assert [r["id"] for r in replies] == [call["id"]]
        assert await client.wait_ended() == 3


async def test_a_client_that_stops_reading_cannot_hold_the_session_forever(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # A lockstep stream accepts a write only while the other end is reading.
    server_writes, from_server = trio.testing.lockstep_stream_one_way_pair()
    async with serving(tiny_server(), server_output=(server_writes, from_server)) as client:
        init = client.request_message(
            "initialize",
            {"protocolVersion": LATEST.version, "capabilities": {}},
        )
        await client.send(init)
        await client.to_server.aclose()
        # The session itself is over at once; the writer gives up on its stuck write
        # after its 30-second timeout.
        assert await client.wait_ended() == 30


async def test_a_client_that_closes_its_end_does_not_break_the_session(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with serving(tiny_server()) as client:
        await client.initialize()
        await client.from_server.aclose()
        await client.send(client.tool_call("slow", {"seconds": 1}))
        await client.request("ping")
        await trio.testing.wait_all_tasks_blocked()
        assert client.actor is not None
        assert client.actor.statistics().requests_in_flight == 1
        await client.to_server.aclose()
        assert await client.wait_ended() == 1


# --- a real process -------------------------------------------------------------------


class Process:
    """``python -m mcpactor serve`` on the tiny server, with its output collected."""

    def __init__(self, process: trio.Process) -> None:
        assert process.stdin is not None
        assert process.stdout is not None
        self.process = process
        self.client = LineClient(process.stdin, process.stdout)
        self.stderr = bytearray()
        self._stderr_changed = trio.Event()

    async def collect_stderr(self) -> None:
        assert self.process.stderr is not None
        async for data in self.process.stderr:
            self.stderr += data
            self._stderr_changed.set()
            self._stderr_changed = trio.Event()

    async def wait_stderr(self, text: bytes) -> None:
        while text not in self.stderr:
            await self._stderr_changed.wait()


@asynccontextmanager
async def running_process(*args: str) -> AsyncIterator[Process]:
    command = [sys.executable, "-m", "mcpactor", "serve", str(SERVER_FILE), *args]
    process = await trio.lowlevel.open_process(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        with trio.fail_after(30):
            async with trio.open_nursery() as nursery:
                running = Process(process)
                nursery.start_soon(running.collect_stderr)
                yield running
                await process.wait()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def test_a_real_process_keeps_stdout_for_protocol_messages() -> None:
    async with running_process() as proc:
        client = proc.client
        await client.initialize()
        call = client.tool_call("echo", {"text": "hello"})
        await client.send(call)
        reply = await client.receive()
        assert reply["id"] == call["id"]
        assert result_text(reply) == "hello"
        await client.to_server.aclose()
        # Everything else on stdout was a checked JSON line; nothing else was there.
        assert await client.receive_rest() == []
    assert proc.process.returncode == 0
    # What the handler printed went to stderr.
    assert b"print: hello\n" in proc.stderr
    assert b"fd1: hello\n" in proc.stderr


async def test_a_line_nested_1000_deep_does_not_end_the_process() -> None:
    # Issue "Hardening": the repr of this id raised RecursionError and the server exited 1.
    deep_id = b"[" * 1000 + b"]" * 1000
    async with running_process() as proc:
        client = proc.client
        await client.write(b'{"jsonrpc":"2.0","method":"ping","id":' + deep_id + b"}\n")
        refused = await client.receive()
        assert "id" not in refused
        assert refused["error"]["code"] == -32600
        assert refused["error"]["data"] == {"maxDepth": 128}
        await client.initialize()
        ping = await client.request("ping")
        assert (await client.receive()) == {"jsonrpc": "2.0", "id": ping, "result": {}}
        await client.to_server.aclose()
        assert await client.receive_rest() == []
    assert proc.process.returncode == 0
    assert b"Traceback" not in proc.stderr


async def test_answers_holding_a_lone_surrogate_are_answered_and_the_session_goes_on() -> None:
    # A file name's undecodable bytes (os keeps them as lone surrogates) in what a
    # handler raises or returns: JSON text cannot carry them, and an error answer that
    # could not be written once ended the process.
    server = Server("odd-names")
    name = "bad\udcff.txt"

    @server.tool()
    def refused() -> str:
        raise RequestError(-32602, f"no {name}", {"path": name})

    @server.tool()
    def failed() -> str:
        raise ValueError(f"no {name}")

    @server.tool()
    def returned() -> str:
        return name

    async with serving(server) as client:
        await client.initialize()
        tools = {}
        for tool in ("refused", "failed", "returned"):
            call = client.tool_call(tool, {})
            tools[call["id"]] = tool
            await client.send(call)
        answers = {}
        for _ in range(3):
            message = await client.receive()
            answers[tools[message["id"]]] = message
        assert answers["refused"]["error"]["code"] == -32602
        assert answers["refused"]["error"]["message"].startswith("no bad\\udcff.txt (its data")
        assert "ValueError: no bad\\udcff.txt" in result_text(answers["failed"])
        assert answers["returned"]["error"]["code"] == -32603
        ping = await client.request("ping")
        assert (await client.receive()) == {"jsonrpc": "2.0", "id": ping, "result": {}}


async def test_sigterm_lets_an_in_flight_request_finish_within_the_grace_period() -> None:
    async with running_process("--grace", "10") as proc:
        client = proc.client
        await client.initialize()
        call = client.tool_call("slow", {"seconds": 0.2})
        await client.send(call)
        await proc.wait_stderr(b"slow: started")
        proc.process.send_signal(signal.SIGTERM)
        replies = await client.receive_rest()
        assert [r["id"] for r in replies] == [call["id"]]
        assert result_text(replies[0]) == "slept 0.2"
    assert proc.process.returncode == 0


async def test_sigterm_cancels_a_request_still_running_after_the_grace_period() -> None:
    async with running_process("--grace", "0.1") as proc:
        client = proc.client
        await client.initialize()
        await client.send(client.tool_call("slow", {"seconds": 600}))
        await proc.wait_stderr(b"slow: started")
        proc.process.send_signal(signal.SIGTERM)
        assert await client.receive_rest() == []
    assert proc.process.returncode == 0
