# Serving the Server Card and the AI Catalog (SEP-2127, experimental): public and
# read-only, as the draft's discovery document asks. No Origin guard and no token (a
# client reads them before it knows how to connect), CORS open to every origin,
# Cache-Control, a strong ETag and If-None-Match answered with 304.
#
# A document is built once per (Host, mount point) and per change of the server's
# identity (assigning ``server.version`` drops serverInfo, and so the card), then
# served from memory: a GET costs a dict lookup. The app reaches this only for a path
# that is not an MCP endpoint, so a tools/call POST never pays for it.

from __future__ import annotations

import hashlib
import urllib.parse
from collections.abc import Callable, Mapping
from typing import Any, Final

import attrs
import orjson

from .._exceptions import INVALID_REQUEST
from ..auth import ResourceServer
from ..protocol import LATEST
from ..server import Server
from ._exchange import Exchange, error_body, reply, reply_error
from ._security import parse_host
from ._server_card import (
    CARD_MEDIA_TYPE,
    CARD_SUFFIX,
    CATALOG_MEDIA_TYPE,
    CATALOG_PATH,
    ServerCardOptions,
    ai_catalog,
    catalog_identifier,
    server_card,
)

__all__ = ["Discovery"]

_ALLOW: Final = b"GET, HEAD, OPTIONS"
_CORS: Final = (
    (b"access-control-allow-origin", b"*"),
    (b"access-control-expose-headers", b"ETag"),
)
_PREFLIGHT: Final = (
    (b"access-control-allow-methods", b"GET, HEAD"),
    (b"access-control-allow-headers", b"Content-Type, If-None-Match"),
    (b"access-control-max-age", b"86400"),
    (b"allow", _ALLOW),
)
# Distinct (Host, mount point) pairs kept at once; past it the documents are rebuilt.
_MAX_BUILT: Final = 64
# The longest If-None-Match value looked at (a client sends one or a few tags).
_MAX_IF_NONE_MATCH: Final = 2048


@attrs.frozen
class _Document:
    body: bytes
    etag: bytes
    #: the serverInfo the document was built from: another object means it changed
    info: object


class Discovery:
    """The card and catalog of one Streamable HTTP endpoint, built once, served from memory."""

    def __init__(
        self,
        server: Server[Any],
        *,
        path: str,
        options: ServerCardOptions,
        https: bool,
        sse_path: str | None,
        resource_server: ResourceServer | None,
        host_allowed: Callable[[str | None], bool],
    ) -> None:
        self.server = server
        self.options = options
        self.endpoint = "" if path == "/" else path
        self.card_path = self.endpoint + CARD_SUFFIX
        paths = set()
        if options.enabled:
            paths.add(self.card_path)
        if options.catalog:
            paths.add(CATALOG_PATH)
        #: the paths answered here
        self.paths = frozenset(paths)
        self._scheme = "https" if https else "http"
        self._sse_path = sse_path
        self._resource = resource_server.resource if resource_server is not None else None
        self._metadata = resource_server.metadata_url if resource_server is not None else None
        self._host_allowed = host_allowed
        self._cache_control = f"public, max-age={options.max_age}".encode()
        self._built: dict[tuple[str, str, str], _Document] = {}

    async def serve(self, exchange: Exchange, path: str) -> None:
        """Answer a request for the card or the catalog."""
        method = exchange.method
        if method == "OPTIONS":
            await reply(exchange, 204, b"", [*_CORS, *_PREFLIGHT], content_type=None)
            return
        if method not in ("GET", "HEAD"):
            why = f"method {method[:20]} not allowed here"
            await reply(exchange, 405, error_body(INVALID_REQUEST, why), [(b"allow", _ALLOW)])
            return
        document = self._document(exchange, path)
        if document is None:
            await reply_error(exchange, 421, INVALID_REQUEST, "Host header not allowed")
            return
        headers = [*_CORS, (b"cache-control", self._cache_control), (b"etag", document.etag)]
        if _matches(exchange.headers.get("if-none-match"), document.etag):
            await reply(exchange, 304, b"", headers, content_type=None)
            return
        media_type = CARD_MEDIA_TYPE if path == self.card_path else CATALOG_MEDIA_TYPE
        await reply(exchange, 200, document.body, headers, content_type=media_type.encode())

    def _document(self, exchange: Exchange, path: str) -> _Document | None:
        # The document for this Host, from memory unless the server's identity changed.
        origin = self._origin(exchange)
        if origin is None:
            return None
        key = (path, origin, exchange.root_path)
        info = self.server.info(LATEST)
        document = self._built.get(key)
        if document is None or document.info is not info:
            if len(self._built) >= _MAX_BUILT:
                self._built.clear()
            body = orjson.dumps(self._build(path, origin + exchange.root_path))
            etag = b'"' + hashlib.blake2b(body, digest_size=16).hexdigest().encode() + b'"'
            document = self._built[key] = _Document(body, etag, info)
        return document

    def _origin(self, exchange: Exchange) -> str | None:
        # Where the endpoint is reached: the configured URL's (so "" here), else the
        # request's Host, if it names this server.
        if self.options.url is not None or self._resource is not None:
            return ""
        host = exchange.headers.get("host")
        if not host or parse_host(host) is None or not self._host_allowed(host):
            return None
        return f"{self._scheme}://{host}"

    def _build(self, path: str, base: str) -> dict[str, Any]:
        # ``base``: scheme, host and mount point, or "" when the URL is configured.
        url = self.options.url or self._resource
        if url is not None:
            endpoint = url.rstrip("/")
            parts = urllib.parse.urlsplit(endpoint)
            prefix = parts.path[: -len(self.endpoint)] if self.endpoint else parts.path
            if self.endpoint and not parts.path.endswith(self.endpoint):
                prefix = ""
            base = f"{parts.scheme}://{parts.netloc}{prefix}"
        else:
            endpoint = base + self.endpoint
        card = self._card(endpoint, base)
        if path == self.card_path:
            return card
        entries: Mapping[str, str] = {}
        if self.options.enabled:
            entries = {catalog_identifier(card["name"]): endpoint + CARD_SUFFIX}
        return ai_catalog({**entries, **self.options.catalog_entries})

    def _card(self, endpoint: str, base: str) -> dict[str, Any]:
        sse_url = base + self._sse_path if self._sse_path is not None else None
        return server_card(
            self.server,
            endpoint,
            options=self.options,
            sse_url=sse_url,
            resource_metadata=self._metadata,
        )


def _matches(if_none_match: str | None, etag: bytes) -> bool:
    # RFC 9110 §13.1.2: "*", or any listed tag by weak comparison (W/ ignored).
    if not if_none_match or len(if_none_match) > _MAX_IF_NONE_MATCH:
        return False
    ours = etag.decode()
    for tag in if_none_match.split(","):
        tag = tag.strip()
        if tag == "*" or tag.removeprefix("W/") == ours:
            return True
    return False
