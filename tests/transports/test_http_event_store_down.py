"""A shared event store that cannot be reached costs a session's events their ids, nothing more."""

from __future__ import annotations

import logging

import pytest

from mcpactor.runtime.http._event_store import MemoryEventStore
from mcpactor.runtime.http._session_records import StoreUnavailable
from mcpactor.transports import HttpOptions

from ._http_server import Probe, asgi_client, initialized, make_server


@pytest.fixture
def probe() -> Probe:
    return Probe()


class SwitchedEventStore(MemoryEventStore):
    """Events in memory, as a shared store's would be, with a switch that cuts the store off."""

    def __init__(self) -> None:
        super().__init__()
        self.down = False
        #: events stored so far (a stream's are forgotten once it is delivered)
        self.stored = 0

    async def append(self, session_id: str, stream_id: str, data: bytes) -> str:
        if self.down:
            raise StoreUnavailable("the event store at test cannot be reached: connection refused")
        self.stored += 1
        return await super().append(session_id, stream_id, data)


async def test_events_are_sent_without_ids_while_the_store_is_down(
    probe: Probe, caplog: pytest.LogCaptureFixture
) -> None:
    store = SwitchedEventStore()
    async with asgi_client(make_server(probe), options=HttpOptions(event_store=store)) as (
        app,
        http,
    ):
        client = await initialized(http)
        # With a progress token the answer streams: progress events, then the result.
        arguments = {"name": "count", "arguments": {"steps": 3}, "_meta": {"progressToken": 1}}
        assert "result" in await client.call("tools/call", arguments)
        stored = store.stored
        assert stored > 0
        store.down = True
        with caplog.at_level(logging.WARNING, logger="mcpactor.http"):
            # The SSE answer streams as before, its events without ids; the request and
            # the session go on.
            reply = await client.call("tools/call", arguments)
            assert "result" in reply, reply
            assert "result" in await client.call("tools/call", arguments)
        outages = [r for r in caplog.records if "not resumable" in r.getMessage()]
        assert len(outages) == 1, "one warning per outage, not one per event"
        store.down = False
        assert "result" in await client.call("tools/call", arguments)
        assert store.stored > stored, "events are stored again once it is back"
        assert app.manager.statistics().sessions == 1
