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
# pattern without a scheme matches every scheme.

from __future__ import annotations

import functools
import ipaddress
from collections.abc import Iterable
from typing import Final

__all__ = ["LOOPBACK_HOSTS", "RequestGuard", "accepts", "is_loopback"]

LOOPBACK_HOSTS: Final = ("localhost", "127.0.0.1", "[::1]")

_ANY: Final = "*"
# Distinct header values remembered with their verdicts (then forgotten, all at once).
_MAX_REMEMBERED: Final = 256


def is_loopback(host: str) -> bool:
    """Return whether a bind address or host name is this machine only."""
    name = host.strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _split_authority(authority: str) -> tuple[str, str | None]:
    # "name", "name:port", "[v6]", "[v6]:port" -> (lowercase name, port or None)
    authority = authority.strip().lower()
    if authority.startswith("["):
        end = authority.find("]")
        if end < 0:
            return authority, None
        name, rest = authority[: end + 1], authority[end + 1 :]
        return name, rest[1:] if rest.startswith(":") and rest[1:] else None
    name, colon, port = authority.rpartition(":")
    if not colon or not name:
        return authority, None
    return name, port or None


def _split_origin(origin: str) -> tuple[str | None, str, str | None]:
    scheme, sep, rest = origin.strip().lower().partition("://")
    if not sep:
        return None, *_split_authority(scheme)
    return scheme, *_split_authority(rest.split("/", 1)[0])


class _Patterns:
    __slots__ = ("any", "entries")

    def __init__(self, patterns: Iterable[str], *, origins: bool) -> None:
        self.any = False
        self.entries: list[tuple[str | None, str, str | None]] = []
        for pattern in patterns:
            if pattern.strip() == _ANY:
                self.any = True
                continue
            if origins:
                scheme, name, port = _split_origin(pattern)
            else:
                scheme, (name, port) = None, _split_authority(pattern)
            self.entries.append((scheme, name, None if port == _ANY else port))

    def match(self, scheme: str | None, name: str, port: str | None) -> bool:
        if self.any:
            return True
        for want_scheme, want_name, want_port in self.entries:
            if want_name != name:
                continue
            if want_scheme is not None and want_scheme != scheme:
                continue
            if want_port is not None and want_port != port:
                continue
            return True
        return False


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
        # Clients send the same few Host values over and over: decide each once.
        self._host_verdicts: dict[str, bool] = {}

    def host_allowed(self, host: str | None) -> bool:
        """Return whether the ``Host`` header names this server."""
        if self._hosts.any:
            return True
        if not host:
            return False
        verdict = self._host_verdicts.get(host)
        if verdict is None:
            verdict = self._hosts.match(None, *_split_authority(host))
            if len(self._host_verdicts) >= _MAX_REMEMBERED:
                self._host_verdicts.clear()
            self._host_verdicts[host] = verdict
        return verdict

    def origin_allowed(self, origin: str | None, host: str | None) -> bool:
        """Return whether a request with this ``Origin`` (None: absent) may proceed."""
        if origin is None:
            return True  # not a browser, or a same-origin GET: nothing to check
        scheme, name, port = _split_origin(origin)
        if self._origins.match(scheme, name, port):
            return True
        if self._same_origin_only and host:
            return (name, port) == _split_authority(host)
        return False

    def cors_allowed(self, origin: str | None) -> bool:
        """Return whether CORS headers should let this origin's page read the response."""
        if origin is None:
            return False
        return self._cors.match(*_split_origin(origin))


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
