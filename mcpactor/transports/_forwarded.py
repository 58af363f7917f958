# The client behind a reverse proxy: forwarded addresses, honoured from trusted proxies only.
#
# A proxy on the same host makes every client loopback, and a proxy elsewhere makes every
# client the proxy: the per-client session limit and the access log would see one client.
# Each proxy appends the address it got the request from to ``X-Forwarded-For`` (or
# ``Forwarded: for=``, RFC 7239). The list reads left to right from the first client to
# the last proxy, but anyone can write its left part: a client sends whatever it likes,
# and each proxy only appends. So the list is read from the right: while the address is
# one of our trusted proxies, step left; the first address that is not is the client.
# That address was written by a proxy we trust. A request from a peer that is not a
# trusted proxy keeps its peer address, whatever headers it brings.
#
# Only one header is read, the one the proxies are configured to write: with both read, a
# client could send the other one, which the proxy passes on untouched.

from __future__ import annotations

import functools
import ipaddress
from collections.abc import Iterable
from typing import Final, Literal

__all__ = ["FORWARDED_HEADERS", "ForwardedHeader", "TrustedProxies", "parse_networks"]

#: the headers that may carry the forwarded addresses
ForwardedHeader = Literal["x-forwarded-for", "forwarded"]
FORWARDED_HEADERS: Final = ("x-forwarded-for", "forwarded")
# At most this many hops of a header are read from the right: a chain of proxies is
# short, and a client may send a header of thousands.
_MAX_HOPS: Final = 32
_MAX_ADDRESS: Final = 64

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def parse_networks(values: Iterable[str], *, option: str) -> tuple[Network, ...]:
    """Read addresses and networks (``10.0.0.0/8``, ``::1``) of trusted proxies.

    Raises:
        ValueError: a value is neither (the message names ``option`` and the value).
    """
    networks: list[Network] = []
    for value in values:
        text = value.strip()
        try:
            networks.append(ipaddress.ip_network(text, strict=False))
        except ValueError:
            raise ValueError(
                f"{option}: expected IP addresses or networks (such as 127.0.0.1 or "
                f"10.0.0.0/8), got {value[:_MAX_ADDRESS]!r}"
            ) from None
    return tuple(networks)


class TrustedProxies:
    """Which peers are trusted proxies, and the client a request from one of them names."""

    def __init__(self, networks: Iterable[Network], header: ForwardedHeader) -> None:
        self.networks = tuple(networks)
        if header not in FORWARDED_HEADERS:
            raise ValueError(
                f"forwarded_header must be one of {FORWARDED_HEADERS}, got {header!r}"
            )
        self.header = header.encode("latin-1")
        self._forwarded = header == "forwarded"
        # A server sees few proxies and clients again and again: a cache per instance.
        self.trusted = functools.lru_cache(maxsize=4096)(self._trusted)

    def _trusted(self, address: str) -> bool:
        try:
            ip = ipaddress.ip_address(address)
        except ValueError:
            return False
        if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
        return any(ip in network for network in self.networks)

    def client(self, peer: str, headers: Iterable[tuple[bytes, bytes]]) -> str | None:
        """The client's address for a request from ``peer``; None: ``peer`` itself.

        ``headers`` are the request's raw (name, value) pairs.
        """
        if not self.trusted(peer):
            return None
        values = [value for name, value in headers if name.lower() == self.header]
        if not values:
            return None
        # Repeated fields are one list, in order (RFC 9110 §5.3).
        hops = b",".join(values).decode("latin-1").rsplit(",", _MAX_HOPS)[-_MAX_HOPS:]
        address: str | None = None
        for hop in reversed(hops):
            address = self._address(hop)
            if address is None:
                # Not an address a proxy of ours would write: nothing left of it counts.
                return None
            if not self.trusted(address):
                return address
        # Every hop read is a trusted proxy: the farthest one is the client.
        return address

    def _address(self, hop: str) -> str | None:
        # One element's address, as an IP address text; None if it is not one.
        text: str | None = hop.strip()
        if self._forwarded:
            text = _for_parameter(hop)
        if text is None or len(text) > _MAX_ADDRESS:
            return None
        return _ip_text(text)


def _for_parameter(element: str) -> str | None:
    # ``for=192.0.2.60;proto=http;by=203.0.113.43`` → the value of for (RFC 7239 §4).
    for pair in element.split(";"):
        name, equals, value = pair.partition("=")
        if equals and name.strip().lower() == "for":
            return value.strip().strip('"')
    return None


@functools.lru_cache(maxsize=4096)
def _ip_text(text: str) -> str | None:
    # An address, with or without a port ("192.0.2.1:4711", "[2001:db8::1]:4711").
    if text.startswith("["):
        end = text.find("]")
        if end < 0:
            return None
        text = text[1:end]
    elif text.count(":") == 1:
        text = text.partition(":")[0]
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        return None
