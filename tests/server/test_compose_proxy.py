"""A remote stdio server served through a ProxyServer, alone or mounted with others.

The remote is ``python -m mcpactor serve proxied_server.py``; the same module served in
memory is the reference: through the proxy, a client must see the same lists and get the
same answers, progress, log messages and cancellations.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Final

import pytest
import trio
import trio.testing

from mcpactor import RequestError, Server
from mcpactor.client import ClientSession, ProxyServer, proxy_stdio, proxy_url
from mcpactor.transports import serve_http
from tests.client.conftest import connect, text_of

from . import proxied_server

REMOTE: Final = [
    sys.executable,
    "-m",
    "mcpactor",
    "serve",
    str(Path(__file__).with_name("proxied_server.py")),
]
# Real processes, real time: generous, so only a hang trips it.
GUARD: Final = 60.0


async def sampling(params: Any) -> Any:
    question = params["messages"][0]["content"]["text"]
    return {"role": "assistant", "content": {"type": "text", "text": f"{question}!"}, "model": "m"}


@asynccontextmanager
async def through(server: Server, **client: Any) -> AsyncIterator[ClientSession]:
    with trio.fail_after(GUARD):
        async with connect(server, sampling_handler=sampling, **client) as session:
            yield session


def remote(name: str = "remote") -> ProxyServer:
    return proxy_stdio(REMOTE, name=name)


async def listing(client: ClientSession) -> dict[str, Any]:
    return {
        # Tasks are not relayed, so a proxy offers no task support ("execution").
        "tools": [
            {k: v for k, v in tool.items() if k != "execution"}
            for tool in await client.list_tools()
        ],
        "resources": await client.list_resources(),
        "templates": await client.list_resource_templates(),
        "prompts": await client.list_prompts(),
    }


async def test_the_proxy_lists_exactly_what_the_remote_lists() -> None:
    async with through(proxied_server.server) as local:
        expected = await listing(local)
        local_capabilities = local.server.capabilities
    proxy = remote()
    async with through(proxy) as client:
        assert await listing(client) == expected
        assert all("execution" not in tool for tool in await client.list_tools())
        del local_capabilities["tasks"]
        assert client.server.capabilities == local_capabilities
    assert proxy.remote.info == {"name": "proxied", "version": "1.2.3"}
    # Taken from the remote, for sessions opened once the proxy runs.
    assert proxy.instructions == "a server behind a proxy"


@pytest.mark.parametrize("revision", ["2024-11-05", "2025-06-18"])
async def test_an_older_client_gets_what_its_revision_defines(revision: str) -> None:
    async with through(proxied_server.server, protocol_version=revision) as local:
        expected = await listing(local)
        expected_result = await local.call_tool("add", {"a": 1, "b": 2})
    async with through(remote(), protocol_version=revision) as client:
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
    async with through(proxied_server.server) as local:
        expected = [await local.request(method, params) for method, params in requests]
    async with through(remote()) as client:
        assert [await client.request(method, params) for method, params in requests] == expected


async def test_errors_come_back_as_the_remote_sent_them() -> None:
    async with through(proxied_server.server) as local:
        with pytest.raises(RequestError) as local_error:
            await local.read_resource("proxied://nothing")
    async with through(remote()) as client:
        with pytest.raises(RequestError) as proxied_error:
            await client.read_resource("proxied://nothing")
    assert proxied_error.value.to_error() == local_error.value.to_error()


async def test_progress_and_log_messages_reach_the_real_client() -> None:
    updates: list[tuple[float, float | None, str | None]] = []

    async def progress(value: float, total: float | None, message: str | None) -> None:
        updates.append((value, total, message))

    app = Server("app")
    app.mount(remote(), "remote")
    async with through(app) as client:
        await client.set_logging_level("info")
        result = await client.call_tool("remote_steps", {"n": 3}, progress_handler=progress)
        assert text_of(result) == "3 steps"
        logged = [
            n.params for n in client.notifications.received if n.method == "notifications/message"
        ]
    assert updates == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]
    # Every log line the remote sent while serving the call arrived before its result.
    assert logged == [
        {"level": "info", "data": f"did step {step}", "logger": "steps"} for step in (1, 2, 3)
    ]


async def test_the_real_clients_log_level_filters_the_remotes_messages() -> None:
    async with through(remote()) as client:
        await client.set_logging_level("error")
        await client.call_tool("steps", {"n": 2})
        assert [
            n for n in client.notifications.received if n.method == "notifications/message"
        ] == []


async def test_a_cancelled_call_is_cancelled_on_the_remote() -> None:
    started = trio.Event()

    async def progress(value: float, total: float | None, message: str | None) -> None:
        started.set()

    app = Server("app")
    app.mount(remote(), "remote")
    async with through(app) as client:
        with trio.CancelScope() as scope:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(
                    lambda: client.call_tool("remote_wait_forever", progress_handler=progress)
                )
                await started.wait()
                scope.cancel()
        assert scope.cancelled_caught
        # Only the remote's own view proves the cancellation crossed the proxy.
        result = await client.call_tool("remote_was_cancelled")
        assert result["structuredContent"] == {"result": True}
        assert app.mounts[0].statistics().calls_in_flight == 0


async def test_the_remotes_requests_go_back_to_the_real_client() -> None:
    app = Server("app")
    app.mount(remote(), "remote")
    async with through(app, roots=[{"uri": "file:///work", "name": "work"}]) as client:
        assert text_of(await client.call_tool("remote_ask", {"question": "why"})) == "why!"
        roots = await client.call_tool("remote_roots")
        assert roots["structuredContent"] == {"result": ["file:///work"]}


async def test_a_remote_request_the_real_client_cannot_answer_is_an_error() -> None:
    # The real client declared no sampling: the remote hears why, and so does the client.
    with trio.fail_after(GUARD):
        async with connect(remote()) as client:
            with pytest.raises(RequestError) as info:
                await client.call_tool("ask", {"question": "why"})
    assert "the client did not declare the 'sampling' capability" in info.value.message


async def test_the_remotes_list_changes_reach_the_real_client() -> None:
    app = Server("app")
    app.mount(remote(), "remote")
    async with through(app) as client:
        assert text_of(await client.call_tool("remote_grow")) == "grew"
        await client.notifications.wait_for("notifications/tools/list_changed")
        assert "remote_grown" in [tool["name"] for tool in await client.list_tools()]
        assert text_of(await client.call_tool("remote_grown")) == "grown"


async def test_the_remotes_resource_updates_reach_subscribers() -> None:
    app = Server("app")
    app.mount(remote(), "remote")
    async with through(app) as client:
        await client.subscribe_resource("proxied://greeting")
        await client.call_tool("remote_touch")
        updated = await client.notifications.wait_for("notifications/resources/updated")
        assert updated.params == {"uri": "proxied://greeting"}


async def test_a_remote_that_dies_fails_its_mount_and_the_others_keep_serving() -> None:
    local = Server("local")
    local.add_tool(lambda: "still here", name="ping")
    app = Server("app")
    app.mount(local, "local")
    mount = app.mount(remote(), "remote")
    async with through(app) as client:
        assert mount.state == "running"
        with pytest.raises(RequestError, match="'remote' lost its remote server"):
            await client.call_tool("remote_die")
        await mount.wait_down()
        assert mount.failed
        assert "TransportBroken" in (mount.statistics().error or "")
        with pytest.raises(RequestError, match="server 'remote' has failed"):
            await client.call_tool("remote_add", {"a": 1, "b": 2})
        assert text_of(await client.call_tool("local_ping")) == "still here"


async def test_a_remote_that_does_not_start_fails_only_its_mount() -> None:
    local = Server("local")
    local.add_tool(lambda: "still here", name="ping")
    app = Server("app")
    app.mount(local, "local")
    mount = app.mount(proxy_stdio([sys.executable, "-c", "pass"], name="gone"), "gone")
    async with through(app) as client:
        assert mount.failed
        assert text_of(await client.call_tool("local_ping")) == "still here"


async def test_an_unconnected_proxy_says_so() -> None:
    async with connect(remote(), lifespan=False) as client:
        assert client.server.capabilities == {"logging": {}}
        with pytest.raises(RequestError, match="'remote' is not connected"):
            await client.request("tools/call", {"name": "add", "arguments": {}})


def test_a_proxy_mounts_nothing() -> None:
    with pytest.raises(TypeError, match="cannot mount servers"):
        remote().mount(Server("x"))


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("ftp://example.com/mcp", "expected a ws://, wss://, http:// or https:// URL"),
        ("example.com", "expected a ws://"),
    ],
)
def test_a_url_without_a_usable_scheme_is_refused(url: str, expected: str) -> None:
    with pytest.raises(ValueError, match=expected):
        proxy_url(url)


def test_a_websocket_url_makes_a_proxy() -> None:
    proxy = proxy_url("ws://127.0.0.1:1/ws", name="ws")
    assert isinstance(proxy, ProxyServer)
    assert proxy.name == "ws"
    assert not proxy.remote.connected


async def test_a_server_behind_a_websocket_url_is_proxied() -> None:
    with trio.fail_after(GUARD):
        async with trio.open_nursery() as nursery:
            host, port = await nursery.start(
                functools.partial(serve_http, proxied_server.server, port=0)
            )
            app = Server("app")
            app.mount(proxy_url(f"ws://{host}:{port}/ws", name="web"), "web")
            async with through(app) as client:
                result = await client.call_tool("web_add", {"a": 2, "b": 40})
                assert result["structuredContent"] == {"result": 42}
                read = await client.read_resource("proxied://items/9")
                assert read["contents"][0]["text"] == "item 9"
            nursery.cancel_scope.cancel()


async def test_tasks_are_not_relayed() -> None:
    async with through(remote()) as client:
        assert text_of(await client.call_tool("job")) == "job done"
        with pytest.raises(RequestError) as info:
            await client.request(
                "tools/call", {"name": "job", "arguments": {}, "task": {"ttl": 1000}}
            )
    assert info.value.code == -32602
    assert "'remote' does not relay tasks" in info.value.message
