"""The live tree's snapshot on a MockClock: ages, progress, deadlines, bounds, actions."""

from __future__ import annotations

import math
from typing import Any

import attrs
import pytest
import trio
from trio.testing import MockClock, wait_all_tasks_blocked

from mcpactor import Context, RequestError, Server
from mcpactor.client import ClientSession, connect_memory
from mcpactor.runtime import Observatory, SessionActor, current_observatory, observed


def _server() -> Server:
    server = Server("watched", "1.0.0")

    @server.tool(timeout=30)
    async def slow(ctx: Context) -> str:
        """Report progress 1, then 2 ten seconds later, then wait."""
        await ctx.report_progress(1, 10)
        await trio.sleep(10)
        await ctx.report_progress(2, 10)
        await trio.sleep(math.inf)
        return "never"

    @server.tool(task_support="optional")
    async def job() -> str:
        """Run until cancelled."""
        await trio.sleep(math.inf)
        return "never"

    return server


def _installed() -> Observatory:
    observatory = Observatory(replica="replica-1")
    observatory.install()
    return observatory


async def _progress(_: float, __: float | None, ___: str | None) -> None:
    await trio.lowlevel.checkpoint()


async def _call(client: ClientSession, outcome: dict[str, Any]) -> None:
    try:
        outcome["result"] = await client.call_tool("slow", {}, progress_handler=_progress)
    except RequestError as exc:
        outcome["error"] = exc


def _only_session(tree: dict[str, Any]) -> dict[str, Any]:
    (session,) = tree["sessions"]["items"]
    return session  # type: ignore[no-any-return]


async def test_nothing_is_watched_without_an_observatory(autojump_clock: MockClock) -> None:
    assert current_observatory() is None
    with observed(object()):
        # Without an Observatory the hook accepts anything and does nothing.
        pass


async def test_a_request_shows_its_age_progress_and_deadline(autojump_clock: MockClock) -> None:
    observatory = _installed()
    server = _server()
    observatory.serve(server)
    outcome: dict[str, Any] = {}
    async with connect_memory(server, initialize=True) as client, trio.open_nursery() as nursery:
        nursery.start_soon(_call, client, outcome)
        await wait_all_tasks_blocked()
        start = trio.current_time()
        tree = observatory.snapshot()
        session = _only_session(tree)
        assert session["transport"] == "memory"
        assert session["client"] is not None
        assert session["revision"] is not None
        (request,) = session["requests"]
        assert request["method"] == "tools/call"
        assert request["name"] == "slow"
        assert request["age"] == 0.0
        assert request["progress"] == 1.0
        assert request["deadline_in"] == 30.0
        assert request["cancelled"] is False
        assert tree["counts"]["requests"] == 1
        assert tree["plugins"][0]["name"] == "watched"

        await trio.sleep(12)
        (request,) = _only_session(observatory.snapshot())["requests"]
        assert request["age"] == pytest.approx(trio.current_time() - start, abs=1e-3)
        assert request["age"] == 12.0
        assert request["progress"] == 2.0
        assert request["deadline_in"] == 18.0
        # ``now`` may be given: the same tree, seen from another instant.
        later = observatory.snapshot(now=trio.current_time() + 3)
        assert _only_session(later)["requests"][0]["age"] == 15.0
        nursery.cancel_scope.cancel()
    assert observatory.snapshot()["counts"]["sessions"] == 0


async def test_a_mounted_servers_request_shows_the_progress_its_handler_reports(
    autojump_clock: MockClock,
) -> None:
    # The mounted server's handler reports on a Context of its own: the request's
    # progress is still the one the tree shows.
    observatory = _installed()
    server = Server("host", "1.0.0")
    server.mount(_server(), prefix="w")
    observatory.serve(server)

    async def call(client: ClientSession) -> None:
        with pytest.raises(RequestError):
            await client.call_tool("w_slow", {}, progress_handler=_progress)

    async with connect_memory(server, initialize=True) as client, trio.open_nursery() as nursery:
        nursery.start_soon(call, client)
        await wait_all_tasks_blocked()
        (request,) = _only_session(observatory.snapshot())["requests"]
        assert request["name"] == "w_slow"
        assert (request["progress"], request["total"]) == (1.0, 10.0)
        await trio.sleep(12)
        (request,) = _only_session(observatory.snapshot())["requests"]
        assert (request["progress"], request["total"]) == (2.0, 10.0)
        nursery.cancel_scope.cancel()


async def test_cancelling_a_request_answers_its_client_with_an_error(
    autojump_clock: MockClock,
) -> None:
    observatory = _installed()
    server = _server()
    outcome: dict[str, Any] = {}
    async with connect_memory(server, initialize=True) as client:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_call, client, outcome)
            await wait_all_tasks_blocked()
            session = _only_session(observatory.snapshot())
            (request,) = session["requests"]
            # Ids are matched as the client sent them: a string is not the integer.
            assert not observatory.cancel_request(session["id"], str(request["id"]))
            assert not observatory.cancel_request("no such session", request["id"])
            assert observatory.cancel_request(session["id"], request["id"])
            # A second cancel finds the scope already cancelled.
            assert not observatory.cancel_request(session["id"], request["id"])
        error = outcome["error"]
        assert "cancelled by the server's operator" in error.message
        assert error.data == {"cancelled": True}
        assert observatory.snapshot()["counts"]["requests"] == 0
        # The session goes on.
        assert await client.list_tools()


async def test_cancelling_a_task_brings_the_count_back_to_baseline(
    autojump_clock: MockClock,
) -> None:
    observatory = _installed()
    server = _server()
    async with connect_memory(server, initialize=True, protocol_version="2025-11-25") as client:
        baseline = observatory.snapshot()["counts"]["tasks_running"]
        task = await client.tasks.call_tool("job", {})
        await wait_all_tasks_blocked()
        tree = observatory.snapshot()
        assert tree["counts"]["tasks_running"] == baseline + 1
        (listed,) = _only_session(tree)["tasks"]
        assert listed["id"] == task["taskId"]
        assert listed["status"] == "working"
        assert listed["ttl_left"] is None or listed["ttl_left"] > 0
        assert await observatory.cancel_task(task["taskId"])
        assert not await observatory.cancel_task(task["taskId"])
        assert not await observatory.cancel_task("no-such-task")
        await wait_all_tasks_blocked()
        assert observatory.snapshot()["counts"]["tasks_running"] == baseline
        state = await client.tasks.get(task["taskId"])
        assert state["status"] == "cancelled"


async def _hold(server: Server, busy: bool) -> None:
    # One client's session, idle or with a slow request running, until cancelled.
    async with connect_memory(server, initialize=True, lifespan=False) as client:
        if busy:
            await _call(client, {})
        await trio.sleep_forever()


async def test_many_sessions_are_summarised_busiest_first(autojump_clock: MockClock) -> None:
    observatory = _installed()
    server = _server()
    async with trio.open_nursery() as nursery:
        for number in range(30):
            nursery.start_soon(_hold, server, number in (5, 17, 29))
            await trio.sleep(1)
        await wait_all_tasks_blocked()

        tree = observatory.snapshot(limit=10)
        sessions = tree["sessions"]
        assert tree["counts"]["sessions"] == 30
        assert tree["counts"]["requests"] == 3
        assert sessions["total"] == 30
        assert sessions["shown"] == 10
        assert len(sessions["items"]) == 10
        # The three with a request first (oldest first among them), then the oldest idle.
        ages = [item["age"] for item in sessions["items"]]
        assert [len(item["requests"]) for item in sessions["items"][:3]] == [1, 1, 1]
        assert [len(item["requests"]) for item in sessions["items"][3:]] == [0] * 7
        assert ages[:3] == sorted(ages[:3], reverse=True)
        assert ages[3:] == sorted(ages[3:], reverse=True)
        assert ages[3] == 30.0
        assert sessions["hidden_requests"] == 0

        tight = observatory.snapshot(limit=2)["sessions"]
        assert tight["shown"] == 2
        assert tight["hidden_requests"] == 1

        # A request filter lists only the sessions with a matching request.
        assert observatory.snapshot(tool="slow")["sessions"]["total"] == 3
        assert observatory.snapshot(tool="nothing-like-it")["sessions"]["total"] == 0
        assert observatory.snapshot(slow=0.5)["sessions"]["total"] == 3
        assert observatory.snapshot(slow=2.0)["sessions"]["total"] == 2
        assert observatory.snapshot(slow=60)["sessions"]["total"] == 0
        assert observatory.snapshot(client="no such client")["sessions"]["total"] == 0
        nursery.cancel_scope.cancel()


async def test_wire_text_is_bounded(autojump_clock: MockClock) -> None:
    observatory = _installed()
    server = _server()
    long_name = "n" * 5000
    async with connect_memory(
        server, initialize=True, client_info={"name": long_name, "version": "1"}
    ):
        session = _only_session(observatory.snapshot())
        assert len(session["client"]) <= 200
        assert session["client"].endswith("…")


async def test_extensions_add_sections(autojump_clock: MockClock) -> None:
    observatory = _installed()
    observatory.add_section("counters", lambda: {"requests": 7})
    assert observatory.snapshot()["counters"] == {"requests": 7}
    with pytest.raises(TypeError, match="cannot watch"):
        observatory._add(object())


async def test_an_actors_view_is_a_value_of_that_instant() -> None:
    # The snapshot reads views, never the actors: a view says what the actor holds
    # when it is taken, and does not change with the actor afterwards.
    server = _server()
    actor = SessionActor(server, None)
    before = actor.view()
    assert before.requests == ()
    assert before.revision is None
    assert before.client_info is None
    assert before.server is server
    assert before.tasks is actor.tasks
    assert actor.tasks.view() == ()

    actor.core.adopt("2025-11-25", {"name": "viewer", "version": "2"})
    after = actor.view()
    assert after.revision == "2025-11-25"
    assert after.client_info == {"name": "viewer", "version": "2"}
    assert before.revision is None
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        after.revision = "2024-11-05"  # type: ignore[misc]
