# Tool manifests, the draft SEP-2636 (experimental): ``tools/manifest`` lists every tool
# by name with a digest of its full definition and its annotations, and ``tools/describe``
# returns the full definitions of the tools named, so a client that caches definitions
# fetches only the ones whose digest changed.
#
# The draft followed is the text of docs/seps/2636-tool-manifests.mdx at commit
# fbba1510a12530d45fb8125769844e2a366c5f93 of modelcontextprotocol/modelcontextprotocol
# (it replaced "progressive tool disclosure": no ``tools/catalog``, no query, summary or
# tags; unknown names are -32602). The draft declares itself as ``tools.manifest`` in the
# server's core capabilities; until it is part of a revision it is served as an extension,
# declared under ``capabilities.extensions``, and answered only to clients that declare
# the extension there too.

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

import attrs
import orjson

from .._exceptions import INVALID_PARAMS, METHOD_NOT_FOUND, RequestError
from ..protocol import JSONObject, Revision, describe
from ._context import Context
from ._extensions import CustomMethod, Extension
from ._paging import Pages, paginate
from ._scopes import scopes_of

if TYPE_CHECKING:
    from ._server import Server

__all__ = ["TOOL_MANIFESTS", "tool_digest", "tool_manifests"]

#: the identifier of the tool manifests extension (SEP-2636, draft)
TOOL_MANIFESTS: Final = "io.mcpactor/tool-manifests"
#: the draft's text this follows: docs/seps/2636-tool-manifests.mdx at this commit
DRAFT_COMMIT: Final = "fbba1510a12530d45fb8125769844e2a366c5f93"
# The draft asks servers to accept at least 50 names per describe.
_MIN_BATCH: Final = 50
_ENTRY_FIELDS: Final = ("name", "title", "annotations")


def _canonical(value: Any) -> Any:
    # RFC 8785 numbers: a float with an integral value is written as the integer.
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    if isinstance(value, Mapping):
        return {str(key): _canonical(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_canonical(item) for item in value]
    return value


def tool_digest(tool: Mapping[str, Any]) -> str:
    """``sha256:<hex>`` of a tool definition's canonical JSON (keys sorted, no spaces)."""
    canonical = orjson.dumps(_canonical(tool), option=orjson.OPT_SORT_KEYS)
    return "sha256:" + hashlib.sha256(canonical).hexdigest()


@attrs.define(eq=False)
class _Entry:
    # A tool as the manifest lists it (``wire`` as paginate asks of a listed entry).
    listed: Any
    manifests: ToolManifests

    def wire(self, revision: Revision) -> JSONObject:
        return self.manifests.entry(self.listed, revision)


@attrs.define(eq=False)
class ToolManifests:
    """The state of one server's tool manifests: its digests and pages, kept until the
    server's tools change."""

    max_names: int = 100
    _server: Server[Any] | None = attrs.field(default=None, init=False)
    _pages: Pages = attrs.field(factory=dict, init=False)
    # (revision, tool name) -> its manifest entry
    _entries: dict[tuple[str, str], JSONObject] = attrs.field(factory=dict, init=False)

    def list_changed(self, kind: str) -> None:
        """The server's tools changed: digests and pages are worked out again."""
        if kind == "tools":
            self._pages.clear()
            self._entries.clear()

    def resource_updated(self, uri: str) -> None:
        """Resources do not concern the manifest."""

    def entry(self, listed: Any, revision: Revision) -> JSONObject:
        """The manifest entry of a listed tool: name, title, digest, annotations."""
        tool = listed.wire(revision)
        key = (revision.version, str(tool.get("name")))
        entry = self._entries.get(key)
        if entry is None:
            entry = {field: tool[field] for field in _ENTRY_FIELDS if field in tool}
            entry["digest"] = tool_digest(tool)
            self._entries[key] = entry
        return entry

    def _visible(self, ctx: Context) -> tuple[dict[str, Any], bool]:
        # What tools/list shows this caller (with hide_unauthorized, by its scopes), and
        # whether its scopes hid any.
        server = self._server
        if server is None:
            raise RuntimeError("the tool manifests extension is not enabled on a server")
        declared = ctx.client_capabilities.get("extensions")
        if not isinstance(declared, Mapping) or TOOL_MANIFESTS not in declared:
            raise RequestError(
                METHOD_NOT_FOUND,
                f"tool manifests are served to clients that declare the {TOOL_MANIFESTS} "
                "extension in their capabilities",
            )
        tools = dict(server._catalog().tools)
        principal = ctx.principal if server.hide_unauthorized else None
        if principal is None:
            return tools, False
        shown = {
            name: entry
            for name, entry in tools.items()
            if principal.scopes.issuperset(scopes_of(entry))
        }
        return shown, len(shown) < len(tools)

    async def manifest(self, params: JSONObject, ctx: Context) -> JSONObject:
        """``tools/manifest``: a page of manifest entries, with ``nextCursor``."""
        tools, hidden = self._visible(ctx)
        # A caller whose scopes hide tools gets pages of its own, not the shared ones.
        pages: Pages = {} if hidden else self._pages
        entries = [_Entry(listed, self) for listed in tools.values()]
        page_size = self._server.page_size if self._server is not None else 100
        revision = ctx.negotiated.revision
        return paginate(pages, "entries", revision, params, entries, page_size)

    async def describe(self, params: JSONObject, ctx: Context) -> JSONObject:
        """``tools/describe``: the full definitions of the tools named, in their order."""
        names = params["names"]
        if not names:
            raise RequestError(INVALID_PARAMS, "no tool names to describe", {"reason": "empty"})
        if len(names) > self.max_names:
            raise RequestError(
                INVALID_PARAMS,
                f"at most {self.max_names} names per request, got {len(names)}",
                {"maxNames": self.max_names},
            )
        tools, _ = self._visible(ctx)
        unknown = list(dict.fromkeys(name for name in names if name not in tools))
        if unknown:
            raise RequestError(
                INVALID_PARAMS,
                f"Unknown tool names: {', '.join(describe(name) for name in unknown[:5])}",
                {"unknownNames": unknown},
            )
        revision = ctx.negotiated.revision
        return {"tools": [tools[name].wire(revision) for name in names]}

    def setup(self, server: Server[Any]) -> None:
        """Serve ``server``'s tools and hear about their changes."""
        self._server = server
        server.listeners.add(self)

    def extension(self) -> Extension:
        """The tool manifests as an ``Extension`` to enable on the served server."""
        return Extension(
            identifier=TOOL_MANIFESTS,
            settings={"manifest": True, "maxNames": self.max_names},
            requires=("tools",),
            methods=[
                CustomMethod(
                    "tools/manifest",
                    self.manifest,
                    _MANIFEST_PARAMS,
                    _MANIFEST_RESULT,
                    description="every tool by name, with a digest of its definition",
                ),
                CustomMethod(
                    "tools/describe",
                    self.describe,
                    _DESCRIBE_PARAMS,
                    _DESCRIBE_RESULT,
                    description="the full definitions of the tools named",
                ),
            ],
            setup=self.setup,
            description=f"tool manifests (draft SEP-2636 at {DRAFT_COMMIT[:7]}, experimental)",
        )


_MANIFEST_PARAMS: Final[JSONObject] = {
    "type": "object",
    "properties": {"cursor": {"type": "string"}},
}
_MANIFEST_RESULT: Final[JSONObject] = {
    "type": "object",
    "properties": {
        "entries": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "title": {"type": "string"},
                    "digest": {"type": "string", "pattern": "^sha256:[0-9a-f]{64}$"},
                    "annotations": {"type": "object"},
                },
                "required": ["name", "digest"],
                "additionalProperties": False,
            },
        },
        "nextCursor": {"type": "string"},
    },
    "required": ["entries"],
}
_DESCRIBE_RESULT: Final[JSONObject] = {
    "type": "object",
    "properties": {"tools": {"type": "array", "items": {"type": "object"}}},
    "required": ["tools"],
}


# Names past the bound are refused by the handler (with data.maxNames), not here; the
# array is bounded by the message size limit before it is read.
_DESCRIBE_PARAMS: Final[JSONObject] = {
    "type": "object",
    "properties": {"names": {"type": "array", "items": {"type": "string"}}},
    "required": ["names"],
}


def tool_manifests(*, max_names: int = 100) -> Extension:
    """The draft SEP-2636 tool manifests (``tools/manifest``, ``tools/describe``) as an
    ``Extension``; experimental."""
    if type(max_names) is not int or max_names < _MIN_BATCH:
        raise ValueError(f"max_names must be at least {_MIN_BATCH}, got {describe(max_names)}")
    return ToolManifests(max_names).extension()
