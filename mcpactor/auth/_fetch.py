# Small JSON documents over HTTP, on trio: authorization server metadata, JWKS and
# introspection answers.
#
# httpx.AsyncClient runs on trio through anyio (httpcore's anyio backend picks trio up by
# itself), so checking tokens needs no thread and no asyncio. It is imported on the first
# fetch: a server without authorization never loads it. Each fetch opens its own client,
# because fetches are rare (metadata once, keys at most once per refresh interval,
# introspection only when the cache misses) and a client that lives no longer than its
# request can never leave a pooled connection behind the trio run that opened it; the TLS
# context, the costly part of a client, is built once and shared.
#
# Every failure to get a document is a ``FetchError`` (a ``VerifierUnavailable``: the token
# cannot be checked now, 503) whose message names the URL and what went wrong, bounded;
# nothing here ever sees or says a token except the form it is told to post.

from __future__ import annotations

import ssl
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

import attrs
import orjson
import trio

from ._errors import VerifierUnavailable

#: how long one fetch may take, connecting included, in seconds
DEFAULT_TIMEOUT = 5.0
#: the largest document accepted, in bytes
DEFAULT_MAX_BYTES = 256 * 1024

_SHOWN_URL = 200
_SHOWN_ERROR = 200
_LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})


def shown(text: str, limit: int = _SHOWN_URL) -> str:
    """``text`` cut to ``limit`` characters for a message (it may have come off the wire)."""
    text = text if text.isprintable() else text.encode("unicode_escape").decode("ascii")
    return text if len(text) <= limit else text[:limit] + "…"


def is_loopback(host: str | None) -> bool:
    """Whether ``host`` names this machine (where plain http is tolerated)."""
    if not host:
        return False
    return host in _LOOPBACK_HOSTS or host.startswith("127.") or host.endswith(".localhost")


def check_url(url: str, what: str) -> str:
    """``url`` if it is an absolute https URL (http only on loopback), else ValueError."""
    if not isinstance(url, str) or len(url) > 2048:
        raise ValueError(f"{what} must be a URL of at most 2048 characters")
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError as exc:
        raise ValueError(f"{what} {shown(url)!r} is not a URL: {exc}") from None
    if parts.scheme not in ("https", "http") or not host:
        raise ValueError(f"{what} {shown(url)!r} is not an absolute http(s) URL")
    if parts.scheme == "http" and not is_loopback(host):
        raise ValueError(f"{what} {shown(url)!r} must use https (plain http only on loopback)")
    if parts.fragment:
        raise ValueError(f"{what} {shown(url)!r} must not have a fragment")
    return url


class FetchError(VerifierUnavailable):
    """A document could not be had; ``answered`` is the HTTP status when there was one."""

    def __init__(
        self, reason: str, answered: int | None = None, *, retry_after: float | None = None
    ) -> None:
        super().__init__(reason, retry_after=retry_after)
        self.answered = answered


_ssl_context: ssl.SSLContext | None = None


def _default_ssl_context() -> ssl.SSLContext:
    global _ssl_context
    if _ssl_context is None:
        import httpx

        # httpx's own default (certifi, or SSL_CERT_FILE / SSL_CERT_DIR when set)
        _ssl_context = httpx.create_ssl_context()
    return _ssl_context


@attrs.frozen
class Fetcher:
    """Fetches JSON objects over HTTP with a deadline and a size bound."""

    #: seconds one fetch may take in all (connect, send, headers and body)
    timeout: float = DEFAULT_TIMEOUT
    #: the largest body accepted, in bytes
    max_bytes: int = DEFAULT_MAX_BYTES
    #: the TLS context to verify servers with; None: httpx's default trust store
    ssl_context: ssl.SSLContext | None = None

    async def get_json(self, url: str) -> dict[str, Any]:
        """The JSON object at ``url`` (200 only); raises ``FetchError``."""
        status, document = await self.request_json("GET", url)
        if status != 200:
            raise FetchError(f"GET {shown(url)} answered {status}", status)
        return document

    async def request_json(
        self,
        method: str,
        url: str,
        *,
        form: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> tuple[int, dict[str, Any]]:
        """The status and JSON object ``url`` answers (an empty dict when not 2xx)."""
        import httpx

        what = f"{method} {shown(url)}"
        try:
            with trio.fail_after(self.timeout):
                return await self._request(httpx, method, url, form, headers, what)
        except trio.TooSlowError:
            raise FetchError(f"{what} did not answer within {self.timeout:g} s") from None
        except httpx.HTTPError as exc:
            detail = shown(str(exc) or type(exc).__name__, _SHOWN_ERROR)
            raise FetchError(f"{what} failed: {detail}") from None

    async def _request(
        self,
        httpx: Any,
        method: str,
        url: str,
        form: Mapping[str, str] | None,
        headers: Mapping[str, str] | None,
        what: str,
    ) -> tuple[int, dict[str, Any]]:
        sent = {"Accept": "application/json", "Accept-Encoding": "identity", **(headers or {})}
        client = httpx.AsyncClient(
            verify=self.ssl_context or _default_ssl_context(),
            timeout=self.timeout,
            follow_redirects=False,
            # no proxy, netrc or certificate settings picked up from the environment
            trust_env=False,
        )
        async with client, client.stream(method, url, data=form, headers=sent) as response:
            status: int = response.status_code
            if status >= 500:
                raise FetchError(f"{what} answered {status}", status)
            if not 200 <= status < 300:
                return status, {}
            declared = response.headers.get("content-length")
            if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
                raise FetchError(f"{what}: the document is over {self.max_bytes} bytes")
            body = bytearray()
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) > self.max_bytes:
                    raise FetchError(f"{what}: the document is over {self.max_bytes} bytes")
        try:
            document = orjson.loads(body)
        except orjson.JSONDecodeError:
            raise FetchError(f"{what}: the answer is not JSON", status) from None
        if not isinstance(document, dict):
            raise FetchError(f"{what}: the answer is not a JSON object", status)
        return status, document
