"""The public API: what ``mcpactor`` exports, and that it says where it lives."""

from __future__ import annotations

import importlib

import pytest

import mcpactor

PUBLIC_MODULES = [
    "mcpactor",
    "mcpactor.protocol",
    "mcpactor.server",
    "mcpactor.runtime",
    "mcpactor.ext.apps",
    "mcpactor.middleware",
    "mcpactor.transform",
    "mcpactor.openapi",
]


@pytest.mark.parametrize("module_name", PUBLIC_MODULES)
def test_all_names_exist(module_name: str) -> None:
    module = importlib.import_module(module_name)
    missing = [name for name in module.__all__ if not hasattr(module, name)]
    assert missing == []
    assert sorted(module.__all__) == sorted(set(module.__all__))


def test_top_level_names_report_public_module() -> None:
    for name in mcpactor.__all__:
        obj = getattr(mcpactor, name)
        if isinstance(obj, type) or callable(obj):
            assert getattr(obj, "__module__", "mcpactor") == "mcpactor", name


@pytest.mark.parametrize(
    "name", ["Server", "Context", "ToolError", "RequestError", "check_cancelled"]
)
def test_core_api_is_exported(name: str) -> None:
    assert name in mcpactor.__all__


def test_public_api_has_docstrings() -> None:
    undocumented = [
        name
        for name in mcpactor.__all__
        if callable(getattr(mcpactor, name))
        and not (getattr(mcpactor, name).__doc__ or "").strip()
    ]
    assert undocumented == []


def test_version_is_a_string() -> None:
    assert isinstance(mcpactor.__version__, str)
    assert mcpactor.__version__.count(".") >= 2


@pytest.mark.parametrize("name", ["CacheHint", "Header", "InputRequired"])
def test_the_stateless_revisions_api_is_exported(name: str) -> None:
    assert name in mcpactor.__all__
    assert getattr(mcpactor, name) is getattr(mcpactor.server, name)
    assert name in mcpactor.server.__all__


def test_the_task_host_protocol_is_exported_by_the_server_layer() -> None:
    from mcpactor.server import TaskHost
    from mcpactor.server._tasks import TaskHost as defined

    assert TaskHost is defined
    assert "TaskHost" in mcpactor.server.__all__


@pytest.mark.parametrize("name", ["ClientTasks", "NotificationInbox", "RemoteLink", "ServerView"])
def test_the_clients_feature_objects_are_exported(name: str) -> None:
    import mcpactor.client

    assert name in mcpactor.client.__all__
    assert getattr(mcpactor.client, name).__module__ == "mcpactor.client"


@pytest.mark.parametrize(
    "name", ["Extension", "CustomMethod", "CustomNotification", "ExtensionError"]
)
def test_the_extension_points_are_exported(name: str) -> None:
    assert name in mcpactor.__all__
    assert getattr(mcpactor, name).__module__ == "mcpactor"
    if name != "ExtensionError":
        assert getattr(mcpactor, name) is getattr(mcpactor.server, name)
        assert name in mcpactor.server.__all__


def test_the_middleware_api_is_documented_and_every_server_has_a_chain() -> None:
    import mcpactor.middleware as middleware

    undocumented = [
        name
        for name in middleware.__all__
        if isinstance(getattr(middleware, name), type)
        and not (getattr(middleware, name).__doc__ or "").strip()
    ]
    assert undocumented == []
    assert isinstance(mcpactor.Server("x").middleware, middleware.MiddlewareChain)
    assert middleware.Call is mcpactor.server.Call
