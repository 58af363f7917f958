"""Discovery of plugins through the ``mcpactor.servers`` entry-point group."""

from __future__ import annotations

import sys

import pytest

from mcpactor import PluginError, Server
from mcpactor.plugins import GROUP, discover, load_plugin, plugin_names

from .conftest import Site

RAISES = """
import json
raise RuntimeError("the plugin's import is broken")
"""

NOT_A_SERVER = """
server = 42
"""


def install_mixed(site: Site) -> None:
    site.install_plugin("alpha")
    site.install(
        "throwaway-broken",
        "0.9",
        entry_points={"broken": "throwaway_broken:server"},
        modules={"throwaway_broken": RAISES},
    )
    site.install(
        "throwaway-odd",
        "2.0",
        entry_points={"odd": "throwaway_odd:server"},
        modules={"throwaway_odd": NOT_A_SERVER},
    )
    site.install_plugin("beta")


def test_a_plugin_is_found_with_its_distribution_and_version(site: Site) -> None:
    site.install_plugin("alpha")
    (plugin,) = discover(["alpha"])
    assert plugin.name == "alpha"
    assert plugin.value == "throwaway_alpha:server"
    assert plugin.distribution == "throwaway-alpha"
    assert plugin.version == "3.1.4"
    assert plugin.origin == "throwaway-alpha 3.1.4"
    assert plugin.error is None
    assert isinstance(plugin.server, Server)
    assert plugin.server.name == "alpha"
    assert load_plugin("alpha") is plugin.server


def test_every_installed_plugin_is_discovered_sorted(site: Site) -> None:
    install_mixed(site)
    plugins = {plugin.name: plugin for plugin in discover()}
    assert {"alpha", "beta", "broken", "odd"} <= set(plugins)
    ours = [name for name in plugins if name in {"alpha", "beta", "broken", "odd"}]
    assert ours == ["alpha", "beta", "broken", "odd"]
    assert plugins["alpha"].loaded
    assert plugins["beta"].loaded


def test_a_plugin_whose_import_raises_is_reported_and_the_others_load(site: Site) -> None:
    install_mixed(site)
    plugins = {plugin.name: plugin for plugin in discover(["alpha", "broken", "beta"])}
    broken = plugins["broken"]
    assert broken.server is None
    assert isinstance(broken.error, PluginError)
    assert broken.error.entry_point == "broken"
    assert broken.error.distribution == "throwaway-broken"
    assert str(broken.error).splitlines() == [
        "plugin 'broken' failed to load",
        f"  entry point: broken = throwaway_broken:server (group {GROUP})",
        "  distribution: throwaway-broken 0.9",
        "  cause: importing it raised RuntimeError: the plugin's import is broken",
    ]
    assert isinstance(broken.error.__cause__, RuntimeError)
    assert plugins["alpha"].loaded
    assert plugins["beta"].loaded


def test_a_plugin_that_is_not_a_server_is_reported(site: Site) -> None:
    install_mixed(site)
    (odd,) = discover(["odd"])
    assert odd.server is None
    assert odd.error is not None
    lines = str(odd.error).splitlines()
    assert lines[0] == "plugin 'odd' is not a Server"
    assert lines[2] == "  distribution: throwaway-odd 2.0"
    assert lines[3] == "  cause: expected a mcpactor.Server, got int (42)"
    with pytest.raises(PluginError, match="plugin 'odd' is not a Server"):
        load_plugin("odd")


def test_a_name_declared_by_two_distributions_is_refused_naming_both(site: Site) -> None:
    site.install_plugin("twin", distribution="first-dist")
    site.install(
        "second-dist",
        "7.0",
        entry_points={"twin": "throwaway_twin2:server"},
        modules={"throwaway_twin2": "raise AssertionError('must not be imported')"},
    )
    (twin,) = discover(["twin"])
    assert twin.server is None
    assert twin.error is not None
    message = str(twin.error)
    assert "plugin 'twin' is declared twice" in message
    assert "first-dist 3.1.4" in message
    assert "second-dist 7.0 also declares twin = throwaway_twin2:server" in message
    assert "throwaway_twin2" not in sys.modules


def test_a_plugin_that_is_not_installed_is_reported_with_what_is(site: Site) -> None:
    site.install_plugin("alpha")
    (missing,) = discover(["nope"])
    assert missing.server is None
    assert missing.error is not None
    assert str(missing.error).startswith("plugin 'nope' is not installed\n")
    assert "alpha" in str(missing.error)
    with pytest.raises(PluginError, match="'nope' is not installed"):
        load_plugin("nope")


def test_listing_names_imports_nothing(site: Site) -> None:
    install_mixed(site)
    assert {"alpha", "beta", "broken", "odd"} <= set(plugin_names())
    assert not {"throwaway_alpha", "throwaway_broken"} & set(sys.modules)


def test_a_plugin_in_another_group_is_not_a_server_plugin(site: Site) -> None:
    site.install_plugin("alpha")
    assert discover(group="mcpactor.other") == []
