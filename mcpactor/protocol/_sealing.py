# Sealed ``requestState``: what a multi round-trip request carries from one round to the
# next, through the client, so that the retry may land on any process that holds the key.
#
# The MRTR page treats ``requestState`` as attacker-controlled: it must be integrity-
# protected and should bind the principal, a short expiry and the originating request.
# A token here is authenticated encryption (AES-256-GCM from ``cryptography``) of
#
#     {"v": state, "exp": expiry (ms since the epoch), "req": digest, "sub": principal}
#
# under the first key of a ``KeyRing``; every key of the ring opens (rotation: add the
# new key first, keep the old one until the tokens it sealed have expired, then drop it).
# The token is ``1.<key id>.<base64url(nonce ‖ ciphertext)>``; the format number and the
# key id are the associated data, so neither can be swapped.
#
# The digest is of the request as the client sends it again on a retry: the method and
# the params without ``_meta`` (which changes freely), ``inputResponses`` and
# ``requestState`` (which change every round). So a state opens only on a retry of the
# request that produced it, never on another tool or other arguments.
#
# Sans-io: the clock is the caller's (``now``, seconds since the epoch); nonces come
# from the operating system. A token is held to ``MAX_TOKEN_LENGTH`` before anything
# decodes it.

from __future__ import annotations

import base64
import binascii
import hashlib
import os
from typing import Any, Final

import attrs
import orjson

from .._exceptions import INVALID_PARAMS, RemoteProtocolError
from ._bounded import describe
from ._jsonrpc import JSONObject, JSONValue

__all__ = [
    "DEFAULT_TTL",
    "MAX_TOKEN_LENGTH",
    "KeyRing",
    "SealingKey",
    "StateRefused",
    "StateSealer",
    "request_digest",
]

#: seconds a sealed state opens for unless the sealer says otherwise
DEFAULT_TTL: Final = 300.0
#: the longest token opened; longer ones are refused before decoding
MAX_TOKEN_LENGTH: Final = 256 * 1024

_FORMAT: Final = "1"
# What a key id is made of (1 to 32 of these): a set, not a pattern, whose compiling
# would be the start's only use of the regex compiler here.
_KEY_ID_CHARS: Final = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-"
_MAX_KEY_ID: Final = 32
_NONCE_BYTES: Final = 12
_KEY_BYTES: Final = 32
# The params keys a retry changes: left out of the digest.
_ROUND_KEYS: Final = frozenset({"_meta", "inputResponses", "requestState"})


class StateRefused(RemoteProtocolError):
    """A ``requestState`` that does not open: forged, tampered, expired or misapplied.

    ``reason`` says which: ``"malformed"``, ``"too_large"``, ``"unknown_key"``,
    ``"not_authentic"``, ``"expired"``, ``"wrong_request"`` or ``"wrong_principal"``.
    """

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(f"requestState refused: {message}", code=INVALID_PARAMS)
        self.reason = reason


@attrs.frozen(repr=False)
class SealingKey:
    """One key of a ``KeyRing``: an id (sent in the clear) and a 256-bit secret."""

    key_id: str
    secret: bytes

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.key_id, str) or not _is_key_id(self.key_id):
            raise ValueError(
                f"a key id is 1 to 32 of A-Z a-z 0-9 '_' '-', got {describe(self.key_id)}"
            )
        if not isinstance(self.secret, bytes) or len(self.secret) != _KEY_BYTES:
            raise ValueError(f"a sealing key's secret is {_KEY_BYTES} bytes")

    def __repr__(self) -> str:
        # The secret never reaches a log line.
        return f"SealingKey({self.key_id!r})"

    @classmethod
    def generate(cls, key_id: str) -> SealingKey:
        """A new random key."""
        return cls(key_id, os.urandom(_KEY_BYTES))

    @classmethod
    def from_text(cls, key_id: str, text: str) -> SealingKey:
        """A key from its base64 (standard or URL-safe, padding optional) text form."""
        try:
            secret = _unb64(text.replace("+", "-").replace("/", "_"))
        except (binascii.Error, ValueError):
            raise ValueError(f"sealing key {key_id!r} is not base64") from None
        return cls(key_id, secret)

    def to_text(self) -> str:
        """The secret as URL-safe base64, for a configuration file or an environment."""
        return base64.urlsafe_b64encode(self.secret).decode("ascii").rstrip("=")


@attrs.frozen
class KeyRing:
    """The keys states are sealed with: the first seals, every one opens."""

    keys: tuple[SealingKey, ...]

    def __attrs_post_init__(self) -> None:
        if type(self.keys) is not tuple:
            raise TypeError("KeyRing takes a tuple of keys; KeyRing.of(*keys) takes them in turn")
        if not self.keys:
            raise ValueError("a key ring needs at least one key")
        ids = [key.key_id for key in self.keys]
        if len(set(ids)) != len(ids):
            raise ValueError(f"key ids must be unique in a key ring, got {ids}")

    @classmethod
    def of(cls, *keys: SealingKey) -> KeyRing:
        """A ring of ``keys``, the first sealing."""
        return cls(keys)

    def rotated(self, new: SealingKey, *, keep: int | None = None) -> KeyRing:
        """A ring where ``new`` seals and the current keys still open (the newest ``keep``)."""
        old = self.keys if keep is None else self.keys[:keep]
        return KeyRing((new, *old))

    def find(self, key_id: str) -> SealingKey | None:
        """The key of id ``key_id``, or None."""
        for key in self.keys:
            if key.key_id == key_id:
                return key
        return None


def request_digest(method: str, params: JSONObject | None) -> bytes:
    """SHA-256 of a request as its retries repeat it: the method and the params without
    ``_meta``, ``inputResponses`` and ``requestState``."""
    kept = {k: v for k, v in (params or {}).items() if k not in _ROUND_KEYS}
    canonical = orjson.dumps([method, kept], option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(canonical).digest()


class StateSealer:
    """Seals and opens ``requestState`` tokens with a key ring."""

    def __init__(self, ring: KeyRing, *, ttl: float = DEFAULT_TTL) -> None:
        if not ttl > 0:
            raise ValueError(f"ttl must be positive seconds, got {describe(ttl)}")
        self.ring = ring
        #: seconds a sealed state opens for
        self.ttl = ttl

    def seal(
        self,
        state: JSONValue,
        *,
        method: str,
        params: JSONObject | None,
        now: float,
        principal: str | None = None,
    ) -> str:
        """Seal ``state`` for retries of this request (by ``principal``) until now + ttl."""
        key = self.ring.keys[0]
        payload = {
            "v": state,
            "exp": int((now + self.ttl) * 1000),
            "req": _b64(request_digest(method, params)),
            "sub": principal,
        }
        # Imported on first use: a server that never seals need not load the cipher
        # (start-up time and memory).
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        nonce = os.urandom(_NONCE_BYTES)
        sealed = AESGCM(key.secret).encrypt(nonce, orjson.dumps(payload), _aad(key.key_id))
        return f"{_FORMAT}.{key.key_id}.{_b64(nonce + sealed)}"

    def open(
        self,
        token: object,
        *,
        method: str,
        params: JSONObject | None,
        now: float,
        principal: str | None = None,
    ) -> JSONValue:
        """Return the state ``token`` seals, if it is authentic, fresh and for this request.

        Raises:
            StateRefused: it is not a token, too long, sealed with a key the ring does
                not hold, not authentic (forged or tampered), expired, for another
                request or for another principal.
        """
        if not isinstance(token, str):
            raise StateRefused("malformed", f"must be a string, got {describe(token)}")
        if len(token) > MAX_TOKEN_LENGTH:
            raise StateRefused("too_large", f"longer than {MAX_TOKEN_LENGTH} characters")
        parts = token.split(".")
        if len(parts) != 3 or parts[0] != _FORMAT or not _is_key_id(parts[1]):
            raise StateRefused("malformed", "not a state this server sealed")
        key = self.ring.find(parts[1])
        if key is None:
            raise StateRefused(
                "unknown_key", f"sealed with key {parts[1]!r}, which this server does not hold"
            )
        try:
            blob = _unb64(parts[2])
        except (binascii.Error, ValueError):
            raise StateRefused("malformed", "not a state this server sealed") from None
        if len(blob) <= _NONCE_BYTES:
            raise StateRefused("malformed", "not a state this server sealed")
        from cryptography.exceptions import InvalidTag
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        try:
            plain = AESGCM(key.secret).decrypt(
                blob[:_NONCE_BYTES], blob[_NONCE_BYTES:], _aad(key.key_id)
            )
        except InvalidTag:
            raise StateRefused("not_authentic", "it is forged or was altered") from None
        payload: Any = orjson.loads(plain)
        if int(now * 1000) >= payload["exp"]:
            raise StateRefused("expired", "it has expired; send the request again without it")
        if payload["req"] != _b64(request_digest(method, params)):
            raise StateRefused("wrong_request", "it was issued for another request")
        if payload["sub"] != principal:
            raise StateRefused("wrong_principal", "it was issued to another principal")
        value: JSONValue = payload["v"]
        return value


def _is_key_id(text: str) -> bool:
    # Every character one of the set: nothing is left once they are stripped.
    return 0 < len(text) <= _MAX_KEY_ID and not text.strip(_KEY_ID_CHARS)


def _aad(key_id: str) -> bytes:
    return f"mcpactor requestState {_FORMAT}.{key_id}".encode("ascii")


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def _unb64(text: str) -> bytes:
    # Strict: a character outside the alphabet is an error, not skipped.
    if not text.isascii():
        raise ValueError("not ASCII")
    padded = (text + "=" * (-len(text) % 4)).encode("ascii")
    return base64.b64decode(padded, altchars=b"-_", validate=True)
