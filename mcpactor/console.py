"""The console script of a plugin: ``uvx DISTRIBUTION`` serves the plugin it installs.

MCP clients launch a PyPI package as ``uvx DISTRIBUTION`` (the registry's
``runtimeHint``), which runs the console script named after the distribution. A plugin
declares one that calls ``serve_plugin`` with its entry-point name::

    [project.scripts]
    mcpactor-weather = "mcpactor_weather.__main__:main"

    # src/mcpactor_weather/__main__.py
    def main() -> int:
        return serve_plugin("weather")

so that ``mcpactor-weather ARGS...`` is ``mcpactor serve weather ARGS...``: stdio by
default, ``--http 8000`` and every other option of ``serve`` as they are there.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

__all__ = ["serve_plugin"]


def serve_plugin(name: str, argv: Sequence[str] | None = None) -> int:
    """Serve the plugin ``name`` as ``mcpactor serve NAME ARGS...`` does; return the exit status.

    Every argument is ``serve``'s (``--http 8000``, ``--log-level debug``; another
    plugin's name serves both, each under its prefix). ``--version`` alone prints the
    plugin's distribution and version, and ``--help`` says whose options follow.

    Args:
        name: the plugin's entry-point name in the ``mcpactor.servers`` group
        argv: the arguments after the script's name (default: ``sys.argv[1:]``)
    """
    from .cli import main

    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments == ["--version"]:
        from ._version import __version__
        from .plugins import discover

        (plugin,) = discover([name])
        print(f"{plugin.origin} (the plugin {name!r} of mcpactor {__version__})")
        return 0
    if "-h" in arguments or "--help" in arguments:
        # The help that follows is serve's: say whose options they are.
        print(f"Serves the mcpactor plugin {name!r} as `mcpactor serve {name}` does; every")
        print("option below is serve's, and a TARGET given is served beside it.\n")
    return main(["serve", name, *arguments])
