"""Replicas that stop, die or lose their store, with the sessions they share.

The replicas of test_replicas.py (a MemoryHub between apps in one trio run). A replica
that stops drops its copies and leaves its sessions to the others; the requests it runs
hold leases, so a client following one from another replica learns when it died; and
nothing a store fails at, while sessions end or open, reaches the server's nursery.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Sequence
from typing import Any

import pytest
import trio
import trio.testing

from mcpactor.protocol import RequestId
from mcpactor.runtime.http import (
    Attachment,
    Item,
    MemoryEventStore,
    RelayKind,
    StoreUnavailable,
    Stream,
)
from mcpactor.runtime.http._event_store import StreamKey, StreamLease
from mcpactor.runtime.http._follow import LOST, Followers
from mcpactor.runtime.http._leases import LeaseKeeper
from mcpactor.transports import HttpOptions, open_http_app

from ..transports._http_client import AsgiClient, McpClient, read_reply, start_post
from ..transports._http_server import Probe, make_server
from .test_replicas import Outage, _reconnected, _sum, _tool, cluster, initialized, on

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}},
}


def _lost(request_id: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": -32603, "message": LOST}}


class Silent(MemoryEventStore):
    """What a replica that died renews its leases with: nothing reaches the store."""

    async def renew_leases(
        self, held: Collection[StreamKey], released: Collection[StreamKey], seconds: float
    ) -> None:
        raise StoreUnavailable("this replica is gone")


class Unforgetting(MemoryEventStore):
    """An event store that cannot be reached when asked to forget, while ``down``."""

    down = False

    async def forget_session(self, session_id: str) -> None:
        if self.down:
            raise StoreUnavailable("connection refused")
        await super().forget_session(session_id)

    async def forget_stream(self, session_id: str, stream_id: str) -> None:
        if self.down:
            raise StoreUnavailable("connection refused")
        await super().forget_stream(session_id, stream_id)


# --- a replica that stops ---------------------------------------------------------------


async def test_a_replica_that_stops_leaves_its_sessions_to_the_others(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with cluster(3, event_store=MemoryEventStore()) as c:
        # A call runs on replica 0, its stream cut; replica 1 holds a copy; the client
        # follows the call from replica 2.
        client, call, last_id = await _reconnected(c)
        session_id = client.session_id
        assert session_id is not None
        assert _sum(await on(client, c, 1).call(*_add())) == 2
        c.manager(2).followers.step = 1.0
        resumed = await on(client, c, 2).get(last_event_id=last_id)
        assert resumed.status == 200
        await trio.testing.wait_all_tasks_blocked()
        # Replica 0 stops (SIGTERM): its call gets the grace, then is cancelled.
        stopping = c.manager(0)
        stopping.stop()
        with trio.fail_after(60):
            await stopping.wait_sessions(0)
        # The follower hears that the call died with its replica.
        assert await resumed.messages() == [_lost(call["id"])]
        # Nothing ended the session anywhere else: its record stands, no copy was told
        # to close, and the replicas left serve it.
        assert c.hub.sent[RelayKind.CLOSED] == 0
        assert await c.hub.records.get(session_id) is not None
        for replica in (1, 2):
            assert _sum(await on(client, c, replica).call(*_add())) == 2
        assert c.copy(1, session_id) is not None
        # The stopped replica refuses, without saying the session is gone.
        refused = await on(client, c, 0).post(_tool(client, "add", a=1, b=1))
        assert refused.status == 503


async def test_requests_running_on_a_stopping_replica_are_told_the_session_goes_on(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with cluster(2) as c:
        client = await initialized(c, 0)
        held = start_post(client, _tool(client, "hold_quietly"))
        with trio.fail_after(10):
            await c.probe.started.wait()
        c.manager(0).stop()
        error = await read_reply(await held.wait())
        assert error["error"]["code"] == -32603
        assert "the session goes on elsewhere" in error["error"]["message"]
        assert _sum(await on(client, c, 1).call(*_add())) == 2


async def test_a_resumable_stream_of_a_stopping_replica_ends_for_its_client_to_resume(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # Past the grace period, a stream whose events the store holds is not answered with
    # an error: it ends, as a cut connection would, and its client resumes it elsewhere,
    # where the stored events are replayed and the request's fate is told.
    async with cluster(2, event_store=MemoryEventStore()) as c:
        client = await initialized(c, 0)
        call = client.request(
            "tools/call", {"name": "hold", "arguments": {}, "_meta": {"progressToken": "h"}}
        )
        held = start_post(client, call)
        with trio.fail_after(10):
            await c.probe.started.wait()
        c.manager(1).followers.step = 1.0
        c.manager(0).stop()
        events = await (await held.wait()).events()
        assert c.probe.cancelled.is_set()
        messages = [event.message() for event in events if event.data]
        assert [message.get("method") for message in messages] == ["notifications/progress"]
        first_id = events[0].id
        assert first_id is not None
        resumed = await on(client, c, 1).get(last_event_id=first_id)
        assert resumed.status == 200
        replayed = await resumed.messages()
        assert replayed == [messages[0], _lost(call["id"])]


# --- leases of in-flight requests -----------------------------------------------------------


async def test_a_stream_whose_replica_stopped_renewing_its_lease_ends_with_an_error(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with cluster(2, event_store=MemoryEventStore()) as c:
        keeper = c.manager(0).leases
        assert keeper is not None
        keeper.seconds = 3.0
        followers = c.manager(1).followers
        followers.step = 1.0
        client, call, last_id = await _reconnected(c)
        assert keeper.statistics().held == 1
        resumed = await on(client, c, 1).get(last_event_id=last_id)
        await trio.testing.wait_all_tasks_blocked()
        assert followers.active == 1
        # Replica 0 dies as far as the store can tell: nothing renews its leases (its
        # call still runs here, but nobody will ever read its answer).
        keeper.store = Silent()
        died = trio.current_time()
        assert await resumed.messages() == [_lost(call["id"])]
        # Within a lease of the last renewal, and one step of the follower's.
        assert trio.current_time() - died <= keeper.seconds + followers.step
        assert followers.active == 0
        # A client that comes back later is told at once.
        again_at = trio.current_time()
        again = await on(client, c, 1).get(last_event_id=last_id)
        assert await again.messages() == [_lost(call["id"])]
        assert trio.current_time() == again_at


async def test_a_follower_finding_the_lease_dropped_looks_once_more_for_the_answer() -> None:
    store = MemoryEventStore()
    primed = await store.append_leased("s", "1", b"", [4], 10.0)
    # The answer was stored, and then the lease dropped, while the client was away.
    answer = b'{"jsonrpc":"2.0","id":4,"result":{}}'
    await store.append("s", "1", answer)
    await store.renew_leases((), [("s", "1")], 10.0)
    followers = Followers()
    assert followers.take()
    attachment = Attachment(Stream("1"))
    await followers.follow(store, "s", attachment, primed, lambda: False)
    assert await _items(attachment) == [("1.2", answer, True)]
    assert followers.active == 0


async def _items(attachment: Attachment) -> list[Item]:
    return [item async for item in attachment]


async def test_a_follower_of_a_stream_without_a_lease_waits_for_the_quiet_time(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # A store (or a stream) without leases: only the quiet time ends the wait.
    store = MemoryEventStore()
    first = await store.append("s", "1", b"")
    followers = Followers(quiet=30.0, step=1.0)
    assert followers.take()
    attachment = Attachment(Stream("1"))
    began = trio.current_time()
    await followers.follow(store, "s", attachment, first, lambda: False)
    assert await _items(attachment) == []
    assert trio.current_time() - began == 30.0


async def test_a_memory_store_keeps_leases_by_the_trio_clock(
    autojump_clock: trio.testing.MockClock,
) -> None:
    store = MemoryEventStore()
    assert await store.lease("s", "1") is None
    first = await store.append_leased("s", "1", b"", [7, "x"], 3.0)
    assert first == "1.1"
    await store.append("s", "2", b"")  # a stream taken without a lease has none
    assert await store.lease("s", "2") is None
    assert await store.lease("s", "1") == StreamLease((7, "x"), held=True)
    await trio.sleep(2)
    await store.renew_leases([("s", "1")], (), 3.0)
    await trio.sleep(2)
    assert await store.lease("s", "1") == StreamLease((7, "x"), held=True)
    await trio.sleep(1)
    assert await store.lease("s", "1") == StreamLease((7, "x"), held=False)
    # A lease that lapsed stays lapsed, and a released one is gone at once.
    await store.renew_leases([("s", "1")], (), 3.0)
    assert await store.lease("s", "1") == StreamLease((7, "x"), held=False)
    await store.append_leased("s", "3", b"", [8], 3.0)
    await store.renew_leases((), [("s", "3")], 3.0)
    assert await store.lease("s", "3") == StreamLease((8,), held=False)
    await store.forget_stream("s", "3")
    assert await store.lease("s", "3") is None


class Recording(MemoryEventStore):
    """Counts the store calls of a LeaseKeeper and what each carried."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[list[StreamKey], list[StreamKey]]] = []

    async def renew_leases(
        self, held: Collection[StreamKey], released: Collection[StreamKey], seconds: float
    ) -> None:
        self.calls.append((list(held), list(released)))
        await super().renew_leases(held, released, seconds)


async def test_one_call_renews_every_lease_and_drops_the_released(
    autojump_clock: trio.testing.MockClock,
) -> None:
    store = Recording()
    keeper = LeaseKeeper(store, seconds=3.0)
    async with trio.open_nursery() as nursery:
        await nursery.start(keeper.run)
        await trio.sleep(10)
        assert store.calls == []  # nothing held: the keeper sleeps
        for stream in ("1", "2", "3"):
            keeper.hold("s", stream)
        await trio.sleep(1.5)
        assert store.calls == [([("s", "1"), ("s", "2"), ("s", "3")], [])]
        keeper.release("s", "2")
        keeper.release("s", "9")  # never held: nothing to drop
        await trio.sleep(1)
        assert store.calls[-1] == ([("s", "1"), ("s", "3")], [("s", "2")])
        assert keeper.statistics().held == 2
        nursery.cancel_scope.cancel()
    # Stopped: what it held is dropped in one last call.
    assert store.calls[-1] == ([], [("s", "1"), ("s", "3")])


async def test_a_renewal_that_cannot_reach_the_store_is_counted_and_tried_again(
    autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture
) -> None:
    keeper = LeaseKeeper(Silent(), seconds=3.0)
    with caplog.at_level(logging.WARNING, logger="mcpactor.http"):
        async with trio.open_nursery() as nursery:
            await nursery.start(keeper.run)
            keeper.hold("s", "1")
            await trio.sleep(10)
            nursery.cancel_scope.cancel()
    stats = keeper.statistics()
    assert stats.failures == stats.renewals >= 3
    said = [r.getMessage() for r in caplog.records if "could not be renewed" in r.getMessage()]
    assert len(said) == 1


# --- giving way in a full table -------------------------------------------------------------


async def _open_unconfirmed(client: McpClient) -> str:
    # initialize alone: the session is unconfirmed on the replica that opened it.
    response = await client.post(INITIALIZE)
    session_id = response.headers["mcp-session-id"]
    await response.body()
    return session_id


async def test_a_full_table_gives_way_with_a_shared_copy_not_the_session() -> None:
    async with cluster(2, max_sessions=1) as c:
        client = c.client(0)
        used = await _open_unconfirmed(client)
        # The client goes on with replica 1 only: replica 0 never sees it confirmed.
        client.session_id, client.protocol_version = used, "2025-11-25"
        on(client, c, 1)
        done = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert (await client.post(done)).status == 202
        assert _sum(await client.call(*_add())) == 2
        # A new session on replica 0 makes room: the copy of the session in use goes.
        unused = await _open_unconfirmed(c.client(0))
        await trio.testing.wait_all_tasks_blocked()
        assert c.manager(0).given_way == 1
        assert c.copy(0, used) is None
        # The session lives on where it is used.
        assert await c.hub.records.get(used) is not None
        assert _sum(await client.call(*_add())) == 2
        # A session used nowhere else gives way, and ends everywhere.
        await _open_unconfirmed(c.client(0))
        await trio.testing.wait_all_tasks_blocked()
        assert c.manager(0).given_way == 2
        assert await c.hub.records.get(unused) is None


# --- store failures while sessions end or open ------------------------------------------------


async def test_a_session_end_that_cannot_forget_its_events_leaves_the_server_up(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = Unforgetting()
    with caplog.at_level(logging.WARNING, logger="mcpactor.http"):
        async with (
            trio.open_nursery() as nursery,
            open_http_app(
                make_server(Probe()), options=HttpOptions(event_store=store, max_sessions=1)
            ) as app,
        ):
            http = AsgiClient(app, nursery)
            await _open_unconfirmed(McpClient(http))
            store.down = True
            # The table is full: the unconfirmed session makes room, and its stored
            # events cannot be forgotten. Nothing of that reaches the server.
            newcomer = McpClient(http)
            await newcomer.initialize()
            await trio.testing.wait_all_tasks_blocked()
            assert app.manager.given_way == 1
            assert _sum(await newcomer.call(*_add())) == 2
            # Nor does ending a session the client deletes.
            assert (await newcomer.delete()).status == 204
            await trio.testing.wait_all_tasks_blocked()
            assert app.manager.statistics().sessions == 0
            nursery.cancel_scope.cancel()
    assert any("left to expire" in r.getMessage() for r in caplog.records)


async def test_work_spawned_for_sessions_that_fails_is_logged_and_contained(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def failing() -> None:
        await trio.lowlevel.checkpoint()
        raise RuntimeError("a teardown that fails")

    with caplog.at_level(logging.ERROR, logger="mcpactor.http"):
        async with (
            trio.open_nursery() as nursery,
            open_http_app(make_server(Probe())) as app,
        ):
            app.manager.spawn(failing)
            await trio.testing.wait_all_tasks_blocked()
            client = McpClient(AsgiClient(app, nursery))
            await client.initialize()
            assert _sum(await client.call(*_add())) == 2
            nursery.cancel_scope.cancel()
    assert any("a session's work failed" in r.getMessage() for r in caplog.records)


# --- a refused initialize -------------------------------------------------------------------


async def test_an_initialize_refused_for_its_params_hands_out_no_session() -> None:
    async with trio.open_nursery() as nursery, open_http_app(make_server(Probe())) as app:
        client = McpClient(AsgiClient(app, nursery))
        bad = {**INITIALIZE, "params": {"capabilities": {}}}
        response = await client.post(bad)
        assert "mcp-session-id" not in response.headers
        assert (await read_reply(response))["error"]["code"] == -32602
        await trio.testing.wait_all_tasks_blocked()
        assert app.manager.statistics().sessions == 0
        nursery.cancel_scope.cancel()


async def test_an_initialize_refused_during_an_outage_creates_nothing() -> None:
    outages: list[Outage] = []
    async with cluster(outages=outages, max_sessions=1) as c:
        for outage in outages:
            outage.down = True
        for _ in range(3):
            response = await c.client(0).post(INITIALIZE)
            assert "mcp-session-id" not in response.headers
            error = await read_reply(response)
            assert error["error"]["code"] == -32603
            assert "session store is unavailable" in error["error"]["message"]
        await trio.testing.wait_all_tasks_blocked()
        stats = c.manager(0).statistics()
        assert (stats.sessions, stats.open_sessions, stats.unconfirmed_sessions) == (0, 0, 0)
        # Back up: the one place in the table is free, nobody had to give way.
        for outage in outages:
            outage.down = False
        client = await initialized(c, 0)
        assert _sum(await client.call(*_add())) == 2
        assert c.manager(0).given_way == 0


def _add() -> tuple[str, dict[str, Any]]:
    return "tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}}


class Gated(MemoryEventStore):
    """A store whose leased appends wait until the test opens ``gate``."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = trio.Event()
        self.waiting = trio.Event()

    async def append_leased(
        self,
        session_id: str,
        stream_id: str,
        data: bytes,
        requests: Sequence[RequestId],
        seconds: float,
    ) -> str:
        self.waiting.set()
        await self.gate.wait()
        return await super().append_leased(session_id, stream_id, data, requests, seconds)


async def test_a_session_ending_while_a_lease_is_being_taken_leaves_no_lease_held() -> None:
    store = Gated()
    async with cluster(event_store=store, response_mode="sse") as c:
        client = await initialized(c, 0)
        keeper = c.manager(0).leases
        assert keeper is not None
        call = start_post(client, _tool(client, "add", a=1, b=1))
        with trio.fail_after(10):
            await store.waiting.wait()
        # The session ends while its call's first event is on its way to the store.
        assert (await on(client, c, 1).delete()).status == 204
        await trio.testing.wait_all_tasks_blocked()
        store.gate.set()
        assert (await call.wait()).status in (200, 404)
        await trio.testing.wait_all_tasks_blocked()
        assert keeper.statistics().held == 0
