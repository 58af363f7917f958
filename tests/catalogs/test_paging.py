"""``tools/list`` over 5 000 tools of a composition: every page walked, none twice."""

from __future__ import annotations

from typing import Any

import pytest

from mcpactor import Server
from mcpactor.protocol import JSONObject
from mcpactor.testing import client
from tests.server.conftest import call, make_context

SERVERS = 10
PER_SERVER = 500


def composition() -> tuple[Server, list[Server]]:
    """A server mounting 10 servers of 500 tools each (prefixed: ``s3_tool0042``)."""
    parent = Server("parent", page_size=100)
    children = []
    for number in range(SERVERS):
        child = Server(f"s{number}")
        for index in range(PER_SERVER):
            child.add_tool(lambda: "ok", name=f"tool{index:04d}", description=f"tool {index}")
        parent.mount(child, prefix=f"s{number}")
        children.append(child)
    return parent, children


def names(page: JSONObject) -> list[str]:
    return [tool["name"] for tool in page["tools"]]


async def walk(ask: Any, between: Any = None) -> list[str]:
    """Every name the pages give, in order; ``between(page_number)`` runs between pages."""
    listed: list[str] = []
    params: JSONObject = {}
    for number in range(1000):
        page = await ask(params)
        listed += names(page)
        if "nextCursor" not in page:
            return listed
        if between is not None:
            between(number)
        params = {"cursor": page["nextCursor"]}
    raise AssertionError("the cursor chain does not end")


EVERY = {f"s{n}_tool{i:04d}" for n in range(SERVERS) for i in range(PER_SERVER)}


async def test_a_session_walks_5000_tools_to_the_end() -> None:
    parent, _ = composition()
    async with client(parent, protocol_version="2025-11-25") as session:
        listed = await walk(lambda params: session.request("tools/list", params))
    assert len(listed) == len(set(listed)) == 5000
    assert set(listed) == EVERY


@pytest.mark.parametrize("revision", ["2025-11-25", "2026-07-28"])
@pytest.mark.parametrize("change", ["add", "remove", "remove the last listed"])
async def test_a_change_between_pages_repeats_and_misses_nothing(
    revision: str, change: str
) -> None:
    parent, children = composition()
    removed: set[str] = set()
    last_listed: list[str] = []

    async def ask(params: JSONObject) -> JSONObject:
        if revision == "2026-07-28":
            # The result before the stateless shaping (resultType, serverInfo) is added.
            ctx = make_context(revision, server=parent)
            page = await parent.handle_request("tools/list", params, ctx)
        else:
            page = await call(parent, "tools/list", params, revision=revision)
        last_listed[:] = names(page)
        return page

    def between(number: int) -> None:
        if number != 20:
            return
        if change == "add":
            # Into the first mounted server: before the current page in both orders.
            children[0].add_tool(lambda: "ok", name="added", description="added late")
        elif change == "remove":
            children[0].remove_tool("tool0001")
            children[1].remove_tool("tool0499")
            removed.update({"s0_tool0001", "s1_tool0499"})
        else:
            prefix, _, tool = last_listed[-1].partition("_")
            children[int(prefix[1:])].remove_tool(tool)
            removed.add(last_listed[-1])

    listed = await walk(ask, between)
    assert len(listed) == len(set(listed)), "a tool came twice"
    throughout = EVERY - removed
    assert throughout <= set(listed), f"missing: {sorted(throughout - set(listed))[:5]}"


async def test_the_listing_is_built_once_per_change() -> None:
    parent, children = composition()
    first = await call(parent, "tools/list", {})
    again = await call(parent, "tools/list", {})
    assert first["tools"][0] is again["tools"][0]  # the same list, not built again
    children[3].add_tool(lambda: "ok", name="more")
    rebuilt = await call(parent, "tools/list", {})
    assert rebuilt["tools"][0] is not first["tools"][0]
