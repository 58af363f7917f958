"""The plugin as installed: its entry point names its server."""

from mcpactor_weather import server

# --8<-- [start:sample]
from mcpactor.plugins import discover, load_plugin


def test_the_entry_point_names_the_server() -> None:
    assert load_plugin("weather") is server
    (plugin,) = discover(["weather"])
    assert plugin.distribution == "mcpactor-weather"


# --8<-- [end:sample]
