"""Discovery of plugins through the ``mcpactor.servers`` entry-point group."""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

import pytest

from mcpactor import PluginError, Server, plugins
from mcpactor.plugins import GROUP, discover, load_plugin, plugin_names

from .conftest import GOOD_PLUGIN, Site

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
        "  cause: importing it raised RuntimeError: the plugin's import is broken "
        f"({site.root / 'throwaway_broken' / '__init__.py'}:3, in <module>)",
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


# --- the quick scan of sys.path and importlib.metadata agree ----------------------------


def _through_importlib(group: str) -> list[tuple[str, str, tuple[str | None, str | None]]]:
    import importlib.metadata

    return [
        (entry.name, entry.value, plugins._identify(entry))
        for entry in importlib.metadata.entry_points(group=group)
    ]


def _through_scan(group: str) -> list[tuple[str, str, tuple[str | None, str | None]]]:
    entries = plugins._scan(group)
    assert entries is not None
    return [(entry.name, entry.value, entry.identify()) for entry in entries]


def test_the_quick_scan_finds_what_importlib_metadata_finds(
    site: Site, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_mixed(site)
    site.install_plugin("twin", distribution="first-dist")
    site.install(
        "Second.Dist",
        "7.0",
        entry_points={"twin": "throwaway_twin2:server", "extra": "throwaway_twin2:other.attr"},
        modules={"throwaway_twin2": ""},
    )
    info = site.root / "Second.Dist-7.0.dist-info"
    (info / "entry_points.txt").write_text(
        "# a comment\n[console_scripts]\ntool = x:main\n\n"
        + (info / "entry_points.txt").read_text()
        + "[mcpactor.other]\nelse = y:z\n"
    )
    # a second copy of an installed distribution later on sys.path is not looked at
    later = tmp_path / "later"
    (later / "throwaway_alpha-9.9.dist-info").mkdir(parents=True)
    (later / "throwaway_alpha-9.9.dist-info" / "entry_points.txt").write_text(
        "[mcpactor.servers]\nshadowed = nowhere:server\n"
    )
    monkeypatch.syspath_prepend(str(later))
    monkeypatch.syspath_prepend(str(site.root))
    for group in (GROUP, "console_scripts", "mcpactor.other"):
        assert _through_scan(group) == _through_importlib(group)
    assert "shadowed" not in plugin_names()


def test_a_zip_on_sys_path_is_searched_by_importlib_metadata(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    archive = tmp_path / "plugins.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("throwaway_zipped/__init__.py", GOOD_PLUGIN.format(name="zipped"))
        zipped.writestr(
            "throwaway_zipped-1.0.dist-info/METADATA", "Name: throwaway-zipped\nVersion: 1.0\n"
        )
        zipped.writestr(
            "throwaway_zipped-1.0.dist-info/entry_points.txt",
            "[mcpactor.servers]\nzipped = throwaway_zipped:server\n",
        )
    monkeypatch.syspath_prepend(str(archive))
    monkeypatch.delitem(sys.modules, "throwaway_zipped", raising=False)
    assert plugins._scan(GROUP) is None
    (plugin,) = discover(["zipped"])
    assert plugin.origin == "throwaway-zipped 1.0"
    assert isinstance(plugin.server, Server)
    sys.modules.pop("throwaway_zipped", None)


def test_a_malformed_entry_points_file_is_left_to_importlib_metadata(site: Site) -> None:
    site.install_plugin("alpha")
    info = site.root / "throwaway_alpha-3.1.4.dist-info"
    (info / "entry_points.txt").write_text("[mcpactor.servers]\nalpha = not a reference\n")
    assert plugins._scan(GROUP) is None
    (alpha,) = discover(["alpha"])
    assert alpha.error is not None
    assert "failed to load" in str(alpha.error)
