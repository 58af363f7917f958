"""Streamable HTTP: sessions, JSON vs SSE answers, routing, cancellation, resumption."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
import pytest
import trio
import trio.testing

from mcpactor.protocol import MAX_DEPTH
from mcpactor.runtime import Outbound, SessionActor
from mcpactor.runtime.http import WATCH_AFTER, Attachment
from mcpactor.transports import HttpOptions, _http_writer
from mcpactor.transports._exchange import Exchange

from ..spec_schema import check_server_message
from ._http_client import McpClient, read_reply, start_post
from ._http_server import Probe, asgi_client, initialized, make_server

_HOLD = {"name": "hold", "arguments": {}, "_meta": {"progressToken": "h"}}


@pytest.fixture
def probe() -> Probe:
    return Probe()


async def test_initialize_issues_a_visible_ascii_session_id(probe: Probe) -> None:
    async with asgi_client(make_server(probe)) as (app, http):
        first = await initialized(http)
        second = await initialized(http)
        assert first.session_id != second.session_id
        for client in (first, second):
            assert client.session_id is not None
            assert re.fullmatch(r"[\x21-\x7e]{16,}", client.session_id)
        assert app.manager.statistics().named_sessions == 2
        reply = await first.call("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})
        assert reply["result"]["structuredContent"] == {"result": 5}


async def test_a_request_without_session_id_is_400(probe: Probe) -> None:
    async with asgi_client(make_server(probe)) as (_, http):
        client = McpClient(http)
        response = await client.post(client.request("tools/list"))
        assert response.status == 400
        body = await response.json()
        assert body["error"]["code"] == -32600
        assert "Mcp-Session-Id" in body["error"]["message"]
        check_server_message(body, "2025-11-25")


async def test_unknown_and_deleted_sessions_are_404(probe: Probe) -> None:
    async with asgi_client(make_server(probe)) as (app, http):
        client = await initialized(http)
        stranger = McpClient(http)
        stranger.session_id = "no-such-session"
        assert (await stranger.post(stranger.request("ping"))).status == 404
        deleted = await client.delete()
        assert deleted.status == 204
        assert "content-length" not in deleted.headers
        for response in (
            await client.post(client.request("ping")),
            await client.get(),
            await client.delete(),
        ):
            assert response.status == 404
        await trio.testing.wait_all_tasks_blocked()
        assert app.manager.statistics().sessions == 0


async def test_a_plain_answer_is_json_and_progress_makes_it_sse(probe: Probe) -> None:
    async with asgi_client(make_server(probe)) as (_, http):
        client = await initialized(http)
        plain = await client.post(
            client.request("tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}})
        )
        assert plain.content_type == "application/json"
        assert (await plain.json())["result"]["structuredContent"] == {"result": 2}

        request = client.request(
            "tools/call",
            {"name": "count", "arguments": {"steps": 3}, "_meta": {"progressToken": "p"}},
        )
        streamed = await client.post(request)
        assert streamed.content_type == "text/event-stream"
        events = await streamed.events()
        # 2025-11-25: a priming event (id, retry, empty data) opens the stream.
        assert events[0].data == ""
        assert events[0].id is not None
        assert events[0].retry == 1000
        messages = [event.message() for event in events[1:]]
        assert [m["params"]["progress"] for m in messages[:3]] == [1, 2, 3]
        assert messages[3]["id"] == request["id"]
        assert len(messages) == 4
        for message in messages:
            check_server_message(message, "2025-11-25", request_method="tools/call")
        ids = [event.id for event in events]
        assert len(set(ids)) == len(ids)
        assert all(event.event == "message" for event in events[1:])


async def test_older_sessions_get_no_priming_event(probe: Probe) -> None:
    async with asgi_client(make_server(probe)) as (_, http):
        client = await initialized(http, "2025-06-18")
        response = await client.post(
            client.request(
                "tools/call",
                {"name": "count", "arguments": {"steps": 1}, "_meta": {"progressToken": 1}},
            )
        )
        events = await response.events()
        assert [event.message()["method"] for event in events[:1]] == ["notifications/progress"]
        assert all(event.data for event in events)
        assert len(events) == 2


async def test_an_older_session_gets_a_lone_answer_as_one_complete_event(
    probe: Probe,
) -> None:
    options = HttpOptions(response_mode="sse")
    async with asgi_client(make_server(probe), options=options) as (_, http):
        client = await initialized(http, "2025-06-18")
        response = await client.post(client.request("ping"))
        assert response.content_type == "text/event-stream"
        assert "content-length" in response.headers  # not a chunked stream
        events = await response.events()
        assert [event.message() for event in events] == [{"jsonrpc": "2.0", "id": 2, "result": {}}]
        assert events[0].id is not None


async def test_a_streamed_answer_ends_the_body_in_the_same_write(probe: Probe) -> None:
    async with asgi_client(make_server(probe)) as (_, http):
        client = await initialized(http)
        request = client.request(
            "tools/call",
            {"name": "count", "arguments": {"steps": 2}, "_meta": {"progressToken": 1}},
        )
        response = await client.post(request)
        messages = await response.messages()
        assert messages[-1]["id"] == request["id"]
        # The answer's event came with the end of the body, not before an empty end.
        assert b'"counted 2"' in response.last_body[0]


async def test_sse_mode_answers_every_request_with_a_stream(probe: Probe) -> None:
    async with asgi_client(make_server(probe), options=HttpOptions(response_mode="sse")) as (
        _,
        http,
    ):
        client = await initialized(http)
        response = await client.post(client.request("ping"))
        assert response.content_type == "text/event-stream"
        events = await response.events()
        assert events[0].data == ""
        assert events[1].message() == {"jsonrpc": "2.0", "id": 2, "result": {}}
        assert len(events) == 2


async def test_json_mode_sends_related_notifications_on_the_get_stream(probe: Probe) -> None:
    async with asgi_client(make_server(probe), options=HttpOptions(response_mode="json")) as (
        _,
        http,
    ):
        client = await initialized(http)
        listening = await client.get()
        assert (await listening.next_event()).data == ""  # priming
        request = client.request(
            "tools/call",
            {"name": "count", "arguments": {"steps": 2}, "_meta": {"progressToken": 9}},
        )
        response = await client.post(request)
        assert response.content_type == "application/json"
        assert (await response.json())["id"] == request["id"]
        progress = [(await listening.next_event()).message() for _ in range(2)]
        assert [p["params"]["progress"] for p in progress] == [1, 2]
        await listening.disconnect()


async def test_accept_content_type_and_json_errors(probe: Probe) -> None:
    async with asgi_client(make_server(probe)) as (_, http):
        client = await initialized(http)
        ping = client.request("ping")
        assert (await client.post(ping, accept="application/json")).status == 406
        assert (await client.post(ping, accept="text/event-stream")).status == 406
        assert (await client.post(ping, accept="*/*")).status == 200
        assert (await client.post(client.request("ping"), content_type="text/plain")).status == 415
        headers = client.headers()
        bad = await http.request("POST", "/mcp", headers, b'{"jsonrpc": ')
        assert bad.status == 400
        assert (await bad.json())["error"]["code"] == -32700
        invalid = await client.post({"jsonrpc": "2.0", "id": 77})
        assert invalid.status == 400
        body = await invalid.json()
        assert body["id"] == 77
        assert body["error"]["code"] == -32600
        check_server_message(body, "2025-11-25")
        get = await client.get(accept="application/json")
        assert get.status == 406


async def test_a_body_nested_too_deeply_is_refused_with_its_id(probe: Probe) -> None:
    async with asgi_client(make_server(probe)) as (_, http):
        client = await initialized(http)
        deep = "[" * 500 + "]" * 500
        body = f'{{"jsonrpc": "2.0", "id": 8, "method": "ping", "params": {{"a": {deep}}}}}'
        refused = await http.request("POST", "/mcp", client.headers(), body.encode())
        assert refused.status == 400
        answer = await refused.json()
        assert answer["id"] == 8
        assert answer["error"]["code"] == -32600
        assert answer["error"]["data"] == {"maxDepth": MAX_DEPTH}
        check_server_message(answer, "2025-11-25")
        # Deeper than JSON can be parsed here at all: a parse error, no id.
        deeper = b"[" * 5000 + b"]" * 5000
        unparsed = await http.request("POST", "/mcp", client.headers(), deeper)
        assert unparsed.status == 400
        assert (await unparsed.json())["error"]["code"] == -32700
        # The session goes on.
        assert (await client.post(client.request("ping"))).status == 200


async def test_protocol_version_header(probe: Probe) -> None:
    async with asgi_client(make_server(probe)) as (_, http):
        client = await initialized(http)
        response = await client.post(client.request("ping"), mcp_protocol_version="1999-01-01")
        assert response.status == 400
        assert "1999-01-01" in (await response.json())["error"]["message"]
        # A supported version other than the negotiated one is accepted, as is none.
        older = await client.post(client.request("ping"), mcp_protocol_version="2025-03-26")
        assert older.status == 200
        client.protocol_version = None
        assert (await client.post(client.request("ping"))).status == 200


async def test_sampling_round_trip_on_the_post_stream(probe: Probe) -> None:
    async with asgi_client(make_server(probe)) as (_, http):
        client = await initialized(http)
        client.protocol_version = "2025-11-25"
        request = client.request(
            "tools/call",
            {"name": "ask", "arguments": {"prompt": "hi"}, "_meta": {"progressToken": 1}},
        )
        stream = await client.post(request)
        assert stream.content_type == "text/event-stream"
        assert (await stream.next_event()).data == ""
        asked = (await stream.next_event()).message()
        check_server_message(asked, "2025-11-25")
        assert asked["method"] == "sampling/createMessage"
        answer = await client.post(
            {
                "jsonrpc": "2.0",
                "id": asked["id"],
                "result": {
                    "role": "assistant",
                    "content": {"type": "text", "text": "hello"},
                    "model": "m",
                },
            }
        )
        assert answer.status == 202
        assert await answer.body() == b""
        reply = (await stream.next_event()).message()
        check_server_message(reply, "2025-11-25", request_method="tools/call")
        assert reply["id"] == request["id"]
        assert reply["result"]["content"][0]["text"] == "model said: hello"
        assert await stream.next_event() is None


async def test_cancelled_notification_cancels_the_handler_and_ends_its_stream(
    probe: Probe,
) -> None:
    async with asgi_client(make_server(probe)) as (app, http):
        client = await initialized(http)
        request = client.request("tools/call", _HOLD)
        stream = await client.post(request)
        await probe.started.wait()
        cancel = await client.post(
            {
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": request["id"], "reason": "changed my mind"},
            }
        )
        assert cancel.status == 202
        await probe.finished.wait()
        assert probe.cancelled.is_set()
        messages = await stream.messages()
        assert [m.get("method") for m in messages] == ["notifications/progress"]
        assert all("id" not in m or m["id"] != request["id"] for m in messages)
        await trio.testing.wait_all_tasks_blocked()
        session = app.manager.get(client.session_id or "")
        assert session is not None
        assert session.actor.statistics().requests_in_flight == 0


async def test_a_streamed_post_watches_for_its_client_leaving_only_after_a_while(
    probe: Probe, mock_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    watches: list[float] = []
    watch = _http_writer._until_gone

    def counted(exchange: Exchange, attachment: Attachment) -> Callable[[], Awaitable[Any]]:
        watches.append(trio.current_time())
        return watch(exchange, attachment)

    monkeypatch.setattr(_http_writer, "_until_gone", counted)
    async with asgi_client(make_server(probe)) as (app, http):
        client = await initialized(http)
        # A short streamed call never starts a watch.
        streamed = await client.post(
            client.request(
                "tools/call",
                {"name": "count", "arguments": {"steps": 2}, "_meta": {"progressToken": 1}},
            )
        )
        assert (await streamed.messages())[-1]["result"]["content"][0]["text"] == "counted 2"
        assert watches == []
        # A long one whose client leaves: noticed once the watch starts.
        stream = await client.post(client.request("tools/call", _HOLD))
        assert (await stream.next_event()) is not None  # priming
        assert (await stream.next_event()) is not None  # progress
        start = trio.current_time()
        await stream.disconnect()
        await trio.testing.wait_all_tasks_blocked()
        assert app.manager.statistics().connections == 1
        mock_clock.jump(WATCH_AFTER)
        await trio.testing.wait_all_tasks_blocked()
        assert watches == [start + WATCH_AFTER]
        assert app.manager.statistics().connections == 0
        assert not probe.finished.is_set()  # a disconnect is not a cancellation
        probe.release.set()
        await probe.finished.wait()
        app.manager.stop()


async def test_a_dropped_post_keeps_running_and_replays_once(probe: Probe) -> None:
    async with asgi_client(make_server(probe)) as (app, http):
        client = await initialized(http)
        request = client.request("tools/call", _HOLD)
        stream = await client.post(request)
        priming = await stream.next_event()
        progress = await stream.next_event()
        assert priming is not None
        assert progress is not None
        assert progress.message()["method"] == "notifications/progress"
        await stream.disconnect()
        await trio.testing.wait_all_tasks_blocked()
        assert not probe.finished.is_set()  # a disconnect is not a cancellation
        probe.release.set()
        await probe.finished.wait()
        assert not probe.cancelled.is_set()
        await trio.testing.wait_all_tasks_blocked()

        # The standalone GET stream does not get the response...
        listening = await client.get()
        assert (await listening.next_event()).data == ""
        await listening.disconnect()
        # ...resuming the POST stream does, exactly once.
        resumed = await client.get(last_event_id=progress.id)
        assert resumed.status == 200
        events = await resumed.events()
        assert [event.message()["id"] for event in events] == [request["id"]]
        check_server_message(events[0].message(), "2025-11-25", request_method="tools/call")
        assert events[0].message()["result"]["content"][0]["text"] == "released"
        # A client that lost that connection too can resume again: the stream is kept
        # (a while) after it ended. Resuming from its last event gets nothing more.
        await trio.testing.wait_all_tasks_blocked()
        again = await client.get(last_event_id=progress.id)
        assert [event.message()["id"] for event in await again.events()] == [request["id"]]
        done = await client.get(last_event_id=events[0].id)
        assert await done.events() == []
        unknown = await client.get(last_event_id="9.1")
        assert unknown.status == 400
        # Kept: the standalone stream and this one.
        assert app.manager.event_store.statistics().streams == 2


async def test_resuming_a_live_stream_gets_the_rest_as_it_comes(probe: Probe) -> None:
    async with asgi_client(make_server(probe)) as (_, http):
        client = await initialized(http)
        request = client.request("tools/call", _HOLD)
        stream = await client.post(request)
        priming = await stream.next_event()
        assert priming is not None
        await stream.disconnect()
        resumed = await client.get(last_event_id=priming.id)
        progress = await resumed.next_event()
        assert progress is not None
        assert progress.message()["method"] == "notifications/progress"
        probe.release.set()
        assert [m["id"] for m in await resumed.messages()] == [request["id"]]


async def test_a_handler_can_close_its_stream_and_the_client_polls(probe: Probe) -> None:
    async with asgi_client(make_server(probe)) as (_, http):
        client = await initialized(http)
        await client.call("logging/setLevel", {"level": "info"})
        request = client.request("tools/call", {"name": "reconnect", "arguments": {}})
        stream = await client.post(request)
        assert stream.content_type == "text/event-stream"
        events = await stream.events()  # ends: the handler closed it
        assert events[0].data == ""
        assert events[0].retry == 1000
        assert events[1].message()["params"]["data"] == "before the stream closes"
        assert len(events) == 2
        await probe.started.wait()
        probe.release.set()
        resumed = await client.get(last_event_id=events[-1].id)
        messages = await resumed.messages()
        assert messages[0]["params"]["data"] == "after the stream closed"
        assert messages[1]["id"] == request["id"]
        assert messages[1]["result"]["content"][0]["text"] == "answered after reconnecting"
        assert len(messages) == 2


async def test_unrelated_notifications_go_to_the_get_stream(probe: Probe) -> None:
    async with asgi_client(make_server(probe)) as (_, http):
        client = await initialized(http)
        listening = await client.get()
        assert listening.content_type == "text/event-stream"
        second = await client.get()
        assert second.status == 409
        assert (await listening.next_event()).data == ""
        reply = await client.call("tools/call", {"name": "change_tools", "arguments": {}})
        assert reply["result"]["content"][0]["text"] == "changed"
        event = await listening.next_event()
        assert event is not None
        assert event.message() == {
            "jsonrpc": "2.0",
            "method": "notifications/tools/list_changed",
            "params": {},
        }
        check_server_message(event.message(), "2025-11-25")
        await listening.disconnect()
        await trio.testing.wait_all_tasks_blocked()
        # What happens while nobody listens waits for the next GET.
        await client.call("tools/call", {"name": "change_tools", "arguments": {}})
        again = await client.get()
        events = [await again.next_event(), await again.next_event()]
        assert [e.message()["method"] for e in events if e and e.data] == [
            "notifications/tools/list_changed"
        ]
        await again.disconnect()


async def test_batches_follow_the_negotiated_revision(probe: Probe) -> None:
    async with asgi_client(make_server(probe)) as (_, http):
        old = await initialized(http, "2025-03-26")
        batch = [old.request("ping"), old.request("tools/list"), {"jsonrpc": "2.0", "method": "x"}]
        response = await old.post(batch)
        assert response.status == 200
        replies = await read_reply(response)
        assert sorted(r["id"] for r in replies) == [batch[0]["id"], batch[1]["id"]]
        check_server_message(replies, "2025-03-26")
        notifications_only = await old.post([{"jsonrpc": "2.0", "method": "x"}])
        assert notifications_only.status == 202
        assert (await old.post([])).status == 400
        # Nothing in it owed an answer by id, yet its malformed items are owed their
        # errors: 400 with them (the notification beside them is still taken).
        malformed = await old.post([1, {"jsonrpc": "2.0", "method": "x"}, {"id": None}])
        assert malformed.status == 400
        errors = await malformed.json()
        assert [error["error"]["code"] for error in errors] == [-32600, -32600]
        check_server_message(errors, "2025-03-26")
        assert (await old.call("ping"))["result"] == {}

        new = await initialized(http, "2025-06-18")
        refused = await new.post([new.request("ping")])
        assert refused.status == 400
        assert "batch" in (await refused.json())["error"]["message"]


async def test_a_request_id_in_flight_cannot_be_reused(probe: Probe) -> None:
    async with asgi_client(make_server(probe)) as (_, http):
        client = await initialized(http)
        request = client.request("tools/call", {"name": "hold_quietly", "arguments": {}})
        first = start_post(client, request)
        await probe.started.wait()
        second = await client.post(request)
        assert second.status == 400
        body = await second.json()
        assert body["id"] == request["id"]
        assert "in flight" in body["error"]["message"]
        probe.release.set()
        assert (await (await first.wait()).json())["id"] == request["id"]


async def test_deleting_a_session_answers_its_open_requests(
    probe: Probe, autojump_clock: trio.testing.MockClock
) -> None:
    async with asgi_client(make_server(probe)) as (app, http):
        client = await initialized(http)
        request = client.request("tools/call", {"name": "hold_quietly", "arguments": {}})
        pending = start_post(client, request)
        await probe.started.wait()
        listening = await client.get()
        deleted_at = trio.current_time()
        assert (await client.delete()).status == 204
        # The handler gets the grace period, then is cancelled; the client hears why.
        reply = await (await pending.wait()).json()
        assert trio.current_time() - deleted_at == pytest.approx(5.0)
        assert reply["id"] == request["id"]
        assert reply["error"]["code"] == -32603
        check_server_message(reply, "2025-11-25")
        assert probe.cancelled.is_set()
        await listening.events()  # the GET stream ends too
        await trio.testing.wait_all_tasks_blocked()
        assert app.manager.statistics().sessions == 0


async def test_initialize_that_fails_leaves_no_session(probe: Probe) -> None:
    async with asgi_client(make_server(probe)) as (app, http):
        client = McpClient(http)
        response = await client.post(
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 5}}
        )
        body = await response.json()
        assert body["error"]["code"] == -32602
        await trio.testing.wait_all_tasks_blocked()
        assert app.manager.statistics().sessions == 0


async def test_unknown_paths_and_methods(probe: Probe) -> None:
    async with asgi_client(make_server(probe)) as (_, http):
        client = await initialized(http)
        assert (await http.request("GET", "/elsewhere", {})).status == 404
        put = await http.request("PUT", "/mcp", client.headers())
        assert put.status == 405
        assert put.headers["allow"] == "GET, POST, DELETE"
        ping = orjson.dumps(client.request("ping"))
        response = await http.request("POST", "/mcp/", client.headers(), ping)
        assert response.status == 200


async def test_close_sse_stream_does_nothing_without_streams(probe: Probe) -> None:
    # stdio and in-memory sessions have no per-request streams to cut.
    outbox_send, outbox_receive = trio.open_memory_channel[Outbound](10)
    actor = SessionActor(make_server(probe), outbox_send)
    await actor.peer.close_sse_stream(related_request_id=1)
    with pytest.raises(trio.WouldBlock):
        outbox_receive.receive_nowait()


async def test_json_mode_answers_a_cancelled_request_with_202(probe: Probe) -> None:
    options = HttpOptions(response_mode="json")
    async with asgi_client(make_server(probe), options=options) as (_, http):
        client = await initialized(http)
        request = client.request("tools/call", {"name": "hold_quietly", "arguments": {}})
        pending = start_post(client, request)
        await probe.started.wait()
        await client.post(
            {
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": request["id"]},
            }
        )
        response = await pending.wait()
        assert response.status == 202
        assert await response.body() == b""
        assert probe.cancelled.is_set()
