"""The console script: serve the skills server as ``mcpactor serve skills`` does.

``mcpactor-skills`` (and ``python -m mcpactor_skills``) serves it over stdio;
every option of ``mcpactor serve`` applies, e.g. ``--http 8000``.
"""

from __future__ import annotations

from mcpactor.console import serve_plugin


def main() -> int:
    """Serve the plugin as the command line says; return the exit status."""
    return serve_plugin("skills")


if __name__ == "__main__":
    raise SystemExit(main())
