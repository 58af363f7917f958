"""MkDocs hook: the command-line reference page is written from ``mcpactor``'s own parser.

``docs/reference/cli.md`` holds a marker; at build time it is replaced by the help of the
``mcpactor`` command and of each of its subcommands, so the page cannot drift from the
options the command accepts.
"""

from __future__ import annotations

import argparse
import contextlib
import os
from collections.abc import Iterator
from typing import Any

MARKER = "<!-- cli-reference -->"
PAGE = "reference/cli.md"
#: help is wrapped at this width whatever terminal the build runs in
WIDTH = "88"


@contextlib.contextmanager
def _columns() -> Iterator[None]:
    # argparse wraps help to $COLUMNS; pin it so every build writes the same page.
    saved = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = WIDTH
    try:
        yield
    finally:
        if saved is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = saved


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def render() -> str:
    """The reference as Markdown: the command's help, then one section per subcommand."""
    from mcpactor.cli import _build_parser

    parser = _build_parser()
    with _columns():
        parts = ["## `mcpactor`", "", "```text", parser.format_help().rstrip(), "```"]
        for name, command in _subcommands(parser).items():
            parts += ["", f"## `mcpactor {name}`", "", "```text"]
            parts += [command.format_help().rstrip(), "```"]
    return "\n".join(parts) + "\n"


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    """Replace the marker on the command-line page with the generated reference."""
    if page.file.src_uri != PAGE:
        return markdown
    if MARKER not in markdown:
        raise ValueError(f"{PAGE} lost its marker {MARKER!r}")
    return markdown.replace(MARKER, render())
