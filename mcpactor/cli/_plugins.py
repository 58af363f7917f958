"""``mcpactor plugins``: the installed plugins, as a table or as JSON."""

from __future__ import annotations

import argparse
import json

__all__ = ["plugins"]


def plugins(args: argparse.Namespace) -> int:
    """List the installed plugins as ``args`` say; return the exit status."""
    from ..plugins import _listing, discover

    rows = _listing(discover())
    failed = any(row["error"] for row in rows)
    if args.json:
        print(json.dumps(rows, indent=2))
        return 1 if failed and args.strict else 0
    if not rows:
        print("no plugins installed (entry-point group mcpactor.servers)")
        return 0
    header = ("NAME", "DISTRIBUTION", "VERSION", "TOOLS", "RESOURCES", "PROMPTS")
    table = [header] + [
        (
            str(row["name"]),
            str(row["distribution"] or "?"),
            str(row["version"] or "?"),
            *(str(row.get(kind, "-")) for kind in ("tools", "resources", "prompts")),
        )
        for row in rows
    ]
    widths = [max(len(line[i]) for line in table) for i in range(len(header))]
    for line, row in zip(table, [None, *rows], strict=True):
        cells = (cell.ljust(width) for cell, width in zip(line, widths, strict=True))
        print("  ".join(cells).rstrip())
        if row is not None and row["error"]:
            for text in str(row["error"]).splitlines():
                print(f"    {text}")
    return 1 if failed and args.strict else 0
