"""The docs pages as a reader sees them: each ``--8<--`` include replaced by what it names.

The site's snippets extension does the same at build time; tests that read a page's
samples read them through ``expanded`` so that they check the files the page shows.
``as_the_site_shows`` runs that extension itself (pymdown-extensions' snippets, with the
settings of ``mkdocs.yml``), so a test can hold the two equal, and check what the site
really shows.
"""

from __future__ import annotations

import functools
import re
import textwrap
from pathlib import Path
from typing import Any, Final

ROOT: Final = Path(__file__).resolve().parents[1]
#: an include line: ``--8<-- "path"`` or ``--8<-- "path:section"``, paths from the root
INCLUDE: Final = re.compile(r'^--8<-- "([^":]+)(?::([\w-]+))?"$', re.M)
#: an include block: ``--8<--`` alone on a line, a file (or ``file:section``) per line,
#: ``--8<--`` again; the form code blocks use, since no Python formatter reads it as code
BLOCK: Final = re.compile(r"^--8<--\n(.*?)\n--8<--$", re.M | re.S)
#: one line of an include block
BLOCK_LINE: Final = re.compile(r"^([^\s:]+)(?::([\w-]+))?$")
_MARKER: Final = re.compile(r"^\s*# --8<-- \[(start|end):([\w-]+)\]\s*$")


def section(path: Path, name: str | None) -> str:
    """The text of ``path``, or of its section ``name``, as the page shows it."""
    lines = path.read_text(encoding="utf-8").splitlines()
    if name is None:
        kept = [line for line in lines if not _MARKER.match(line)]
        return "\n".join(kept)
    inside = False
    found = False
    kept = []
    for line in lines:
        marker = _MARKER.match(line)
        if marker:
            if marker.group(2) == name:
                inside = marker.group(1) == "start"
                found = True
            continue
        if inside:
            kept.append(line)
    if not found:
        raise LookupError(f"{path}: no section {name!r}")
    return textwrap.dedent("\n".join(kept)).rstrip("\n")


def expand(text: str) -> str:
    """``text`` with every include replaced by the files or sections it names."""
    text = BLOCK.sub(
        lambda m: "\n".join(_included(line) for line in m.group(1).splitlines()), text
    )
    return INCLUDE.sub(lambda m: section(ROOT / m.group(1), m.group(2)), text)


def block_lines(block: str) -> list[str]:
    """The file lines (``path`` or ``path:section``) of the include blocks in ``block``."""
    return [line for m in BLOCK.finditer(block) for line in m.group(1).splitlines() if line]


def _included(line: str) -> str:
    if not line.strip():
        return ""
    found = BLOCK_LINE.fullmatch(line.strip())
    if found is None:
        raise ValueError(f"not a file of an include block: {line!r}")
    return section(ROOT / found.group(1), found.group(2))


def expanded(page: Path) -> str:
    """The page ``page`` with its includes expanded."""
    return expand(page.read_text(encoding="utf-8"))


@functools.cache
def _snippets(root: Path) -> Any:
    # The extension as mkdocs.yml configures it; its base paths are from the project's
    # root, where mkdocs runs (or from ``root``, for a test's own files).
    import markdown
    import yaml

    site = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    (settings,) = (
        entry["pymdownx.snippets"]
        for entry in site["markdown_extensions"]
        if isinstance(entry, dict) and "pymdownx.snippets" in entry
    )
    settings = dict(settings, base_path=[str(root / base) for base in settings["base_path"]])
    converter = markdown.Markdown(
        extensions=["pymdownx.snippets"], extension_configs={"pymdownx.snippets": settings}
    )
    return converter.preprocessors["snippet"]


def as_the_site_shows(text: str, root: Path = ROOT) -> str:
    """``text`` with its includes resolved by the site's own snippets extension."""
    return "\n".join(_snippets(root).run(text.split("\n")))


#: a fenced code block: its indentation, fence, language and body
FENCE: Final = re.compile(
    r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<language>[\w+-]*)[^\n]*\n"
    r"(?P<body>.*?)^(?P=indent)(?P=fence)[ \t]*$",
    re.M | re.S,
)


def python_blocks(text: str) -> list[tuple[int, str]]:
    """The Python code blocks of ``text``: the line each starts on, and its code."""
    return [
        (text.count("\n", 0, found.start()) + 1, textwrap.dedent(found.group("body")))
        for found in FENCE.finditer(text)
        if found.group("language").lower() in {"python", "py", "python3"}
    ]
