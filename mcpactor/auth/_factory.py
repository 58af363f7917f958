# One verifier from the settings the CLI and the config file share.
#
# A token that looks like a JWT (three base64url segments, a JSON header) is checked
# locally by the JwtVerifier; anything else goes to introspection when it is configured.
# A JWT is never sent to introspection as a fallback: a token that fails local checks is
# refused, so a forged JWT cannot make the server call its authorization server.

from __future__ import annotations

import os
from collections.abc import Iterable

from ._errors import InvalidToken
from ._fetch import DEFAULT_TIMEOUT
from ._introspection import DEFAULT_MAX_AGE, IntrospectionVerifier
from ._jwt import DEFAULT_ALGORITHMS, DEFAULT_LEEWAY, JwtVerifier
from ._principal import Principal
from ._verifier import TokenVerifier


def looks_like_jwt(token: str) -> bool:
    """Whether ``token`` has the shape of a JWS compact serialization with a JSON header."""
    # "eyJ" is the base64url of '{"': every JOSE header starts with it
    return token.startswith("eyJ") and token.count(".") == 2


class CombinedVerifier:
    """Sends JWTs to a JwtVerifier and other tokens to an IntrospectionVerifier."""

    def __init__(
        self, jwt: JwtVerifier | None = None, introspection: IntrospectionVerifier | None = None
    ) -> None:
        if jwt is None and introspection is None:
            raise ValueError("a combined verifier needs a JWT verifier, introspection, or both")
        self.jwt = jwt
        self.introspection = introspection

    def cached(self, token: str) -> Principal | None:
        """The principal remembered for ``token`` by the verifier it goes to; None: not."""
        if self.jwt is not None and looks_like_jwt(token):
            return self.jwt.cached(token)
        if self.introspection is not None:
            return self.introspection.cached(token)
        return None

    async def verify(self, token: str) -> Principal:
        """The principal ``token`` names, by whichever verifier fits its shape."""
        if self.jwt is not None and looks_like_jwt(token):
            return await self.jwt.verify(token)
        if self.introspection is not None:
            return await self.introspection.verify(token)
        raise InvalidToken("the token is not a JWT, and no introspection is configured")


def verifier_from(
    *,
    issuers: Iterable[str] = (),
    resource: str | None = None,
    audiences: Iterable[str] | None = None,
    jwks_file: str | os.PathLike[str] | None = None,
    introspection_url: str | None = None,
    client_id: str | None = None,
    client_secret: str | None = None,
    algorithms: Iterable[str] | None = None,
    leeway: float | None = None,
    hmac_secret: bytes | None = None,
    timeout: float | None = None,
    require_at_jwt: bool = False,
    introspection_max_age: float | None = None,
    introspection_without_audience: bool = False,
) -> TokenVerifier:
    """The verifier the auth settings describe; ValueError names what is missing or wrong.

    - ``issuers`` (or ``jwks_file``) make a JwtVerifier: it needs the issuers and the
      audiences tokens must name — ``audiences`` when given (an API's identifier or client
      id, as the provider puts it in ``aud``), else ``resource``; keys from ``jwks_file``,
      else discovered.
    - ``introspection_url``, or ``client_id`` and ``client_secret`` with ``issuers`` (the
      first issuer's ``introspection_endpoint``), make an IntrospectionVerifier: it checks
      the same audiences, and trusts an answer ``introspection_max_age`` seconds at most.
      ``introspection_without_audience`` takes answers naming no audience (an
      authorization server that never says ``aud``) if they call themselves access tokens.
    - Both: a CombinedVerifier.
    """
    names = list(issuers)
    accepted = tuple(audiences) if audiences is not None else ()
    if not accepted and resource:
        accepted = (resource,)
    chosen_timeout = DEFAULT_TIMEOUT if timeout is None else timeout
    chosen_leeway = DEFAULT_LEEWAY if leeway is None else leeway
    jwt: JwtVerifier | None = None
    if names or jwks_file is not None:
        if not names:
            raise ValueError("auth: a JWKS file needs the issuer(s) whose tokens it verifies")
        if not accepted:
            raise ValueError("auth: verifying JWTs needs the resource (the audience tokens name)")
        jwt = JwtVerifier(
            names,
            accepted,
            algorithms=DEFAULT_ALGORITHMS if algorithms is None else tuple(algorithms),
            leeway=chosen_leeway,
            jwks_file=jwks_file,
            hmac_secret=hmac_secret,
            require_at_jwt=require_at_jwt,
            timeout=chosen_timeout,
        )
    introspection: IntrospectionVerifier | None = None
    if introspection_url is not None or client_id is not None or client_secret is not None:
        introspection = _introspection_verifier(
            introspection_url,
            client_id,
            client_secret,
            names,
            accepted,
            without_audience=introspection_without_audience,
            leeway=chosen_leeway,
            max_age=DEFAULT_MAX_AGE if introspection_max_age is None else introspection_max_age,
            timeout=chosen_timeout,
        )
    if jwt is not None and introspection is not None:
        return CombinedVerifier(jwt, introspection)
    if jwt is not None:
        return jwt
    if introspection is not None:
        return introspection
    raise ValueError(
        "auth: nothing to verify tokens with: give the issuer(s), a JWKS file, "
        "or an introspection URL with client credentials"
    )


def _introspection_verifier(
    url: str | None,
    client_id: str | None,
    client_secret: str | None,
    issuers: list[str],
    accepted: tuple[str, ...],
    *,
    without_audience: bool,
    leeway: float,
    max_age: float,
    timeout: float,
) -> IntrospectionVerifier:
    # Introspection at ``url``, else at the first issuer's introspection_endpoint.
    if not client_id or not client_secret:
        raise ValueError("auth: introspection needs both the client id and the client secret")
    if url is None and not issuers:
        raise ValueError("auth: introspection needs its URL, or an issuer to discover it")
    if not accepted and not without_audience:
        raise ValueError("auth: introspection needs the resource (the audience tokens name)")
    return IntrospectionVerifier(
        url,
        client_id,
        client_secret,
        audience=accepted or None,
        require_audience=not without_audience,
        issuers=issuers,
        discover_from=issuers[0] if url is None else None,
        leeway=leeway,
        max_age=max_age,
        timeout=timeout,
    )
