# Looking at a folder of skills now and then, for the plugin's MCPACTOR_SKILLS_WATCH.
#
# A look is a walk of the folder that stats every entry (no file is read): the folder's
# fingerprint. When it differs from the last, the folder is read and checked again, in
# a worker thread, and what ``serve`` is given replaces what was served, on the trio
# thread, where registering sends ``notifications/resources/list_changed`` to whoever
# listens. A folder that no longer passes its checks is logged and left as it was.

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import Final

import trio

from ._folder import SkillsError
from ._skills import Skills

__all__ = ["fingerprint", "watch"]

_log = logging.getLogger("mcpactor_skills")
#: entries a look stats at most: past it, a look says "changed" by its count alone
_MAX_ENTRIES: Final = 100_000

Fingerprint = tuple[tuple[str, int, int, int], ...]


def fingerprint(folder: str) -> Fingerprint:
    """What a look at ``folder`` sees: each entry's path, type, size and change time."""
    seen: list[tuple[str, int, int, int]] = []
    for directory, directories, files in os.walk(folder, followlinks=False):
        directories[:] = sorted(d for d in directories if not d.startswith("."))
        for name in [*sorted(f for f in files if not f.startswith(".")), *directories]:
            path = os.path.join(directory, name)
            try:
                info = os.lstat(path)
            except OSError:
                continue  # gone since the walk listed it: the next look sees it gone
            seen.append((path, info.st_mode, info.st_size, info.st_mtime_ns))
            if len(seen) >= _MAX_ENTRIES:
                return tuple(seen)
    return tuple(seen)


async def watch(
    skills: Skills,
    interval: float,
    reload: Callable[[], Skills],
    serve: Callable[[Skills], None],
    *,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Every ``interval`` seconds, look at the folder of ``skills``; serve it again when
    it changed (``reload`` reads it, in a thread; ``serve`` swaps it in). Started once
    the first look is taken (what changes after it is seen); runs until cancelled."""
    folder = skills.folder
    last = await trio.to_thread.run_sync(fingerprint, folder)
    task_status.started()
    while True:
        await trio.sleep(interval)
        now = await trio.to_thread.run_sync(fingerprint, folder)
        if now == last:
            continue
        last = now
        try:
            fresh = await trio.to_thread.run_sync(reload)
        except (SkillsError, ValueError, OSError) as exc:
            _log.warning("the skills folder changed but cannot be served; kept as it was: %s", exc)
            continue
        try:
            serve(fresh)
        except Exception as exc:  # what was served is served still: see the plugin's _serve
            _log.warning("the skills folder changed but cannot be served; kept as it was: %s", exc)
            continue
        _log.info("the skills folder changed: serving %d skills", len(fresh.skills))
