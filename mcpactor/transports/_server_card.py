# Server Cards (SEP-2127, experimental): what a card and the domain's AI Catalog say, as
# the extension's discovery document and schema say it (experimental-ext-server-card at
# 8924e08: docs/discovery.md, schema.json). A card is derived from the served server and
# its endpoint, never written by hand; the author adds or overrides descriptive fields
# through ServerCardOptions (code, or the [http.server_card] table of mcpactor.toml).
#
# What a card leaves out, on purpose: tools, resources and prompts, capabilities and
# extensions (the draft excludes them: they vary per caller and are negotiated live), and
# anything a caller without a token may not learn (credentials, internal addresses). The
# card is public, so it is built from what serverInfo and the endpoint's URL already say.

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Mapping, Sequence
from typing import Any, Final

import attrs

from ..protocol import ALL_VERSIONS, LATEST, SESSION_REVISIONS
from ..server import Server

__all__ = [
    "CARD_MEDIA_TYPE",
    "CARD_SCHEMA_URL",
    "CARD_SUFFIX",
    "CATALOG_MEDIA_TYPE",
    "CATALOG_PATH",
    "ServerCardOptions",
    "ai_catalog",
    "catalog_identifier",
    "server_card",
]

#: the media type of a Server Card
CARD_MEDIA_TYPE: Final = "application/mcp-server-card+json"
#: the media type of an AI Catalog
CATALOG_MEDIA_TYPE: Final = "application/ai-catalog+json"
#: the schema URL every card names in ``$schema`` (the draft's v1 family)
CARD_SCHEMA_URL: Final = (
    "https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json"
)
#: the card's reserved location, appended to the Streamable HTTP endpoint's URL
CARD_SUFFIX: Final = "/server-card"
#: where a host publishes its AI Catalog for domain-level discovery (RFC 8615)
CATALOG_PATH: Final = "/.well-known/ai-catalog.json"

# The draft's bounds: a name is "namespace/name" in reverse-DNS form, 3 to 200 long; a
# title and a description 1 to 100 characters; a version at most 255.
_NAME: Final = re.compile(r"[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+")
_MAX_NAME: Final = 200
_MAX_TEXT: Final = 100
_MAX_VERSION: Final = 255
_URL: Final = re.compile(r"https?://[^\s]+")
_NOT_NAMESPACE: Final = re.compile(r"[^a-zA-Z0-9.-]+")
_NOT_SLUG: Final = re.compile(r"[^a-zA-Z0-9._-]+")


def _check_url(field: str, value: str | None) -> None:
    if value is not None and not (isinstance(value, str) and _URL.fullmatch(value)):
        raise ValueError(f"{field} must be an http(s) URL, got {value!r}")


def _check_text(field: str, value: str | None, limit: int = _MAX_TEXT) -> None:
    if value is not None and not (isinstance(value, str) and 1 <= len(value) <= limit):
        raise ValueError(f"{field} must be 1 to {limit} characters, got {value!r}")


def _frozen_mappings(
    value: Sequence[Mapping[str, Any]] | None,
) -> tuple[dict[str, Any], ...] | None:
    return None if value is None else tuple(dict(item) for item in value)


@attrs.frozen(kw_only=True)
class ServerCardOptions:
    """The Server Card (SEP-2127, experimental) and AI Catalog an HTTP endpoint serves.

    Every field but the switches overrides what the card derives from the served
    server (``name``, ``title``, ``description``, ``version``, ``website_url``) or
    from the endpoint (``url``, ``headers``).
    """

    #: serve the card at ``<endpoint>/server-card``
    enabled: bool = True
    #: serve the AI Catalog at /.well-known/ai-catalog.json
    catalog: bool = True
    #: the endpoint's public URL (behind a proxy that rewrites host or path); None: the
    #: OAuth resource's URL when there is one, else the request's Host and the endpoint
    url: str | None = None
    #: the card's name, "namespace/name" in reverse-DNS form (``com.example/weather``);
    #: None: the server's name if it has that form, else the host's reversed + the name
    name: str | None = None
    title: str | None = None
    #: None: the server's description (cut to the draft's 100 characters)
    description: str | None = None
    version: str | None = None
    website_url: str | None = None
    #: where the source is: ``{"url": ..., "source": "github"}`` (``subfolder``, ``id``)
    repository: Mapping[str, str] | None = attrs.field(default=None, hash=False)
    #: the headers a client must send (the draft's KeyValueInput objects); None: the
    #: ``Authorization`` bearer header when the endpoint is an OAuth resource server
    headers: tuple[dict[str, Any], ...] | None = attrs.field(
        default=None, converter=_frozen_mappings, hash=False
    )
    #: other cards the catalog lists beside this endpoint's: identifier -> card URL
    catalog_entries: Mapping[str, str] = attrs.field(factory=dict, hash=False)
    #: seconds a client or cache may reuse the card and the catalog (Cache-Control)
    max_age: int = 3600

    def __attrs_post_init__(self) -> None:
        _check_url("url", self.url)
        _check_url("website_url", self.website_url)
        if self.name is not None and not (
            isinstance(self.name, str)
            and 3 <= len(self.name) <= _MAX_NAME
            and _NAME.fullmatch(self.name)
        ):
            raise ValueError(
                f"name must be 'namespace/name' in reverse-DNS form (letters, digits, "
                f"'.', '-'; one '/'), 3 to {_MAX_NAME} characters, got {self.name!r}"
            )
        _check_text("title", self.title)
        _check_text("description", self.description)
        _check_text("version", self.version, _MAX_VERSION)
        if self.repository is not None:
            if not isinstance(self.repository.get("source"), str):
                raise ValueError("repository needs a 'source' (e.g. 'github') and a 'url'")
            _check_url("repository url", self.repository.get("url"))
        for header in self.headers or ():
            if not isinstance(header.get("name"), str) or not header["name"]:
                raise ValueError(f"each header needs a 'name', got {header!r}")
        for identifier, url in self.catalog_entries.items():
            _check_text("a catalog identifier", identifier, 500)
            _check_url(f"catalog entry {identifier!r}", url)
        if isinstance(self.max_age, bool) or not isinstance(self.max_age, int) or self.max_age < 0:
            raise ValueError(f"max_age must be a whole number of seconds, got {self.max_age!r}")


def server_card(
    server: Server[Any],
    url: str,
    *,
    options: ServerCardOptions | None = None,
    sse_url: str | None = None,
    resource_metadata: str | None = None,
) -> dict[str, Any]:
    """The Server Card of ``server`` served at ``url``, its Streamable HTTP endpoint.

    ``sse_url`` adds the legacy HTTP+SSE endpoint; ``resource_metadata`` (the OAuth
    protected resource metadata's URL) says that a bearer token is required.
    """
    options = options or ServerCardOptions()
    info = server.info(LATEST)
    headers = (
        list(options.headers) if options.headers is not None else _bearer_header(resource_metadata)
    )
    remotes = [_remote("streamable-http", url, ALL_VERSIONS, headers)]
    if sse_url is not None:
        remotes.append(_remote("sse", sse_url, tuple(reversed(SESSION_REVISIONS)), headers))
    card: dict[str, Any] = {
        "$schema": CARD_SCHEMA_URL,
        "name": options.name or card_name(str(info["name"]), url),
        "version": options.version or _cut(str(info["version"]), _MAX_VERSION),
        "description": options.description
        or _cut(str(info.get("description") or f"MCP server {info.get('title') or info['name']}")),
    }
    title = options.title or info.get("title")
    if title:
        card["title"] = _cut(str(title))
    website = options.website_url or info.get("websiteUrl")
    if website and _URL.fullmatch(website):
        card["websiteUrl"] = website
    icons = info.get("icons")
    if icons:
        card["icons"] = icons
    if options.repository is not None:
        card["repository"] = dict(options.repository)
    card["remotes"] = remotes
    return card


def ai_catalog(cards: Mapping[str, str]) -> dict[str, Any]:
    """The AI Catalog listing the Server Cards ``cards`` gives (identifier -> card URL)."""
    return {
        "specVersion": "1.0",
        "entries": [
            {"identifier": identifier, "type": CARD_MEDIA_TYPE, "url": url}
            for identifier, url in cards.items()
        ],
    }


def catalog_identifier(card_name: str) -> str:
    """The AI Catalog identifier of a card named ``card_name``: ``urn:air:{publisher}:mcp:{name}``.

    ``com.example/weather`` is ``urn:air:example.com:mcp:weather``, as the draft's example.
    """
    namespace, _, name = card_name.partition("/")
    return f"urn:air:{_reversed_host(namespace)}:mcp:{name}"


def card_name(server_name: str, url: str) -> str:
    """The card's name: the server's if it is "namespace/name", else the host's + it."""
    if 3 <= len(server_name) <= _MAX_NAME and _NAME.fullmatch(server_name):
        return server_name
    host = _reversed_host(urllib.parse.urlsplit(url).hostname or "localhost")
    namespace = _NOT_NAMESPACE.sub("-", host).strip("-.")[:100] or "localhost"
    slug = _NOT_SLUG.sub("-", server_name).strip("-")[: _MAX_NAME - len(namespace) - 1]
    return f"{namespace}/{slug or 'server'}"


def _reversed_host(host: str) -> str:
    # example.com <-> com.example; an IPv4 address or a bare name stays as it is.
    labels = host.split(".")
    if all(label.isdigit() for label in labels):
        return host
    return ".".join(reversed(labels))


def _remote(
    kind: str, url: str, versions: Sequence[str], headers: list[dict[str, Any]]
) -> dict[str, Any]:
    remote: dict[str, Any] = {"type": kind, "url": url, "supportedProtocolVersions": [*versions]}
    if headers:
        remote["headers"] = headers
    return remote


def _bearer_header(resource_metadata: str | None) -> list[dict[str, Any]]:
    # An OAuth resource server: the client gets its token as the metadata says (RFC 9728).
    if resource_metadata is None:
        return []
    return [
        {
            "name": "Authorization",
            "description": "An OAuth 2.1 bearer token; the authorization servers are "
            f"named by {resource_metadata}",
            "isRequired": True,
            "isSecret": True,
            "value": "Bearer {token}",
            "variables": {"token": {"isRequired": True, "isSecret": True}},
        }
    ]


def _cut(text: str, limit: int = _MAX_TEXT) -> str:
    # The draft's bounds on titles and descriptions: cut, marked as cut.
    return text if len(text) <= limit else text[: limit - 1] + "…"
