# What a file holds: text or binary, and which MIME type.
#
# A file is text when its first bytes hold no NUL and decode as UTF-8 (a multi-byte
# character cut at the end of the sample does not count against it). Binary files get a
# MIME type from their magic bytes, then from their name.

from __future__ import annotations

import codecs
import mimetypes
from typing import Final

__all__ = ["SNIFF_BYTES", "decode_window", "is_text", "mime_type"]

#: how much of a file decides whether it is text
SNIFF_BYTES: Final = 8192

_MAGIC: Final = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"BM", "image/bmp"),
    (b"%PDF-", "application/pdf"),
    (b"PK\x03\x04", "application/zip"),
    (b"\x1f\x8b", "application/gzip"),
    (b"SQLite format 3\x00", "application/vnd.sqlite3"),
    (b"\x7fELF", "application/x-executable"),
    (b"ID3", "audio/mpeg"),
    (b"OggS", "audio/ogg"),
    (b"fLaC", "audio/flac"),
)


def is_text(head: bytes) -> bool:
    """Return whether a file starting with ``head`` is UTF-8 text."""
    if b"\x00" in head:
        return False
    try:
        codecs.getincrementaldecoder("utf-8")().decode(head, final=False)
    except UnicodeDecodeError:
        return False
    return True


def mime_type(head: bytes, name: str, *, text: bool) -> str:
    """The MIME type of a file from its first bytes and its name."""
    if not text:
        for magic, mime in _MAGIC:
            if head.startswith(magic):
                return mime
        if head[:4] == b"RIFF" and head[8:12] == b"WAVE":
            return "audio/wav"
        if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
            return "image/webp"
    guessed, _ = mimetypes.guess_type(name, strict=False)
    if guessed is not None:
        return guessed
    return "text/plain" if text else "application/octet-stream"


def decode_window(data: bytes, *, final: bool) -> tuple[str, int]:
    """Decode a window of a UTF-8 file; return the text and the bytes it used.

    Unless ``final``, a character cut at the end of the window is left for the next one.
    """
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    text = decoder.decode(data, final=final)
    pending, _ = decoder.getstate()
    return text, len(data) - len(pending)
