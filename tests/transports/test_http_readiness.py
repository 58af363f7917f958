"""The readiness endpoint (/readyz): starting, draining, stopping, and a cached check."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from mcpactor.transports import HttpOptions, Readiness

from ._http_server import Probe, asgi_client, make_server


@pytest.fixture
def probe() -> Probe:
    return Probe()


# --- the endpoint ----------------------------------------------------------------------------


async def test_readyz_is_ready_by_default_and_open_to_any_probe(probe: Probe) -> None:
    options = HttpOptions(authenticate=lambda headers: None)
    async with asgi_client(make_server(probe), options=options) as (app, http):
        ready = await http.request("GET", "/readyz", {"host": "10.1.2.3:8000"})
        assert (ready.status, await ready.json()) == (200, {"status": "ready"})
        assert ready.headers["cache-control"] == "no-store"
        assert (await http.request("HEAD", "/readyz", {})).status == 200
        post = await http.request("POST", "/readyz", {}, b"{}")
        assert (post.status, post.headers["allow"]) == (405, "GET, HEAD")
        assert app.manager.statistics().sessions == 0


async def test_readyz_follows_the_readiness_it_is_given(probe: Probe) -> None:
    readiness = Readiness()
    async with asgi_client(make_server(probe), options=HttpOptions(readiness=readiness)) as (
        app,
        http,
    ):
        assert app.readiness is readiness
        starting = await http.request("GET", "/readyz", {})
        assert (starting.status, await starting.json()) == (503, {"status": "starting"})
        # Liveness is not readiness: a starting server is alive.
        assert (await http.request("GET", "/healthz", {})).status == 200
        readiness.started()
        assert (await http.request("GET", "/readyz", {})).status == 200
        readiness.drain()
        draining = await http.request("GET", "/readyz", {})
        assert (draining.status, await draining.json()) == (503, {"status": "draining"})


async def test_readyz_says_stopping_during_shutdown(probe: Probe) -> None:
    async with asgi_client(make_server(probe)) as (app, http):
        app.manager.stop()
        ready = await http.request("GET", "/readyz", {})
        assert (ready.status, await ready.json()) == (503, {"status": "stopping"})


async def test_readyz_can_move_or_be_switched_off(probe: Probe) -> None:
    async with asgi_client(make_server(probe), options=HttpOptions(ready_path="/ready")) as (_, h):
        assert (await h.request("GET", "/ready", {})).status == 200
        assert (await h.request("GET", "/readyz", {})).status == 404
    async with asgi_client(make_server(probe), options=HttpOptions(ready_path=None)) as (_, h):
        assert (await h.request("GET", "/readyz", {})).status == 404


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"ready_path": "readyz"}, "ready_path must start with '/'"),
        ({"ready_path": "/up", "health_path": "/up"}, "ready_path and health_path"),
    ],
)
def test_a_ready_path_that_cannot_be_served_is_refused(
    options: dict[str, str], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        HttpOptions(**options)  # type: ignore[arg-type]


async def test_a_failing_check_makes_readyz_unavailable_without_saying_why(
    probe: Probe, caplog: pytest.LogCaptureFixture
) -> None:
    problem: list[str | None] = ["the store redis://10.0.0.9:6379/0 is unreachable: refused"]

    async def check() -> str | None:
        return problem[0]

    readiness = Readiness(started=True, check=check, interval=0)
    async with asgi_client(make_server(probe), options=HttpOptions(readiness=readiness)) as (_, h):
        down = await h.request("GET", "/readyz", {})
        # The probe learns one word; the address is in the log only.
        assert (down.status, await down.json()) == (503, {"status": "unavailable"})
        assert "10.0.0.9" in caplog.text
        problem[0] = None
        assert (await h.request("GET", "/readyz", {})).status == 200


# --- the check's cache --------------------------------------------------------------------


async def test_the_check_runs_once_per_interval_however_many_probes(
    autojump_clock: trio.testing.MockClock,
) -> None:
    calls = 0
    answer: str | None = None

    async def check() -> str | None:
        nonlocal calls
        calls += 1
        await trio.sleep(0.5)
        return answer

    readiness = Readiness(started=True, check=check, interval=2.0)
    states: list[str | None] = []

    async def probe() -> None:
        states.append(await readiness.state())

    async with trio.open_nursery() as nursery:
        for _ in range(50):
            nursery.start_soon(probe)
    # Fifty probes at once: one check, and every probe has its answer.
    assert (calls, states) == (1, [None] * 50)
    answer = "down"
    await trio.sleep(1.0)
    assert await readiness.state() is None
    assert calls == 1
    await trio.sleep(1.0)
    assert await readiness.state() == "unavailable"
    assert calls == 2


async def test_starting_and_draining_need_no_check() -> None:
    async def check() -> str | None:
        raise AssertionError("not asked while starting or draining")

    readiness = Readiness(check=check)
    assert readiness.starting
    assert await readiness.state() == "starting"
    readiness.started()
    readiness.drain()
    assert readiness.draining
    assert await readiness.state() == "draining"


async def test_a_check_that_breaks_says_not_ready(caplog: pytest.LogCaptureFixture) -> None:
    async def check() -> str | None:
        raise RuntimeError("the check itself broke")

    readiness = Readiness(started=True, check=check)
    assert await readiness.state() == "unavailable"
    assert "the check itself broke" in caplog.text


def test_an_interval_below_zero_is_refused() -> None:
    with pytest.raises(ValueError, match="interval"):
        Readiness(interval=-1)
