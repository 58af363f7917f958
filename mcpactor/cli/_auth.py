"""``mcpactor serve --auth-*``: serving over HTTP as an OAuth 2.1 resource server.

The flags, else the config file's ``[auth]`` table, make a ``ResourceServer``: the
issuers trusted, the resource's canonical URL, the scopes, and the verifier — built by
``mcpactor.auth.verifier_from`` from the issuers, a JWKS file or introspection, or made
by a factory of the user's (``--auth-verifier module:function``). Over stdio there is no
OAuth (the spec has a stdio server take its credentials from the environment), so any
``--auth-*`` there is an error.

This module is imported with the parser: it imports nothing heavy until it builds.
"""

from __future__ import annotations

import argparse
import math
from typing import Any, Final

__all__ = ["add_auth_arguments", "build_resource_server", "refuse_auth_on_stdio"]

#: the attributes of the parsed flags, by [auth] key
_FLAG_KEYS: Final = {
    "issuers": "auth_issuer",
    "resource": "auth_resource",
    "audiences": "auth_audience",
    "required_scopes": "auth_scope",
    "scope_prefix": "auth_scope_prefix",
    "jwks_file": "auth_jwks_file",
    "introspection_url": "auth_introspection_url",
    "client_id": "auth_client_id",
    "client_secret_file": "auth_client_secret_file",
    "algorithms": "auth_algorithm",
    "leeway_seconds": "auth_leeway",
    "require_at_jwt": "auth_require_at_jwt",
    "introspection_cache_seconds": "auth_introspection_cache",
    "introspection_without_audience": "auth_introspection_without_audience",
    "hide_unauthorized": "auth_hide_unauthorized",
    "verifier": "auth_verifier",
}
#: the longest client secret file read (a secret is a line, not a document)
_MAX_SECRET_BYTES: Final = 4096
#: the settings only the built-in verifiers read (refused beside --auth-verifier)
_BUILT_IN: Final = (
    "audiences",
    "jwks_file",
    "introspection_url",
    "client_id",
    "client_secret_file",
    "require_at_jwt",
    "introspection_cache_seconds",
    "introspection_without_audience",
)


def _leeway(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 <= value <= 600:
        raise argparse.ArgumentTypeError(f"expected seconds from 0 to 600, got {text!r}")
    return value


def _cache_seconds(text: str) -> float:
    # The flag's bound is the [auth] table's.
    from ..config import MAX_INTROSPECTION_CACHE

    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 <= value <= MAX_INTROSPECTION_CACHE:
        raise argparse.ArgumentTypeError(
            f"expected seconds from 0 to {MAX_INTROSPECTION_CACHE}, got {text!r}"
        )
    return value


def _audience(text: str) -> str:
    if not text or len(text) > 2048 or not text.isprintable() or " " in text:
        raise argparse.ArgumentTypeError(f"expected a name without spaces, got {text!r}")
    return text


def add_auth_arguments(serve: argparse.ArgumentParser) -> None:
    """Add the ``--auth-*`` flags of ``mcpactor serve``."""
    auth = serve.add_argument_group(
        "authorization (HTTP only: an OAuth 2.1 resource server; the [auth] table)"
    )
    _add_trust_arguments(auth)
    _add_token_arguments(auth)
    auth.add_argument(
        "--auth-hide-unauthorized",
        action="store_true",
        default=None,
        help="tools/list, resources/list and prompts/list leave out what the caller's "
        "token may not use",
    )
    auth.add_argument(
        "--auth-verifier",
        metavar="MODULE:FUNCTION",
        help="FUNCTION() returns the TokenVerifier to use instead of the built-in ones",
    )


def _add_trust_arguments(auth: Any) -> None:
    # Whose tokens are accepted, for which resource, with which scopes.
    auth.add_argument(
        "--auth-issuer",
        action="append",
        metavar="URL",
        help="an authorization server whose tokens are accepted; its metadata "
        "(/.well-known/oauth-authorization-server or openid-configuration) gives the "
        "keys; repeatable",
    )
    auth.add_argument(
        "--auth-resource",
        metavar="URL",
        help="this server's canonical URL as clients reach it (https://host/mcp): the "
        "resource of the metadata document, and the audience tokens must name unless "
        "--auth-audience says otherwise",
    )
    auth.add_argument(
        "--auth-audience",
        action="append",
        type=_audience,
        metavar="AUDIENCE",
        help="what tokens' aud must name instead of the resource URL, as the provider "
        "puts it there (an API's identifier, client id or api:// URI); repeatable",
    )
    auth.add_argument(
        "--auth-scope",
        action="append",
        metavar="SCOPE",
        help="a scope every request needs; repeatable",
    )
    auth.add_argument(
        "--auth-scope-prefix",
        metavar="PREFIX",
        help="put before every scope named to clients (challenges, the metadata), as the "
        "authorization server knows them: Entra ID's api://CLIENT-ID/",
    )


def _add_token_arguments(auth: Any) -> None:
    # How the built-in verifiers check a token: its keys, introspection, its claims.
    auth.add_argument(
        "--auth-jwks-file",
        metavar="PATH",
        help="verify JWTs with the keys of this JWKS file instead of the issuers'",
    )
    auth.add_argument(
        "--auth-introspection-url",
        metavar="URL",
        help="introspect opaque tokens here (RFC 7662; default with --auth-client-id: the "
        "issuer's introspection_endpoint)",
    )
    auth.add_argument(
        "--auth-client-id", metavar="ID", help="the client id this server introspects with"
    )
    auth.add_argument(
        "--auth-client-secret-file",
        metavar="PATH",
        help="the file holding the client secret this server introspects with",
    )
    auth.add_argument(
        "--auth-algorithm",
        action="append",
        metavar="ALG",
        help="a JWS algorithm accepted (default: RS256, ES256, PS256, EdDSA and their "
        "kin; never none); repeatable",
    )
    auth.add_argument(
        "--auth-leeway",
        type=_leeway,
        metavar="SECONDS",
        help="clock skew allowed on a token's exp and nbf (default: 30)",
    )
    auth.add_argument(
        "--auth-require-at-jwt",
        action="store_true",
        default=None,
        help="JWTs must be typed at+jwt (RFC 9068), which tells access tokens from ID tokens",
    )
    auth.add_argument(
        "--auth-introspection-cache",
        type=_cache_seconds,
        metavar="SECONDS",
        help="the longest an introspection answer is trusted: a token revoked at the "
        "authorization server is refused within this time (default: 300; 0: ask every time)",
    )
    auth.add_argument(
        "--auth-introspection-without-audience",
        action="store_true",
        default=None,
        help="take introspection answers that name no audience (aud), if they call the "
        "token an access token: for authorization servers that never say aud",
    )


def _given(args: argparse.Namespace, config: Any) -> tuple[dict[str, Any], dict[str, str]]:
    # The settings (the flags over the file's) and where each came from, for errors.
    given: dict[str, Any] = {}
    labels: dict[str, str] = {}
    auth = getattr(config, "auth", None)
    if auth is not None:
        import attrs

        defaults = type(auth)()
        for field in attrs.fields(type(auth)):
            value = getattr(auth, field.name)
            if value != getattr(defaults, field.name):
                given[field.name] = value
                labels[field.name] = f"{config.source}: auth.{field.name}"
    for key, attribute in _FLAG_KEYS.items():
        value = getattr(args, attribute, None)
        if value is not None:
            given[key] = tuple(value) if isinstance(value, list) else value
            labels[key] = "--" + attribute.replace("_", "-")
    return given, labels


def refuse_auth_on_stdio(args: argparse.Namespace, config: Any) -> None:
    """Raise ConfigError when authorization is asked of a server served over stdio."""
    given, labels = _given(args, config)
    if not given:
        return
    from .._exceptions import ConfigError

    first = labels[next(iter(given))]
    raise ConfigError(
        f"{first}: authorization is for HTTP (serve with --http); over stdio a server "
        "takes its credentials from the environment, as the MCP specification says"
    )


def build_resource_server(args: argparse.Namespace, config: Any) -> Any:
    """The ResourceServer the flags and ``[auth]`` describe, or None when they say nothing.

    Raises:
        ConfigError: a setting is missing or wrong; the message names the flag or key.
    """
    given, labels = _given(args, config)
    if not given:
        return None
    from .._exceptions import ConfigError
    from ..auth import ResourceServer

    def label(key: str) -> str:
        return labels.get(key, "--auth-" + key.replace("_", "-"))

    hook = getattr(args, "authenticate", None)
    if hook is not None or (config is not None and config.http.authenticate is not None):
        where = "--authenticate" if hook is not None else f"{config.source}: http.authenticate"
        raise ConfigError(
            f"{label(next(iter(given)))}: authorization and {where} are two ways to admit "
            "requests; give one"
        )
    resource = given.get("resource")
    if resource is None:
        raise ConfigError(
            f"{label(next(iter(given)))}: authorization needs --auth-resource (the canonical "
            "URL clients reach this server at, e.g. https://mcp.example.com/mcp)"
        )
    issuers: tuple[str, ...] = given.get("issuers", ())
    if not issuers:
        raise ConfigError(
            f"{label('resource')}: authorization needs --auth-issuer (the authorization "
            "server the metadata names, and whose tokens are accepted)"
        )
    for algorithm in given.get("algorithms", ()):
        if algorithm.lower() == "none":
            raise ConfigError(f"{label('algorithms')}: 'none' is never accepted")
        if algorithm.upper().startswith("HS"):
            raise ConfigError(
                f"{label('algorithms')}: {algorithm!r} needs a shared secret, which "
                "serve does not take; use an asymmetric algorithm (RS256, ES256, EdDSA…)"
            )
    verifier = _verifier(given, label)
    try:
        return ResourceServer(
            resource=resource,
            authorization_servers=issuers,
            verifier=verifier,
            required_scopes=given.get("required_scopes", ()),
            scopes_supported=given.get("scopes_supported"),
            scope_prefix=given.get("scope_prefix") or "",
            hide_unauthorized=bool(given.get("hide_unauthorized", False)),
        )
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"{label('resource')}: {exc}") from None


def _verifier(given: dict[str, Any], label: Any) -> Any:
    from .._exceptions import ConfigError

    factory = given.get("verifier")
    if factory is not None:
        built_in = [key for key in _BUILT_IN if key in given]
        if built_in:
            raise ConfigError(
                f"{label(built_in[0])}: not used with {label('verifier')}, whose verifier "
                "checks the tokens"
            )
        return _factory_verifier(factory, label("verifier"))
    from ..auth import verifier_from

    secret = None
    if "client_secret_file" in given:
        secret = _read_secret(given["client_secret_file"], label("client_secret_file"))
    jwks_file = given.get("jwks_file")
    if jwks_file is not None:
        import os

        if not os.path.isfile(jwks_file):
            raise ConfigError(f"{label('jwks_file')}: no such file {jwks_file!r}")
    try:
        return verifier_from(
            issuers=given.get("issuers", ()),
            resource=given.get("resource"),
            audiences=given.get("audiences") or None,
            jwks_file=jwks_file,
            introspection_url=given.get("introspection_url"),
            client_id=given.get("client_id"),
            client_secret=secret,
            algorithms=given.get("algorithms"),
            leeway=given.get("leeway_seconds"),
            require_at_jwt=bool(given.get("require_at_jwt", False)),
            introspection_max_age=given.get("introspection_cache_seconds"),
            introspection_without_audience=bool(
                given.get("introspection_without_audience", False)
            ),
        )
    except ImportError as exc:
        raise ConfigError(f"{label('issuers')}: {exc}") from None
    except (ValueError, TypeError, OSError) as exc:
        raise ConfigError(f"{label('issuers')}: {exc}") from None


def _factory_verifier(reference: str, option: str) -> Any:
    from .._exceptions import ConfigError
    from ..auth import TokenVerifier
    from ..config import load_hook

    factory = load_hook(reference, option=option)
    try:
        verifier = factory()
    except Exception as exc:
        raise ConfigError(f"{option}: {reference!r} failed: {type(exc).__name__}: {exc}") from exc
    if not isinstance(verifier, TokenVerifier):
        raise ConfigError(
            f"{option}: {reference!r} returned a {type(verifier).__name__}, not a "
            "TokenVerifier (an object with an async verify(token) method)"
        )
    return verifier


def _read_secret(path: str, option: str) -> str:
    from .._exceptions import ConfigError

    try:
        with open(path, "rb") as file:
            data = file.read(_MAX_SECRET_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"{option}: cannot read {path!r}: {exc.strerror or exc}") from None
    if len(data) > _MAX_SECRET_BYTES:
        raise ConfigError(f"{option}: {path!r} is longer than {_MAX_SECRET_BYTES} bytes")
    try:
        secret = data.decode("utf-8").strip()
    except UnicodeDecodeError:
        raise ConfigError(f"{option}: {path!r} is not UTF-8 text") from None
    if not secret:
        raise ConfigError(f"{option}: {path!r} is empty")
    return secret
