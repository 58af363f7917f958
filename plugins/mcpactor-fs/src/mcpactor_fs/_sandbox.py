# The sandbox: every path the server touches goes through here.
#
# Two locks on one door.
#
# 1. ``resolve`` turns what the client sent into a real path (``os.path.realpath``: every
#    symlink and ".." resolved, in every component) and accepts it only when it lies
#    inside a root, compared component by component: ``/data2`` is not inside ``/data``.
# 2. ``open_parent`` then walks from the root's directory to that path one component at
#    a time with O_NOFOLLOW, relative to the directory opened before it. The real path
#    has no symlinks, so a symlink met on the way was planted after the check (a race)
#    and the walk fails instead of following it out of the root.
#
# Files are opened with O_NONBLOCK so that a FIFO cannot hang a worker thread.
#
# What the client sends is bounded before any of this: resolving costs a system call per
# component, each walking the path so far, so a path of a few hundred thousand
# components would keep a worker thread busy for minutes where nothing can cancel it.
# A path longer than PATH_MAX or deeper than MAX_PATH_DEPTH components is refused first.

from __future__ import annotations

import errno
import os
import stat
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from mcpactor import ToolError
from mcpactor.protocol import describe

__all__ = [
    "MAX_PATH_BYTES",
    "MAX_PATH_DEPTH",
    "Located",
    "PathNotFound",
    "PathRefused",
    "bounded_path",
    "inside",
    "open_beneath",
    "open_child",
    "open_parent",
    "path_from_uri",
    "resolve",
    "stat_beneath",
]

#: the longest path accepted, in bytes (Linux's PATH_MAX: longer ones cannot be opened)
MAX_PATH_BYTES: Final = 4096
#: the most components a path may have ("a/b/.." has three)
MAX_PATH_DEPTH: Final = 256
# A file:// URI quotes each byte in at most three characters.
_MAX_URI_CHARS: Final = len("file://localhost") + 3 * MAX_PATH_BYTES

_CLOEXEC: Final = getattr(os, "O_CLOEXEC", 0)
_DIRECTORY_FLAGS: Final = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | _CLOEXEC
_FILE_FLAGS: Final = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | _CLOEXEC


class PathRefused(ToolError):
    """The path leads outside every root, or may not be opened."""


class PathNotFound(ToolError):
    """The path is inside a root but nothing is there."""


@dataclass(frozen=True)
class Located:
    """A path the client named, resolved to a real path inside one of the roots."""

    #: the root that holds ``real``
    root: str
    #: the path with every symlink and ".." resolved
    real: str
    #: the path as the client wrote it, for messages
    given: str


def inside(path: str, root: str) -> bool:
    """Return whether the real path ``path`` is ``root`` or below it, by components."""
    return os.path.commonpath((path, root)) == root


def path_from_uri(uri: str) -> str | None:
    """The local path of a ``file://`` URI, or None for any other URI."""
    if len(uri) > _MAX_URI_CHARS:
        return None
    parts = urllib.parse.urlsplit(uri)
    if parts.scheme != "file" or parts.netloc not in ("", "localhost"):
        return None
    return urllib.parse.unquote(parts.path) or None


def bounded_path(path: str) -> str | None:
    """Why ``path`` is too long or too deep to resolve, or None when it is not."""
    if len(path) > MAX_PATH_BYTES:  # a character is at least one byte
        return f"{describe(path)} is longer than {MAX_PATH_BYTES} bytes"
    size = len(path.encode("utf-8", "surrogatepass"))
    if size > MAX_PATH_BYTES:
        return f"{describe(path)} is {size} bytes, longer than {MAX_PATH_BYTES}"
    depth = path.count("/") + 1
    if depth > MAX_PATH_DEPTH:
        return f"{describe(path)} has {depth} components, more than {MAX_PATH_DEPTH}"
    return None


def resolve(path: str, roots: Sequence[str], *, no_roots: str | None = None) -> Located:
    """Resolve ``path`` (absolute, relative to the first root, or a file URI) in ``roots``.

    ``no_roots`` says why there are no roots, when there are none.

    Raises:
        PathRefused: there are no roots, the path is too long or too deep, or it
            resolves outside all of the roots.
    """
    if not roots:
        raise PathRefused(
            no_roots or "this server has no roots to read from: set MCPACTOR_FS_ROOTS"
        )
    local = path
    if path.startswith("file:"):
        if len(path) > _MAX_URI_CHARS:
            raise PathRefused(f"{describe(path)} is longer than any path this server reads")
        found = path_from_uri(path)
        if found is None:
            raise PathRefused(f"{path!r} is not a local file:// URI")
        local = found
    # Bounded before anything walks it (see the top of this module).
    too_long = bounded_path(local)
    if too_long is not None:
        raise PathRefused(too_long)
    if "\x00" in local:
        raise PathRefused(f"{path!r} contains a NUL character")
    candidate = local if os.path.isabs(local) else os.path.join(roots[0], local)
    real = os.path.realpath(candidate)
    for root in roots:
        if inside(real, root):
            return Located(root=root, real=real, given=path)
    # The real path is not shown: it could describe where a symlink points outside.
    raise PathRefused(
        f"{path!r} is outside the directories this server may read "
        f"({', '.join(roots)}); symlinks and '..' are resolved before checking"
    )


def _failure(exc: OSError, located: Located, *, symlink: bool = False) -> ToolError:
    given = located.given
    if symlink or exc.errno == errno.ELOOP:
        # Resolution saw no symlink here, so one appeared since: refuse, never follow.
        return PathRefused(f"{given!r} changed into a symlink while it was being opened")
    if exc.errno == errno.ENOENT:
        return PathNotFound(f"{given!r} does not exist")
    if exc.errno == errno.ENOTDIR:
        return PathNotFound(f"{given!r} does not exist (a part of it is not a directory)")
    if exc.errno in (errno.EACCES, errno.EPERM):
        return PathRefused(f"{given!r}: permission denied")
    return ToolError(f"cannot open {given!r}: {exc.strerror}")


def _is_symlink(name: str, dir_fd: int) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def open_parent(located: Located) -> tuple[int, str | None]:
    """Open the directory holding ``located`` without following symlinks.

    Returns the directory's descriptor (the caller closes it) and the last component's
    name, or the root's own descriptor and None when ``located`` is the root.
    """
    relative = os.path.relpath(located.real, located.root)
    parts = [] if relative == "." else relative.split(os.sep)
    try:
        fd = os.open(located.root, _DIRECTORY_FLAGS)
    except OSError as exc:
        raise _failure(exc, located) from None
    for part in parts[:-1]:
        try:
            next_fd = os.open(part, _DIRECTORY_FLAGS, dir_fd=fd)
        except OSError as exc:
            # O_DIRECTORY | O_NOFOLLOW on a symlink fails with ENOTDIR on Linux.
            failure = _failure(exc, located, symlink=_is_symlink(part, fd))
            os.close(fd)
            raise failure from None
        os.close(fd)
        fd = next_fd
    return fd, parts[-1] if parts else None


def open_beneath(located: Located) -> int:
    """Open ``located`` for reading (a file or a directory) without following symlinks."""
    parent, name = open_parent(located)
    if name is None:
        return parent
    try:
        return os.open(name, _FILE_FLAGS, dir_fd=parent)
    except OSError as exc:
        raise _failure(exc, located) from None
    finally:
        os.close(parent)


def open_child(name: str, dir_fd: int, located: Located) -> int:
    """Open the file ``name`` in an open directory without following a symlink."""
    try:
        return os.open(name, _FILE_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        raise _failure(exc, located) from None


def stat_beneath(located: Located) -> os.stat_result:
    """``lstat`` of ``located``, reached without following symlinks."""
    parent, name = open_parent(located)
    try:
        if name is None:
            return os.fstat(parent)
        return os.stat(name, dir_fd=parent, follow_symlinks=False)
    except OSError as exc:
        raise _failure(exc, located) from None
    finally:
        os.close(parent)
