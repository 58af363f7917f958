"""Search mode over a composition of 500 generated tools, in process."""

from __future__ import annotations

import json
from collections.abc import Awaitable
from pathlib import Path
from typing import Any

import orjson
import pytest
import trio

from mcpactor import RequestError, Server, tool_search
from mcpactor.testing import client
from tests.catalogs import catalog_server
from tests.catalogs.catalog_server import build

HERE = Path(__file__).parent
#: used while tuning the index: its rate flatters it
QUERIES = json.loads((HERE / "queries.json").read_text())
#: the shares of queries whose tool must be first and in the top 3 (measured: 36 and 46 of 50)
FLOOR = (0.7, 0.9)


def held_out(name: str = "queries_heldout.tsv") -> list[tuple[str, str]]:
    """(request, tool) of each line of a query file (``queries_heldout.tsv``: written after
    the index of the first round froze)."""
    rows = []
    for line in (HERE / name).read_text().splitlines():
        if line and not line.startswith("#"):
            wanted, query = line.split("\t")
            rows.append((query, wanted))
    return rows


HELD_OUT = held_out()
#: the same for the held-out set, just under its measured rates (31 and 41 of 50)
HELD_OUT_FLOOR = (0.6, 0.8)
#: written before the second round's index changes and never used to tune or evaluate them
SEALED = held_out("queries_sealed.tsv")
#: just under its rates, measured once after the index changed (32 and 44 of 50)
SEALED_FLOOR = (0.62, 0.86)


def tokens(value: object) -> int:
    """Tokens of ``value`` as JSON: tiktoken's cl100k_base if installed, else chars/4."""
    text = orjson.dumps(value).decode()
    try:
        import tiktoken
    except ImportError:
        return -(-len(text) // 4)
    return len(tiktoken.get_encoding("cl100k_base").encode(text))


async def top_three_rate(queries: list[tuple[str, str]], label: str) -> tuple[float, float]:
    """The shares of ``queries`` whose tool search_tools ranks first and in its top 3."""
    server = build(search=True, pinned=("ping",))
    async with client(server) as session:
        first = hits = default = 0
        for query, wanted in queries:
            result = await session.call_tool("search_tools", {"query": query, "limit": 3})
            assert not result.is_error
            names = [tool["name"] for tool in result["structuredContent"]["tools"]]
            hits += wanted in names
            first += names[:1] == [wanted]
            # What a model gets when it leaves the limit to the server (5 tools).
            result = await session.call_tool("search_tools", {"query": query})
            default += wanted in [tool["name"] for tool in result["structuredContent"]["tools"]]
    total = len(queries)
    print(
        f"search mode, {label}: {hits}/{total} in the top 3 ({hits / total:.0%}), "
        f"{first}/{total} first ({first / total:.0%}), {default}/{total} in the default 5"
    )
    return first / total, hits / total


async def test_search_finds_the_right_tool_in_the_top_three() -> None:
    first, top_three = await top_three_rate(QUERIES, "tuning set")
    assert first >= FLOOR[0]
    assert top_three >= FLOOR[1]


async def test_search_on_requests_held_out_from_tuning() -> None:
    assert len(HELD_OUT) == 50
    assert not {wanted for _, wanted in HELD_OUT} & {wanted for _, wanted in QUERIES}
    first, top_three = await top_three_rate(HELD_OUT, "held-out set")
    assert first >= HELD_OUT_FLOOR[0]
    assert top_three >= HELD_OUT_FLOOR[1]


async def test_search_on_requests_sealed_before_the_index_changed() -> None:
    # The one set no change of the index has seen: its rate is the honest one.
    assert len(SEALED) == 50
    targets = {wanted for _, wanted in SEALED}
    assert not targets & {wanted for _, wanted in QUERIES}
    assert not targets & {wanted for _, wanted in HELD_OUT}
    first, top_three = await top_three_rate(SEALED, "sealed set")
    assert first >= SEALED_FLOOR[0]
    assert top_three >= SEALED_FLOOR[1]


async def test_the_listing_is_small_and_searches_return_full_definitions() -> None:
    server = build(search=True, pinned=("ping",))
    async with client(server) as session:
        listing = await session.request("tools/list", {})
        names = [tool["name"] for tool in listing["tools"]]
        assert names == ["search_tools", "call_tool", "ping"]
        assert "nextCursor" not in listing
        count = tokens(listing)
        print(f"search mode: tools/list is {count} tokens")
        assert count < 2000
        result = await session.call_tool("search_tools", {"query": "refund a payment"})
        found = result["structuredContent"]["tools"]
        assert len(found) == 5
        assert {"name", "description", "inputSchema"} <= found[0].keys()
        # The model reads the text: the same definitions.
        assert json.loads(result["content"][0]["text"])["tools"] == found
    plain = build()
    async with client(plain) as session:
        assert len(await session.list_tools()) == 501
        full = tokens(await session.list_tools())
        print(f"without search mode: tools/list is {full} tokens")
        assert full > 20 * 2000


async def outcome(call: Awaitable[Any]) -> tuple[object, ...]:
    """What a call answered: its error's code and message, or its result's."""
    try:
        result = await call
    except RequestError as exc:
        return ("error", exc.code, exc.message)
    return ("result", result.is_error, result.text)


async def test_call_tool_is_the_named_tools_own_call() -> None:
    server = build(search=True)
    async with client(server) as session:
        result = await session.call_tool(
            "call_tool", {"name": "crm_get_deal", "arguments": {"deal_id": "d-1"}}
        )
        assert result.text == "crm_get_deal called with [('deal_id', 'd-1')]"
        # The tool's own schema (its required argument is missing), and an unknown tool:
        # the answer a direct call gets.
        for name, arguments in (("crm_get_deal", {}), ("nope", {})):
            forwarded = await outcome(
                session.call_tool("call_tool", {"name": name, "arguments": arguments})
            )
            assert forwarded == await outcome(session.call_tool(name, arguments))
            assert forwarded[0] == "error" or forwarded[1] is True
        with pytest.raises(RequestError, match="cannot call itself"):
            await session.call_tool("call_tool", {"name": "call_tool"})
        with pytest.raises(RequestError, match="'arguments' must be an object"):
            await session.call_tool("call_tool", {"name": "crm_get_deal", "arguments": [1]})


async def test_progress_and_cancellation_pass_through() -> None:
    catalog_server.ENDED = trio.Event()
    server = build(search=True)
    async with client(server) as session:
        progressed = trio.Event()
        seen: list[object] = []

        async def on_progress(*args: object) -> None:
            seen.append(args)
            progressed.set()

        async with trio.open_nursery() as nursery:
            cancelled = trio.CancelScope()

            async def call() -> None:
                with cancelled:
                    await session.call_tool(
                        "call_tool",
                        {"name": "crm_list_deals", "arguments": {"limit": -1}},
                        progress_handler=on_progress,
                    )

            nursery.start_soon(call)
            await progressed.wait()
            cancelled.cancel()
        # The tool itself was cancelled, not just the client's wait.
        with trio.fail_after(5):
            await catalog_server.ENDED.wait()
        assert seen
        # The session serves on after the cancelled call.
        result = await session.call_tool("call_tool", {"name": "ping"})
        assert result.text == "pong"


async def test_the_index_is_built_once_per_change() -> None:
    extension = tool_search()
    server = Server("parent", extensions=[extension])
    child = Server("child")

    @child.tool
    def brew_coffee(strength: int) -> str:
        """Brew a cup of coffee of the given strength."""
        return "brewed"

    server.mount(child)
    state = extension.middleware[0].__self__  # the ToolSearch the layer belongs to
    async with client(server) as session:
        for _ in range(3):
            result = await session.call_tool("search_tools", {"query": "make coffee"})
            assert [t["name"] for t in result["structuredContent"]["tools"]] == ["brew_coffee"]
        assert state.builds == 1

        @child.tool
        def steep_tea(minutes: int) -> str:
            """Steep green tea for some minutes."""
            return "steeped"

        result = await session.call_tool("search_tools", {"query": "green tea"})
        assert result["structuredContent"]["tools"][0]["name"] == "steep_tea"
        assert state.builds == 2
        listing = await session.request("tools/list", {})
        assert [tool["name"] for tool in listing["tools"]] == ["search_tools", "call_tool"]


@pytest.mark.parametrize("version", ["2024-11-05", "2025-11-25"])
async def test_session_revisions(version: str) -> None:
    server = build(search=True, pinned=("ping",))
    async with client(server, protocol_version=version) as session:
        listing = await session.request("tools/list", {})
        assert [tool["name"] for tool in listing["tools"]] == ["search_tools", "call_tool", "ping"]
        result = await session.call_tool(
            "call_tool", {"name": "hr_get_payslip", "arguments": {"payslip_id": "p"}}
        )
        assert "hr_get_payslip called" in result.text


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="limit"):
        tool_search(limit=0)
    with pytest.raises(TypeError, match="pinned"):
        tool_search(pinned=[1])  # type: ignore[list-item]


async def test_hidden_tools_stay_hidden_from_callers_without_their_scopes() -> None:
    from tests.server.conftest import make_context
    from tests.server.test_scopes import caller

    extension = tool_search(pinned=["wipe_disk", "ping"])
    server = Server("guarded", hide_unauthorized=True, extensions=[extension])

    @server.tool(scopes=["admin"])
    def wipe_disk() -> str:
        """Erase every file on the disk."""
        return "wiped"

    @server.tool
    def ping() -> str:
        """Answer pong."""
        return "pong"

    @server.tool
    def erase_draft() -> str:
        """Erase one draft file."""
        return "erased"

    state = extension.middleware[0].__self__
    user = make_context(peer=caller("read"), server=server)
    admin = make_context(peer=caller("admin"), server=server)
    assert [t["name"] for t in state.listing(user)["tools"]] == [
        "search_tools",
        "call_tool",
        "ping",
    ]
    assert [t["name"] for t in state.listing(admin)["tools"]] == [
        "search_tools",
        "call_tool",
        "wipe_disk",
        "ping",
    ]
    assert [t["name"] for t in state.search("erase files", None, user)] == ["erase_draft"]
    found = {t["name"] for t in state.search("erase files", None, admin)}
    assert found == {"erase_draft", "wipe_disk"}
