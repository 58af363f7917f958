"""An MCP server that reads files under a few root directories, and never beyond them.

Roots come from ``MCPACTOR_FS_ROOTS`` (or ``configure``). A client that offers
``file://`` roots can narrow them, never widen them, unless the operator says otherwise
(``MCPACTOR_FS_CLIENT_ROOTS=extend``): over HTTP the client is whoever reaches the port.
Every path is resolved (symlinks and ".." included) and must land inside a root; see
``_sandbox.py`` for how.
"""

from __future__ import annotations

import fnmatch
import heapq
import json
import logging
import os
import re
import stat
import urllib.parse
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Final, Literal, TypeAlias, TypedDict, get_args

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
    bounded_path,
    inside,
    open_beneath,
    open_child,
    path_from_uri,
    resolve,
    stat_beneath,
)

__all__ = [
    "ClientRoots",
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
#: characters of a search's name pattern: fnmatch's regular expression grows with it
_MAX_PATTERN_CHARS: Final = 1024
#: characters of a search's ``contains`` text
_MAX_CONTAINS_CHARS: Final = 4096
#: the most roots of a client's roots/list this server looks at
_MAX_CLIENT_ROOTS: Final = 100
#: directory entries read between two looks at the request's cancellation
_CHECK_EVERY: Final = 256

#: what the client's ``file://`` roots do: narrow the configured roots (only the parts
#: of them inside a client root are served), nothing (ignored), or extend them (served
#: as well; the operator's explicit choice, as it lets the client name any directory)
ClientRoots: TypeAlias = Literal["narrow", "ignore", "extend"]
_CLIENT_ROOTS: Final[tuple[str, ...]] = get_args(ClientRoots)
# The earlier on/off spellings: off ignores, on narrows (it never meant more than that
# an operator wanted the client's roots looked at).
_CLIENT_ROOTS_FLAGS: Final = {
    "0": "ignore",
    "false": "ignore",
    "no": "ignore",
    "off": "ignore",
    "1": "narrow",
    "true": "narrow",
    "yes": "narrow",
    "on": "narrow",
}

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
    #: what the client's ``file://`` roots do (see ``ClientRoots``)
    client_roots: ClientRoots = "narrow"


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


def _client_roots(value: str | bool, name: str) -> ClientRoots:
    if isinstance(value, bool):
        return "narrow" if value else "ignore"
    spelt = value.strip().lower()
    spelt = _CLIENT_ROOTS_FLAGS.get(spelt, spelt)
    if spelt == "narrow":
        return "narrow"
    if spelt == "ignore":
        return "ignore"
    if spelt == "extend":
        return "extend"
    raise ValueError(f"{name} must be one of {', '.join(_CLIENT_ROOTS)}, got {value!r}")


def configure(
    roots: Sequence[str | os.PathLike[str]] | None = None,
    *,
    max_read_bytes: int | None = None,
    max_search_results: int | None = None,
    client_roots: ClientRoots | bool | None = None,
) -> FsConfig:
    """Set the roots and limits; what is not given comes from the environment.

    ``MCPACTOR_FS_ROOTS`` (directories separated by ``os.pathsep``),
    ``MCPACTOR_FS_MAX_READ_BYTES`` (default 1 MiB), ``MCPACTOR_FS_MAX_SEARCH_RESULTS``
    (default 100) and ``MCPACTOR_FS_CLIENT_ROOTS``: ``narrow`` (the default: the
    client's roots can only narrow the configured ones), ``ignore`` (or ``0``) or
    ``extend`` (the client's roots are served too, wherever they are). ``True`` and
    ``False`` stand for ``narrow`` and ``ignore``.

    Raises:
        ValueError: a root is not a directory, a limit is not a positive number, or
            ``client_roots`` is none of the above.
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
        client_roots = _client_roots(
            os.environ.get("MCPACTOR_FS_CLIENT_ROOTS", "narrow"), "MCPACTOR_FS_CLIENT_ROOTS"
        )
    else:
        client_roots = _client_roots(client_roots, "client_roots")
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
            name=_printable(os.path.basename(root) or root),
            title=f"Directory {_printable(root)}",
            description=(
                f"A root directory this server reads: {_printable(root)} (its listing, as JSON)"
            ),
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


@dataclass(frozen=True)
class _Served:
    """The roots one request may read, and why there are none when there are none."""

    roots: tuple[str, ...]
    why_none: str | None = None

    def resolve(self, path: str) -> Located:
        return resolve(path, self.roots, no_roots=self.why_none)


def _offered_roots(ctx: Context) -> list[str] | None:
    """The real paths of the client's ``file://`` directory roots; None if it has none."""
    try:
        offered = trio.from_thread.run(ctx.list_roots)
    except MCPActorError as exc:
        _log.warning("the client declared roots but roots/list failed: %s", exc)
        return None
    if len(offered) > _MAX_CLIENT_ROOTS:
        raise ToolError(
            f"the client offers {len(offered)} roots, more than the {_MAX_CLIENT_ROOTS} "
            "this server looks at"
        )
    paths: list[str] = []
    for root in offered:
        path = path_from_uri(root.uri)
        # Bounded before realpath walks it, as every path of the client's is.
        if path is None or "\x00" in path or bounded_path(path) is not None:
            continue
        real = os.path.realpath(path)
        if real not in paths and os.path.isdir(real):
            paths.append(real)
    return paths or None


def _narrow(configured: Sequence[str], offered: Sequence[str]) -> tuple[str, ...]:
    """What lies inside both: each client root inside a configured one, and each
    configured root inside a client root, in the client's order."""
    found: list[str] = []
    for client_root in offered:
        for root in configured:
            if inside(client_root, root):
                shared = client_root
            elif inside(root, client_root):
                shared = root
            else:
                continue
            if shared not in found:
                found.append(shared)
    return tuple(found)


def _served(ctx: Context) -> _Served:
    """The roots this request may read (from a worker thread: it may ask the client)."""
    config = _config
    mode = config.client_roots
    offered = None
    if mode != "ignore" and ctx.client_capabilities.get("roots") is not None:
        offered = _offered_roots(ctx)
    if offered is None:
        roots = config.roots
    elif mode == "extend":
        roots = tuple(dict.fromkeys((*config.roots, *offered)))
    else:
        roots = _narrow(config.roots, offered)
        if config.roots and not roots:
            return _Served(
                (),
                "the client's roots are all outside the directories this server may read "
                f"({', '.join(config.roots)}): there is nothing both allow",
            )
    if roots:
        return _Served(roots)
    why = "this server has no roots to read from: set MCPACTOR_FS_ROOTS"
    if mode == "extend":
        why += ", or use a client that offers roots"
    elif mode == "narrow":
        why += " (the client's roots can only narrow them)"
    return _Served((), why)


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
    located = _served(ctx).resolve(path)
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


def _printable(path: str) -> str:
    # A name's undecodable bytes (kept by os as lone surrogates, which JSON cannot carry),
    # shown escaped: "bad\\xff.txt".
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _entry_name(entry: os.DirEntry[str]) -> str:
    return entry.name


def _checked(entries: Iterator[os.DirEntry[str]]) -> Iterator[os.DirEntry[str]]:
    for count, entry in enumerate(entries):
        if count % _CHECK_EVERY == 0:
            check_cancelled()
        yield entry


def _listing(located: Located) -> Listing:
    fd = open_beneath(located)
    try:
        if not stat.S_ISDIR(os.fstat(fd).st_mode):
            raise ToolError(f"{located.given!r} is not a directory")
        entries: list[Entry] = []
        with os.scandir(fd) as scan:
            # The first entries by name, without holding (or sorting) all of a huge
            # directory, looking at the request's cancellation on the way.
            first = heapq.nsmallest(_MAX_LIST_ENTRIES + 1, _checked(scan), key=_entry_name)
        truncated = len(first) > _MAX_LIST_ENTRIES
        for item in first[:_MAX_LIST_ENTRIES]:
            try:
                info = item.stat(follow_symlinks=False)
            except OSError:
                continue  # removed since the directory was read
            kind = _kind(info.st_mode)
            size = info.st_size if kind == "file" else None
            entries.append({"name": _printable(item.name), "type": kind, "size": size})
    finally:
        os.close(fd)
    return {"path": _printable(located.real), "entries": entries, "truncated": truncated}


@server.tool("list", annotations=_READ_ONLY)
def list_directory(ctx: Context, path: str = ".") -> Listing:
    """List a directory's entries (symlinks are shown as such, not followed).

    Args:
        path: an absolute path, a path relative to the first root, or a file:// URI
    """
    return _listing(_served(ctx).resolve(path))


@server.tool("stat", annotations=_READ_ONLY)
def stat_path(path: str, ctx: Context) -> FileInfo:
    """Describe a file or directory: type, size, modification time, permissions.

    Args:
        path: an absolute path, a path relative to the first root, or a file:// URI
    """
    located = _served(ctx).resolve(path)
    info = stat_beneath(located)
    modified = datetime.fromtimestamp(info.st_mtime, UTC).isoformat()
    return {
        "path": _printable(located.real),
        "type": _kind(info.st_mode),
        "size": info.st_size,
        "modified": modified,
        "permissions": stat.filemode(info.st_mode),
    }


@server.tool("roots", annotations=_READ_ONLY)
def list_roots(ctx: Context) -> list[str]:
    """The directories this server may read; relative paths start at the first."""
    return list(_served(ctx).roots)


# --- searching -----------------------------------------------------------------------


def _name_matches(
    matcher: Callable[[str], object], pattern: str, name: str, relative: str
) -> bool:
    # A pattern with a slash is matched against the path below the searched directory.
    return matcher(relative if "/" in pattern else name) is not None


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
    base: Located,
    matcher: Callable[[str], object],
    pattern: str,
    contains: str | None,
    found: list[Match],
    most: int,
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
                if not _name_matches(matcher, pattern, name, relative):
                    continue
                try:
                    info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
                except OSError:
                    continue
                if not stat.S_ISREG(info.st_mode):
                    continue  # symlinks are not followed: their targets are found as such
                path = os.path.join(base.real, relative)
                if contains is None:
                    found.append({"path": _printable(path), "line": None, "text": None})
                else:
                    located = Located(root=base.root, real=path, given=path)
                    try:
                        fd = open_child(name, dir_fd, located)
                    except ToolError:
                        continue
                    try:
                        for number, line in _lines_containing(fd, contains, limit):
                            found.append({"path": _printable(path), "line": number, "text": line})
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
    # Bounded before anything is compiled or walked.
    if len(pattern) > _MAX_PATTERN_CHARS:
        raise ToolError(
            f"the pattern is {len(pattern)} characters, more than the limit of "
            f"{_MAX_PATTERN_CHARS}"
        )
    if contains is not None and len(contains) > _MAX_CONTAINS_CHARS:
        raise ToolError(
            f"contains is {len(contains)} characters, more than the limit of {_MAX_CONTAINS_CHARS}"
        )
    served = _served(ctx)
    roots = served.roots
    if path is not None:
        bases = [served.resolve(path)]
    else:
        if not roots:
            served.resolve(".")  # raises: there is nothing to search
        # A root inside another root would be searched twice.
        bases = [
            Located(root=root, real=root, given=root)
            for root in roots
            if not any(other != root and inside(root, other) for other in roots)
        ]
    most = _config.max_search_results
    found: list[Match] = []
    # Compiled here, once: fnmatch's own cache would keep every client's pattern.
    matcher = re.compile(fnmatch.translate(pattern)).match
    for base in bases:
        if not _search_base(base, matcher, pattern, contains, found, most):
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
        located = _served(ctx).resolve(path)
        info = stat_beneath(located)
        if stat.S_ISDIR(info.st_mode):
            listing = json.dumps(_listing(located))
            return TextResourceContents(uri=uri, text=listing, mime_type="application/json")
        limit = _config.max_read_bytes
        if info.st_size > limit:
            raise ToolError(
                f"{path!r} is {info.st_size} bytes, more than the limit of {limit} "
                "(MCPACTOR_FS_MAX_READ_BYTES): read it in parts with the read tool"
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
    served = _served(ctx)
    roots = served.roots
    folder, _, prefix = value.rpartition("/")
    try:
        listing = _listing(served.resolve(folder)) if folder else None
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
