# The envelope of a stateless request: what its ``params._meta`` declares.
#
# At a revision without sessions (``Revision.request_envelope``) no handshake says which
# revision a request speaks or what the client can do: every request says so itself, in
# ``params._meta`` (the schema's RequestMetaObject). ``read_envelope`` reads and checks
# those keys and returns an ``Envelope``, a ``Negotiated`` with the request's log level,
# which the request actor is served under exactly as a session's requests are served
# under the session's ``Negotiated``.
#
# Refusals are ``EnvelopeError``s carrying the JSON-RPC code, the ``data`` the schema
# gives that code, and the HTTP status the Streamable HTTP page asks for (400 for all of
# them): a missing or malformed key is -32602, a revision we do not serve is -32022 with
# ``supported``/``requested``, a capability the request needs and the client did not
# declare is -32021 with ``requiredCapabilities``. Every value of the peer's that an error
# quotes goes through ``describe``/``bounded_value``; the capabilities object is held to
# a small depth before anything walks it.
#
# The codes of the stateless era (-32020..-32022) are named here: they exist only at the
# revisions that have an envelope.

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

import attrs

from ._bounded import bounded_value, describe, exceeds_depth
from ._jsonrpc import JSONObject, Request, RequestId
from ._names import (
    ALL_VERSIONS,
    CLIENT_CAPABILITIES,
    CLIENT_INFO,
    HEADER_MISMATCH,
    LOG_LEVEL,
    MISSING_CLIENT_CAPABILITY,
    PROTOCOL_VERSION,
    SUBSCRIPTION_ID,
    UNSUPPORTED_PROTOCOL_VERSION,
    EnvelopeError,
)
from ._revisions import REVISIONS, Revision
from ._session import LOG_LEVELS, Negotiated

__all__ = [
    "ALL_VERSIONS",
    "CLIENT_CAPABILITIES",
    "CLIENT_INFO",
    "HEADER_MISMATCH",
    "LOG_LEVEL",
    "MAX_CAPABILITIES_DEPTH",
    "MISSING_CLIENT_CAPABILITY",
    "PROTOCOL_VERSION",
    "SUBSCRIPTION_ID",
    "UNSUPPORTED_PROTOCOL_VERSION",
    "Envelope",
    "EnvelopeError",
    "has_envelope",
    "missing_capabilities",
    "read_envelope",
    "require_capabilities",
]

#: the deepest ``clientCapabilities`` accepted (the schema's own nest three levels)
MAX_CAPABILITIES_DEPTH: Final = 16


@attrs.frozen
class Envelope(Negotiated):
    """What one stateless request is served under: its ``Negotiated`` and its log level."""

    #: the lowest level of ``notifications/message`` the request asked for; None: it
    #: asked for none, and none may be sent for it
    log_level: str | None = None

    def log_enabled(self, level: str) -> bool:
        """Return whether a log message at ``level`` may be sent for this request."""
        if self.log_level is None:
            return False
        rank = _LOG_RANK.get(level)
        return rank is not None and rank >= _LOG_RANK[self.log_level]


_LOG_RANK: Final = {name: rank for rank, name in enumerate(LOG_LEVELS)}


def has_envelope(params: JSONObject | None) -> bool:
    """Whether a request's params carry a stateless envelope (its protocol version key).

    What a transport of both eras asks to route a request without a session: a
    malformed envelope is still an envelope, refused by ``read_envelope``.
    """
    if params is None:
        return False
    meta = params.get("_meta")
    return type(meta) is dict and PROTOCOL_VERSION in meta


def read_envelope(
    request: Request,
    *,
    supported: Iterable[str] = ALL_VERSIONS,
    requires: Mapping[str, JSONObject] | None = None,
) -> Envelope:
    """Read and check the envelope in ``request.params._meta``.

    ``supported`` are the revisions the server serves, of both eras, in the order an
    -32022 error lists them; an envelope is accepted at those with
    ``Revision.request_envelope`` (a session revision is opened with ``initialize``).
    ``requires`` maps a method to the client capabilities (a ClientCapabilities-shaped
    object) serving it always needs.

    Raises:
        EnvelopeError: a key is missing or malformed (-32602), the version is not a
            stateless one of ``supported`` (-32022), or a capability in ``requires``
            for the method was not declared (-32021).
    """
    request_id = request.id
    params = request.params
    meta = params.get("_meta") if params is not None else None
    # A client sends the same envelope on every request: one equal to the last one read
    # (for the same supported versions) is that Envelope again, neither checked nor
    # built anew.
    recent = _recent[0]
    if (
        recent is not None
        and recent[0] is supported
        and type(meta) is dict
        and meta.get(PROTOCOL_VERSION) == recent[1]
        and meta.get(LOG_LEVEL) == recent[4]
        and meta.get(CLIENT_INFO, _ABSENT) == recent[3]
        and meta.get(CLIENT_CAPABILITIES) == recent[2]
    ):
        envelope = recent[5]
        needed = requires.get(request.method) if requires is not None else None
        if needed:
            require_capabilities(envelope, needed, request_id=request_id)
        return envelope
    if type(meta) is not dict:
        raise EnvelopeError(
            f"{describe(request.method)} needs params._meta with {PROTOCOL_VERSION!r} "
            f"and {CLIENT_CAPABILITIES!r}",
            request_id=request_id,
        )
    version = meta.get(PROTOCOL_VERSION)
    if type(version) is not str:
        raise EnvelopeError(
            f"params._meta needs a string {PROTOCOL_VERSION!r}, got {describe(version)}",
            request_id=request_id,
        )
    offered = supported if type(supported) is tuple else tuple(supported)
    row = REVISIONS.get(version)
    if version not in offered or row is None or not row.request_envelope:
        hint = " (open a session with initialize for it)" if version in offered else ""
        raise EnvelopeError(
            f"unsupported protocol version {describe(version)} in a request envelope{hint}; "
            f"supported: {', '.join(offered)}",
            code=UNSUPPORTED_PROTOCOL_VERSION,
            data={"supported": list(offered), "requested": bounded_value(version)},
            request_id=request_id,
        )
    revision = row
    capabilities = meta.get(CLIENT_CAPABILITIES)
    info = meta.get(CLIENT_INFO, _ABSENT)
    log_level = meta.get(LOG_LEVEL)
    envelope = _checked_envelope(revision, meta, capabilities, log_level, request_id)
    _recent[0] = (supported, version, capabilities, info, log_level, envelope)
    needed = requires.get(request.method) if requires is not None else None
    if needed:
        require_capabilities(envelope, needed, request_id=request_id)
    return envelope


def _checked_envelope(
    revision: Revision,
    meta: JSONObject,
    capabilities: object,
    log_level: object,
    request_id: RequestId,
) -> Envelope:
    if type(capabilities) is not dict:
        raise EnvelopeError(
            f"params._meta needs an object {CLIENT_CAPABILITIES!r}, got {describe(capabilities)}",
            request_id=request_id,
        )
    # An empty object (the usual declaration) nests nothing.
    if capabilities and exceeds_depth(capabilities, MAX_CAPABILITIES_DEPTH):
        raise EnvelopeError(
            f"{CLIENT_CAPABILITIES!r} nests deeper than {MAX_CAPABILITIES_DEPTH} levels",
            request_id=request_id,
        )
    client_info = _client_info(meta, request_id)
    if log_level is not None and (type(log_level) is not str or log_level not in _LOG_RANK):
        raise EnvelopeError(
            f"unknown {LOG_LEVEL!r} {describe(log_level)}",
            data={"expected": list(LOG_LEVELS)},
            request_id=request_id,
        )
    return Envelope(revision, capabilities, client_info, log_level)


_ABSENT: Final = object()
# The last envelope read, with what it was read from: (the supported versions, version,
# capabilities, client info or _ABSENT, log level, Envelope).
_recent: list[tuple[Iterable[str], str, object, object, object, Envelope] | None] = [None]


def _client_info(meta: JSONObject, request_id: RequestId) -> JSONObject | None:
    if CLIENT_INFO not in meta:
        return None
    info = meta[CLIENT_INFO]
    # The schema's Implementation: an object with a string name and version.
    if (
        type(info) is not dict
        or type(info.get("name")) is not str
        or type(info.get("version")) is not str
    ):
        raise EnvelopeError(
            f"{CLIENT_INFO!r} must be an object with string 'name' and 'version', "
            f"got {describe(info)}",
            request_id=request_id,
        )
    return info


def missing_capabilities(negotiated: Negotiated, required: JSONObject) -> JSONObject:
    """The part of ``required`` (ClientCapabilities-shaped) the client did not declare.

    A leaf of ``required`` (an empty object) asks for the key to be declared; a
    non-empty object asks for each of its keys in turn. Empty when all are declared.
    """
    return _missing(negotiated.client_capabilities, required)


def _missing(declared: Any, required: JSONObject) -> JSONObject:
    missing: JSONObject = {}
    for key, below in required.items():
        if type(declared) is not dict or key not in declared or declared[key] in (None, False):
            missing[key] = below
        elif type(below) is dict and below:
            deeper = _missing(declared[key], below)
            if deeper:
                missing[key] = deeper
    return missing


def require_capabilities(
    negotiated: Negotiated, required: JSONObject, *, request_id: RequestId | None = None
) -> None:
    """Raise -32021 naming what of ``required`` the client did not declare, if anything.

    Raises:
        EnvelopeError: with ``data.requiredCapabilities`` (the whole of ``required``).
    """
    missing = missing_capabilities(negotiated, required)
    if missing:
        raise EnvelopeError(
            f"the request needs client capabilities it did not declare: {describe(missing)}",
            code=MISSING_CLIENT_CAPABILITY,
            data={"requiredCapabilities": required},
            request_id=request_id,
        )
