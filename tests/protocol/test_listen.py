"""subscriptions/listen, sans-io: the filter, the honoured subset, tags and the graceful end."""

from __future__ import annotations

from typing import Any

import pytest

from mcpactor._exceptions import RemoteProtocolError
from mcpactor.protocol import SERVER_INFO
from mcpactor.protocol._envelope import SUBSCRIPTION_ID, EnvelopeError
from mcpactor.protocol._listen import (
    MAX_RESOURCE_SUBSCRIPTIONS,
    MAX_SUBSCRIPTION_BYTES,
    MAX_URI_BYTES,
    ListenFilter,
    ResourceSubscriptions,
    Subscription,
    read_filter,
)
from tests.spec_schema import check

MODERN = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
}
EVERYTHING = {
    "tools": {"listChanged": True},
    "prompts": {"listChanged": True},
    "resources": {"subscribe": True, "listChanged": True},
}
ASKED = {
    "toolsListChanged": True,
    "promptsListChanged": True,
    "resourcesListChanged": False,
    "resourceSubscriptions": ["file:///b", "file:///a"],
}


def test_the_filter_is_read() -> None:
    params = {"_meta": META, "notifications": ASKED}
    check(params, MODERN, "SubscriptionsListenRequestParams")
    listen = read_filter(params)
    assert listen == ListenFilter(
        frozenset({"toolsListChanged", "promptsListChanged"}),
        frozenset({"file:///a", "file:///b"}),
    )
    assert listen.wire() == {
        "promptsListChanged": True,
        "toolsListChanged": True,
        "resourceSubscriptions": ["file:///a", "file:///b"],
    }
    assert read_filter({"notifications": {"somethingNew": True}}) == ListenFilter()


@pytest.mark.parametrize(
    "params",
    [
        None,
        {},
        {"notifications": []},
        {"notifications": {"toolsListChanged": "yes"}},
        {"notifications": {"resourceSubscriptions": "file:///a"}},
        {"notifications": {"resourceSubscriptions": [1]}},
        {"notifications": {"resourceSubscriptions": [""]}},
        {"notifications": {"resourceSubscriptions": ["x" * 9000]}},
        {"notifications": {"resourceSubscriptions": ["u"] * (MAX_RESOURCE_SUBSCRIPTIONS + 1)}},
    ],
)
def test_a_malformed_filter_is_invalid_params(params: dict[str, Any] | None) -> None:
    with pytest.raises(EnvelopeError) as info:
        read_filter(params, request_id=3)
    assert info.value.code == -32602
    assert info.value.http_status == 400
    assert len(info.value.message) < 400


@pytest.mark.parametrize(
    ("uris", "limit"),
    [
        # 4 102 characters but 8 198 bytes: a limit in characters let it through
        (["mem://" + "é" * 4096], MAX_URI_BYTES),
        (["u"] * (MAX_RESOURCE_SUBSCRIPTIONS + 1), MAX_RESOURCE_SUBSCRIPTIONS),
        (
            [f"{n:05}" + "x" * (MAX_URI_BYTES - 5) for n in range(33)],
            MAX_SUBSCRIPTION_BYTES,
        ),
    ],
)
def test_a_filter_over_a_limit_names_it(uris: list[str], limit: int) -> None:
    with pytest.raises(EnvelopeError) as info:
        read_filter({"notifications": {"resourceSubscriptions": uris}}, request_id=3)
    assert info.value.to_error()["data"] == {"limit": limit}
    assert str(limit) in info.value.message
    assert len(info.value.message) < 200


def test_subscriptions_hold_up_to_their_limits_and_give_bytes_back() -> None:
    table = ResourceSubscriptions()
    exact = "é" * (MAX_URI_BYTES // 2)
    table.add(exact)
    table.add(exact)  # held already: nothing more
    assert (len(table), table.size) == (1, MAX_URI_BYTES)
    with pytest.raises(RemoteProtocolError) as info:
        table.add(exact + "x")
    assert (info.value.code, info.value.data) == (-32602, {"limit": MAX_URI_BYTES})
    for n in range(1, MAX_SUBSCRIPTION_BYTES // MAX_URI_BYTES):
        table.add(f"{n:05}" + "x" * (MAX_URI_BYTES - 5))
    assert table.size == MAX_SUBSCRIPTION_BYTES
    with pytest.raises(RemoteProtocolError) as info:
        table.add("one more")
    assert info.value.data == {"limit": MAX_SUBSCRIPTION_BYTES}
    assert "one more" not in table
    table.discard(exact)
    table.discard(exact)
    assert table.size == MAX_SUBSCRIPTION_BYTES - MAX_URI_BYTES
    table.add("one more")
    assert "one more" in table
    for bad in ("", None, 7):
        with pytest.raises(RemoteProtocolError) as info:
            table.add(bad)
        assert info.value.code == -32602


def test_only_what_the_server_offers_is_honoured() -> None:
    asked = read_filter({"notifications": ASKED})
    everything = Subscription.open(1, asked, EVERYTHING)
    assert everything.honoured == asked
    tools_only = Subscription.open(1, asked, {"tools": {"listChanged": True}, "resources": {}})
    assert tools_only.honoured == ListenFilter(frozenset({"toolsListChanged"}))
    ack = tools_only.acknowledgement()
    assert ack["params"] == {
        "notifications": {"toolsListChanged": True},
        "_meta": {SUBSCRIPTION_ID: 1},
    }
    check(ack, MODERN, "SubscriptionsAcknowledgedNotification")


def test_notifications_are_filtered_and_tagged() -> None:
    sub = Subscription.open("listen-7", read_filter({"notifications": ASKED}), EVERYTHING)
    tools = sub.list_changed("tools")
    assert tools == {
        "jsonrpc": "2.0",
        "method": "notifications/tools/list_changed",
        "params": {"_meta": {SUBSCRIPTION_ID: "listen-7"}},
    }
    check(tools, MODERN, "ToolListChangedNotification")
    prompts = sub.list_changed("prompts")
    assert prompts is not None
    check(prompts, MODERN, "PromptListChangedNotification")
    assert sub.list_changed("resources") is None  # asked false
    updated = sub.resource_updated("file:///a")
    assert updated is not None
    assert updated["params"] == {"uri": "file:///a", "_meta": {SUBSCRIPTION_ID: "listen-7"}}
    check(updated, MODERN, "ResourceUpdatedNotification")
    assert sub.resource_updated("file:///c") is None
    assert sub.wants_update("file:///b")
    assert not sub.wants_list_changed("resources")


def test_tag_keeps_other_meta() -> None:
    sub = Subscription(5, ListenFilter())
    tagged = sub.tag("notifications/message", {"level": "info", "data": 1, "_meta": {"k": "v"}})
    assert tagged["params"]["_meta"] == {"k": "v", SUBSCRIPTION_ID: 5}


def test_the_graceful_end_is_a_tagged_result() -> None:
    sub = Subscription(9, ListenFilter())
    result = sub.closing_result({"name": "s", "version": "1"})
    assert result["_meta"] == {SUBSCRIPTION_ID: 9, SERVER_INFO: {"name": "s", "version": "1"}}
    check(result, MODERN, "SubscriptionsListenResult")
    check({"jsonrpc": "2.0", "id": 9, "result": result}, MODERN, "JSONRPCResultResponse")
