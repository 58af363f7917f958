# The ``[auth]`` table of the deployment file: serving as an OAuth 2.1 resource server.
#
# Its keys are the ``--auth-*`` flags' (the flags win over them), and what they make is a
# ResourceServer (cli/_auth.py builds it). Relative paths (the JWKS file, the client
# secret's file, a verifier factory's file) are the file's. Only HTTP takes it: over
# stdio the spec has a server take its credentials from the environment.

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import attrs

from ._reader import Reader

__all__ = ["AUTH_KEYS", "AuthConfig", "read_auth_config"]

#: every key of the table
AUTH_KEYS: Final = (
    "issuers",
    "resource",
    "audiences",
    "required_scopes",
    "scopes_supported",
    "scope_prefix",
    "jwks_file",
    "introspection_url",
    "client_id",
    "client_secret_file",
    "algorithms",
    "leeway_seconds",
    "require_at_jwt",
    "introspection_cache_seconds",
    "introspection_without_audience",
    "hide_unauthorized",
    "verifier",
)
#: the longest an introspection answer may be trusted, in seconds
MAX_INTROSPECTION_CACHE: Final = 3600


@attrs.frozen
class AuthConfig:
    """The ``[auth]`` table; None (or empty) means the file does not set that key."""

    #: the issuers whose tokens are accepted (their metadata gives the keys)
    issuers: tuple[str, ...] = ()
    #: the canonical URL of the MCP endpoint, in the metadata (and the default audience)
    resource: str | None = None
    #: what tokens' ``aud`` must name instead of the resource URL (an API's client id)
    audiences: tuple[str, ...] = ()
    #: scopes every request needs
    required_scopes: tuple[str, ...] = ()
    #: the metadata's ``scopes_supported`` (default: required and declared scopes)
    scopes_supported: tuple[str, ...] | None = None
    #: put before every scope clients are told of (Entra ID: ``api://CLIENT-ID/``)
    scope_prefix: str | None = None
    #: a local JWKS instead of discovering the issuers' keys (a path, the file's)
    jwks_file: str | None = None
    #: RFC 7662 introspection of opaque tokens, and the credentials it takes
    introspection_url: str | None = None
    client_id: str | None = None
    client_secret_file: str | None = None
    #: the JWS algorithms accepted (default: the asymmetric ones)
    algorithms: tuple[str, ...] | None = None
    #: seconds of clock skew allowed on ``exp`` and ``nbf``
    leeway_seconds: float | None = None
    #: JWTs must have the header ``typ: at+jwt`` (RFC 9068)
    require_at_jwt: bool = False
    #: seconds an introspection answer is trusted at most (a revoked token's grace)
    introspection_cache_seconds: float | None = None
    #: introspection answers naming no audience are taken (if they say "access token")
    introspection_without_audience: bool = False
    #: tools/list and the like leave out what the caller may not call
    hide_unauthorized: bool = False
    #: ``module:function`` (or ``path/file.py:function``) of a TokenVerifier factory
    verifier: str | None = None


def read_auth_config(reader: Reader, table: Mapping[str, Any]) -> AuthConfig:
    """Check and convert the ``[auth]`` table."""
    reader.known(table, set(AUTH_KEYS))
    issuers = reader.string_list(table, "issuers") or ()
    for issuer in issuers:
        _url(reader, "issuers", issuer)
    resource = reader.optional(table, "resource", str)
    if resource is not None:
        _url(reader, "resource", resource)
    audiences = _audiences(reader, table)
    introspection_url = reader.optional(table, "introspection_url", str)
    if introspection_url is not None:
        _url(reader, "introspection_url", introspection_url)
    names = _names(reader, table)
    leeway = reader.optional(table, "leeway_seconds", (int, float))
    if leeway is not None and not 0 <= leeway <= 600:
        raise reader.error("leeway_seconds", "expected seconds from 0 to 600", leeway)
    scope_prefix = reader.optional(table, "scope_prefix", str)
    if scope_prefix is not None and not _is_name(scope_prefix):
        raise reader.error(
            "scope_prefix", "expected text without spaces, quotes or backslashes", scope_prefix
        )
    cache = reader.optional(table, "introspection_cache_seconds", (int, float))
    if cache is not None and not 0 <= cache <= MAX_INTROSPECTION_CACHE:
        raise reader.error(
            "introspection_cache_seconds",
            f"expected seconds from 0 to {MAX_INTROSPECTION_CACHE}",
            cache,
        )
    files: dict[str, str | None] = {}
    for key in ("jwks_file", "client_secret_file"):
        file = reader.optional(table, key, str)
        files[key] = str(reader.directory / file) if file is not None else None
    verifier = reader.reference(table, "verifier")
    return AuthConfig(
        issuers=issuers,
        resource=resource,
        audiences=audiences,
        required_scopes=names["required_scopes"] or (),
        scopes_supported=names["scopes_supported"],
        scope_prefix=scope_prefix,
        jwks_file=files["jwks_file"],
        introspection_url=introspection_url,
        client_id=reader.optional(table, "client_id", str),
        client_secret_file=files["client_secret_file"],
        algorithms=names["algorithms"],
        leeway_seconds=float(leeway) if leeway is not None else None,
        require_at_jwt=reader.optional(table, "require_at_jwt", bool, False),
        introspection_cache_seconds=float(cache) if cache is not None else None,
        introspection_without_audience=reader.optional(
            table, "introspection_without_audience", bool, False
        ),
        hide_unauthorized=reader.optional(table, "hide_unauthorized", bool, False),
        verifier=verifier,
    )


def _audiences(reader: Reader, table: Mapping[str, Any]) -> tuple[str, ...]:
    audiences = reader.string_list(table, "audiences") or ()
    for audience in audiences:
        if not audience or len(audience) > 2048 or not audience.isprintable() or " " in audience:
            raise reader.error("audiences", "expected names without spaces", audience)
    return audiences


def _names(reader: Reader, table: Mapping[str, Any]) -> dict[str, tuple[str, ...] | None]:
    # The lists of scopes and algorithms: names that go into headers and metadata.
    names: dict[str, tuple[str, ...] | None] = {}
    for key in ("required_scopes", "scopes_supported", "algorithms"):
        values = reader.string_list(table, key)
        for value in values or ():
            if not _is_name(value):
                raise reader.error(
                    key, "expected names without spaces, quotes or backslashes", value
                )
        names[key] = values
    algorithms = names["algorithms"]
    if algorithms is not None:
        if not algorithms:
            raise reader.error("algorithms", "expected at least one algorithm", [])
        if any(name.lower() == "none" for name in algorithms):
            raise reader.error("algorithms", "'none' is never accepted", list(algorithms))
    return names


def _is_name(value: str) -> bool:
    return bool(value) and not any(c in value for c in ' "\\') and value.isprintable()


def _url(reader: Reader, key: str, value: str) -> None:
    scheme, sep, rest = value.partition("://")
    if not sep or scheme.lower() not in ("http", "https") or not rest or "#" in value:
        raise reader.error(key, "expected an absolute http(s) URL without a fragment", value)
