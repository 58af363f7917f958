"""The client over Streamable HTTP, against a real ``serve_app`` on a loopback port.

The server records every HTTP request it gets (method, headers, body, status), so the
tests can check what went over the wire as well as what the client made of it. Every
message the server sends is checked against the official schema on arrival.
"""

from __future__ import annotations

import contextlib
import functools
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Final

import attrs
import h11
import orjson
import pytest
import trio

from mcpactor import RemoteProtocolError, RequestError, TransportError
from mcpactor.client import ClientSession, connect_http
from mcpactor.client._http11 import HttpPool, Url
from mcpactor.client._sse import SseEvent, SseParser
from mcpactor.runtime.http import SessionManager
from mcpactor.transports import HttpOptions, McpHttpApp, serve_app
from mcpactor.transports._asgi import Headers
from mcpactor.transports._http_options import default_event_store
from tests.client.conftest import ServerMessages, text_of
from tests.transports._http_client import McpClient, SocketClient
from tests.transports._http_server import Probe, make_server

# Real sockets and real time: generous, so only a hang trips it.
GUARD: Final = 30.0
FAST: Final = HttpOptions(retry_ms=10)


@attrs.define
class Recorded:
    """One HTTP request the server got, and its answer."""

    time: float
    method: str
    headers: dict[str, str]
    client_port: int
    body: bytes = b""
    status: int | None = None
    content_type: str | None = None

    def message(self) -> Any:
        return orjson.loads(self.body)


class RecordingApp(McpHttpApp):
    """The MCP app, keeping a record of every HTTP request."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.requests: list[Recorded] = []
        self._changed = trio.Event()

    def _note(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    async def wait_answered(self, method: str) -> Recorded:
        """Wait until a request of ``method`` has been answered; return the first."""
        while True:
            for record in self.of(method):
                if record.status is not None:
                    return record
            await self._changed.wait()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await super().__call__(scope, receive, send)
            return
        record = Recorded(
            trio.current_time(), scope["method"], dict(Headers.of(scope)), scope["client"][1]
        )
        self.requests.append(record)
        self._note()

        async def receive_body() -> Any:
            message = await receive()
            if message["type"] == "http.request":
                record.body += message.get("body", b"")
            return message

        async def send_start(message: Any) -> None:
            if message["type"] == "http.response.start":
                record.status = message["status"]
                found = dict(message.get("headers") or [])
                content_type = found.get(b"content-type")
                record.content_type = content_type.decode() if content_type else None
                self._note()
            await send(message)

        await super().__call__(scope, receive_body, send_start)

    def of(self, method: str) -> list[Recorded]:
        return [r for r in self.requests if r.method == method]

    def posted(self, method: str) -> list[Recorded]:
        """The POSTs whose body is one message of ``method``."""
        return [r for r in self.of("POST") if r.body and r.message().get("method") == method]


@attrs.frozen
class Served:
    app: RecordingApp
    url: str
    host: str
    port: int
    nursery: trio.Nursery


@contextlib.asynccontextmanager
async def serving(probe: Probe, options: HttpOptions = FAST) -> AsyncIterator[Served]:
    """The test server over HTTP on 127.0.0.1 and an ephemeral port."""
    server = make_server(probe)
    manager = SessionManager(
        server,
        session_options=None,
        event_store=default_event_store(options),
        max_sessions=options.max_sessions,
        idle_timeout=options.session_idle_timeout,
        response_mode=options.response_mode,
    )
    with trio.fail_after(GUARD):
        async with trio.open_nursery() as nursery:
            await nursery.start(manager.run)
            app = RecordingApp(manager, options=options)
            host, port = await nursery.start(functools.partial(serve_app, app, port=0))
            yield Served(app, f"http://{host}:{port}/mcp", host, port, nursery)
            nursery.cancel_scope.cancel()


@contextlib.asynccontextmanager
async def client_of(served: Served, **client: Any) -> AsyncIterator[ClientSession]:
    checker = ServerMessages("2025-11-25")
    async with connect_http(
        served.url, initialize=True, on_server_message=checker, **client
    ) as session:
        yield session


async def sampling(params: Any) -> Any:
    prompt = params["messages"][0]["content"]["text"]
    return {"role": "assistant", "content": {"type": "text", "text": prompt[::-1]}, "model": "m"}


@pytest.fixture
def probe() -> Probe:
    return Probe()


async def test_initialize_opens_a_session_and_later_requests_carry_it(probe: Probe) -> None:
    async with serving(probe) as served:
        async with client_of(served) as client:
            assert client.server.protocol_version == "2025-11-25"
            assert client.server.info == {"name": "http-test", "version": "1.0.0"}
            assert served.app.manager.statistics().named_sessions == 1
            result = await client.call_tool("add", {"a": 2, "b": 40})
            assert result["structuredContent"] == {"result": 42}
            names = [tool["name"] for tool in await client.list_tools()]
            assert names[:3] == ["add", "count", "ask"]
        # Leaving sent DELETE, which the server answered once the session was closed.
        assert served.app.manager.statistics().named_sessions == 0
        requests = [r for r in served.app.requests if r.method != "GET"]
        initialize = served.app.posted("initialize")
        initialized = served.app.posted("notifications/initialized")
    assert len(initialize) == len(initialized) == 1
    first = initialize[0]
    assert first.headers["accept"] == "application/json, text/event-stream"
    assert first.headers["content-type"] == "application/json"
    # Nothing is negotiated yet: neither session nor revision header.
    assert "mcp-session-id" not in first.headers
    assert "mcp-protocol-version" not in first.headers
    assert (first.status, first.content_type) == (200, "application/json")
    later = [r for r in requests if r is not first]
    assert [r.method for r in later][-1] == "DELETE"
    ids = {r.headers.get("mcp-session-id") for r in later}
    assert len(ids) == 1
    assert None not in ids
    assert {r.headers.get("mcp-protocol-version") for r in later} == {"2025-11-25"}
    assert initialized[0].status == 202


async def test_progress_arrives_on_the_sse_answer(probe: Probe) -> None:
    updates: list[tuple[float, float | None, str | None]] = []

    async def progress(value: float, total: float | None, message: str | None) -> None:
        updates.append((value, total, message))

    async with serving(probe) as served, client_of(served) as client:
        result = await client.call_tool("count", {"steps": 3}, progress_handler=progress)
        assert text_of(result) == "counted 3"
        [call] = served.app.posted("tools/call")
    assert updates == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]
    assert call.content_type == "text/event-stream"


async def test_json_only_servers_send_progress_on_the_get_stream(probe: Probe) -> None:
    async def progress(value: float, total: float | None, message: str | None) -> None:
        pass

    options = HttpOptions(retry_ms=10, response_mode="json")
    async with serving(probe, options) as served, client_of(served) as client:
        result = await client.call_tool("count", {"steps": 2}, progress_handler=progress)
        assert text_of(result) == "counted 2"
        # The GET stream may lag behind the answer; every update still arrives.
        last = await client.notifications.wait_for(
            "notifications/progress", lambda n: (n.params or {}).get("progress") == 2
        )
        [call] = served.app.posted("tools/call")
        [listen] = served.app.of("GET")
    assert last.params == {
        "progressToken": call.message()["id"],
        "progress": 2,
        "total": 2,
        "message": "step 2",
    }
    assert call.content_type == "application/json"
    assert listen.headers["accept"] == "text/event-stream"
    assert "last-event-id" not in listen.headers


async def test_sampling_is_answered_through_the_clients_handler(probe: Probe) -> None:
    async with (
        serving(probe) as served,
        client_of(served, sampling_handler=sampling) as client,
    ):
        result = await client.call_tool("ask", {"prompt": "olleh"})
        assert text_of(result) == "model said: hello"
        answers = [r for r in served.app.of("POST") if "result" in r.message()]
        [call] = served.app.posted("tools/call")
    assert probe.answers[0].model == "m"
    # The server's request came on the call's SSE answer; ours went back as a POST.
    assert call.content_type == "text/event-stream"
    [answer] = [r for r in answers if r.message()["result"].get("model") == "m"]
    assert answer.status == 202
    assert answer.message()["result"]["content"] == {"type": "text", "text": "hello"}


async def test_cancelling_the_caller_cancels_the_handler(probe: Probe) -> None:
    started = trio.Event()

    async def progress(value: float, total: float | None, message: str | None) -> None:
        started.set()

    async with serving(probe) as served, client_of(served) as client:
        with trio.CancelScope() as scope:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(
                    functools.partial(client.call_tool, "hold", progress_handler=progress)
                )
                await started.wait()
                await probe.started.wait()
                scope.cancel()
        assert scope.cancelled_caught
        await probe.finished.wait()
        assert probe.cancelled.is_set()
        [call] = served.app.posted("tools/call")
        [cancelled] = served.app.posted("notifications/cancelled")
        assert client.statistics().requests_pending == {}
        # The session goes on.
        assert (await client.call_tool("add", {"a": 1, "b": 1}))["structuredContent"] == {
            "result": 2
        }
    assert cancelled.message()["params"]["requestId"] == call.message()["id"]
    assert cancelled.status == 202


async def test_a_stream_closed_mid_call_is_resumed_and_answers_once(probe: Probe) -> None:
    retry = 0.2
    options = HttpOptions(retry_ms=int(retry * 1000))
    heard: list[tuple[float, Any]] = []
    checker = ServerMessages("2025-11-25")

    def hear(message: Any, method: str | None) -> None:
        checker(message, method)
        heard.append((trio.current_time(), message))

    async with (
        serving(probe, options) as served,
        connect_http(served.url, initialize=True, on_server_message=hear) as client,
    ):
        await client.set_logging_level("info")
        async with trio.open_nursery() as nursery:
            answer: list[Any] = []

            async def call() -> None:
                answer.append(await client.call_tool("reconnect"))

            nursery.start_soon(call)
            await probe.started.wait()
            probe.release.set()
        [call_post] = served.app.posted("tools/call")
        resumes = [r for r in served.app.of("GET") if "last-event-id" in r.headers]
    assert text_of(answer[0]) == "answered after reconnecting"
    call_id = call_post.message()["id"]
    answers = [m for _, m in heard if m.get("id") == call_id]
    assert len(answers) == 1
    logged = [m["params"]["data"] for _, m in heard if m.get("method") == "notifications/message"]
    assert logged == ["before the stream closes", "after the stream closed"]
    [resume] = resumes
    assert resume.status == 200
    assert resume.headers["accept"] == "text/event-stream"
    assert resume.headers["mcp-session-id"] == call_post.headers["mcp-session-id"]
    # The client waited the ``retry`` the server asked for after the stream ended,
    # which was after the first log message reached it.
    [before] = [
        t for t, m in heard if m.get("params", {}).get("data") == "before the stream closes"
    ]
    assert resume.time - before >= retry


async def test_server_messages_outside_requests_come_on_the_get_stream(probe: Probe) -> None:
    async with serving(probe) as served, client_of(served) as client:
        await client.call_tool("change_tools")
        with trio.fail_after(GUARD):
            await client.notifications.wait_for("notifications/tools/list_changed")
        [listen] = served.app.of("GET")
    assert listen.status == 200
    assert listen.content_type == "text/event-stream"


async def test_leaving_deletes_the_session(probe: Probe) -> None:
    async with serving(probe) as served:
        async with client_of(served) as client:
            await client.ping()
            session_id = served.app.requests[-1].headers["mcp-session-id"]
        [delete] = served.app.of("DELETE")
        assert delete.headers["mcp-session-id"] == session_id
        assert delete.status == 204
        raw = McpClient(SocketClient(served.host, served.port, served.nursery))
        raw.session_id = session_id
        raw.protocol_version = "2025-11-25"
        response = await raw.post(raw.request("ping"))
        assert response.status == 404
        await response.body()
        await raw.http.aclose()  # type: ignore[union-attr]


async def test_a_stateless_server_has_no_session_and_no_get_stream(probe: Probe) -> None:
    options = HttpOptions(retry_ms=10, stateless=True)
    async with serving(probe, options) as served:
        async with client_of(served) as client:
            result = await client.call_tool("add", {"a": 1, "b": 2})
            assert result["structuredContent"] == {"result": 3}
            listen = await served.app.wait_answered("GET")
        assert listen.status == 405
        assert len(served.app.of("GET")) == 1
        assert served.app.of("DELETE") == []
        assert all("mcp-session-id" not in r.headers for r in served.app.requests)


async def test_a_session_the_server_ended_ends_the_connection(probe: Probe) -> None:
    async with serving(probe) as served, client_of(served) as client:
        await client.ping()
        session_id = served.app.requests[-1].headers["mcp-session-id"]
        raw = McpClient(SocketClient(served.host, served.port, served.nursery))
        raw.session_id = session_id
        assert (await raw.delete()).status == 204
        with pytest.raises(TransportError):
            # Nothing matches: returns only by raising once the connection is over.
            await client.notifications.wait_for("notifications/message", lambda _: False)
        with pytest.raises(TransportError):
            await client.ping()
        await raw.http.aclose()  # type: ignore[union-attr]


async def test_a_server_that_cannot_be_reached_fails_the_request() -> None:
    with socket.socket() as probe_socket:
        probe_socket.bind(("127.0.0.1", 0))
        port = probe_socket.getsockname()[1]
    with trio.fail_after(GUARD):
        async with connect_http(f"http://127.0.0.1:{port}/mcp") as client:
            with pytest.raises(RequestError) as info:
                await client.initialize()
    assert info.value.code == -32603
    assert f"the connection to http://127.0.0.1:{port}/mcp failed" in info.value.message
    assert info.value.data["url"] == f"http://127.0.0.1:{port}/mcp"


async def test_an_http_error_fails_the_request_with_its_message(probe: Probe) -> None:
    async with (
        serving(probe) as served,
        connect_http(served.url.replace("/mcp", "/elsewhere"), shutdown_timeout=1) as client,
    ):
        with pytest.raises(RequestError) as info:
            await client.initialize()
    assert info.value.code == -32600
    assert "HTTP 404: no MCP endpoint at '/elsewhere'" in info.value.message
    assert info.value.data["status"] == 404


async def test_sequential_requests_reuse_one_connection(probe: Probe) -> None:
    async with serving(probe) as served, client_of(served) as client:
        for n in range(5):
            await client.call_tool("add", {"a": n, "b": n})
        calls = served.app.posted("tools/call")
    assert len({r.client_port for r in calls}) == 1


async def test_headers_are_sent_and_cannot_replace_the_transports_own(probe: Probe) -> None:
    async with (
        serving(probe) as served,
        client_of(served, headers={"Authorization": "Bearer t", "Accept": "text/html"}) as client,
    ):
        await client.ping()
        requests = served.app.requests
    assert all(r.headers["authorization"] == "Bearer t" for r in requests)
    assert requests[0].headers["accept"] == "application/json, text/event-stream"


async def test_only_http_urls_are_accepted() -> None:
    with pytest.raises(ValueError, match="expected an http:// or https:// URL"):
        async with connect_http("ws://127.0.0.1/ws"):
            pass  # pragma: no cover
    with pytest.raises(ValueError, match="expected an http:// or https:// URL"):
        Url.parse("http:///mcp")
    assert str(Url.parse("https://example.com:443/a?b=1")) == "https://example.com/a?b=1"
    assert Url.parse("http://[::1]:8000").authority == "[::1]:8000"
    assert Url.parse("http://h").target == "/"


# --- the official SDK's server ------------------------------------------------------------

REFERENCE_SERVER: Final = """
from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("reference")


@server.tool()
async def add(a: int, b: int) -> int:
    \"\"\"Add two numbers.\"\"\"
    return a + b


@server.tool()
async def steps(n: int, ctx: Context) -> str:
    \"\"\"Report progress n times.\"\"\"
    for i in range(n):
        await ctx.report_progress(i + 1, n)
    return f"done {n}"


server.run("streamable-http", host="127.0.0.1", port=0)
"""


async def _reference_url(stderr: trio.abc.ReceiveStream) -> str:
    seen = b""
    marker = b"Uvicorn running on "
    while marker not in seen or not seen.split(marker, 1)[1].count(b" "):
        chunk = await stderr.receive_some()
        assert chunk, f"the server exited: {seen.decode(errors='replace')}"
        seen += chunk
    return seen.split(marker, 1)[1].split(b" ", 1)[0].decode() + "/mcp"


async def test_the_official_sdks_server_is_understood(tmp_path: Path) -> None:
    script = tmp_path / "reference.py"
    script.write_text(REFERENCE_SERVER)
    updates: list[float] = []

    async def progress(value: float, total: float | None, message: str | None) -> None:
        updates.append(value)

    with trio.fail_after(GUARD):
        async with trio.open_nursery() as nursery:
            process = await nursery.start(
                functools.partial(
                    trio.run_process,
                    [sys.executable, str(script)],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE,
                    check=False,
                )
            )
            assert process.stderr is not None
            url = await _reference_url(process.stderr)
            nursery.start_soon(_drain, process.stderr)
            async with connect_http(url, initialize=True) as client:
                assert client.server.info is not None
                assert client.server.info["name"] == "reference"
                result = await client.call_tool("add", {"a": 2, "b": 3})
                assert result["structuredContent"] == {"result": 5}
                result = await client.call_tool("steps", {"n": 3}, progress_handler=progress)
                assert text_of(result) == "done 3"
                assert [tool["name"] for tool in await client.list_tools()] == ["add", "steps"]
            process.terminate()
    assert updates == [1, 2, 3]


async def _drain(stream: trio.abc.ReceiveStream) -> None:
    while await stream.receive_some():
        pass


# --- the SSE parser ----------------------------------------------------------------------

STREAM: Final = (
    b"\xef\xbb\xbf: a comment\r\n"
    b"id: 1\r\nretry: 250\r\ndata:\r\n\r\n"
    b'event: message\nid: 2\ndata: {"a":\ndata: 1}\n\n'
    b"data:no space\rid: bad\x00id\r\r"
    b"event: other\ndata: x\n\n"
    b"id\ndata: after an empty id\n\n"
    b"data: never finished\n"
)
EXPECTED: Final = [
    SseEvent("message", "", "1"),
    SseEvent("message", '{"a":\n1}', "2"),
    SseEvent("message", "no space", "2"),
    SseEvent("other", "x", "2"),
    SseEvent("message", "after an empty id", ""),
]


@pytest.mark.parametrize("size", [1, 2, 3, 7, len(STREAM)])
def test_the_sse_parser_reads_any_chunking(size: int) -> None:
    parser = SseParser()
    events: list[SseEvent] = []
    for start in range(0, len(STREAM), size):
        events.extend(parser.feed(STREAM[start : start + size]))
    assert events == EXPECTED
    assert parser.retry_ms == 250
    assert parser.last_event_id == ""


def test_an_id_without_data_moves_the_resumption_point() -> None:
    parser = SseParser()
    assert parser.feed(b"id: 7\nretry: 5\n\n") == []
    assert (parser.last_event_id, parser.retry_ms) == ("7", 5)
    assert parser.feed(b"retry: soon\nid: 8\n") == []
    # Taken when its block ends, not before.
    assert (parser.last_event_id, parser.retry_ms) == ("7", 5)
    assert parser.feed(b"\n") == []
    assert parser.last_event_id == "8"


def test_an_oversized_sse_event_is_refused() -> None:
    parser = SseParser(max_event_bytes=16)
    assert parser.feed(b"data: 0123456789\n") == []
    with pytest.raises(RemoteProtocolError, match="exceeds 16 bytes"):
        parser.feed(b"data: 0123456789\n")
    with pytest.raises(RemoteProtocolError, match="exceeds 16 bytes"):
        SseParser(max_event_bytes=16).feed(b"data: 0123456789012345678")


def test_the_sse_event_limit_counts_bytes_not_characters() -> None:
    # Issue 43, item 17: data lines were measured decoded, so two-byte characters
    # counted half. 12 characters, 24 bytes, against 16 bytes:
    wide = "é" * 12
    with pytest.raises(RemoteProtocolError, match="exceeds 16 bytes"):
        SseParser(max_event_bytes=16).feed(f"data: {wide}\n".encode())
    # Split over two lines of 8 bytes each (and their newlines), it still fits.
    events = SseParser(max_event_bytes=24).feed("data: éééé\ndata: éééé\n\n".encode())
    assert [event.data for event in events] == ["éééé\néééé"]


# --- the HTTP/1.1 pool -------------------------------------------------------------------


class HangingUp:
    """A server that answers one request per connection, as if it could keep the
    connection, then closes it."""

    def __init__(self) -> None:
        self.connections = 0
        self.closed = 0
        self._changed = trio.Event()

    async def wait_closed(self, count: int) -> None:
        """Wait until ``count`` connections have been closed."""
        while self.closed < count:
            await self._changed.wait()

    async def __call__(self, stream: trio.SocketStream) -> None:
        self.connections += 1
        connection = h11.Connection(h11.SERVER)
        async with stream:
            while True:
                event = connection.next_event()
                if event is h11.NEED_DATA:
                    connection.receive_data(await stream.receive_some(65536))
                    continue
                if type(event) is h11.EndOfMessage:
                    break
            await stream.send_all(
                connection.send(h11.Response(status_code=200, headers=[("content-length", "2")]))
                + connection.send(h11.Data(data=b"ok"))
                + connection.send(h11.EndOfMessage())
            )
        self.closed += 1
        self._changed.set()
        self._changed = trio.Event()


@contextlib.asynccontextmanager
async def hanging_up() -> AsyncIterator[tuple[HangingUp, Url]]:
    handler = HangingUp()
    with trio.fail_after(GUARD):
        async with trio.open_nursery() as nursery:
            [listener] = await nursery.start(
                functools.partial(trio.serve_tcp, handler, 0, host="127.0.0.1")
            )
            port = listener.socket.getsockname()[1]
            yield handler, Url.parse(f"http://127.0.0.1:{port}/")
            nursery.cancel_scope.cancel()


async def test_a_kept_connection_the_server_closed_is_not_reused() -> None:
    async with hanging_up() as (server, url), HttpPool() as pool:
        for count in (1, 2, 3):
            async with pool.request("GET", url, []) as response:
                assert response.status == 200
                assert await response.read(100) == b"ok"
            # Kept for the next request, which finds it closed and opens another.
            assert len(pool._idle) == 1
            await server.wait_closed(count)
            assert server.connections == count


async def test_unbounded_requests_never_wait_for_a_slot() -> None:
    # Nothing is kept idle, so every request needs a connection of its own.
    async with hanging_up() as (_, url), HttpPool(max_connections=1, max_idle=0) as pool:
        # An unread body keeps its connection, and the one slot, busy.
        async with pool.request("GET", url, []):
            async with pool.request("GET", url, [], bounded=False) as answer:
                assert await answer.read(100) == b"ok"
            with trio.move_on_after(0.2) as waiting:
                async with pool.request("GET", url, []):
                    pass  # pragma: no cover
            assert waiting.cancelled_caught
        # The slot is free again.
        async with pool.request("GET", url, []) as answer:
            assert await answer.read(100) == b"ok"


async def test_an_unreachable_server_is_transport_broken() -> None:
    with socket.socket() as probe_socket:
        probe_socket.bind(("127.0.0.1", 0))
        port = probe_socket.getsockname()[1]
    async with HttpPool() as pool:
        with pytest.raises(TransportError, match=f"GET http://127.0.0.1:{port}/"):
            async with pool.request("GET", Url.parse(f"http://127.0.0.1:{port}/"), []):
                pass  # pragma: no cover


# --- the command line --------------------------------------------------------------------


async def test_mcpactor_call_takes_a_url(probe: Probe) -> None:
    async with serving(probe) as served:
        done = await trio.run_process(
            [
                sys.executable,
                "-m",
                "mcpactor",
                "call",
                "--url",
                served.url,
                "--header",
                "Authorization: Bearer t",
                "--tool",
                "add",
                "--args",
                '{"a": 20, "b": 22}',
            ],
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert orjson.loads(done.stdout)["structuredContent"] == {"result": 42}
        assert served.app.requests[0].headers["authorization"] == "Bearer t"
        assert served.app.of("DELETE")[0].status == 204


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--url", "http://127.0.0.1:1/mcp", "--", "server"], b"either --url or COMMAND"),
        ([], b"either --url or COMMAND"),
        (["--url", "http://127.0.0.1:1/mcp", "--header", "nocolon"], b"NAME: VALUE"),
    ],
)
async def test_mcpactor_call_needs_a_url_or_a_command(args: list[str], expected: bytes) -> None:
    done = await trio.run_process(
        [sys.executable, "-m", "mcpactor", "call", "--list", *args],
        capture_stdout=True,
        capture_stderr=True,
        check=False,
    )
    assert done.returncode == 2
    assert expected in done.stderr
