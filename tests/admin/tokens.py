"""Access tokens of a test issuer, and the ResourceServer that trusts them (a real JWKS)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from joserfc import jwt
from joserfc.jwk import RSAKey

from mcpactor.auth import ResourceServer, verifier_from

ISSUER = "https://issuer.admin-tests.invalid"
RESOURCE = "http://127.0.0.1/mcp"


class Issuer:
    """Signs RS256 access tokens with a key made for the test; its JWKS is in a file."""

    def __init__(self, directory: Path) -> None:
        self.key = RSAKey.generate_key(2048, parameters={"kid": "admin-1", "alg": "RS256"})
        self.jwks_file = directory / "jwks.json"
        self.jwks_file.write_text(json.dumps({"keys": [self.key.as_dict(private=False)]}))

    def token(self, scope: str, **claims: Any) -> str:
        """A token for ``RESOURCE`` granting ``scope``; ``claims`` override the defaults."""
        now = int(time.time())
        given = {
            "iss": ISSUER,
            "sub": "operator",
            "aud": RESOURCE,
            "client_id": "admin-tests",
            "scope": scope,
            "iat": now,
            "exp": now + 600,
            **claims,
        }
        header = {"alg": "RS256", "typ": "at+jwt", "kid": "admin-1"}
        return jwt.encode(header, given, self.key)

    def resource_server(self) -> ResourceServer:
        """The resource server that accepts this issuer's tokens for ``RESOURCE``."""
        verifier = verifier_from(issuers=[ISSUER], resource=RESOURCE, jwks_file=self.jwks_file)
        return ResourceServer(resource=RESOURCE, authorization_servers=[ISSUER], verifier=verifier)
