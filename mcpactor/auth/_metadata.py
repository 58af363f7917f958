# Finding an issuer's metadata (RFC 8414, and OpenID Connect Discovery as its fallback).
#
# The well-known URLs are tried in the order the MCP authorization spec gives: for an
# issuer with a path, RFC 8414 path insertion, then OpenID Connect with path insertion,
# then OpenID Connect path appending; for one without, the two plain forms. A URL that
# answers 4xx (or not JSON) sends us to the next; one that cannot be reached ends the
# search at once (the others are on the same host). The document's ``issuer`` must be the
# configured issuer exactly (RFC 8414 §3.3), or anyone able to serve a document at one
# issuer's address could vouch for another.

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit, urlunsplit

from ._fetch import Fetcher, FetchError, check_url, shown

_OAUTH = "/.well-known/oauth-authorization-server"
_OPENID = "/.well-known/openid-configuration"


def check_issuer(issuer: str) -> str:
    """``issuer`` if it is a valid issuer identifier (https, no query or fragment)."""
    check_url(issuer, "an issuer")
    if urlsplit(issuer).query:
        raise ValueError(f"the issuer {shown(issuer)!r} must not have a query")
    return issuer


def metadata_urls(issuer: str) -> list[str]:
    """The URLs where ``issuer``'s metadata may be, in the order to try them."""
    parts = urlsplit(issuer)
    path = parts.path.rstrip("/")

    def at(new_path: str) -> str:
        return urlunsplit((parts.scheme, parts.netloc, new_path, "", ""))

    if not path:
        return [at(_OAUTH), at(_OPENID)]
    return [at(_OAUTH + path), at(_OPENID + path), at(path + _OPENID)]


async def discover(fetcher: Fetcher, issuer: str) -> dict[str, Any]:
    """``issuer``'s metadata document; raises ``FetchError`` when none can be had."""
    tried: list[str] = []
    for url in metadata_urls(issuer):
        try:
            document = await fetcher.get_json(url)
        except FetchError as exc:
            if exc.answered is None or exc.answered >= 500:
                raise
            tried.append(f"{shown(url)} ({exc.answered})")
            continue
        found = document.get("issuer")
        if found != issuer:
            raise FetchError(
                f"the metadata at {shown(url)} names the issuer "
                f"{shown(str(found), 100)!r}, not {shown(issuer)!r}"
            )
        return document
    raise FetchError(f"no metadata for the issuer {shown(issuer)}: tried {', '.join(tried)}")


def endpoint(document: dict[str, Any], name: str, issuer: str) -> str:
    """The URL ``document`` gives for ``name``; raises ``FetchError`` if absent or not a URL."""
    url = document.get(name)
    if not isinstance(url, str):
        raise FetchError(f"the metadata of {shown(issuer)} has no {name}")
    try:
        return check_url(url, f"the {name} of {shown(issuer)}")
    except ValueError as exc:
        raise FetchError(str(exc)) from None
