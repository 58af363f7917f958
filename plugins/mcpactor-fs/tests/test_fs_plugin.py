"""The fs server: what it serves, and every way out of its roots it refuses."""

from __future__ import annotations

import base64
import importlib.metadata
import json
import os
import threading
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import mcpactor_fs
import pytest
import trio
import trio.lowlevel
import trio.testing
from mcpactor_fs import _sandbox

import mcpactor.testing
from mcpactor import RequestError, Root, SessionOptions, check_cancelled
from mcpactor.client import ClientSession

# Long enough for every legitimate wait; a hang fails instead of blocking.
GUARD: Final = 10.0
SECRET: Final = "the secret outside the roots"
PNG: Final = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16


@dataclass(frozen=True)
class Tree:
    """A root with legitimate content, and everything around it a client must not reach."""

    root: Path
    sibling: Path  # <root>2: shares the root's name as a string prefix
    outside: Path


@pytest.fixture
def tree(tmp_path: Path) -> Iterator[Tree]:
    base = Path(os.path.realpath(tmp_path))
    root, sibling, outside = base / "data", base / "data2", base / "outside"
    for folder in (root / "docs" / "deep", sibling, outside):
        folder.mkdir(parents=True)
    (root / "docs" / "a.txt").write_text("hello\nworld with a needle\nneedle again\n")
    (root / "docs" / "b.md").write_text("# notes\nno match here\n")
    (root / "docs" / "deep" / "c.txt").write_text("deep needle\n")
    (root / "notes.txt").write_text("plain notes\n")
    (root / "image.png").write_bytes(PNG)
    (root / "blob.bin").write_bytes(b"\x00\x01\x02binary\xff")
    (root / "report.pdf").write_bytes(b"%PDF-1.7\n\x00\x00binary")
    (sibling / "secret.txt").write_text(SECRET)
    (outside / "secret.txt").write_text(SECRET)
    (root / "inside_link").symlink_to(root / "docs" / "a.txt")
    (root / "link_out").symlink_to(outside / "secret.txt")
    (root / "dir_link").symlink_to(outside)
    (root / "docs" / "up_link").symlink_to("../../outside")
    mcpactor_fs.configure([root], max_read_bytes=1 << 20, max_search_results=100)
    yield Tree(root=root, sibling=sibling, outside=outside)
    mcpactor_fs.configure([], client_roots="narrow")


@pytest.fixture
async def client(tree: Tree) -> AsyncIterator[ClientSession]:
    async with mcpactor.testing.client(mcpactor_fs.server) as session:
        yield session


async def call(client: ClientSession, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.get("isError"), result
    return result


async def call_error(client: ClientSession, tool: str, **arguments: Any) -> str:
    result = await client.call_tool(tool, arguments)
    assert result.get("isError") is True, result
    [block] = result["content"]
    assert SECRET not in block["text"]
    text: str = block["text"]
    return text


def texts(result: dict[str, Any]) -> list[str]:
    return [block["text"] for block in result["content"] if block["type"] == "text"]


def test_the_entry_point_names_the_server() -> None:
    [entry] = [
        ep for ep in importlib.metadata.entry_points(group="mcpactor.servers") if ep.name == "fs"
    ]
    assert entry.load() is mcpactor_fs.server


async def test_tools_are_listed(client: ClientSession) -> None:
    tools = {tool["name"]: tool for tool in await client.list_tools()}
    assert set(tools) == {"read", "list", "stat", "search", "roots"}
    assert all(tool["annotations"]["readOnlyHint"] for tool in tools.values())
    assert "outputSchema" not in tools["read"]  # content blocks, not structured data
    assert set(tools["list"]["outputSchema"]["properties"]) == {"path", "entries", "truncated"}


# --- legitimate paths ----------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "docs/a.txt",
        "./docs/../docs/a.txt",
        "inside_link",  # a symlink whose target is inside the root
        "{root}/docs/a.txt",
        "file://{root}/docs/a.txt",
    ],
)
async def test_read_serves_paths_inside_the_root(
    client: ClientSession, tree: Tree, path: str
) -> None:
    result = await call(client, "read", path=path.format(root=tree.root))
    assert texts(result) == ["hello\nworld with a needle\nneedle again\n"]


async def test_read_returns_images_as_images_and_other_binaries_as_blobs(
    client: ClientSession, tree: Tree
) -> None:
    [image] = (await call(client, "read", path="image.png"))["content"]
    assert image == {
        "type": "image",
        "data": base64.b64encode(PNG).decode(),
        "mimeType": "image/png",
    }
    [blob] = (await call(client, "read", path="blob.bin"))["content"]
    assert blob["type"] == "resource"
    assert blob["resource"] == {
        "uri": (tree.root / "blob.bin").as_uri(),
        "blob": base64.b64encode(b"\x00\x01\x02binary\xff").decode(),
        "mimeType": "application/octet-stream",
    }
    [pdf] = (await call(client, "read", path="report.pdf"))["content"]
    assert pdf["resource"]["mimeType"] == "application/pdf"


async def test_a_long_file_is_cut_with_a_note_and_read_on_by_offset(
    client: ClientSession, tree: Tree
) -> None:
    (tree.root / "long.txt").write_text("0123456789abcdefghié!")  # é is two bytes
    mcpactor_fs.configure([tree.root], max_read_bytes=10)
    first = await call(client, "read", path="long.txt")
    assert texts(first) == [
        "0123456789",
        "[cut at the read limit: this is bytes 0–10 of 22; read again with offset=10 for more]",
    ]
    second = await call(client, "read", path="long.txt", offset=10)
    # The last byte would split "é": it is left for the next read.
    assert texts(second)[0] == "abcdefghi"
    assert "offset=19" in texts(second)[1]
    third = await call(client, "read", path="long.txt", offset=19)
    assert texts(third) == ["é!"]

    message = await call_error(client, "read", path="long.txt", offset=99)
    assert "offset 99 is past the end" in message

    # A limit smaller than a character still moves on.
    mcpactor_fs.configure([tree.root], max_read_bytes=1)
    tiny = await call(client, "read", path="long.txt", offset=19)
    assert texts(tiny)[0] == "\ufffd"
    assert "offset=20" in texts(tiny)[1]


async def test_a_cut_binary_file_is_a_blob_of_the_part_read(
    client: ClientSession, tree: Tree
) -> None:
    mcpactor_fs.configure([tree.root], max_read_bytes=8)
    blob, note = (await call(client, "read", path="image.png"))["content"]
    assert blob["resource"]["mimeType"] == "image/png"
    assert base64.b64decode(blob["resource"]["blob"]) == PNG[:8]
    assert note["text"].startswith("[cut at the read limit: this is bytes 0–8 of 24")


async def test_read_refuses_directories_and_special_files(
    client: ClientSession, tree: Tree
) -> None:
    assert "is a directory: use the list tool" in await call_error(client, "read", path="docs")
    os.mkfifo(tree.root / "pipe")
    # A FIFO with no writer would block a plain open() forever.
    with trio.fail_after(GUARD):
        assert "is not a regular file" in await call_error(client, "read", path="pipe")
    assert "'nope.txt' does not exist" in await call_error(client, "read", path="nope.txt")


async def test_list_shows_entries_without_following_symlinks(
    client: ClientSession, tree: Tree
) -> None:
    listing = (await call(client, "list"))["structuredContent"]
    assert listing["path"] == str(tree.root)
    assert listing["truncated"] is False
    entries = {entry["name"]: entry for entry in listing["entries"]}
    assert list(entries) == sorted(entries)
    assert entries["docs"] == {"name": "docs", "type": "directory", "size": None}
    assert entries["notes.txt"] == {"name": "notes.txt", "type": "file", "size": 12}
    assert entries["dir_link"]["type"] == "symlink"
    assert entries["link_out"]["type"] == "symlink"

    docs = (await call(client, "list", path="docs"))["structuredContent"]
    assert [entry["name"] for entry in docs["entries"]] == ["a.txt", "b.md", "deep", "up_link"]
    assert "is not a directory" in await call_error(client, "list", path="notes.txt")


async def test_names_that_are_not_utf8_are_shown_escaped(
    client: ClientSession, tree: Tree
) -> None:
    # JSON cannot carry a name's undecodable bytes: every tool shows them escaped.
    (tree.root / "docs" / os.fsdecode(b"odd\xff.txt")).write_bytes(b"odd one\n")
    docs = (await call(client, "list", path="docs"))["structuredContent"]
    assert "odd\\xff.txt" in [entry["name"] for entry in docs["entries"]]
    found = (await call(client, "search", pattern="odd*", contains="one"))["structuredContent"]
    assert [match["path"] for match in found["matches"]] == [f"{tree.root}/docs/odd\\xff.txt"]


async def test_stat_describes_files_and_directories(client: ClientSession, tree: Tree) -> None:
    info = (await call(client, "stat", path="notes.txt"))["structuredContent"]
    assert info["path"] == str(tree.root / "notes.txt")
    assert info["type"] == "file"
    assert info["size"] == 12
    assert info["permissions"].startswith("-r")
    assert info["modified"].endswith("+00:00")
    folder = (await call(client, "stat", path="docs"))["structuredContent"]
    assert folder["type"] == "directory"
    assert folder["permissions"].startswith("d")
    # A symlink inside the root is described by its (inside) target.
    linked = (await call(client, "stat", path="inside_link"))["structuredContent"]
    assert linked["path"] == str(tree.root / "docs" / "a.txt")


async def test_search_by_name_and_by_content(client: ClientSession, tree: Tree) -> None:
    by_name = (await call(client, "search", pattern="*.txt"))["structuredContent"]
    assert by_name == {
        "matches": [
            {"path": str(tree.root / p), "line": None, "text": None}
            for p in ("notes.txt", "docs/a.txt", "docs/deep/c.txt")
        ],
        "truncated": False,
    }
    by_path = (await call(client, "search", pattern="docs/*.md"))["structuredContent"]
    assert [m["path"] for m in by_path["matches"]] == [str(tree.root / "docs" / "b.md")]

    lines = (await call(client, "search", contains="needle"))["structuredContent"]
    assert lines["matches"] == [
        {"path": str(tree.root / "docs/a.txt"), "line": 2, "text": "world with a needle"},
        {"path": str(tree.root / "docs/a.txt"), "line": 3, "text": "needle again"},
        {"path": str(tree.root / "docs/deep/c.txt"), "line": 1, "text": "deep needle"},
    ]
    scoped = await call(client, "search", contains="needle", path="docs/deep")
    assert [m["line"] for m in scoped["structuredContent"]["matches"]] == [1]


async def test_search_counts_lines_as_grep_does(client: ClientSession, tree: Tree) -> None:
    (tree.root / "win").mkdir()
    (tree.root / "win" / "crlf.txt").write_bytes(b"first\r\nform\x0cfeed\r\nneedle\r\n")
    result = (await call(client, "search", contains="needle", path="win"))["structuredContent"]
    assert result["matches"] == [
        {"path": str(tree.root / "win" / "crlf.txt"), "line": 3, "text": "needle"}
    ]


async def test_search_is_bounded(client: ClientSession, tree: Tree) -> None:
    mcpactor_fs.configure([tree.root], max_search_results=2)
    result = (await call(client, "search", contains="needle"))["structuredContent"]
    assert result["truncated"] is True
    assert [m["text"] for m in result["matches"]] == ["world with a needle", "needle again"]


async def test_search_never_follows_symlinks_out(client: ClientSession, tree: Tree) -> None:
    # Outside there is a secret.txt, reachable through dir_link, link_out and up_link.
    found = (await call(client, "search", pattern="*secret*"))["structuredContent"]
    assert found == {"matches": [], "truncated": False}
    lines = (await call(client, "search", contains="secret"))["structuredContent"]
    assert lines["matches"] == []


# --- escapes -----------------------------------------------------------------------------

ESCAPES: Final = [
    "../outside/secret.txt",
    "docs/../../outside/secret.txt",
    "{outside}/secret.txt",
    "/etc/passwd",
    "{sibling}/secret.txt",  # /…/data2 starts with the string /…/data
    "{root}2/secret.txt",
    "link_out",  # a symlink to a file outside
    "dir_link/secret.txt",  # through a symlinked directory
    "docs/up_link/secret.txt",  # a relative symlink climbing out
    "file://{outside}/secret.txt",
    "file://{root}/../outside/secret.txt",
]


@pytest.mark.parametrize("escape", ESCAPES)
@pytest.mark.parametrize("tool", ["read", "stat"])
async def test_every_escape_is_refused(
    client: ClientSession, tree: Tree, tool: str, escape: str
) -> None:
    path = escape.format(root=tree.root, outside=tree.outside, sibling=tree.sibling)
    message = await call_error(client, tool, path=path)
    assert f"{path!r} is outside the directories this server may read ({tree.root})" in message
    # Where a symlink leads is not revealed.
    assert str(tree.outside) not in message.replace(path, "")


@pytest.mark.parametrize(
    "escape", ["..", "{outside}", "{sibling}", "dir_link", "docs/up_link", "/", "docs/../.."]
)
@pytest.mark.parametrize("tool", ["list", "search"])
async def test_every_directory_escape_is_refused(
    client: ClientSession, tree: Tree, tool: str, escape: str
) -> None:
    path = escape.format(outside=tree.outside, sibling=tree.sibling)
    message = await call_error(client, tool, path=path)
    assert "is outside the directories this server may read" in message


async def test_other_uris_and_nul_bytes_are_refused(client: ClientSession) -> None:
    assert "is not a local file:// URI" in await call_error(
        client, "read", path="file://elsewhere/etc/passwd"
    )
    assert "contains a NUL character" in await call_error(client, "read", path="docs\x00/a.txt")


@pytest.mark.parametrize(
    "path",
    [
        "a/" * 300_000,  # 600 KB: realpath would walk 300 000 components
        "file:///" + "a/" * 300_000,
        "file:///" + "%61/" * 300_000,
        "x" * (_sandbox.MAX_PATH_BYTES + 1),
        "é" * (_sandbox.MAX_PATH_BYTES // 2 + 1),  # few characters, too many bytes
        "a/" * _sandbox.MAX_PATH_DEPTH,
        "../" * _sandbox.MAX_PATH_DEPTH,
    ],
)
@pytest.mark.parametrize("tool", ["read", "stat", "list"])
async def test_paths_too_long_or_too_deep_are_refused_before_they_are_resolved(
    client: ClientSession, monkeypatch: pytest.MonkeyPatch, tool: str, path: str
) -> None:
    def refuse(path: str) -> str:
        raise AssertionError("a path over the bounds was resolved")

    monkeypatch.setattr(os.path, "realpath", refuse)
    message = await call_error(client, tool, path=path)
    assert "longer than" in message or "components, more than" in message
    # The message quotes a bounded part of the path, not all of it.
    assert len(message) < 400


async def test_the_bounds_leave_deep_legitimate_paths_alone(
    client: ClientSession, tree: Tree
) -> None:
    deep = tree.root / Path(*["d"] * 100)
    deep.mkdir(parents=True)
    (deep / "f.txt").write_text("deep down\n")
    path = "/".join(["d"] * 100) + "/f.txt"
    assert texts(await call(client, "read", path=path)) == ["deep down\n"]


async def test_the_file_template_bounds_paths_too(
    client: ClientSession, tree: Tree, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(path: str) -> str:
        raise AssertionError("a path over the bounds was resolved")

    monkeypatch.setattr(os.path, "realpath", refuse)
    with pytest.raises(RequestError) as info:
        await client.read_resource("file:///" + "a/" * 5000)
    assert info.value.code == -32602
    assert "components, more than" in info.value.message or "longer than" in info.value.message


async def test_search_patterns_and_texts_are_bounded(client: ClientSession) -> None:
    message = await call_error(client, "search", pattern="*a" * 600)
    assert "the pattern is 1200 characters, more than the limit of 1024" in message
    message = await call_error(client, "search", contains="x" * 5000)
    assert "contains is 5000 characters, more than the limit of 4096" in message
    # A pattern that backtracks in a naive matcher is linear in fnmatch's translation.
    found = await call(client, "search", pattern="*a" * 500 + "*b")
    assert found["structuredContent"] == {"matches": [], "truncated": False}


async def test_a_listing_keeps_the_first_entries_of_a_large_directory(
    client: ClientSession, tree: Tree, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(mcpactor_fs, "_MAX_LIST_ENTRIES", 3)
    big = tree.root / "big"
    big.mkdir()
    for name in ("e", "b", "d", "a", "c"):
        (big / name).write_text(name)
    listing = (await call(client, "list", path="big"))["structuredContent"]
    assert [entry["name"] for entry in listing["entries"]] == ["a", "b", "c"]
    assert listing["truncated"] is True


def test_a_symlink_planted_after_the_check_is_not_followed(tree: Tree) -> None:
    # As if "dir_link" had been a real directory while the path was resolved, then was
    # swapped for a symlink: the component-by-component walk refuses it.
    located = _sandbox.Located(
        root=str(tree.root), real=str(tree.root / "dir_link" / "secret.txt"), given="x"
    )
    with pytest.raises(_sandbox.PathRefused, match="changed into a symlink"):
        _sandbox.open_beneath(located)
    located = _sandbox.Located(root=str(tree.root), real=str(tree.root / "link_out"), given="y")
    with pytest.raises(_sandbox.PathRefused, match="changed into a symlink"):
        _sandbox.open_beneath(located)
    with pytest.raises(_sandbox.PathRefused, match="changed into a symlink"):
        _sandbox.stat_beneath(
            _sandbox.Located(
                root=str(tree.root), real=str(tree.root / "dir_link" / "x"), given="z"
            )
        )


def test_containment_compares_components() -> None:
    assert _sandbox.inside("/data", "/data")
    assert _sandbox.inside("/data/x/y", "/data")
    assert not _sandbox.inside("/data2", "/data")
    assert not _sandbox.inside("/data2/x", "/data")
    assert not _sandbox.inside("/", "/data")
    assert _sandbox.inside("/anything", "/")


# --- roots -------------------------------------------------------------------------------


async def test_without_roots_everything_is_refused(tree: Tree) -> None:
    mcpactor_fs.configure([])
    async with mcpactor.testing.client(mcpactor_fs.server) as client:
        message = await call_error(client, "read", path="notes.txt")
        assert "no roots to read from: set MCPACTOR_FS_ROOTS" in message
        assert "no roots" in await call_error(client, "search")
        assert (await call(client, "roots"))["structuredContent"] == {"result": []}


async def test_the_clients_roots_narrow_the_configured_roots(tree: Tree) -> None:
    offered = [
        Root(uri=(tree.root / "docs").as_uri(), name="docs"),
        Root(uri=tree.sibling.as_uri(), name="outside the configured roots"),
        Root(uri="https://example.com/repo", name="not a file"),
        Root(uri=(tree.root / "missing").as_uri()),
    ]
    async with mcpactor.testing.client(mcpactor_fs.server, roots=offered) as client:
        roots = (await call(client, "roots"))["structuredContent"]["result"]
        assert roots == [str(tree.root / "docs")]
        # Relative paths start at the first root served.
        assert texts(await call(client, "read", path="a.txt"))[0].startswith("hello")
        # The rest of the configured root is out of bounds now, and so is the
        # client's root the configuration does not allow.
        message = await call_error(client, "read", path=str(tree.root / "notes.txt"))
        assert "is outside the directories this server may read" in message
        await call_error(client, "read", path=str(tree.sibling / "secret.txt"))
        found = (await call(client, "search", pattern="*.txt"))["structuredContent"]
        assert [m["path"] for m in found["matches"]] == [
            str(tree.root / "docs" / "a.txt"),
            str(tree.root / "docs" / "deep" / "c.txt"),
        ]


@pytest.mark.parametrize("uri", ["file:///", "file://localhost/", "file:///{outside}/.."])
async def test_a_client_root_above_the_configured_roots_widens_nothing(
    tree: Tree, uri: str
) -> None:
    # Over HTTP the client is whoever reaches the port: offering / must not open the
    # machine's files to it.
    offered = [Root(uri=uri.format(outside=tree.outside))]
    async with mcpactor.testing.client(mcpactor_fs.server, roots=offered) as client:
        roots = (await call(client, "roots"))["structuredContent"]["result"]
        assert roots == [str(tree.root)]
        await call_error(client, "read", path=str(tree.outside / "secret.txt"))
        await call_error(client, "read", path="/etc/passwd")
        await call_error(client, "list", path="/")
        assert texts(await call(client, "read", path="notes.txt")) == ["plain notes\n"]


async def test_client_roots_outside_the_configured_ones_leave_nothing(tree: Tree) -> None:
    offered = [Root(uri=tree.outside.as_uri())]
    async with mcpactor.testing.client(mcpactor_fs.server, roots=offered) as client:
        assert (await call(client, "roots"))["structuredContent"] == {"result": []}
        message = await call_error(client, "read", path=str(tree.outside / "secret.txt"))
        assert "the client's roots are all outside the directories this server may read" in (
            message
        )
        assert "nothing both allow" in await call_error(client, "read", path="notes.txt")


async def test_without_configured_roots_the_clients_roots_open_nothing(tree: Tree) -> None:
    mcpactor_fs.configure([])
    offered = [Root(uri=tree.root.as_uri())]
    async with mcpactor.testing.client(mcpactor_fs.server, roots=offered) as client:
        assert (await call(client, "roots"))["structuredContent"] == {"result": []}
        message = await call_error(client, "read", path=str(tree.root / "notes.txt"))
        assert "set MCPACTOR_FS_ROOTS (the client's roots can only narrow them)" in message


async def test_the_operator_can_let_the_clients_roots_extend_the_configured_ones(
    tree: Tree,
) -> None:
    mcpactor_fs.configure([tree.root], client_roots="extend")
    offered = [
        Root(uri=tree.sibling.as_uri(), name="sibling"),
        Root(uri="https://example.com/repo", name="not a file"),
        Root(uri=(tree.root / "missing").as_uri()),
    ]
    async with mcpactor.testing.client(mcpactor_fs.server, roots=offered) as client:
        roots = (await call(client, "roots"))["structuredContent"]["result"]
        assert roots == [str(tree.root), str(tree.sibling)]
        result = await call(client, "read", path=str(tree.sibling / "secret.txt"))
        assert texts(result) == [SECRET]
        # Relative paths still start at the first (configured) root.
        assert texts(await call(client, "read", path="notes.txt")) == ["plain notes\n"]
        # The outside directory is still out of bounds.
        await call_error(client, "read", path=str(tree.outside / "secret.txt"))

        mcpactor_fs.configure([tree.root], client_roots="ignore")
        await call_error(client, "read", path=str(tree.sibling / "secret.txt"))
        offered.append(Root(uri=(tree.root / "docs").as_uri()))
        roots = (await call(client, "roots"))["structuredContent"]["result"]
        assert roots == [str(tree.root)]


async def test_too_many_client_roots_are_refused(tree: Tree) -> None:
    offered = [Root(uri=(tree.root / "docs").as_uri())] * 101
    async with mcpactor.testing.client(mcpactor_fs.server, roots=offered) as client:
        message = await call_error(client, "read", path="a.txt")
        assert "the client offers 101 roots, more than the 100 this server looks at" in message


async def test_client_roots_are_bounded_before_they_are_resolved(
    tree: Tree, monkeypatch: pytest.MonkeyPatch
) -> None:
    resolved: list[str] = []
    realpath = os.path.realpath

    def spy(path: str) -> str:
        resolved.append(path)
        return realpath(path)

    offered = [Root(uri="file:///" + "a/" * 300_000), Root(uri=(tree.root / "docs").as_uri())]
    async with mcpactor.testing.client(mcpactor_fs.server, roots=offered) as client:
        monkeypatch.setattr(os.path, "realpath", spy)
        roots = (await call(client, "roots"))["structuredContent"]["result"]
    assert roots == [str(tree.root / "docs")]
    assert max(map(len, resolved)) <= _sandbox.MAX_PATH_BYTES


async def test_a_client_without_roots_is_not_asked(client: ClientSession, tree: Tree) -> None:
    assert (await call(client, "roots"))["structuredContent"] == {"result": [str(tree.root)]}
    sent = [n.method for n in client.notifications.received]
    assert "roots/list" not in sent


def test_configure_reads_the_environment(tree: Tree, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCPACTOR_FS_ROOTS", os.pathsep.join([str(tree.root), str(tree.sibling)]))
    monkeypatch.setenv("MCPACTOR_FS_MAX_READ_BYTES", "4096")
    monkeypatch.setenv("MCPACTOR_FS_MAX_SEARCH_RESULTS", "7")
    monkeypatch.setenv("MCPACTOR_FS_CLIENT_ROOTS", "0")
    assert mcpactor_fs.configure() == mcpactor_fs.FsConfig(
        roots=(str(tree.root), str(tree.sibling)),
        max_read_bytes=4096,
        max_search_results=7,
        client_roots="ignore",
    )
    for spelt, meant in [
        ("extend", "extend"),
        (" Narrow ", "narrow"),
        ("ignore", "ignore"),
        ("off", "ignore"),
        ("1", "narrow"),  # it never meant more than looking at the client's roots
        ("true", "narrow"),
    ]:
        monkeypatch.setenv("MCPACTOR_FS_CLIENT_ROOTS", spelt)
        assert mcpactor_fs.configure().client_roots == meant
    monkeypatch.delenv("MCPACTOR_FS_CLIENT_ROOTS")
    assert mcpactor_fs.configure().client_roots == "narrow"
    assert mcpactor_fs.configure(client_roots=True).client_roots == "narrow"
    monkeypatch.setenv("MCPACTOR_FS_CLIENT_ROOTS", "all")
    with pytest.raises(ValueError, match="MCPACTOR_FS_CLIENT_ROOTS must be one of narrow"):
        mcpactor_fs.configure()
    with pytest.raises(ValueError, match="client_roots must be one of narrow, ignore, extend"):
        mcpactor_fs.configure([tree.root], client_roots="widen")  # type: ignore[arg-type]
    monkeypatch.delenv("MCPACTOR_FS_CLIENT_ROOTS")
    with pytest.raises(ValueError, match="is not a directory"):
        mcpactor_fs.configure([tree.root / "notes.txt"])
    with pytest.raises(ValueError, match="max_read_bytes must be at least 1"):
        mcpactor_fs.configure([tree.root], max_read_bytes=0)
    monkeypatch.setenv("MCPACTOR_FS_MAX_READ_BYTES", "lots")
    with pytest.raises(ValueError, match="MCPACTOR_FS_MAX_READ_BYTES must be a whole number"):
        mcpactor_fs.configure()


# --- resources and completion ------------------------------------------------------------


async def test_roots_are_resources(client: ClientSession, tree: Tree) -> None:
    [resource] = await client.list_resources()
    assert resource["uri"] == tree.root.as_uri()
    assert resource["name"] == "data"
    [content] = (await client.read_resource(tree.root.as_uri()))["contents"]
    listing = json.loads(content["text"])
    assert listing["path"] == str(tree.root)
    assert "docs" in [entry["name"] for entry in listing["entries"]]

    # Configuring new roots replaces the resources and tells the session.
    mcpactor_fs.configure([tree.root, tree.sibling])
    with trio.fail_after(GUARD):
        await client.notifications.wait_for("notifications/resources/list_changed")
    uris = [r["uri"] for r in await client.list_resources()]
    assert uris == [tree.root.as_uri(), tree.sibling.as_uri()]


async def test_a_root_that_went_away_is_not_found(tree: Tree) -> None:
    gone = tree.root.parent / "gone"
    gone.mkdir()
    mcpactor_fs.configure([gone])
    gone.rmdir()
    async with mcpactor.testing.client(mcpactor_fs.server) as client:
        with pytest.raises(RequestError) as info:
            await client.read_resource(gone.as_uri())
    assert info.value.code == -32002
    assert "does not exist" in info.value.message


async def test_the_file_template_reads_files_and_directories(
    client: ClientSession, tree: Tree
) -> None:
    [template] = await client.list_resource_templates()
    assert template["uriTemplate"] == "file://{+path}"
    uri = (tree.root / "docs" / "a.txt").as_uri()
    [content] = (await client.read_resource(uri))["contents"]
    assert content == {
        "uri": uri,
        "text": "hello\nworld with a needle\nneedle again\n",
        "mimeType": "text/plain",
    }
    [image] = (await client.read_resource((tree.root / "image.png").as_uri()))["contents"]
    assert image["mimeType"] == "image/png"
    assert base64.b64decode(image["blob"]) == PNG
    [folder] = (await client.read_resource((tree.root / "docs").as_uri()))["contents"]
    assert folder["mimeType"] == "application/json"
    assert "a.txt" in folder["text"]


@pytest.mark.parametrize(
    "uri",
    [
        "file://{outside}/secret.txt",
        "file://{sibling}/secret.txt",
        "file://{root}/link_out",
        "file://{root}/dir_link/secret.txt",
        "file://{root}/..%2Foutside/secret.txt",
        "file://{root}/%2e%2e/outside/secret.txt",
    ],
)
async def test_the_file_template_refuses_escapes(
    client: ClientSession, tree: Tree, uri: str
) -> None:
    with pytest.raises(RequestError) as info:
        await client.read_resource(
            uri.format(root=tree.root, outside=tree.outside, sibling=tree.sibling)
        )
    assert info.value.code == -32602
    assert "is outside the directories this server may read" in info.value.message
    assert SECRET not in str(info.value.data)


async def test_the_file_template_reports_missing_and_oversized_files(
    client: ClientSession, tree: Tree
) -> None:
    with pytest.raises(RequestError) as info:
        await client.read_resource((tree.root / "nope.txt").as_uri())
    assert info.value.code == -32002
    mcpactor_fs.configure([tree.root], max_read_bytes=4)
    with pytest.raises(RequestError) as info:
        await client.read_resource((tree.root / "notes.txt").as_uri())
    assert info.value.code == -32602
    assert "is 12 bytes, more than the limit of 4" in info.value.message


async def test_paths_complete_inside_the_roots(client: ClientSession, tree: Tree) -> None:
    ref = {"type": "ref/resource", "uri": "file://{+path}"}

    async def complete(value: str) -> list[str]:
        result = await client.complete(ref, {"name": "path", "value": value})
        values: list[str] = result["completion"]["values"]
        return values

    assert await complete("") == [f"{tree.root}/"]
    assert await complete(f"{tree.root}/do") == [f"{tree.root}/docs/"]
    assert await complete(f"{tree.root}/docs/") == [
        f"{tree.root}/docs/{name}" for name in ("a.txt", "b.md", "deep/", "up_link")
    ]
    # Outside the roots there is nothing to complete but the roots themselves.
    assert await complete(f"{tree.outside}/") == []
    assert await complete(f"{tree.sibling}/") == []


# --- cancellation ------------------------------------------------------------------------


class Gate:
    """Stands in for check_cancelled: holds the search at its first check until released.

    The real check then runs: cancelled by then, the search must stop right there.
    """

    def __init__(self) -> None:
        self._token = trio.lowlevel.current_trio_token()
        self.entered = trio.Event()
        self.stopped = trio.Event()
        self.release = threading.Event()
        self.calls = 0

    def check(self) -> None:
        self.calls += 1
        if self.calls == 1:
            self._token.run_sync_soon(self.entered.set)
            self.release.wait(GUARD)
        try:
            check_cancelled()
        except BaseException:
            self._token.run_sync_soon(self.stopped.set)
            raise


async def test_a_search_stops_at_its_next_check_once_cancelled(
    tree: Tree, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = Gate()
    monkeypatch.setattr(mcpactor_fs, "check_cancelled", gate.check)
    # One worker thread: holding its token proves the search's thread has finished.
    limiter = trio.CapacityLimiter(1)
    options = SessionOptions(thread_limiter=limiter)
    scope = trio.CancelScope()
    async with mcpactor.testing.client(mcpactor_fs.server, options=options) as client:

        async def search() -> None:
            with scope:
                await client.call_tool("search", {"contains": "needle"})

        async with trio.open_nursery() as nursery:
            nursery.start_soon(search)
            with trio.fail_after(GUARD):
                await gate.entered.wait()
            scope.cancel()
            # The client tells the server, which cancels the request the thread serves.
            await trio.testing.wait_all_tasks_blocked()
            gate.release.set()
            with trio.fail_after(GUARD):
                await gate.stopped.wait()
                async with limiter:
                    pass
        assert scope.cancelled_caught
        # The check the search was held at raised: it visited nothing more.
        assert gate.calls == 1
        assert client.statistics().requests_pending == {}
