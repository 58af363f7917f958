# The address of a shared store, as ``--store URL`` and ``[store] url`` give it.
#
# ``redis://[[user]:password@]host[:port][/db]`` and ``rediss://`` (the same over TLS) as
# the IANA registrations define them, plus ``unix:///path/to/socket?db=N``. TLS options ride
# in the query: ``ca=`` a CA bundle, ``cert=`` and ``key=`` a client certificate, and
# ``verify=none`` to skip checking the server's certificate (a test setup only). The parsed
# form never shows the password in its repr or in an error message, so a URL can be logged.

from __future__ import annotations

import urllib.parse
from typing import Final, final

import attrs

from .._exceptions import ConfigError

__all__ = ["StoreURL", "parse_store_url"]

DEFAULT_PORT: Final = 6379
#: longer than any real address; a longer one is refused before it is parsed
MAX_URL_LENGTH: Final = 4096
_QUERY_KEYS: Final = frozenset({"db", "ca", "cert", "key", "verify"})


@final
@attrs.frozen(kw_only=True)
class StoreURL:
    """Where a Redis store is and how to reach it, parsed from a URL."""

    host: str | None = None
    port: int = DEFAULT_PORT
    #: a unix socket path, instead of host and port
    socket: str | None = None
    db: int = 0
    username: str | None = None
    password: str | None = attrs.field(default=None, repr=False)
    tls: bool = False
    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None
    verify: bool = True

    def redacted(self) -> str:
        """The URL without its password, for logs and error messages."""
        if self.socket is not None:
            return f"unix://{self.socket}?db={self.db}"
        scheme = "rediss" if self.tls else "redis"
        user = self.username or ""
        auth = f"{user}:***@" if self.password is not None else (f"{user}@" if user else "")
        host = f"[{self.host}]" if self.host and ":" in self.host else self.host
        return f"{scheme}://{auth}{host}:{self.port}/{self.db}"


def _error(url: str, why: str) -> ConfigError:
    # The URL is shown without its userinfo: a password never reaches a message.
    shown = url
    if "@" in url and "://" in url:
        scheme, _, rest = url.partition("://")
        shown = f"{scheme}://***@{rest.rpartition('@')[2]}"
    return ConfigError(f"store URL {shown[:200]!r}: {why}")


def _db(url: str, text: str) -> int:
    if not text.isdigit() or len(text) > 5:
        raise _error(url, f"the database is a number from 0, got {text[:20]!r}")
    return int(text)


def parse_store_url(url: str) -> StoreURL:
    """Parse ``redis://``, ``rediss://`` or ``unix://`` into a StoreURL.

    Raises:
        ConfigError: the URL is not one of those forms, or a part of it is invalid.
    """
    if len(url) > MAX_URL_LENGTH:
        raise ConfigError(f"a store URL is at most {MAX_URL_LENGTH} characters, got {len(url)}")
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise _error(url, str(exc)) from None
    scheme = parts.scheme.lower()
    if scheme not in {"redis", "rediss", "unix"}:
        raise _error(url, "expected a redis://, rediss:// or unix:// URL")
    query = urllib.parse.parse_qs(parts.query, keep_blank_values=True, max_num_fields=10)
    unknown = sorted(set(query) - _QUERY_KEYS)
    if unknown:
        raise _error(
            url, f"unknown option {unknown[0][:40]!r}, expected one of db, ca, cert, key, verify"
        )
    options = {key: values[-1] for key, values in query.items()}
    verify = options.get("verify", "full")
    if verify not in {"full", "none"}:
        raise _error(url, f"verify is 'full' or 'none', got {verify[:20]!r}")
    username = urllib.parse.unquote(parts.username) if parts.username else None
    password = urllib.parse.unquote(parts.password) if parts.password is not None else None
    if scheme == "unix":
        if not parts.path:
            raise _error(url, "a unix:// URL names the socket's path")
        return StoreURL(
            socket=parts.path,
            db=_db(url, options.get("db", "0")),
            username=username,
            password=password,
        )
    if not parts.hostname:
        raise _error(url, "the URL names no host")
    path = parts.path.lstrip("/")
    if path and "db" in options:
        raise _error(url, "the database is given twice, in the path and in ?db=")
    db = _db(url, path or options.get("db", "0"))
    tls = scheme == "rediss"
    if not tls and any(key in options for key in ("ca", "cert", "key", "verify")):
        raise _error(url, "TLS options need a rediss:// URL")
    if ("cert" in options) != ("key" in options):
        raise _error(url, "a client certificate needs both cert= and key=")
    return StoreURL(
        host=parts.hostname,
        port=DEFAULT_PORT if port is None else port,
        db=db,
        username=username,
        password=password,
        tls=tls,
        ca_file=options.get("ca"),
        cert_file=options.get("cert"),
        key_file=options.get("key"),
        verify=verify == "full",
    )
