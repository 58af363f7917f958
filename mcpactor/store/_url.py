# The address of a shared store, as ``--store URL`` and ``[store] url`` give it.
#
# ``redis://[[user]:password@]host[:port][/db]`` and ``rediss://`` (the same over TLS) as
# the IANA registrations define them, plus ``unix:///path/to/socket?db=N``. TLS options ride
# in the query: ``ca=`` a CA bundle, ``cert=`` and ``key=`` a client certificate, and
# ``verify=none`` to skip checking the server's certificate (a test setup only). The parsed
# form never shows the password in its repr or in an error message, so a URL can be logged.
#
# A primary that Sentinel watches is named by its Sentinels and its service:
# ``redis+sentinel://[[user]:password@]host[:port][,host[:port]...]/service[/db]`` (port
# 26379 by default); the password is the data nodes', the Sentinels are asked without one.
# ``?wait=N`` makes a session record's write wait until N replicas acknowledge it (WAIT).
# Redis Cluster is refused by name: the store's scripts and pub/sub need one keyspace.

from __future__ import annotations

import re
import urllib.parse
from typing import Final, final

import attrs

from .._exceptions import ConfigError

__all__ = ["CLUSTER_REFUSAL", "StoreURL", "parse_store_url"]

DEFAULT_PORT: Final = 6379
#: the port of a Sentinel named without one
SENTINEL_PORT: Final = 26379
#: the most replicas ``?wait=`` may ask for, and the most Sentinels a URL may name
MAX_WAIT: Final = 16
MAX_SENTINELS: Final = 16
#: longer than any real address; a longer one is refused before it is parsed
MAX_URL_LENGTH: Final = 4096
_QUERY_KEYS: Final = frozenset({"db", "ca", "cert", "key", "verify", "wait"})
_SERVICE: Final = re.compile(r"[A-Za-z0-9_.\-]{1,128}")
#: why a Redis Cluster is not a store (the URL's scheme, or a node found at the start)
CLUSTER_REFUSAL: Final = (
    "Redis Cluster is not supported: the store's scripts and pub/sub need one keyspace; "
    "use one primary, with Sentinel for failover (redis+sentinel://)"
)
_CLUSTER_SCHEMES: Final = frozenset({"redis+cluster", "rediss+cluster", "cluster"})


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
    #: the Sentinels (host, port) to ask where the primary is, instead of host and port
    sentinels: tuple[tuple[str, int], ...] = ()
    #: the name the Sentinels know the primary by
    service: str | None = None
    #: replicas that must acknowledge a session record's write (WAIT); 0: none
    wait: int = 0

    def redacted(self) -> str:
        """The URL without its password, for logs and error messages."""
        wait = f"?wait={self.wait}" if self.wait else ""
        if self.socket is not None:
            return f"unix://{self.socket}?db={self.db}" + (f"&wait={self.wait}" if wait else "")
        user = self.username or ""
        auth = f"{user}:***@" if self.password is not None else (f"{user}@" if user else "")
        if self.sentinels:
            nodes = ",".join(f"{_bracketed(host)}:{port}" for host, port in self.sentinels)
            return f"redis+sentinel://{auth}{nodes}/{self.service}/{self.db}{wait}"
        scheme = "rediss" if self.tls else "redis"
        return f"{scheme}://{auth}{_bracketed(self.host or '')}:{self.port}/{self.db}{wait}"


def _bracketed(host: str) -> str:
    return f"[{host}]" if ":" in host else host


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
    except ValueError as exc:
        raise _error(url, str(exc)) from None
    scheme = parts.scheme.lower()
    if scheme in _CLUSTER_SCHEMES:
        raise _error(url, CLUSTER_REFUSAL)
    if scheme == "rediss+sentinel":
        raise _error(
            url, "TLS to Sentinel and its primary is not supported; use redis+sentinel://"
        )
    if scheme not in {"redis", "rediss", "unix", "redis+sentinel"}:
        raise _error(url, "expected a redis://, rediss://, redis+sentinel:// or unix:// URL")
    query = urllib.parse.parse_qs(parts.query, keep_blank_values=True, max_num_fields=10)
    unknown = sorted(set(query) - _QUERY_KEYS)
    if unknown:
        raise _error(
            url,
            f"unknown option {unknown[0][:40]!r}, expected one of db, ca, cert, key, verify, wait",
        )
    options = {key: values[-1] for key, values in query.items()}
    wait = _wait(url, options.get("wait", "0"))
    if scheme == "redis+sentinel":
        return _sentinel_url(url, parts, options, wait)
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
            wait=wait,
        )
    try:
        port = parts.port
    except ValueError as exc:
        raise _error(url, str(exc)) from None
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
        wait=wait,
    )


def _wait(url: str, text: str) -> int:
    if not text.isdigit() or int(text) > MAX_WAIT:
        raise _error(url, f"wait is a number of replicas from 0 to {MAX_WAIT}, got {text[:20]!r}")
    return int(text)


def _sentinel_url(
    url: str, parts: urllib.parse.SplitResult, options: dict[str, str], wait: int
) -> StoreURL:
    # redis+sentinel://[[user]:password@]host[:port],host[:port].../service[/db]: the
    # netloc names several hosts, which urlsplit's own host and port cannot read.
    userinfo, at, hosts = parts.netloc.rpartition("@")
    username = password = None
    if at:
        user, colon, secret = userinfo.partition(":")
        username = urllib.parse.unquote(user) or None
        password = urllib.parse.unquote(secret) if colon else None
    sentinels = tuple(_sentinel(url, node) for node in hosts.split(","))
    if len(sentinels) > MAX_SENTINELS:
        raise _error(url, f"at most {MAX_SENTINELS} Sentinels, got {len(sentinels)}")
    if any(key in options for key in ("ca", "cert", "key", "verify")):
        raise _error(url, "TLS options need a rediss:// URL")
    service, _, db_text = parts.path.lstrip("/").partition("/")
    if _SERVICE.fullmatch(service) is None:
        raise _error(url, "a redis+sentinel:// URL names its primary's service: /service[/db]")
    if db_text and "db" in options:
        raise _error(url, "the database is given twice, in the path and in ?db=")
    return StoreURL(
        db=_db(url, db_text or options.get("db", "0")),
        username=username,
        password=password,
        sentinels=sentinels,
        service=service,
        wait=wait,
    )


def _sentinel(url: str, node: str) -> tuple[str, int]:
    try:
        parsed = urllib.parse.urlsplit(f"//{node}")
        port = parsed.port
    except ValueError as exc:
        raise _error(url, str(exc)) from None
    if not parsed.hostname or parsed.username is not None or parsed.path:
        raise _error(url, f"expected host[:port] for each Sentinel, got {node[:80]!r}")
    return parsed.hostname, SENTINEL_PORT if port is None else port
