# Who may talk to an HTTP endpoint: Host and Origin checks against DNS rebinding.
#
# A web page can make a browser send requests to 127.0.0.1 by pointing a hostname it
# controls at that address (DNS rebinding); the request then carries the attacker's
# name in ``Host`` and the page's ``Origin``. So a server bound to loopback answers only
# requests whose Host names loopback (any port) and whose Origin, when present, is a
# loopback origin. Elsewhere the defaults are: any Host, and an Origin only when it is
# the server's own (same origin) — a public deployment lists the browser origins it
# serves. Both lists are configurable; ``"*"`` switches a check off.
#
# Patterns: a host is ``name``, ``name:port`` or ``name:*`` (a bare name matches every
# port; IPv6 literals keep their brackets, ``[::1]``). An origin is
# ``scheme://name[:port]``; without a port (or with ``:*``) it matches every port, and a
# pattern without a scheme matches ``http`` and ``https`` (a browser origin of any other
# scheme, ``file`` or an extension's, is never allowed by a bare name).
#
# Header values are parsed strictly, as a class of defence: a Host is a host name, an
# IPv4 address or a bracketed IPv6 address, then an optional ``:`` and 1-5 digits, and
# nothing else; an Origin is ``scheme://`` and such a host, and nothing else (no path, no
# userinfo, no trailing characters). A value that does not parse matches no pattern:
# lenient splitting let ``[::1]`` followed by anything pass as loopback. A server
# refuses an unparseable Host with 400 (RFC 9112 §3.2), a Host not allowed with 421.
#
# Clients send the same few (Host, Origin) pairs over and over: the guard decides each
# pair once (``RequestGuard.verdicts``), framing, guard and CORS headers together.

from __future__ import annotations

import functools
import ipaddress
import re
from collections.abc import Iterable
from typing import Final, NamedTuple

__all__ = [
    "LOOPBACK_HOSTS",
    "ClientShares",
    "RequestGuard",
    "Verdict",
    "accepts",
    "counted_client",
    "is_loopback",
    "parse_host",
    "parse_origin",
]

LOOPBACK_HOSTS: Final = ("localhost", "127.0.0.1", "[::1]")

_ANY: Final = "*"
# Distinct header values remembered with their verdicts (then forgotten, all at once).
_MAX_REMEMBERED: Final = 256
# The longest Host or Origin value looked at (a DNS name is at most 253 characters).
_MAX_AUTHORITY: Final = 300
# A registered name: letters, digits and "-._~" (RFC 3986 §3.2.2 unreserved); percent
# escapes and sub-delims, legal there but never part of a real host name, are refused.
_REG_NAME: Final = re.compile(r"[a-z0-9._~-]+")
_PORT: Final = re.compile(r"[0-9]{1,5}")
_SCHEME: Final = re.compile(r"[a-z][a-z0-9+.-]*")
#: the schemes a pattern without a scheme matches
_WEB_SCHEMES: Final = frozenset({"http", "https"})


def is_loopback(host: str) -> bool:
    """Return whether a bind address or host name is this machine only."""
    name = host.strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


@functools.lru_cache(maxsize=1024)
def _loopback_address(address: str) -> bool:
    return is_loopback(address)


def counted_client(address: str | None) -> str | None:
    """The client a session is counted under for its per-client limit; None: not counted.

    Loopback addresses are not counted: every local client, and every client behind a
    reverse proxy on this machine, shares one.
    """
    if address is None or _loopback_address(address):
        return None
    return address


class ClientShares:
    """Stateless requests in flight by client address, each held to ``limit``."""

    __slots__ = ("_held", "limit")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._held: dict[str, int] = {}

    def take(self, client: str) -> bool:
        """Count one more request of ``client``; False (nothing counted) past the limit."""
        held = self._held.get(client, 0)
        if held >= self.limit:
            return False
        self._held[client] = held + 1
        return True

    def give(self, client: str) -> None:
        """Count one request of ``client`` less."""
        left = self._held[client] - 1
        if left:
            self._held[client] = left
        else:
            del self._held[client]

    def held(self, client: str) -> int:
        """The requests of ``client`` in flight."""
        return self._held.get(client, 0)


def parse_host(value: str) -> tuple[str, str | None] | None:
    """Parse a Host value into (lowercase name, port or None); None if malformed."""
    if not value or len(value) > _MAX_AUTHORITY:
        return None
    return _parse_host(value)


# Cached: a connection, and most clients, send the same Host on every request, and
# parsing it (a regular expression among other steps) took a microsecond of each. Only
# values of at most _MAX_AUTHORITY characters are keys, so the cache stays small; its
# results are immutable.
@functools.lru_cache(maxsize=1024)
def _parse_host(value: str) -> tuple[str, str | None] | None:
    value = value.strip(" \t").lower()
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return None
        name, rest = value[: end + 1], value[end + 1 :]
        try:
            ipaddress.IPv6Address(name[1:-1])
        except ValueError:
            return None
    else:
        name, colon, port = value.partition(":")
        rest = colon + port
        if not _REG_NAME.fullmatch(name):
            return None
    if not rest:
        return name, None
    if rest[0] != ":" or not _PORT.fullmatch(rest[1:]) or int(rest[1:]) > 65535:
        return None
    return name, rest[1:]


def parse_origin(value: str) -> tuple[str, str, str | None] | None:
    """Parse an Origin value into (scheme, name, port or None); None if malformed."""
    if len(value) > _MAX_AUTHORITY:
        return None
    scheme, sep, rest = value.strip(" \t").lower().partition("://")
    if not sep or not _SCHEME.fullmatch(scheme):
        return None
    parsed = parse_host(rest)
    if parsed is None:
        return None
    return scheme, *parsed


def _pattern_authority(pattern: str) -> tuple[str, str | None]:
    # A configured pattern: "name", "name:port", "name:*", "[v6]", "[v6]:port".
    authority = pattern.strip().lower()
    port: str | None = None
    if authority.endswith(":*"):
        authority = authority[:-2]
    parsed = parse_host(authority)
    if parsed is None:
        raise ValueError(f"not a host pattern: {pattern!r}")
    name, port = parsed
    return name, port


class _Patterns:
    __slots__ = ("any", "entries")

    def __init__(self, patterns: Iterable[str], *, origins: bool) -> None:
        self.any = False
        self.entries: list[tuple[str | None, str, str | None]] = []
        for pattern in patterns:
            if pattern.strip() == _ANY:
                self.any = True
                continue
            scheme: str | None = None
            authority = pattern.strip().lower()
            if origins and "://" in authority:
                scheme, _, authority = authority.partition("://")
            name, port = _pattern_authority(authority)
            self.entries.append((scheme, name, port))

    def match(self, scheme: str | None, name: str, port: str | None) -> bool:
        if self.any:
            return True
        for want_scheme, want_name, want_port in self.entries:
            if want_name != name:
                continue
            if want_scheme is None:
                if scheme is not None and scheme not in _WEB_SCHEMES:
                    continue
            elif want_scheme != scheme:
                continue
            if want_port is not None and want_port != port:
                continue
            return True
        return False


class Verdict(NamedTuple):
    """What the guard says of a request's Host and Origin headers."""

    #: why the Host header breaks HTTP framing (400, and the connection closes), or None
    framing: str | None
    #: 200 when Host and Origin may reach the endpoints, else the status that refuses them
    status: int
    #: why they are refused (when ``status`` is not 200)
    why: str
    #: the CORS headers the answers carry for this Origin (none unless configured)
    cors: tuple[tuple[bytes, bytes], ...]


_ALLOWED: Final = Verdict(None, 200, "", ())
_CORS_EXPOSED: Final = b"mcp-session-id, mcp-protocol-version, www-authenticate, retry-after"


class _Verdicts(dict[tuple[str | None, str | None], Verdict]):
    # (Host, Origin) -> Verdict, each pair judged once, at most _MAX_REMEMBERED kept.
    __slots__ = ("_guard",)

    def __init__(self, guard: RequestGuard) -> None:
        super().__init__()
        self._guard = guard

    def __missing__(self, key: tuple[str | None, str | None]) -> Verdict:
        verdict = self._guard.judge(*key)
        host, origin = key
        if len(host or "") + len(origin or "") <= 2 * _MAX_AUTHORITY:
            if len(self) >= _MAX_REMEMBERED:
                self.clear()
            self[key] = verdict
        return verdict


class RequestGuard:
    """Decides whether a request's Host and Origin headers may reach the server.

    ``allowed_hosts``/``allowed_origins`` of None mean the defaults described at the top
    of this module, chosen from ``bind_host``.
    """

    def __init__(
        self,
        *,
        bind_host: str,
        allowed_hosts: Iterable[str] | None = None,
        allowed_origins: Iterable[str] | None = None,
        cors_origins: Iterable[str] = (),
    ) -> None:
        loopback = is_loopback(bind_host)
        if allowed_hosts is None:
            allowed_hosts = LOOPBACK_HOSTS if loopback else (_ANY,)
        self._hosts = _Patterns(allowed_hosts, origins=False)
        self._same_origin_only = allowed_origins is None and not loopback
        if allowed_origins is None:
            allowed_origins = LOOPBACK_HOSTS if loopback else ()
        self._origins = _Patterns([*allowed_origins, *cors_origins], origins=True)
        self._cors = _Patterns(cors_origins, origins=True)
        #: (Host, Origin) values (None: absent) -> their ``Verdict``, looked up by pair
        self.verdicts: dict[tuple[str | None, str | None], Verdict] = _Verdicts(self)

    def judge(self, host: str | None, origin: str | None) -> Verdict:
        """What a request with these Host and Origin values (None: absent) gets.

        ``verdicts[host, origin]`` is the same, remembered.
        """
        framing = None
        if host is not None:
            if "," in host:
                # Several Host lines joined into one: a Host value never holds a comma.
                framing = "more than one Host header"
            elif parse_host(host) is None:
                framing = "malformed Host header"
        status, why = 200, ""
        if not self.host_allowed(host):
            if host and self.host_status(host) == 400:
                status, why = 400, "malformed Host header"
            else:
                status, why = 421, "Host header not allowed"
        elif not self.origin_allowed(origin, host):
            status, why = 403, "Origin not allowed"
        cors: tuple[tuple[bytes, bytes], ...] = ()
        if origin is not None and self.cors_allowed(origin):
            cors = (
                (b"access-control-allow-origin", origin.encode("latin-1")),
                (b"access-control-expose-headers", _CORS_EXPOSED),
                (b"vary", b"origin"),
            )
        if framing is None and status == 200 and not cors:
            return _ALLOWED
        return Verdict(framing, status, why, cors)

    def host_allowed(self, host: str | None) -> bool:
        """Return whether the ``Host`` header names this server."""
        if self._hosts.any:
            return True
        if not host:
            return False
        return self.host_status(host) == 200

    def host_status(self, host: str) -> int:
        """Return 200 for a Host that names this server, 400 if malformed, else 421."""
        parsed = parse_host(host)
        if parsed is None:
            return 400
        return 200 if self._hosts.match(None, *parsed) else 421

    def origin_allowed(self, origin: str | None, host: str | None) -> bool:
        """Return whether a request with this ``Origin`` (None: absent) may proceed."""
        if origin is None:
            return True  # not a browser, or a same-origin GET: nothing to check
        if self._origins.any:
            return True
        parsed = parse_origin(origin)
        if parsed is None:
            return False  # "null" (a sandboxed page, a file) or malformed
        scheme, name, port = parsed
        if self._origins.match(scheme, name, port):
            return True
        if self._same_origin_only and host and scheme in _WEB_SCHEMES:
            return (name, port) == parse_host(host)
        return False

    def cors_allowed(self, origin: str | None) -> bool:
        """Return whether CORS headers should let this origin's page read the response."""
        if origin is None:
            return False
        parsed = parse_origin(origin)
        return parsed is not None and self._cors.match(*parsed)


def accepts(header: str | None, *, json: bool, event_stream: bool) -> bool:
    """Return whether an ``Accept`` header takes every media type asked for.

    Lenient on purpose: wildcards count, and parameters (``q=``) are ignored.
    """
    if header is None:
        return False
    return _accepts(header, json, event_stream)


@functools.lru_cache(maxsize=_MAX_REMEMBERED)
def _accepts(header: str, json: bool, event_stream: bool) -> bool:
    # A client sends the same Accept header with every request: parsed once.
    has_json = has_sse = False
    for part in header.split(","):
        media = part.split(";", 1)[0].strip().lower()
        if media == "*/*":
            return True
        if media in ("application/json", "application/*"):
            has_json = True
        elif media in ("text/event-stream", "text/*"):
            has_sse = True
    return (has_json or not json) and (has_sse or not event_stream)
