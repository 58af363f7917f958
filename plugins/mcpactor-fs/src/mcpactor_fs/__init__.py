"""An MCP server that reads files under a few root directories, and never beyond them.

Roots come from ``MCPACTOR_FS_ROOTS`` (or ``configure``) and from the client, when it
offers ``file://`` roots. Every path is resolved (symlinks and ".." included) and must
land inside a root; see ``_sandbox.py`` for how.
"""

from __future__ import annotations

import fnmatch
import json
import logging
import os
import stat
import urllib.parse
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Final, Literal, TypedDict

import trio

from mcpactor import (
    AudioContent,
    BlobResourceContents,
    Context,
    EmbeddedResource,
    ImageContent,
    MCPActorError,
    RequestError,
    Server,
    TextContent,
    TextResourceContents,
    ToolAnnotations,
    ToolError,
    check_cancelled,
)

from ._content import SNIFF_BYTES, decode_window, is_text, mime_type
from ._sandbox import (
    Located,
    PathNotFound,
    PathRefused,
    inside,
    open_beneath,
    open_child,
    path_from_uri,
    resolve,
    stat_beneath,
)

__all__ = [
    "Entry",
    "FileInfo",
    "FsConfig",
    "Listing",
    "Match",
    "PathNotFound",
    "PathRefused",
    "SearchResult",
    "configure",
    "server",
]
__version__ = "0.1.0"

_log = logging.getLogger("mcpactor_fs")

_READ_ONLY: Final = ToolAnnotations(read_only_hint=True, open_world_hint=False)
#: entries a listing shows before it says it was cut short
_MAX_LIST_ENTRIES: Final = 1000
#: characters of a matching line shown in search results
_MAX_LINE_CHARS: Final = 200
_INVALID_PARAMS: Final = -32602
_DEFAULT_MAX_READ_BYTES: Final = 1 << 20
_DEFAULT_MAX_SEARCH_RESULTS: Final = 100

server = Server(
    "fs",
    version=__version__,
    title="Files",
    instructions=(
        "Reads files and directories under the allowed roots (the roots tool lists them). "
        "Relative paths start at the first root. Nothing outside the roots can be read, "
        "through symlinks or '..' included."
    ),
)


# --- configuration -----------------------------------------------------------------------


@dataclass(frozen=True)
class FsConfig:
    """The fs server's settings."""

    #: the directories served, as real paths
    roots: tuple[str, ...] = ()
    #: bytes one read returns at most; longer files are cut, with a note
    max_read_bytes: int = _DEFAULT_MAX_READ_BYTES
    #: matches one search returns at most
    max_search_results: int = _DEFAULT_MAX_SEARCH_RESULTS
    #: also serve the ``file://`` roots the client offers
    client_roots: bool = True


_config = FsConfig()
#: the URIs of the root resources registered for the configured roots
_root_resources: list[str] = []


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None:
        return default
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"{name} must be a whole number, got {raw!r}") from None


def configure(
    roots: Sequence[str | os.PathLike[str]] | None = None,
    *,
    max_read_bytes: int | None = None,
    max_search_results: int | None = None,
    client_roots: bool | None = None,
) -> FsConfig:
    """Set the roots and limits; what is not given comes from the environment.

    ``MCPACTOR_FS_ROOTS`` (directories separated by ``os.pathsep``),
    ``MCPACTOR_FS_MAX_READ_BYTES`` (default 1 MiB), ``MCPACTOR_FS_MAX_SEARCH_RESULTS``
    (default 100) and ``MCPACTOR_FS_CLIENT_ROOTS`` (``0`` ignores the client's roots).

    Raises:
        ValueError: a root is not a directory, or a limit is not a positive number.
    """
    global _config
    if roots is None:
        roots = [r for r in os.environ.get("MCPACTOR_FS_ROOTS", "").split(os.pathsep) if r]
    if max_read_bytes is None:
        max_read_bytes = _env_int("MCPACTOR_FS_MAX_READ_BYTES", _DEFAULT_MAX_READ_BYTES)
    if max_search_results is None:
        max_search_results = _env_int(
            "MCPACTOR_FS_MAX_SEARCH_RESULTS", _DEFAULT_MAX_SEARCH_RESULTS
        )
    if client_roots is None:
        flag = os.environ.get("MCPACTOR_FS_CLIENT_ROOTS", "1").strip().lower()
        client_roots = flag not in ("0", "false", "no", "off")
    for name, value in (
        ("max_read_bytes", max_read_bytes),
        ("max_search_results", max_search_results),
    ):
        if value < 1:
            raise ValueError(f"{name} must be at least 1, got {value!r}")
    real_roots: list[str] = []
    for root in roots:
        real = os.path.realpath(os.path.expanduser(os.fspath(root)))
        if not os.path.isdir(real):
            raise ValueError(f"fs root {os.fspath(root)!r} is not a directory")
        if real not in real_roots:
            real_roots.append(real)
    _config = FsConfig(
        roots=tuple(real_roots),
        max_read_bytes=max_read_bytes,
        max_search_results=max_search_results,
        client_roots=client_roots,
    )
    _register_root_resources(_config.roots)
    return _config


def _register_root_resources(roots: Sequence[str]) -> None:
    for uri in _root_resources:
        server.remove_resource(uri)
    _root_resources.clear()
    for root in roots:
        uri = Path(root).as_uri()
        server.add_resource(
            _root_reader(root),
            uri,
            name=os.path.basename(root) or root,
            title=f"Directory {root}",
            description=f"A root directory this server reads: {root} (its listing, as JSON)",
            mime_type="application/json",
        )
        _root_resources.append(uri)


def _root_reader(root: str) -> Callable[[Context], str]:
    uri = Path(root).as_uri()

    def read_root(ctx: Context) -> str:
        with _resource_errors(uri, ctx):
            listing = _listing(Located(root=root, real=root, given=root))
        return json.dumps(listing)

    return read_root


@contextmanager
def _resource_errors(uri: str, ctx: Context) -> Iterator[None]:
    """Turn the tools' errors into JSON-RPC errors: a resource has no tool result."""
    try:
        yield
    except PathNotFound as exc:
        code = ctx.negotiated.revision.resource_not_found_code
        raise RequestError(code, str(exc), {"uri": uri}) from None
    except ToolError as exc:
        raise RequestError(_INVALID_PARAMS, str(exc), {"uri": uri}) from None


def _roots(ctx: Context) -> tuple[str, ...]:
    """The configured roots, then the client's ``file://`` roots (from a worker thread)."""
    config = _config
    if not config.client_roots or ctx.client_capabilities.get("roots") is None:
        return config.roots
    try:
        offered = trio.from_thread.run(ctx.list_roots)
    except MCPActorError as exc:
        _log.warning("the client declared roots but roots/list failed: %s", exc)
        return config.roots
    roots = list(config.roots)
    for root in offered:
        path = path_from_uri(root.uri)
        if path is None:
            continue
        real = os.path.realpath(path)
        if real not in roots and os.path.isdir(real):
            roots.append(real)
    return tuple(roots)


# --- results -----------------------------------------------------------------------------


class Entry(TypedDict):
    """One entry of a directory."""

    name: str
    type: Literal["file", "directory", "symlink", "other"]
    #: bytes, for files
    size: int | None


class Listing(TypedDict):
    """A directory's entries, sorted by name."""

    path: str
    entries: list[Entry]
    #: True when the directory has more entries than a listing shows
    truncated: bool


class FileInfo(TypedDict):
    """What ``stat`` says about a path."""

    path: str
    type: Literal["file", "directory", "symlink", "other"]
    size: int
    #: the last modification, ISO 8601 in UTC
    modified: str
    #: ``ls -l`` style, e.g. ``-rw-r--r--``
    permissions: str


class Match(TypedDict):
    """A file whose name matched; with ``contains``, one matching line of it."""

    path: str
    line: int | None
    text: str | None


class SearchResult(TypedDict):
    """Matches in walk order (directories and names sorted)."""

    matches: list[Match]
    #: True when there were more matches than a search returns
    truncated: bool


def _kind(mode: int) -> Literal["file", "directory", "symlink", "other"]:
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "directory"
    if stat.S_ISLNK(mode):
        return "symlink"
    return "other"


# --- reading -------------------------------------------------------------------------


def _pread(fd: int, size: int, offset: int) -> bytes:
    chunks = []
    while size > 0:
        chunk = os.pread(fd, size, offset)
        if not chunk:
            break
        chunks.append(chunk)
        size -= len(chunk)
        offset += len(chunk)
    return b"".join(chunks)


@dataclass(frozen=True)
class _Window:
    head: bytes
    data: bytes
    size: int
    text: bool


def _read_window(located: Located, offset: int, limit: int) -> _Window:
    fd = open_beneath(located)
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise ToolError(f"{located.given!r} is a directory: use the list tool")
        if not stat.S_ISREG(info.st_mode):
            raise ToolError(f"{located.given!r} is not a regular file")
        head = _pread(fd, SNIFF_BYTES, 0)
        data = _pread(fd, limit, offset)
        return _Window(head=head, data=data, size=info.st_size, text=is_text(head))
    finally:
        os.close(fd)


def _content_uri(located: Located) -> str:
    return Path(located.real).as_uri()


@server.tool("read", annotations=_READ_ONLY)
def read_file(
    path: str, ctx: Context, offset: int = 0
) -> list[TextContent | ImageContent | AudioContent | EmbeddedResource]:
    """Read a file: text as text, images and audio as such, anything else as a blob.

    A file longer than the read limit is cut, with a note saying how to read on.

    Args:
        path: an absolute path, a path relative to the first root, or a file:// URI
        offset: the byte to start at, for reading a long file in parts
    """
    if offset < 0:
        raise ToolError(f"offset must be at least 0, got {offset}")
    located = resolve(path, _roots(ctx))
    limit = _config.max_read_bytes
    window = _read_window(located, offset, limit)
    if offset > window.size:
        raise ToolError(f"offset {offset} is past the end of {path!r} ({window.size} bytes)")
    end = offset + len(window.data)
    complete = end >= window.size
    blocks: list[TextContent | ImageContent | AudioContent | EmbeddedResource]
    if window.text:
        text, used = decode_window(window.data, final=complete)
        if window.data and not used:
            # The limit is smaller than this one character: show it broken rather than
            # send the client back to the same offset for ever.
            text, used = decode_window(window.data, final=True)
        end = offset + used
        blocks = [TextContent(text=text)]
    else:
        mime = mime_type(window.head, located.real, text=False)
        if offset == 0 and complete and mime.startswith("image/"):
            blocks = [ImageContent.from_bytes(window.data, mime)]
        elif offset == 0 and complete and mime.startswith("audio/"):
            blocks = [AudioContent.from_bytes(window.data, mime)]
        else:
            blob = BlobResourceContents.from_bytes(_content_uri(located), window.data, mime)
            blocks = [EmbeddedResource(resource=blob)]
    if end < window.size:
        blocks.append(
            TextContent(
                text=f"[cut at the read limit: this is bytes {offset}–{end} of {window.size}; "
                f"read again with offset={end} for more]"
            )
        )
    return blocks


def _listing(located: Located) -> Listing:
    fd = open_beneath(located)
    try:
        if not stat.S_ISDIR(os.fstat(fd).st_mode):
            raise ToolError(f"{located.given!r} is not a directory")
        entries: list[Entry] = []
        truncated = False
        with os.scandir(fd) as scan:
            for item in sorted(scan, key=lambda e: e.name):
                if len(entries) == _MAX_LIST_ENTRIES:
                    truncated = True
                    break
                try:
                    info = item.stat(follow_symlinks=False)
                except OSError:
                    continue  # removed since the directory was read
                kind = _kind(info.st_mode)
                size = info.st_size if kind == "file" else None
                entries.append({"name": item.name, "type": kind, "size": size})
    finally:
        os.close(fd)
    return {"path": located.real, "entries": entries, "truncated": truncated}


@server.tool("list", annotations=_READ_ONLY)
def list_directory(ctx: Context, path: str = ".") -> Listing:
    """List a directory's entries (symlinks are shown as such, not followed).

    Args:
        path: an absolute path, a path relative to the first root, or a file:// URI
    """
    return _listing(resolve(path, _roots(ctx)))


@server.tool("stat", annotations=_READ_ONLY)
def stat_path(path: str, ctx: Context) -> FileInfo:
    """Describe a file or directory: type, size, modification time, permissions.

    Args:
        path: an absolute path, a path relative to the first root, or a file:// URI
    """
    located = resolve(path, _roots(ctx))
    info = stat_beneath(located)
    modified = datetime.fromtimestamp(info.st_mtime, UTC).isoformat()
    return {
        "path": located.real,
        "type": _kind(info.st_mode),
        "size": info.st_size,
        "modified": modified,
        "permissions": stat.filemode(info.st_mode),
    }


@server.tool("roots", annotations=_READ_ONLY)
def list_roots(ctx: Context) -> list[str]:
    """The directories this server may read; relative paths start at the first."""
    return list(_roots(ctx))


# --- searching -----------------------------------------------------------------------


def _name_matches(pattern: str, name: str, relative: str) -> bool:
    # A pattern with a slash is matched against the path below the searched directory.
    return fnmatch.fnmatchcase(relative if "/" in pattern else name, pattern)


def _lines_containing(fd: int, needle: str, limit: int) -> Iterator[tuple[int, str]]:
    head = _pread(fd, SNIFF_BYTES, 0)
    if not is_text(head):
        return
    data = head if len(head) < SNIFF_BYTES else _pread(fd, limit, 0)
    text, _ = decode_window(data, final=True)
    # Lines end at "\n" only, as for grep: str.splitlines would also split at \f, \x1c…
    for number, line in enumerate(text.split("\n"), start=1):
        if needle in line:
            yield number, line.rstrip("\r")[:_MAX_LINE_CHARS]


def _search_base(
    base: Located, pattern: str, contains: str | None, found: list[Match], most: int
) -> bool:
    """Search below ``base``; return False once more than ``most`` matches were found."""
    limit = _config.max_read_bytes
    top = open_beneath(base)
    try:
        if not stat.S_ISDIR(os.fstat(top).st_mode):
            raise ToolError(f"{base.given!r} is not a directory")
        # fwalk opens each directory relative to its parent's descriptor and never
        # follows a symlink, so the walk cannot be led out of the root.
        for folder, dirnames, filenames, dir_fd in os.fwalk(
            ".", dir_fd=top, follow_symlinks=False
        ):
            check_cancelled()
            dirnames.sort()
            for name in sorted(filenames):
                check_cancelled()
                relative = os.path.normpath(os.path.join(folder, name))
                if not _name_matches(pattern, name, relative):
                    continue
                try:
                    info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
                except OSError:
                    continue
                if not stat.S_ISREG(info.st_mode):
                    continue  # symlinks are not followed: their targets are found as such
                path = os.path.join(base.real, relative)
                if contains is None:
                    found.append({"path": path, "line": None, "text": None})
                else:
                    located = Located(root=base.root, real=path, given=path)
                    try:
                        fd = open_child(name, dir_fd, located)
                    except ToolError:
                        continue
                    try:
                        for number, line in _lines_containing(fd, contains, limit):
                            found.append({"path": path, "line": number, "text": line})
                            if len(found) > most:
                                return False
                    finally:
                        os.close(fd)
                if len(found) > most:
                    return False
    finally:
        os.close(top)
    return True


@server.tool("search", annotations=_READ_ONLY)
def search_files(
    ctx: Context, pattern: str = "*", contains: str | None = None, path: str | None = None
) -> SearchResult:
    """Find files by name (shell-style pattern) and, optionally, lines containing a text.

    Symlinks are not followed. With ``contains``, each matching line is one match.

    Args:
        pattern: a shell-style pattern for the file name, e.g. "*.py"; with a "/" it is
            matched against the path below the searched directory, e.g. "docs/*.md"
        contains: only lines containing this text (case-sensitive)
        path: the directory to search; every root when not given
    """
    roots = _roots(ctx)
    if path is not None:
        bases = [resolve(path, roots)]
    else:
        if not roots:
            resolve(".", roots)  # raises: there is nothing to search
        # A root inside another root would be searched twice.
        bases = [
            Located(root=root, real=root, given=root)
            for root in roots
            if not any(other != root and inside(root, other) for other in roots)
        ]
    most = _config.max_search_results
    found: list[Match] = []
    for base in bases:
        if not _search_base(base, pattern, contains, found, most):
            return {"matches": found[:most], "truncated": True}
    return {"matches": found, "truncated": False}


# --- resources and completion ---------------------------------------------------------


@server.resource("file://{+path}", name="file", title="A file or directory")
def read_resource(path: str, ctx: Context) -> TextResourceContents | BlobResourceContents:
    """A file under the roots (text or a blob), or a directory's listing as JSON."""
    uri = "file://" + urllib.parse.quote(path)
    if path.startswith("localhost/"):
        path = path[len("localhost") :]
    if not path.startswith("/"):
        raise RequestError(_INVALID_PARAMS, f"{uri!r} is not an absolute file:// URI")
    with _resource_errors(uri, ctx):
        located = resolve(path, _roots(ctx))
        info = stat_beneath(located)
        if stat.S_ISDIR(info.st_mode):
            listing = json.dumps(_listing(located))
            return TextResourceContents(uri=uri, text=listing, mime_type="application/json")
        limit = _config.max_read_bytes
        if info.st_size > limit:
            raise ToolError(
                f"{path!r} is {info.st_size} bytes, more than the limit of {limit}: "
                "read it in parts with the read tool"
            )
        window = _read_window(located, 0, limit)
    mime = mime_type(window.head, located.real, text=window.text)
    if window.text:
        text, _ = decode_window(window.data, final=True)
        return TextResourceContents(uri=uri, text=text, mime_type=mime)
    return BlobResourceContents.from_bytes(uri, window.data, mime)


@server.completion("file://{+path}", "path")
def complete_path(value: str, context: dict[str, str], ctx: Context) -> list[str]:
    """Paths under the roots that start with ``value`` (directories end with "/")."""
    roots = _roots(ctx)
    folder, _, prefix = value.rpartition("/")
    try:
        listing = _listing(resolve(folder, roots)) if folder else None
    except ToolError:
        listing = None
    if listing is None:
        # Nothing to list yet: offer the roots themselves.
        shown = [root.rstrip("/") + "/" for root in roots]
        return [root for root in shown if root.startswith(value)]
    base = listing["path"].rstrip("/")
    return [
        f"{base}/{entry['name']}" + ("/" if entry["type"] == "directory" else "")
        for entry in listing["entries"]
        if entry["name"].startswith(prefix)
    ]


configure()
