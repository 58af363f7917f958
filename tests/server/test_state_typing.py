"""What ``mypy --strict`` makes of a server's state, checked by running it on an author's file.

A line the checker must refuse carries ``# type: ignore[code]``: under ``--strict`` an
ignore that silences nothing is itself an error, so the file passes only if every such
line is refused for that reason and nothing else is.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Final

#: seconds mypy gets from a cold cache
MYPY_TIMEOUT: Final = 600

AUTHOR: Final = """
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import assert_type

from mcpactor import Context, Server


@dataclass
class Notes:
    count: int


@asynccontextmanager
async def open_notes(server: Server) -> AsyncIterator[Notes]:
    yield Notes(0)


server = Server("notes", lifespan=open_notes)
assert_type(server, Server[Notes])
assert_type(server.state, Notes)

plain = Server("plain")
assert_type(plain, Server[None])
plain.state.count  # type: ignore[attr-defined]


@server.tool()
def count(ctx: Context[Notes]) -> int:
    assert_type(ctx.state, Notes)
    ctx.state.title  # type: ignore[attr-defined]
    return ctx.state.count


@server.tool()
def untyped(ctx: Context) -> int:
    # A bare Context is valid under --strict; its state is unchecked.
    return int(ctx.state.anything)


def mount_both(parent: Server) -> None:
    # Servers of any state mount in any other.
    parent.mount(server, "notes")
    parent.mount(plain, "plain")


@asynccontextmanager
async def wrong(server: Server) -> AsyncIterator[int]:
    yield 1


misdeclared: Server[Notes] = Server("x", lifespan=wrong)  # type: ignore[arg-type]
"""


def test_the_state_is_typed_from_the_lifespan_to_the_handler(tmp_path: Path) -> None:
    author = tmp_path / "author.py"
    author.write_text(textwrap.dedent(AUTHOR).lstrip(), encoding="utf-8")
    # The author's own run: no project settings (no pyproject.toml in the directory).
    checked = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--cache-dir",
            str(tmp_path / "c"),
            "author.py",
        ],
        cwd=tmp_path,
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=MYPY_TIMEOUT,
        check=False,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "no issues found in 1 source file" in checked.stdout
