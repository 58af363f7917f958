"""Make the benchmark's signing key, its JWKS and one long-lived access token.

    python bench/auth/make_token.py

Writes jwks.json (the public key), token.txt (an RS256 JWT for the bench's resource,
valid until 2100) and settings.json (its issuer and resource) beside this file. The
private key is not kept: run it again for a new key and token. Bench use only: the
issuer's name is not a real host, and nothing else trusts this key.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from joserfc import jwt
from joserfc.jwk import RSAKey

ISSUER = "https://issuer.bench.invalid"
RESOURCE = "http://127.0.0.1/mcp"
HERE = Path(__file__).resolve().parent


def main() -> None:
    """Write the key's JWKS, the token and the settings the bench server reads."""
    key = RSAKey.generate_key(2048, parameters={"kid": "bench-1", "use": "sig", "alg": "RS256"})
    claims = {
        "iss": ISSUER,
        "sub": "bench-client",
        "aud": RESOURCE,
        "client_id": "bench-client",
        "scope": "mcp",
        "iat": int(time.time()),
        "exp": 4102444800,  # 2100-01-01
    }
    token = jwt.encode({"alg": "RS256", "typ": "at+jwt", "kid": "bench-1"}, claims, key)
    (HERE / "jwks.json").write_text(json.dumps({"keys": [key.as_dict(private=False)]}) + "\n")
    (HERE / "token.txt").write_text(token + "\n")
    settings = {"issuer": ISSUER, "resource": RESOURCE}
    (HERE / "settings.json").write_text(json.dumps(settings) + "\n")


if __name__ == "__main__":
    main()
