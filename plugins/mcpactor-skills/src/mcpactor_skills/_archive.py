# A skill packed into one ``.tar.gz`` resource (SEP-2640's archive distribution).
#
# The archive is the skill's directory itself: ``SKILL.md`` at its root, every file
# under its path relative to the skill, no wrapper directory, no links, no absolute
# paths or "..". Each file is read as a single read is (``read_bounded``: inside the
# skill, no symlink followed) and keeps its executable bits, which individual resources
# cannot carry. Entries have a fixed owner and time, so the same files pack to the same
# bytes; the total is bounded before anything is compressed.

from __future__ import annotations

import gzip
import io
import os
import stat
import tarfile
from typing import Final

from ._files import FileRefused, read_bounded
from ._folder import Skill

__all__ = ["ARCHIVE_SUFFIX", "pack"]

ARCHIVE_SUFFIX: Final = ".tar.gz"


def pack(skill: Skill, *, max_file_bytes: int, max_total_bytes: int) -> bytes:
    """The skill's files as a gzip-compressed tar, ``SKILL.md`` first.

    Raises:
        MissingFile: a file of the skill is gone.
        FileRefused: a file is refused as a read would refuse it, or together they are
            longer than ``max_total_bytes``.
    """
    buffer = io.BytesIO()
    total = 0
    files = sorted(skill.files, key=lambda name: (name != "SKILL.md", name))
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for name in files:
            real = skill.links.get(name, name)
            data = read_bounded(skill.directory, real, max_file_bytes)
            total += len(data)
            if total > max_total_bytes:
                raise FileRefused(
                    f"the skill's files are more than the {max_total_bytes} bytes an archive holds"
                )
            entry = tarfile.TarInfo(name)
            entry.size = len(data)
            entry.mode = 0o755 if _executable(skill.directory, real) else 0o644
            entry.mtime = 0
            archive.addfile(entry, io.BytesIO(data))
    return gzip.compress(buffer.getvalue(), mtime=0)


def _executable(directory: str, relative: str) -> bool:
    try:
        mode = os.stat(os.path.join(directory, relative), follow_symlinks=False).st_mode
    except OSError:
        return False
    return bool(mode & stat.S_IXUSR)
