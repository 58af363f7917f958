"""The console script: serve the knowledge graph as ``mcpactor serve memory`` does.

``mcpactor-memory`` (and ``python -m mcpactor_memory``) serves it over stdio;
every option of ``mcpactor serve`` applies, e.g. ``--http 8000``.
"""

from __future__ import annotations

from mcpactor.console import serve_plugin


def main() -> int:
    """Serve the plugin as the command line says; return the exit status."""
    return serve_plugin("memory")


if __name__ == "__main__":
    raise SystemExit(main())
