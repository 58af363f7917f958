"""MCP Apps (``io.modelcontextprotocol/ui``): tools that show an interactive HTML view.

A view is a ``ui://`` resource of type ``text/html;profile=mcp-app``, one self-contained
HTML document, served with what the host needs to sandbox it (``_meta.ui``: the origins
of its Content Security Policy, the browser permissions it asks for, a dedicated domain,
a border preference). A tool names its view in ``_meta.ui.resourceUri``; the host reads
the resource, renders it in a sandboxed iframe and passes the tool's result to it. The
view calls the server back through the host with ordinary ``tools/call`` requests, to
tools any client could call or to tools only apps see (``visibility=["app"]``)::

    from mcpactor.ext import apps

    server = Server("greeter", extensions=[apps.extension])
    apps.add_ui_resource(server, "ui://greeter/form.html", HTML, prefers_border=True)

    @server.tool(meta=apps.ui("ui://greeter/form.html"))
    async def open_greeter() -> str: ...

    @server.tool(meta=apps.ui(visibility=["app"]))
    async def greet(name: str) -> str: ...

Enabling ``extension`` declares ``io.modelcontextprotocol/ui`` under
``capabilities.extensions`` (2025-11-25 sessions and 2026-07-28). Everything an author
gives is checked when it is given (a ``SchemaError`` naming it); when the server starts,
the extension checks that every view a tool names is served.
"""

from __future__ import annotations

import os
import re
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Final, Literal, get_args
from urllib.parse import urlsplit

import attrs

from .._exceptions import SchemaError
from ..protocol import LATEST, JSONObject, TextResourceContents, describe
from ..server import CacheHint, Extension, Server

__all__ = [
    "EXTENSION_ID",
    "LEGACY_RESOURCE_URI_KEY",
    "MIME_TYPE",
    "Csp",
    "Permissions",
    "Visibility",
    "add_ui_resource",
    "check",
    "extension",
    "host_supports",
    "ui",
    "ui_resource_uri",
]

#: the extension's identifier, the key under ``capabilities.extensions``
EXTENSION_ID: Final = "io.modelcontextprotocol/ui"
#: the media type of an HTML view
MIME_TYPE: Final = "text/html;profile=mcp-app"
#: the flat ``_meta`` key hosts read before ``_meta.ui.resourceUri`` (deprecated by the
#: extension; written beside it, as the extension's own SDK does, for those hosts)
LEGACY_RESOURCE_URI_KEY: Final = "ui/resourceUri"

#: who may call a tool: the model (listed to the agent), the app (called from a view)
Visibility = Literal["model", "app"]
_VISIBILITIES: Final = frozenset(get_args(Visibility))

#: characters a ``ui://`` URI, a CSP origin or a domain may hold, at most
_MAX_LENGTH: Final = 2048
# An origin as CSP source lists take it: a scheme, a host (its first label may be "*"),
# an optional port, nothing after. Anything else (a space, a ";", a quote) would add
# directives of its own to the policy the host builds from it.
_ORIGIN: Final = re.compile(
    r"(?:https?|wss?)://"
    r"(?:\*\.)?(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
    r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*|\[[0-9A-Fa-f:.]+\])"
    r"(?::[0-9]{1,5})?"
)
_DOMAIN: Final = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?")


def ui_resource_uri(uri: object, *, what: str = "a UI resource") -> str:
    """``uri`` if it is a ``ui://`` URI a view can be served at; SchemaError otherwise."""
    if not isinstance(uri, str):
        raise SchemaError(f"{what}: the URI must be a string, got {describe(uri)}")
    if len(uri) > _MAX_LENGTH or any(c.isspace() or ord(c) < 0x20 for c in uri):
        raise SchemaError(
            f"{what}: {describe(uri)} is not a URI (a space, a control character, or "
            f"longer than {_MAX_LENGTH} characters)"
        )
    scheme, authority, path, _query, _fragment = urlsplit(uri)
    if scheme != "ui":
        raise SchemaError(
            f"{what}: {describe(uri)} must use the ui:// scheme (MCP Apps serves views "
            f"only at ui:// URIs), not {describe(scheme + ':' if scheme else 'no scheme')}"
        )
    if not uri.startswith("ui://") or not (authority or path.strip("/")):
        raise SchemaError(f"{what}: {describe(uri)} must be ui://<server>/<view>")
    if "{" in uri or "}" in uri:
        raise SchemaError(
            f"{what}: {describe(uri)} is a URI template; a view is one fixed resource "
            "the host can read before the tool runs"
        )
    return uri


def _origins(field: str, value: str | Sequence[str]) -> tuple[str, ...]:
    items = (value,) if isinstance(value, str) else tuple(value)
    for item in items:
        if not isinstance(item, str) or len(item) > _MAX_LENGTH or not _ORIGIN.fullmatch(item):
            raise SchemaError(
                f"Csp {field}: {describe(item)} is not an origin "
                "(scheme://host[:port] with http, https, ws or wss, the host's first "
                "label may be '*'; no path, space or ';')"
            )
    return items


# One named converter per field (what attrs' mypy plugin can read).
def _connect_domains(value: str | Sequence[str]) -> tuple[str, ...]:
    return _origins("connect_domains", value)


def _resource_domains(value: str | Sequence[str]) -> tuple[str, ...]:
    return _origins("resource_domains", value)


def _frame_domains(value: str | Sequence[str]) -> tuple[str, ...]:
    return _origins("frame_domains", value)


def _base_uri_domains(value: str | Sequence[str]) -> tuple[str, ...]:
    return _origins("base_uri_domains", value)


@attrs.frozen
class Csp:
    """The external origins a view may reach; hosts build its Content Security Policy.

    Nothing declared is the secure default: no network, no external scripts, styles,
    images or frames. Each field is a list of origins (``https://api.example.com``,
    ``https://*.example.com``, ``wss://live.example.com``).
    """

    #: ``fetch``/XHR/WebSocket targets (``connect-src``)
    connect_domains: tuple[str, ...] = attrs.field(default=(), converter=_connect_domains)
    #: scripts, styles, images, fonts and media (``script-src``, ``img-src`` …)
    resource_domains: tuple[str, ...] = attrs.field(default=(), converter=_resource_domains)
    #: nested iframes (``frame-src``; none allowed without)
    frame_domains: tuple[str, ...] = attrs.field(default=(), converter=_frame_domains)
    #: the document's base URIs (``base-uri``; its own origin without)
    base_uri_domains: tuple[str, ...] = attrs.field(default=(), converter=_base_uri_domains)

    def wire(self) -> JSONObject:
        """The ``_meta.ui.csp`` object: the fields that list origins."""
        fields = {
            "connectDomains": self.connect_domains,
            "resourceDomains": self.resource_domains,
            "frameDomains": self.frame_domains,
            "baseUriDomains": self.base_uri_domains,
        }
        return {key: list(value) for key, value in fields.items() if value}


@attrs.frozen
class Permissions:
    """Browser features a view asks for; a host may grant them (the iframe's ``allow``)."""

    camera: bool = False
    microphone: bool = False
    geolocation: bool = False
    #: writing to the clipboard (``clipboard-write``)
    clipboard_write: bool = False

    def wire(self) -> JSONObject:
        """The ``_meta.ui.permissions`` object: ``{}`` for each feature asked for."""
        fields = {
            "camera": self.camera,
            "microphone": self.microphone,
            "geolocation": self.geolocation,
            "clipboardWrite": self.clipboard_write,
        }
        return {key: {} for key, wanted in fields.items() if wanted}


def ui(
    resource_uri: str | None = None,
    *,
    visibility: Sequence[Visibility] | None = None,
    meta: Mapping[str, Any] | None = None,
) -> JSONObject:
    """A tool's ``_meta`` naming its view: ``@server.tool(meta=apps.ui("ui://x/v.html"))``.

    ``visibility`` says who may call the tool: ``["model", "app"]`` (what hosts assume
    when it is left out), ``["app"]`` for a tool only views call (hosts keep it from the
    model's list) or ``["model"]``. ``meta`` is the rest of the tool's ``_meta``.
    """
    entry: JSONObject = {}
    if resource_uri is not None:
        entry["resourceUri"] = ui_resource_uri(resource_uri, what="the tool's view")
    if visibility is not None:
        entry["visibility"] = _visibility(visibility)
    if not entry:
        raise SchemaError("apps.ui() needs a resource_uri, a visibility, or both")
    if meta is not None and ("ui" in meta or LEGACY_RESOURCE_URI_KEY in meta):
        raise SchemaError("apps.ui(meta=...) already has a 'ui' entry; give it once")
    out: JSONObject = {**(meta or {}), "ui": entry}
    if resource_uri is not None:
        out[LEGACY_RESOURCE_URI_KEY] = resource_uri
    return out


def host_supports(client_capabilities: Mapping[str, Any]) -> bool:
    """Whether a client's capabilities say it renders HTML views (``ctx.client_capabilities``).

    A host declares ``extensions["io.modelcontextprotocol/ui"].mimeTypes``, in
    ``initialize`` or (2026-07-28) in each request's envelope: a tool may answer
    differently for one that does not, though its text answer must stand on its own.
    """
    extensions = client_capabilities.get("extensions")
    settings = extensions.get(EXTENSION_ID) if isinstance(extensions, Mapping) else None
    types = settings.get("mimeTypes") if isinstance(settings, Mapping) else None
    return isinstance(types, list) and MIME_TYPE in types


def _visibility(visibility: Sequence[Visibility]) -> list[str]:
    if isinstance(visibility, str):
        raise SchemaError(f"visibility must be a list, like [{visibility!r}]")
    chosen: list[Any] = list(visibility) if isinstance(visibility, Sequence) else []
    if (
        not chosen
        or any(type(item) is not str or item not in _VISIBILITIES for item in chosen)
        or len(set(chosen)) != len(chosen)
    ):
        raise SchemaError(
            f"visibility {describe(visibility)} must hold 'model', 'app' or both, once each"
        )
    return chosen


def add_ui_resource(
    server: Server[Any],
    uri: str,
    html: str | os.PathLike[str],
    *,
    name: str | None = None,
    title: str | None = None,
    description: str | None = None,
    csp: Csp | None = None,
    permissions: Permissions | None = None,
    domain: str | None = None,
    prefers_border: bool | None = None,
    cache: CacheHint | None = None,
) -> None:
    """Serve the view at ``uri``: an HTML document, or the file holding one.

    A file is read now, once (an error now, not at the host's first read); the view is
    one self-contained document, its scripts and styles inline or from ``csp``'s
    origins. ``csp``, ``permissions``, ``domain`` (the host-specific sandbox origin) and
    ``prefers_border`` are sent in ``_meta.ui``, in the resource's listing and with its
    contents.
    """
    what = f"UI resource {describe(uri)}"
    ui_resource_uri(uri, what=what)
    document = _document(html, what)
    meta = _resource_meta(what, csp, permissions, domain, prefers_border)

    def read() -> TextResourceContents:
        return TextResourceContents(uri=uri, text=document, mime_type=MIME_TYPE, meta=meta)

    server.add_resource(
        read,
        uri,
        name=name or uri.removeprefix("ui://"),
        title=title,
        description=description,
        mime_type=MIME_TYPE,
        meta=meta,
        cache=cache,
    )


def _document(html: str | os.PathLike[str], what: str) -> str:
    if isinstance(html, os.PathLike):
        path = Path(html)
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise SchemaError(f"{what}: cannot read its HTML from {path}: {exc}") from None
    elif isinstance(html, str):
        text = html
    else:
        raise SchemaError(f"{what}: html must be a str or a path, got {describe(html)}")
    if "<html" not in text[:4096].lower():
        raise SchemaError(
            f"{what}: the view must be an HTML document (<!doctype html><html>…), got "
            f"{describe(text, length=60)}"
        )
    return text


def _resource_meta(
    what: str,
    csp: Csp | None,
    permissions: Permissions | None,
    domain: str | None,
    prefers_border: bool | None,
) -> JSONObject | None:
    entry: JSONObject = {}
    if csp is not None:
        if not isinstance(csp, Csp):
            raise SchemaError(f"{what}: csp must be an apps.Csp, got {describe(csp)}")
        if csp.wire():
            entry["csp"] = csp.wire()
    if permissions is not None:
        if not isinstance(permissions, Permissions):
            raise SchemaError(
                f"{what}: permissions must be an apps.Permissions, got {describe(permissions)}"
            )
        if permissions.wire():
            entry["permissions"] = permissions.wire()
    if domain is not None:
        if (
            not isinstance(domain, str)
            or len(domain) > _MAX_LENGTH
            or not _DOMAIN.fullmatch(domain)
        ):
            raise SchemaError(
                f"{what}: domain {describe(domain)} must be a host name, like "
                "'a904794854a047f6.claudemcpcontent.com' (its form is the host's)"
            )
        entry["domain"] = domain
    if prefers_border is not None:
        if not isinstance(prefers_border, bool):
            raise SchemaError(
                f"{what}: prefers_border must be a bool, got {describe(prefers_border)}"
            )
        entry["prefersBorder"] = prefers_border
    return {"ui": entry} if entry else None


def check(server: Server[Any]) -> None:
    """SchemaError naming each tool whose ``_meta.ui`` names no view the server serves.

    A tool's ``_meta.ui`` may be written by hand: its ``resourceUri`` must be a
    ``ui://`` URI, served by a resource of type ``text/html;profile=mcp-app``, and its
    ``visibility`` a list of ``"model"`` and ``"app"``. Run at start, once every tool
    and resource is registered (mounted servers included: resource URIs are never
    prefixed, so a mounted tool's view keeps its URI).
    """
    catalog = server._catalog()
    problems = []
    for name, tool in catalog.tools.items():
        meta = tool.wire(LATEST).get("_meta")
        entry = meta.get("ui") if isinstance(meta, dict) else None
        if entry is None:
            continue
        what = f"tool {describe(name)}"
        try:
            uri = _tool_view(entry, what)
        except SchemaError as exc:
            problems.append(str(exc))
            continue
        if uri is None:
            continue
        resource = catalog.resources.get(uri)
        if resource is None:
            problems.append(
                f"{what} names the view {describe(uri)}, which no resource serves "
                "(serve it with apps.add_ui_resource)"
            )
        elif (mime_type := resource.wire(LATEST).get("mimeType")) != MIME_TYPE:
            problems.append(
                f"{what} names the view {describe(uri)}, a resource of type "
                f"{describe(mime_type)}, not {MIME_TYPE!r}"
            )
    if problems:
        raise SchemaError(f"server {describe(server.name)}: " + "; ".join(problems))


def _tool_view(entry: object, what: str) -> str | None:
    # The view a tool's _meta.ui names (None: it names none), checked as apps.ui checks.
    if not isinstance(entry, dict):
        raise SchemaError(f"{what}: _meta.ui must be an object, got {describe(entry)}")
    if entry.get("visibility") is not None:
        _visibility(entry["visibility"])
    uri = entry.get("resourceUri")
    return None if uri is None else ui_resource_uri(uri, what=f"{what}'s view")


@asynccontextmanager
async def _checked(server: Server[Any]) -> AsyncIterator[None]:
    # Entered when the server starts, once everything is registered.
    check(server)
    yield


def _setup(server: Server[Any]) -> None:
    server.lifespan(_checked)


#: the MCP Apps extension: ``Server(extensions=[apps.extension])``
extension: Final = Extension(
    EXTENSION_ID,
    requires=("tools", "resources"),
    setup=_setup,
    description="MCP Apps: tools with interactive HTML views, served as ui:// resources",
)
