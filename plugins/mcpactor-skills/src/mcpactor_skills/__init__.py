"""Agent Skills served over MCP (the Skills extension, SEP-2640), from a folder.

Each directory of the folder holding a ``SKILL.md`` is a skill (the directories above
it are its prefix); every file of it is a ``skill://<skill-path>/<file>`` resource, and
``skill://index.json`` lists the skills. ``skills_extension(folder)`` is the extension
a server enables to serve them (``Server(..., extensions=[skills_extension("skills")])``);
``load_skills(folder)`` reads and checks a folder without enabling anything.

The plugin ``skills`` (``mcpactor serve skills``) serves the folder
``MCPACTOR_SKILLS_FOLDER`` names; ``configure`` does the same from code. The entry point
of the ``mcpactor.extensions`` group, ``configured_extension``, enables the extension on
any served server (``mcpactor serve --extension io.modelcontextprotocol/skills app.py``),
for the same folder.
"""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from typing import Final

import trio

from mcpactor import Extension, Server

from ._files import FileRefused, MissingFile
from ._folder import Skill, SkillsError
from ._skills import (
    DEFAULT_CACHE,
    DEFAULT_MAX_FILE_BYTES,
    EXTENSION_ID,
    INDEX_SCHEMA,
    INDEX_URI,
    Skills,
    SkillTemplate,
    load_skills,
    skills_extension,
)
from ._watch import watch

__all__ = [
    "DEFAULT_CACHE",
    "EXTENSION_ID",
    "INDEX_SCHEMA",
    "INDEX_URI",
    "FileRefused",
    "MissingFile",
    "Skill",
    "SkillTemplate",
    "Skills",
    "SkillsError",
    "configure",
    "configured_extension",
    "load_skills",
    "server",
    "skills_extension",
]
__version__ = "0.1.0"

_log = logging.getLogger("mcpactor_skills")
_FOLDER: Final = "MCPACTOR_SKILLS_FOLDER"
_MAX_FILE_BYTES: Final = "MCPACTOR_SKILLS_MAX_FILE_BYTES"
_WATCH: Final = "MCPACTOR_SKILLS_WATCH"

server = Server(
    "skills",
    version=__version__,
    title="Skills",
    instructions=(
        "Serves Agent Skills as skill:// resources. Read skill://index.json for the list "
        "of skills, then a skill's SKILL.md (skill://<skill-path>/SKILL.md); the files it "
        "refers to are resources relative to it."
    ),
)

_PLUGIN_EXTENSION: Final = Extension(
    EXTENSION_ID, description="Agent Skills served as skill:// resources (SEP-2640)"
)
#: what the plugin serves now (None before ``configure`` finds a folder)
_served: Skills | None = None
#: seconds between looks at the folder while the server runs (None: no looks)
_watch_seconds: float | None = None


def configure(
    folder: str | os.PathLike[str] | None = None,
    *,
    max_file_bytes: int | None = None,
    watch: float | None = None,
) -> Skills | None:
    """Serve the skills of ``folder`` on the plugin's server, instead of any before.

    What is not given comes from the environment: ``MCPACTOR_SKILLS_FOLDER`` (the
    folder; without one nothing is served), ``MCPACTOR_SKILLS_MAX_FILE_BYTES`` (the
    largest file a read returns, default 1 MiB) and ``MCPACTOR_SKILLS_WATCH`` (seconds
    between looks at the folder while the server runs: a change is served, and clients
    are told the resource list changed; default: no looks).

    Raises:
        SkillsError: the folder cannot be served (the message says why, file by file).
        ValueError: the size limit or the seconds are not a positive number.
    """
    global _watch_seconds
    if folder is None:
        folder = os.environ.get(_FOLDER) or None
    if max_file_bytes is None:
        max_file_bytes = _max_file_bytes()
    if watch is None:
        watch = _seconds(_WATCH)
    elif not watch > 0:
        raise ValueError(f"watch must be positive seconds, got {watch!r}")
    skills = None
    if folder is not None:
        skills = load_skills(folder, max_file_bytes=max_file_bytes)
    _serve(skills)
    _watch_seconds = watch
    return skills


def _serve(skills: Skills | None) -> None:
    """Serve ``skills`` instead of what was served; what was, if they cannot be."""
    global _served
    before = _served
    if before is not None:
        before.remove_from(server)
    try:
        if skills is not None:
            skills.add_to(server)
    except BaseException:
        if before is not None:
            before.add_to(server)
        raise
    _served = skills
    if skills is not None and EXTENSION_ID not in server.extensions:
        # Declared once a folder is served, and kept: the resources come and go with the
        # folder, so it requires nothing a later configure could take away.
        server.extensions.enable(_PLUGIN_EXTENSION)


def configured_extension() -> Extension:
    """The Skills extension of the folder ``MCPACTOR_SKILLS_FOLDER`` names.

    The ``mcpactor.extensions`` entry point: loading it reads nothing; the folder is read
    and checked when a server enables it, and enabling fails (naming the variable, or
    every problem of the folder) when it is unset or cannot be served.
    """
    return Extension(
        EXTENSION_ID,
        requires=("resources",),
        setup=_serve_configured_folder,
        description=f"Agent Skills of the folder {_FOLDER} names, as skill:// resources",
    )


def _serve_configured_folder(target: Server) -> None:
    folder = os.environ.get(_FOLDER)
    if not folder:
        raise SkillsError(
            f"${_FOLDER}", [f"not set: the extension {EXTENSION_ID} serves the folder it names"]
        )
    load_skills(folder, max_file_bytes=_max_file_bytes()).add_to(target)


def _seconds(name: str) -> float | None:
    raw = os.environ.get(name)
    if not raw:
        return None
    try:
        seconds = float(raw)
    except ValueError:
        seconds = 0.0
    if not seconds > 0 or seconds == float("inf"):
        raise ValueError(f"{name} must be positive seconds, got {raw!r}")
    return seconds


def _max_file_bytes() -> int:
    raw = os.environ.get(_MAX_FILE_BYTES)
    try:
        return int(raw) if raw else DEFAULT_MAX_FILE_BYTES
    except ValueError:
        raise ValueError(f"{_MAX_FILE_BYTES} must be a whole number, got {raw!r}") from None


@server.lifespan
@asynccontextmanager
async def _serving(_: Server) -> AsyncIterator[None]:
    # Said once the server starts, where the operator looks: not on import.
    served, seconds = _served, _watch_seconds
    if served is None:
        _log.warning("no skills are served: set %s to a folder of skills", _FOLDER)
    else:
        _log.info("serving %d skills from %s", len(served.skills), served.folder)
    if served is None or seconds is None:
        yield
        return
    limit = served.max_file_bytes
    reload = partial(load_skills, served.folder, max_file_bytes=limit)
    async with trio.open_nursery() as nursery:
        # Started once it has looked: a change from now on is seen.
        await nursery.start(watch, served, seconds, reload, _serve)
        try:
            yield
        finally:
            nursery.cancel_scope.cancel()


configure()
