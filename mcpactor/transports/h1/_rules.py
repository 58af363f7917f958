# What the HTTP/1.1 protocol (_protocol.py) holds a request to: its limits, the error
# that refuses it, the rules of its framing fields (RFC 9112), and the table of header
# field names it has seen.

from __future__ import annotations

from http import HTTPStatus
from typing import Final

import attrs

from .._security import parse_host

__all__ = [
    "CONTENT_LENGTH",
    "EXPECT",
    "HOST",
    "LENGTH",
    "MAX_NAMES",
    "NAMES",
    "NO_LENGTH",
    "STATUS_LINES",
    "TOO_LONG",
    "TRANSFER_ENCODING",
    "UPGRADE",
    "Limits",
    "ProtocolError",
    "absolute_form",
    "check_codings",
    "error_response",
    "name_of",
    "status_line",
]


class ProtocolError(Exception):
    """A request the server will not read: answer ``error_status_hint`` and close."""

    def __init__(self, message: str, error_status_hint: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.error_status_hint = error_status_hint


@attrs.frozen(kw_only=True)
class Limits:
    """What one request may hold; past a limit the protocol refuses it."""

    #: the largest request head (request line and headers), in bytes (431 above it)
    max_head_bytes: int = 64 * 1024
    #: the most header fields in one request, trailers included (431 above it)
    max_headers: int = 100
    #: the largest request body, in bytes (413 above it)
    max_body_bytes: int = 4 * 1024 * 1024


# What a header field name is to the protocol: plain (0), or a framing field it notes.
CONTENT_LENGTH: Final = 1
HOST: Final = 2
TRANSFER_ENCODING: Final = 3
EXPECT: Final = 4
UPGRADE: Final = 5
FRAMING_FIELDS: Final = {
    b"content-length": CONTENT_LENGTH,
    b"host": HOST,
    b"transfer-encoding": TRANSFER_ENCODING,
    b"expect": EXPECT,
    b"upgrade": UPGRADE,
}
NO_LENGTH: Final = 0
LENGTH: Final = 1
TOO_LONG: Final = 2
# Field names as sent -> (lowercase name, as text, what it is). Names come off the wire,
# so the table keeps at most this many; the rest are worked out each time.
MAX_NAMES: Final = 256
NAMES: dict[bytes, tuple[bytes, str, int]] = {}


def name_of(name: bytes) -> tuple[bytes, str, int]:
    """A field name as sent: (lowercase, as text, what it is), remembered while there is room."""
    lowered = name.lower()
    named = (lowered, lowered.decode("latin-1"), FRAMING_FIELDS.get(lowered, 0))
    if len(NAMES) < MAX_NAMES:
        NAMES[name] = named
    return named


def check_codings(codings: bytes, version: str, length: bool) -> None:
    """Refuse Transfer-Encoding ``codings`` other than chunked alone (RFC 9112 §6)."""
    if version == "1.0":
        # §6.1: an HTTP/1.0 message with Transfer-Encoding has faulty framing.
        raise ProtocolError("Transfer-Encoding in an HTTP/1.0 request")
    if length:
        # §6.3 allows a server to reject this outright; it is how requests are smuggled.
        raise ProtocolError("Content-Length together with Transfer-Encoding")
    parts = [part.strip().lower() for part in codings.split(b",")]
    if parts[-1] != b"chunked" or parts.count(b"chunked") > 1:
        raise ProtocolError("the last transfer coding must be chunked, and only it")
    if len(parts) > 1:
        raise ProtocolError("transfer codings other than chunked are not supported", 501)


def absolute_form(target: bytes) -> tuple[bytes, bytes]:
    """The origin-form of an absolute-form ``target`` and its authority (RFC 9112 §3.2.2).

    Only http(s) URLs with a valid authority are taken.
    """
    scheme, sep, rest = target.partition(b"://")
    authority, slash, path = rest.partition(b"/")
    if (
        not sep
        or scheme.lower() not in (b"http", b"https")
        or parse_host(authority.decode("latin-1")) is None
    ):
        raise ProtocolError("malformed request target")
    return (slash + path if slash else b"/" + path), authority


#: each status's line, CRLF included, once made (a plain answer reads it in place)
STATUS_LINES: dict[int, bytes] = {}


def status_line(status: int) -> bytes:
    """The status line of ``status``, CRLF included (cached per status)."""
    line = STATUS_LINES.get(status)
    if line is None:
        try:
            phrase = HTTPStatus(status).phrase
        except ValueError:
            phrase = ""
        line = b"HTTP/1.1 %d %s\r\n" % (status, phrase.encode())
        STATUS_LINES[status] = line
    return line


def error_response(
    status: int, content_type: bytes, body: bytes, *, date: bytes = b"", extra: bytes = b""
) -> bytes:
    """A whole response that closes the connection: a refusal, or a canned 503."""
    return (
        status_line(status)
        + b"content-type: "
        + content_type
        + b"\r\nconnection: close\r\n"
        + extra
        + date
        + b"content-length: %d\r\n\r\n" % len(body)
        + body
    )
