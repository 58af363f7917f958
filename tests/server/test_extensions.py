"""Extensions: the value, enabling, refusals, requirements and capabilities in both eras."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest

import mcpactor.testing
from mcpactor import (
    CustomMethod,
    CustomNotification,
    Extension,
    ExtensionError,
    SchemaError,
    Server,
)
from mcpactor.protocol import CORE_METHODS, REVISIONS
from mcpactor.server import Context, Extensions
from mcpactor.server._stateless import discover_result

from .test_stateless import envelope_context


async def echo(params: dict[str, Any], ctx: Context) -> dict[str, Any]:
    return {"echo": params.get("text", "")}


def search(**kwargs: Any) -> Extension:
    return Extension(
        "com.example/search",
        settings={"ranking": True},
        methods=[CustomMethod("com.example/search", echo)],
        description="Search the catalogue.",
        **kwargs,
    )


def with_tool(server: Server) -> Server:
    @server.tool
    def ping_me() -> str:
        return "pong"

    return server


# --- the value --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "identifier",
    ["com.example/search", "io.modelcontextprotocol/ui", "a/b", "x-y.z2/name_1.v2", "a/9"],
)
def test_identifiers_of_sep_2133_are_taken(identifier: str) -> None:
    assert Extension(identifier).identifier == identifier


@pytest.mark.parametrize(
    "identifier",
    [
        "search",
        "/search",
        "com.example/",
        "com..example/x",
        "1com/x",
        "com-/x",
        "com/x-",
        "com/x y",
        "com/x/y",
        "",
        "a" * 300 + "/x",
        42,
    ],
)
def test_an_identifier_without_vendor_prefix_and_name_is_refused(identifier: Any) -> None:
    with pytest.raises(ExtensionError, match="invalid extension identifier"):
        Extension(identifier)


def test_the_value_is_frozen_and_holds_what_it_declares() -> None:
    ext = search(requires=["tools", "io.modelcontextprotocol/ui"])
    assert ext.settings == {"ranking": True}
    assert ext.requires == ("tools", "io.modelcontextprotocol/ui")
    assert ext.method_names() == ("com.example/search",)
    with pytest.raises(AttributeError):
        ext.identifier = "com.example/other"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"settings": [1]}, "settings must be a JSON object"),
        ({"settings": {"x": object()}}, "settings must be JSON"),
        ({"requires": ["com.example/"]}, "invalid requirement"),
        ({"requires": ["no way"]}, "invalid requirement"),
        ({"methods": ["com.example/x"]}, "must be CustomMethod"),
        (
            {
                "methods": [CustomMethod("com.example/x", echo)],
                "notifications": [CustomNotification("com.example/x")],
            },
            "names a method twice",
        ),
    ],
)
def test_a_malformed_declaration_is_refused(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ExtensionError, match=message):
        Extension("com.example/x", **kwargs)


def test_a_method_schema_is_compiled_when_declared() -> None:
    with pytest.raises(SchemaError, match="params schema"):
        CustomMethod("com.example/x", echo, params_schema={"type": 12})
    with pytest.raises(ExtensionError, match=r"rpc\."):
        CustomNotification("rpc.x")


# --- enabling ---------------------------------------------------------------------------


def test_enabled_from_the_constructor_and_later_in_order() -> None:
    other = Extension("org.other/audit")
    server = Server("s", extensions=[search()])
    server.extensions.enable(other)
    assert isinstance(server.extensions, Extensions)
    assert [e.identifier for e in server.extensions] == ["com.example/search", "org.other/audit"]
    assert "org.other/audit" in server.extensions
    assert other in server.extensions
    assert Extension("org.other/audit", settings={"x": 1}) not in server.extensions
    assert len(server.extensions) == 2
    assert server.extensions["com.example/search"].settings == {"ranking": True}


def test_a_duplicate_identifier_is_refused() -> None:
    server = Server("s", extensions=[search()])
    with pytest.raises(ExtensionError, match=r"com\.example/search is already enabled"):
        server.extensions.enable(Extension("com.example/search"))


@pytest.mark.parametrize("method", sorted(CORE_METHODS | {"tasks/update", "notifications/tasks"}))
def test_a_core_method_is_refused_as_request_and_as_notification(method: str) -> None:
    server = Server("s")
    for ext in (
        Extension("com.example/x", methods=[CustomMethod(method, echo)]),
        Extension("com.example/x", notifications=[CustomNotification(method)]),
    ):
        with pytest.raises(ExtensionError, match="core MCP method"):
            server.extensions.enable(ext)
    assert len(server.extensions) == 0


def test_the_core_methods_cover_every_revision() -> None:
    for row in REVISIONS.values():
        assert row.client_requests <= CORE_METHODS
        assert row.server_requests <= CORE_METHODS
    assert {"ping", "server/discover", "notifications/roots/list_changed"} <= CORE_METHODS


def test_a_method_another_extension_registered_is_refused_either_way() -> None:
    server = Server("s", extensions=[search()])
    clash = Extension(
        "org.other/x",
        methods=[CustomMethod("org.other/fine", echo)],
        notifications=[CustomNotification("com.example/search")],
    )
    with pytest.raises(ExtensionError, match=r"com\.example/search registered it first"):
        server.extensions.enable(clash)
    assert "org.other/x" not in server.extensions
    assert "org.other/fine" not in server.extensions.requests
    assert "org.other/fine" not in server._methods


def test_a_failing_setup_leaves_nothing_registered() -> None:
    def setup(server: Server) -> None:
        @server.tool
        def half() -> str:
            return "half"

        @server.resource("mem://half")
        def half_resource() -> str:
            return "half"

        server.on_roots_changed(lambda ctx: None)
        raise RuntimeError("setup broke")

    server = with_tool(Server("s"))
    ext = Extension(
        "com.example/broken", methods=[CustomMethod("com.example/m", echo)], setup=setup
    )
    with pytest.raises(RuntimeError, match="setup broke"):
        server.extensions.enable(ext)
    assert list(server.extensions) == []
    assert set(server._registry.tools) == {"ping_me"}
    assert server._registry.resources == {}
    assert server.roots_changed_hooks == []
    assert "com.example/m" not in server._methods
    # …and it may be enabled again once it is fixed.
    server.extensions.enable(Extension("com.example/broken"))


def test_setup_registers_what_the_extension_needs() -> None:
    def setup(server: Server) -> None:
        assert "com.example/ui" in server.extensions

        @server.resource("ui://widget", mime_type="text/html")
        def widget() -> str:
            return "<p>hi</p>"

    server = Server("s", extensions=[Extension("com.example/ui", setup=setup)])
    assert "ui://widget" in server._registry.resources


def test_the_extensions_of_a_mounted_server_clash_with_the_parents_at_mount() -> None:
    parent = Server("parent", extensions=[search()])
    child = Server("child", extensions=[search()])
    with pytest.raises(ExtensionError, match="enabled twice"):
        parent.mount(child, "c")
    assert parent.mounts == ()
    other = Server(
        "other",
        extensions=[Extension("org.o/x", methods=[CustomMethod("com.example/search", echo)])],
    )
    with pytest.raises(ExtensionError, match="registered by extensions"):
        parent.mount(other, "o")


# --- requirements -----------------------------------------------------------------------


async def test_requirements_are_met_by_the_final_configuration_in_any_order() -> None:
    server = Server("s", extensions=[search(requires=["tools", "org.other/audit"])])
    # Both arrive after the extension that needs them.
    with_tool(server)
    server.extensions.enable(Extension("org.other/audit"))
    async with server.running():
        pass


@pytest.mark.parametrize(
    ("requires", "missing"),
    [
        (["tools"], "the 'tools' capability"),
        (["resources.subscribe"], "the 'resources.subscribe' capability"),
        (["org.other/audit"], "extension org.other/audit"),
    ],
)
async def test_a_missing_requirement_fails_start_naming_it(
    requires: list[str], missing: str
) -> None:
    started = False
    server = Server("s", extensions=[search(requires=requires)])

    @server.lifespan
    @contextlib.asynccontextmanager
    async def lifespan(server: Server) -> AsyncIterator[None]:
        nonlocal started
        started = True
        yield

    with pytest.raises(ExtensionError) as info:
        async with server.running():
            pass
    assert f"extension com.example/search requires {missing}" in str(info.value)
    assert not started


async def test_a_mounted_servers_extensions_count_for_requirements() -> None:
    child = with_tool(Server("child", extensions=[Extension("org.other/audit")]))
    parent = Server("parent", extensions=[search(requires=["tools", "org.other/audit"])])
    parent.mount(child, "c")
    async with parent.running():
        pass
    # A child's requirement met by the parent: checked in the parent's tree, so the
    # child is not marked failed.
    needy = Server("needy", extensions=[Extension("org.n/x", requires=["com.example/search"])])
    top = Server("top", extensions=[search()])
    mount = top.mount(needy, "n")
    async with top.running():
        assert mount.state == "running"


async def test_a_mounted_servers_missing_requirement_fails_the_parents_start() -> None:
    child = Server("child", extensions=[Extension("org.n/x", requires=["prompts"])])
    parent = with_tool(Server("parent"))
    parent.mount(child, "c")
    with pytest.raises(ExtensionError, match=r"org\.n/x requires the 'prompts' capability"):
        async with parent.running():
            pass


# --- capabilities -----------------------------------------------------------------------


def extensions_at(server: Server, version: str) -> Any:
    return server.capabilities(REVISIONS[version]).get("extensions")


def test_capabilities_carry_the_settings_where_the_revision_declares_extensions() -> None:
    server = with_tool(Server("s", extensions=[search(), Extension("org.other/audit")]))
    expected = {"com.example/search": {"ranking": True}, "org.other/audit": {}}
    assert extensions_at(server, "2025-11-25") == expected
    assert extensions_at(server, "2026-07-28") == expected
    for version in ("2024-11-05", "2025-03-26", "2025-06-18"):
        assert extensions_at(server, version) is None
    assert extensions_at(with_tool(Server("plain")), "2025-11-25") is None


def test_a_mounted_servers_extensions_merge_into_the_parents() -> None:
    parent = with_tool(Server("parent", extensions=[search()]))
    parent.mount(Server("child", extensions=[Extension("org.other/audit", settings={"a": 1})]))
    assert extensions_at(parent, "2025-11-25") == {
        "com.example/search": {"ranking": True},
        "org.other/audit": {"a": 1},
    }


async def test_the_initialize_result_declares_them() -> None:
    server = with_tool(Server("s", extensions=[search()]))
    async with mcpactor.testing.client(server, protocol_version="2025-11-25") as client:
        capabilities = client.server.capabilities
    assert capabilities["extensions"] == {"com.example/search": {"ranking": True}}


def test_discover_declares_them_beside_the_tasks_extension() -> None:
    server = Server("s", extensions=[search()])

    @server.tool(task_support="optional")
    async def slow() -> str:
        return "done"

    # Any host will do: discovery only asks whether there is one.
    host: Any = object()
    result = discover_result(server, REVISIONS["2026-07-28"], tasks=host)
    declared = result["capabilities"]["extensions"]
    assert declared["com.example/search"] == {"ranking": True}
    assert "io.modelcontextprotocol/tasks" in declared


def test_discover_declares_them() -> None:
    server = with_tool(Server("s", extensions=[search()]))
    result = discover_result(server, REVISIONS["2026-07-28"])
    assert result["capabilities"]["extensions"] == {"com.example/search": {"ranking": True}}
    ctx = envelope_context(server, {"extensions": {"com.example/search": {}}})
    assert ctx.client_capabilities["extensions"] == {"com.example/search": {}}
