# Reading one file of a skill, and saying what it is.
#
# A read opens the skill's directory (a real path, resolved at start-up) and then each
# component of the file's path relative to it with O_NOFOLLOW: a symlink swapped in
# after start-up is refused, never followed, so a read cannot leave the skill. Paths a
# client names are checked first: no empty, hidden, "." or ".." segments, no NUL, no
# backslash, bounded in length and depth. Files open with O_NONBLOCK (a FIFO cannot hang
# a worker) and are read up to the size limit, never past it.

from __future__ import annotations

import errno
import mimetypes
import os
import stat
from typing import Final

__all__ = [
    "FileRefused",
    "MissingFile",
    "checked_path",
    "is_text",
    "mime_type",
    "read_bounded",
    "sniff",
]

_CLOEXEC: Final = getattr(os, "O_CLOEXEC", 0)
_DIRECTORY: Final = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | _CLOEXEC
_FILE: Final = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | _CLOEXEC
MAX_PATH_CHARS: Final = 1024
MAX_PATH_DEPTH: Final = 32

#: names whose type the standard table lacks or spells otherwise
_TYPES: Final = {
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".txt": "text/plain",
    ".py": "text/x-python",
    ".sh": "text/x-shellscript",
    ".json": "application/json",
    ".yaml": "application/yaml",
    ".yml": "application/yaml",
    ".toml": "application/toml",
    ".csv": "text/csv",
    ".js": "text/javascript",
    ".ts": "text/x-typescript",
    ".svg": "image/svg+xml",
    ".tgz": "application/gzip",
    ".gz": "application/gzip",
    ".zip": "application/zip",
}
#: types served as text (when the file is UTF-8) besides ``text/*``
_TEXT_TYPES: Final = frozenset(
    {
        "application/json",
        "application/yaml",
        "application/toml",
        "application/xml",
        "application/javascript",
        "image/svg+xml",
    }
)
# The standard table only, so the answer does not depend on the system's mime.types.
_STANDARD: Final = mimetypes.MimeTypes()
_SNIFF_BYTES: Final = 4096


class FileRefused(ValueError):
    """The path names nothing this skill may serve (outside it, hidden, too long)."""


class MissingFile(LookupError):
    """Nothing is at the path (any more)."""


def checked_path(path: str) -> str:
    """``path`` (``/``-separated, relative to a skill) if a client may name it.

    Raises:
        FileRefused: it is empty, too long or deep, absolute, or has an empty, hidden,
            "." or ".." or ``__pycache__`` segment, a NUL or a backslash.
    """
    if len(path) > MAX_PATH_CHARS:
        raise FileRefused(f"the path is longer than {MAX_PATH_CHARS} characters")
    if "\x00" in path or "\\" in path:
        raise FileRefused("the path holds a NUL or a backslash")
    parts = path.split("/")
    if len(parts) > MAX_PATH_DEPTH:
        raise FileRefused(f"the path has more than {MAX_PATH_DEPTH} segments")
    if not path or not all(map(served_name, parts)):
        raise FileRefused(
            "the path must be relative to the skill, without empty, hidden, '.' or '..' "
            "segments or __pycache__"
        )
    return path


def served_name(name: str) -> bool:
    """Whether a file or directory called ``name`` is part of a skill: not empty, not
    hidden (``.git``, ``.env``, ``.`` and ``..``), not the byte code Python leaves
    beside a skill's scripts when they run (``__pycache__``)."""
    return bool(name) and not name.startswith(".") and name != "__pycache__"


def mime_type(name: str, head: bytes | None = None) -> str:
    """The MIME type of a file called ``name``; ``head`` (its first bytes) if unknown."""
    lowered = name.lower()
    suffix = os.path.splitext(lowered)[1]
    found = _TYPES.get(suffix) or _STANDARD.guess_type(lowered, strict=False)[0]
    if found is not None:
        return found
    if head is not None and b"\x00" not in head:
        try:
            head.decode("utf-8")
        except UnicodeDecodeError as exc:
            # A character cut at the end of the sample is still text.
            if exc.start < len(head) - 3:
                return "application/octet-stream"
        return "text/plain"
    return "application/octet-stream"


def is_text(mime: str) -> bool:
    """Whether a file of this type is served as text (when it is UTF-8)."""
    return mime.startswith("text/") or mime in _TEXT_TYPES


def sniff(directory: str, relative: str) -> bytes:
    """The first bytes of a file, for ``mime_type``; empty if it cannot be read."""
    try:
        return read_bounded(directory, relative, _SNIFF_BYTES, cut=True)
    except (FileRefused, MissingFile, OSError):
        return b""


def read_bounded(directory: str, relative: str, limit: int, *, cut: bool = False) -> bytes:
    """The bytes of ``relative`` below ``directory``, opened without following symlinks.

    Raises:
        MissingFile: nothing is there.
        FileRefused: a symlink is on the way, it is not a regular file, or it is longer
            than ``limit`` bytes (unless ``cut``: then its first ``limit`` bytes).
    """
    parts = relative.split("/")
    fd = os.open(directory, _DIRECTORY)
    try:
        for part in parts[:-1]:
            next_fd = _open(part, _DIRECTORY, fd)
            os.close(fd)
            fd = next_fd
        file_fd = _open(parts[-1], _FILE, fd)
    finally:
        os.close(fd)
    try:
        info = os.fstat(file_fd)
        if stat.S_ISDIR(info.st_mode):
            # SEP-2640 defines no directory reads: a whole skill is its archive.
            raise FileRefused("a directory: read its files by their own URIs")
        if not stat.S_ISREG(info.st_mode):
            raise FileRefused("not a regular file")
        if info.st_size > limit and not cut:
            raise FileRefused(f"{info.st_size} bytes, more than the {limit} a read returns")
        chunks: list[bytes] = []
        left = limit + 1
        while left > 0:
            chunk = os.read(file_fd, min(left, 1 << 16))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    finally:
        os.close(file_fd)
    data = b"".join(chunks)
    if len(data) > limit:
        if not cut:
            raise FileRefused(f"more than the {limit} bytes a read returns")
        data = data[:limit]
    return data


def _open(name: str, flags: int, dir_fd: int) -> int:
    try:
        return os.open(name, flags, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ENOTDIR) and not _is_symlink(name, dir_fd):
            raise MissingFile("no such file") from None
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise FileRefused("a symlink is on the way: not followed") from None
        if exc.errno in (errno.EACCES, errno.EPERM):
            raise FileRefused("permission denied") from None
        raise


def _is_symlink(name: str, dir_fd: int) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False
