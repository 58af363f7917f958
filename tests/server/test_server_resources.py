"""Resources and resource templates: registration, listing, reading, subscriptions."""

from __future__ import annotations

import base64
import enum
import re
import threading
from typing import Any

import pytest

from mcpactor import (
    Annotations,
    BlobResourceContents,
    Context,
    Icon,
    RequestError,
    SchemaError,
    TextResourceContents,
)
from mcpactor.protocol import LATEST as LATEST_REVISION
from mcpactor.server import Server

from .conftest import PNG, FakePeer, RecordingListener, call, call_error

# --- reading static resources ----------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "mime_type", "contents"),
    [
        ("hello", None, [{"uri": "memo://x", "text": "hello", "mimeType": "text/plain"}]),
        (
            "# Title",
            "text/markdown",
            [{"uri": "memo://x", "text": "# Title", "mimeType": "text/markdown"}],
        ),
        (
            PNG,
            None,
            [{"uri": "memo://x", "blob": base64.b64encode(PNG).decode(), "mimeType": "image/png"}],
        ),
        (
            b"\x00\x01",
            None,
            [{"uri": "memo://x", "blob": "AAE=", "mimeType": "application/octet-stream"}],
        ),
        (
            b"%PDF-1.7",
            "application/pdf",
            [{"uri": "memo://x", "blob": "JVBERi0xLjc=", "mimeType": "application/pdf"}],
        ),
        (
            {"a": [1, 2]},
            None,
            [{"uri": "memo://x", "text": '{"a":[1,2]}', "mimeType": "application/json"}],
        ),
        (
            ["part one", b"\x00"],
            None,
            [
                {"uri": "memo://x", "text": "part one", "mimeType": "text/plain"},
                {"uri": "memo://x", "blob": "AA==", "mimeType": "application/octet-stream"},
            ],
        ),
        (
            TextResourceContents(uri="memo://x#section", text="body", mime_type="text/csv"),
            None,
            [{"uri": "memo://x#section", "text": "body", "mimeType": "text/csv"}],
        ),
        (
            [
                TextResourceContents(uri="memo://x/a", text="a"),
                BlobResourceContents(uri="memo://x/b", blob="AA=="),
            ],
            None,
            [{"uri": "memo://x/a", "text": "a"}, {"uri": "memo://x/b", "blob": "AA=="}],
        ),
    ],
)
async def test_read_static_resource(
    value: Any, mime_type: str | None, contents: list[Any], any_revision: str
) -> None:
    server = Server("s")
    server.add_resource(lambda: value, "memo://x", name="x", mime_type=mime_type)
    result = await call(server, "resources/read", {"uri": "memo://x"}, revision=any_revision)
    assert result == {"contents": contents}


async def test_read_sync_resource_runs_in_a_thread_and_async_does_not() -> None:
    server = Server("s")
    threads: dict[str, int] = {}

    @server.resource("memo://sync")
    def sync_one() -> str:
        threads["sync"] = threading.get_ident()
        return "s"

    @server.resource("memo://async")
    async def async_one() -> str:
        threads["async"] = threading.get_ident()
        return "a"

    peer = FakePeer()
    await call(server, "resources/read", {"uri": "memo://sync"}, peer=peer)
    assert peer.thread_calls == 1
    await call(server, "resources/read", {"uri": "memo://async"}, peer=peer)
    assert peer.thread_calls == 1
    assert threads["async"] == threading.get_ident()
    assert threads["sync"] != threading.get_ident()


async def test_read_resource_handler_gets_context() -> None:
    server = Server("s")
    seen: list[str] = []

    @server.resource("memo://whoami")
    async def whoami(ctx: Context) -> str:
        seen.append(ctx.protocol_version)
        return str(ctx.client_info)

    await call(server, "resources/read", {"uri": "memo://whoami"}, revision="2025-03-26")
    assert seen == ["2025-03-26"]


async def test_read_unknown_uri_is_resource_not_found(any_revision: str) -> None:
    server = Server("s")
    server.add_resource(lambda: "x", "memo://known")
    error = await call_error(
        server, "resources/read", {"uri": "memo://unknown"}, revision=any_revision
    )
    assert error.code == -32002
    assert error.data == {"uri": "memo://unknown"}
    assert "memo://unknown" in error.message


@pytest.mark.parametrize("params", [{}, {"uri": ""}, {"uri": 5}, None])
async def test_read_without_a_uri_is_invalid_params(params: Any) -> None:
    server = Server("s")
    server.add_resource(lambda: "x", "memo://known")
    error = await call_error(server, "resources/read", params)
    assert error.code == -32602


async def test_read_handler_request_error_propagates() -> None:
    server = Server("s")

    @server.resource("memo://gone")
    async def gone() -> str:
        raise RequestError(-32002, "deleted a moment ago", {"uri": "memo://gone"})

    error = await call_error(server, "resources/read", {"uri": "memo://gone"})
    assert (error.code, error.data) == (-32002, {"uri": "memo://gone"})


# --- templates ---------------------------------------------------------------------------


class Format(enum.Enum):
    JSON = "json"
    CSV = "csv"


def _template_server(calls: list[tuple[Any, ...]]) -> Server:
    server = Server("s")

    @server.resource("users://{user_id}/posts/{post_id}", mime_type="application/json")
    def post(user_id: int, post_id: str) -> dict[str, Any]:
        calls.append((user_id, post_id))
        return {"user": user_id, "post": post_id}

    @server.resource("export://{table}.{fmt}")
    async def export(table: str, fmt: Format) -> str:
        calls.append((table, fmt))
        return f"{table} as {fmt.value}"

    @server.resource("search://items{?limit,exact}")
    def search(limit: int = 10, exact: bool = False) -> str:
        calls.append((limit, exact))
        return "found"

    return server


async def test_template_variables_are_coerced_to_parameter_types(any_revision: str) -> None:
    calls: list[tuple[Any, ...]] = []
    server = _template_server(calls)
    result = await call(
        server, "resources/read", {"uri": "users://42/posts/hello%20world"}, revision=any_revision
    )
    assert calls == [(42, "hello world")]
    assert result == {
        "contents": [
            {
                "uri": "users://42/posts/hello%20world",
                "text": '{"user":42,"post":"hello world"}',
                "mimeType": "application/json",
            }
        ]
    }


async def test_template_enum_variable_gets_the_member() -> None:
    calls: list[tuple[Any, ...]] = []
    server = _template_server(calls)
    result = await call(server, "resources/read", {"uri": "export://orders.csv"})
    assert calls == [("orders", Format.CSV)]
    assert result["contents"][0]["text"] == "orders as csv"


async def test_template_optional_query_variables_use_defaults() -> None:
    calls: list[tuple[Any, ...]] = []
    server = _template_server(calls)
    await call(server, "resources/read", {"uri": "search://items"})
    await call(server, "resources/read", {"uri": "search://items?exact=true&limit=3"})
    assert calls == [(10, False), (3, True)]


@pytest.mark.parametrize(
    ("uri", "argument"),
    [
        ("users://forty-two/posts/1", "user_id"),
        ("users://1.5/posts/1", "user_id"),
        ("search://items?limit=many", "limit"),
        ("search://items?exact=perhaps", "exact"),
    ],
)
async def test_template_bad_value_is_invalid_params(uri: str, argument: str) -> None:
    calls: list[tuple[Any, ...]] = []
    error = await call_error(_template_server(calls), "resources/read", {"uri": uri})
    assert error.code == -32602
    assert error.data["argument"] == argument
    assert repr(argument) in error.message
    assert calls == []


async def test_template_value_outside_enum_is_invalid_params() -> None:
    calls: list[tuple[Any, ...]] = []
    error = await call_error(
        _template_server(calls), "resources/read", {"uri": "export://orders.xml"}
    )
    assert error.code == -32602
    assert error.data == {
        "errors": [{"path": "/fmt", "message": "'xml' is not one of ['json', 'csv']"}]
    }
    assert calls == []


async def test_static_resource_wins_over_a_matching_template() -> None:
    server = Server("s")
    server.add_resource(lambda name: f"template {name}", "files://{name}", name="any")
    server.add_resource(lambda: "static", "files://readme", name="readme")
    fixed = await call(server, "resources/read", {"uri": "files://readme"})
    other = await call(server, "resources/read", {"uri": "files://notes"})
    assert fixed["contents"][0]["text"] == "static"
    assert other["contents"][0]["text"] == "template notes"


# --- registration errors -------------------------------------------------------------------


def test_template_variable_without_parameter_is_refused() -> None:
    server = Server("s")
    with pytest.raises(SchemaError, match=r"has no parameter for 'post_id'"):
        server.add_resource(lambda user_id: "", "users://{user_id}/posts/{post_id}")


def test_template_required_parameter_that_is_no_variable_is_refused() -> None:
    server = Server("s")

    def read(user_id: str, token: str) -> str:
        return ""

    with pytest.raises(SchemaError, match=r"parameters \['token'\] of read\(\)"):
        server.add_resource(read, "users://{user_id}")


def test_static_resource_with_required_parameter_is_refused() -> None:
    server = Server("s")

    def read(path: str) -> str:
        return path

    with pytest.raises(SchemaError, match="use a URI template"):
        server.add_resource(read, "files://fixed")


def test_static_resource_with_optional_parameter_is_accepted() -> None:
    server = Server("s")

    def read(encoding: str = "utf-8") -> str:
        return encoding

    server.add_resource(read, "files://fixed")
    assert "resources" in server.capabilities(LATEST_REVISION)


@pytest.mark.parametrize("uri", ["memo://x", "memo://{x}"])
def test_duplicate_resource_uri_is_refused(uri: str) -> None:
    server = Server("s")
    server.add_resource(lambda x="": "", uri)
    with pytest.raises(SchemaError, match="already registered"):
        server.add_resource(lambda x="": "", uri)


def test_malformed_template_is_a_schema_error() -> None:
    server = Server("s")
    with pytest.raises(SchemaError, match=re.escape("resource template 'memo://{!x}'")):
        server.add_resource(lambda x: "", "memo://{!x}")


# --- listing -------------------------------------------------------------------------------


def _described_server() -> Server:
    server = Server("s")
    icon = Icon(src="data:image/png;base64,AA==", mime_type="image/png")

    @server.resource(
        "docs://guide",
        name="guide",
        title="User guide",
        description="How to use it.",
        mime_type="text/markdown",
        size=1234,
        annotations=Annotations(audience=["user"], priority=0.5),
        icons=[icon],
        meta={"example.com/v": 2},
    )
    def guide() -> str:
        return "# Guide"

    @server.resource(
        "docs://pages/{page}",
        name="page",
        title="A page",
        mime_type="text/markdown",
        icons=[icon],
        meta={"example.com/v": 2},
    )
    def page(page: str) -> str:
        """One page of the docs."""
        return page

    return server


_RESOURCE_FIELDS = {
    "2024-11-05": {"uri", "name", "description", "mimeType", "size", "annotations"},
    "2025-03-26": {"uri", "name", "description", "mimeType", "size", "annotations"},
    "2025-06-18": {
        "uri",
        "name",
        "title",
        "description",
        "mimeType",
        "size",
        "annotations",
        "_meta",
    },
    "2025-11-25": {
        "uri",
        "name",
        "title",
        "description",
        "mimeType",
        "size",
        "annotations",
        "icons",
        "_meta",
    },
}


async def test_resources_list_prunes_fields_per_revision(any_revision: str) -> None:
    result = await call(_described_server(), "resources/list", revision=any_revision)
    [resource] = result["resources"]
    assert set(resource) == _RESOURCE_FIELDS[any_revision]
    assert resource["uri"] == "docs://guide"
    assert resource["annotations"] == {"audience": ["user"], "priority": 0.5}
    assert resource["size"] == 1234
    assert "nextCursor" not in result


async def test_resource_templates_list_prunes_fields_per_revision(any_revision: str) -> None:
    result = await call(_described_server(), "resources/templates/list", revision=any_revision)
    [template] = result["resourceTemplates"]
    expected = {"uriTemplate", "name", "description", "mimeType"}
    if any_revision >= "2025-06-18":
        expected |= {"title", "_meta"}
    if any_revision >= "2025-11-25":
        expected |= {"icons"}
    assert set(template) == expected
    assert template["uriTemplate"] == "docs://pages/{page}"
    assert template["description"] == "One page of the docs."


async def test_templates_list_is_empty_with_only_static_resources() -> None:
    server = Server("s")
    server.add_resource(lambda: "", "memo://x", name="x")
    result = await call(server, "resources/templates/list")
    assert result == {"resourceTemplates": []}


async def test_remove_resource_and_template() -> None:
    server = _described_server()
    listener = RecordingListener()
    server.listeners.add(listener)
    server.remove_resource("docs://guide")
    server.remove_resource("docs://pages/{page}")
    assert listener.changes == ["resources", "resources"]
    assert "resources" not in server.capabilities(LATEST_REVISION)
    with pytest.raises(KeyError):
        server.remove_resource("docs://guide")


# --- subscriptions --------------------------------------------------------------------------


async def test_subscribe_and_unsubscribe_call_the_peer(any_revision: str) -> None:
    server = _described_server()
    peer = FakePeer()
    assert server.capabilities(LATEST_REVISION)["resources"]["subscribe"] is True
    result = await call(
        server, "resources/subscribe", {"uri": "docs://guide"}, peer=peer, revision=any_revision
    )
    assert result == {}
    # A URI served by a template can be subscribed to as well.
    await call(
        server,
        "resources/subscribe",
        {"uri": "docs://pages/intro"},
        peer=peer,
        revision=any_revision,
    )
    assert peer.subscriptions == {"docs://guide", "docs://pages/intro"}
    result = await call(
        server, "resources/unsubscribe", {"uri": "docs://guide"}, peer=peer, revision=any_revision
    )
    assert result == {}
    assert peer.subscriptions == {"docs://pages/intro"}
    # Each change was announced before its answer, for a session shared by replicas.
    assert peer.subscription_changes == 3
    assert peer.unsubscribed == ["docs://guide"]


async def test_subscribe_to_unknown_uri_is_resource_not_found(any_revision: str) -> None:
    peer = FakePeer()
    error = await call_error(
        _described_server(),
        "resources/subscribe",
        {"uri": "docs://nowhere/at/all"},
        peer=peer,
        revision=any_revision,
    )
    assert error.code == -32002
    assert error.data == {"uri": "docs://nowhere/at/all"}
    assert peer.subscriptions == set()


async def test_subscribe_without_uri_is_invalid_params() -> None:
    for method in ("resources/subscribe", "resources/unsubscribe"):
        error = await call_error(_described_server(), method, {})
        assert error.code == -32602


def test_notify_resource_updated_reaches_listeners() -> None:
    server = _described_server()
    first, second = RecordingListener(), RecordingListener()
    server.listeners.add(first)
    server.listeners.add(second)
    server.notify_resource_updated("docs://guide")
    server.listeners.discard(second)
    server.listeners.discard(second)  # removing twice is harmless
    server.notify_resource_updated("docs://pages/a")
    assert first.updated == ["docs://guide", "docs://pages/a"]
    assert second.updated == ["docs://guide"]
