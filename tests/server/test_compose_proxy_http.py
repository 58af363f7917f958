"""A remote server over Streamable HTTP, served through a ProxyServer.

The remote is ``proxied_server.py`` served by ``serve_http`` on a loopback port; the same
file served in memory is the reference. Each test loads the file afresh, so what one
test does to its server (a tool added, a call cancelled) is not seen by the next.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Final

import pytest
import trio

from mcpactor import RequestError, Server
from mcpactor.cli import load_server
from mcpactor.client import ClientSession, ProxyServer, proxy_url
from mcpactor.transports import HttpOptions, serve_http
from tests.client.conftest import connect, text_of

from .test_compose_proxy import listing, sampling

PROXIED: Final = Path(__file__).with_name("proxied_server.py")
# Real sockets and real time: generous, so only a hang trips it.
GUARD: Final = 60.0


def fresh() -> Server:
    """A new instance of the proxied server, with its own state."""
    return load_server(str(PROXIED))


@asynccontextmanager
async def remote(name: str = "remote", **options: Any) -> AsyncIterator[ProxyServer]:
    """A proxy (not yet running) for a fresh proxied server over HTTP."""
    server = fresh()
    async with trio.open_nursery() as nursery:
        host, port = await nursery.start(
            functools.partial(serve_http, server, port=0, options=HttpOptions(retry_ms=10))
        )
        yield proxy_url(f"http://{host}:{port}/mcp", name=name, **options)
        nursery.cancel_scope.cancel()


@asynccontextmanager
async def through(server: Server, **client: Any) -> AsyncIterator[ClientSession]:
    with trio.fail_after(GUARD):
        async with connect(server, sampling_handler=sampling, **client) as session:
            yield session


@asynccontextmanager
async def mounted(**client: Any) -> AsyncIterator[tuple[ClientSession, Server]]:
    """A client of an app that mounts the remote (over HTTP) under ``remote``."""
    with trio.fail_after(GUARD):
        async with remote() as proxy:
            app = Server("app")
            app.mount(proxy, "remote")
            async with connect(app, sampling_handler=sampling, **client) as session:
                yield session, app


async def test_the_proxy_lists_exactly_what_the_remote_lists() -> None:
    async with through(fresh()) as local:
        expected = await listing(local)
        local_capabilities = local.server.capabilities
    async with remote() as proxy, through(proxy) as client:
        assert await listing(client) == expected
        del local_capabilities["tasks"]
        assert client.server.capabilities == local_capabilities
    assert proxy.remote.info == {"name": "proxied", "version": "1.2.3"}
    assert proxy.instructions == "a server behind a proxy"


@pytest.mark.parametrize("revision", ["2024-11-05", "2025-06-18"])
async def test_an_older_client_gets_what_its_revision_defines(revision: str) -> None:
    async with through(fresh(), protocol_version=revision) as local:
        expected = await listing(local)
        expected_result = await local.call_tool("add", {"a": 1, "b": 2})
    async with remote() as proxy, through(proxy, protocol_version=revision) as client:
        assert await listing(client) == expected
        assert await client.call_tool("add", {"a": 1, "b": 2}) == expected_result


async def test_calls_reads_prompts_and_completions_answer_as_the_remote_does() -> None:
    requests: list[tuple[str, dict[str, Any]]] = [
        ("tools/call", {"name": "add", "arguments": {"a": 20, "b": 22}}),
        ("tools/call", {"name": "add", "arguments": {"a": "x"}}),
        ("resources/read", {"uri": "proxied://greeting"}),
        ("resources/read", {"uri": "proxied://items/7"}),
        ("prompts/get", {"name": "greet", "arguments": {"name": "Ada"}}),
        (
            "completion/complete",
            {
                "ref": {"type": "ref/resource", "uri": "proxied://items/{item}"},
                "argument": {"name": "item", "value": "ap"},
            },
        ),
    ]
    async with through(fresh()) as local:
        expected = [await local.request(method, params) for method, params in requests]
    async with remote() as proxy, through(proxy) as client:
        assert [await client.request(method, params) for method, params in requests] == expected


async def test_errors_come_back_as_the_remote_sent_them() -> None:
    async with through(fresh()) as local:
        with pytest.raises(RequestError) as local_error:
            await local.read_resource("proxied://nothing")
    async with remote() as proxy, through(proxy) as client:
        with pytest.raises(RequestError) as proxied_error:
            await client.read_resource("proxied://nothing")
    assert proxied_error.value.to_error() == local_error.value.to_error()


async def test_progress_and_log_messages_reach_the_real_client() -> None:
    updates: list[tuple[float, float | None, str | None]] = []

    async def progress(value: float, total: float | None, message: str | None) -> None:
        updates.append((value, total, message))

    async with mounted() as (client, _):
        await client.set_logging_level("info")
        result = await client.call_tool("remote_steps", {"n": 3}, progress_handler=progress)
        assert text_of(result) == "3 steps"
        logged = [
            n.params for n in client.notifications.received if n.method == "notifications/message"
        ]
    assert updates == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]
    # The remote's log lines came on the call's SSE stream, ahead of its result.
    assert logged == [
        {"level": "info", "data": f"did step {step}", "logger": "steps"} for step in (1, 2, 3)
    ]


async def test_a_cancelled_call_is_cancelled_on_the_remote() -> None:
    started = trio.Event()

    async def progress(value: float, total: float | None, message: str | None) -> None:
        started.set()

    async with mounted() as (client, app):
        with trio.CancelScope() as scope:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(
                    functools.partial(
                        client.call_tool, "remote_wait_forever", progress_handler=progress
                    )
                )
                await started.wait()
                scope.cancel()
        assert scope.cancelled_caught
        # Only the remote's own view proves the cancellation crossed the proxy.
        result = await client.call_tool("remote_was_cancelled")
        assert result["structuredContent"] == {"result": True}
        assert app.mounts[0].statistics().calls_in_flight == 0


async def test_the_remotes_requests_go_back_to_the_real_client() -> None:
    async with mounted(roots=[{"uri": "file:///work", "name": "work"}]) as (client, _):
        assert text_of(await client.call_tool("remote_ask", {"question": "why"})) == "why!"
        roots = await client.call_tool("remote_roots")
        assert roots["structuredContent"] == {"result": ["file:///work"]}


async def test_the_remotes_list_changes_reach_the_real_client() -> None:
    async with mounted() as (client, _):
        assert text_of(await client.call_tool("remote_grow")) == "grew"
        await client.notifications.wait_for("notifications/tools/list_changed")
        assert "remote_grown" in [tool["name"] for tool in await client.list_tools()]
        assert text_of(await client.call_tool("remote_grown")) == "grown"


async def test_the_remotes_resource_updates_reach_subscribers() -> None:
    async with mounted() as (client, _):
        await client.subscribe_resource("proxied://greeting")
        await client.call_tool("remote_touch")
        updated = await client.notifications.wait_for("notifications/resources/updated")
        assert updated.params == {"uri": "proxied://greeting"}


async def test_a_remote_that_goes_away_fails_its_mount_and_the_others_keep_serving() -> None:
    local = Server("local")
    local.add_tool(lambda: "still here", name="ping")
    with trio.fail_after(GUARD):
        async with trio.open_nursery() as outer:
            remote_scope = trio.CancelScope()

            async def serve_remote(*, task_status: trio.TaskStatus[tuple[str, int]]) -> None:
                with remote_scope:
                    await serve_http(
                        fresh(), port=0, options=HttpOptions(retry_ms=10), task_status=task_status
                    )

            host, port = await outer.start(serve_remote)
            app = Server("app")
            app.mount(local, "local")
            mount = app.mount(proxy_url(f"http://{host}:{port}/mcp", name="web"), "web")
            async with connect(app) as client:
                assert (await client.call_tool("web_add", {"a": 1, "b": 2}))[
                    "structuredContent"
                ] == {"result": 3}
                remote_scope.cancel()
                await mount.wait_down()
                assert mount.failed
                assert "TransportBroken" in (mount.statistics().error or "")
                with pytest.raises(RequestError, match="server 'web' has failed"):
                    await client.call_tool("web_add", {"a": 1, "b": 2})
                assert text_of(await client.call_tool("local_ping")) == "still here"


async def test_a_proxys_tool_timeout_cancels_the_remote_call() -> None:
    async with remote(tool_timeout=0.2) as proxy, through(proxy) as client:
        result = await client.call_tool("wait_forever")
        assert result["isError"] is True
        assert text_of(result) == "tool 'wait_forever' timed out after 0.2 s"
        # The remote was told to stop.
        cancelled = await client.call_tool("was_cancelled")
        assert cancelled["structuredContent"] == {"result": True}
        # Only tool calls have the deadline.
        read = await client.read_resource("proxied://greeting")
        assert read["contents"][0]["text"] == "hello"


def test_an_http_url_makes_a_proxy() -> None:
    proxy = proxy_url("https://example.com/mcp", name="web", headers={"Authorization": "x"})
    assert isinstance(proxy, ProxyServer)
    assert proxy.name == "web"
    assert not proxy.remote.connected
