"""A hook that maps a bearer token to the client it names."""

from collections.abc import Mapping

from mcpactor.transports import HttpOptions

TOKENS = {"Bearer s3cret": "alice"}


async def authenticate(headers: Mapping[str, str]) -> str | None:
    return TOKENS.get(headers.get("authorization", ""))


options = HttpOptions(authenticate=authenticate)
