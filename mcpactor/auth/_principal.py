# Who is asking: the caller an access token names.
#
# A Principal is what the HTTP layer hands the runtime for every admitted request, and
# what sessions, streams, tasks, sealed ``requestState`` and listen subscriptions are
# bound to. Binding compares *identity* — the issuer, the subject and the client — and
# nothing else: a refreshed token of the same caller (new scopes, new expiry) still owns
# what the old one created, and a valid token of anyone else owns none of it.

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import attrs


def _scopes(value: Iterable[str]) -> frozenset[str]:
    return value if isinstance(value, frozenset) else frozenset(value)


@attrs.frozen
class Principal:
    """The caller an access token names: subject, client, scopes and claims."""

    #: the ``sub`` claim (or the introspection's ``sub``/``username``)
    subject: str
    #: the issuer that vouched for it
    issuer: str | None = None
    #: the OAuth client the token was issued to (``client_id`` or ``azp``)
    client_id: str | None = None
    #: the scopes the token grants
    scopes: frozenset[str] = attrs.field(default=frozenset(), converter=_scopes, eq=False)
    #: every claim of the token (or of the introspection response), as given
    claims: Mapping[str, Any] = attrs.field(factory=dict, eq=False, repr=False)
    #: when the token stops being valid, seconds since the epoch; None: never said
    expires_at: float | None = attrs.field(default=None, eq=False)

    @property
    def identity(self) -> str:
        """The text that binds state to this caller: issuer, subject and client."""
        return f"{self.issuer or ''}\x1f{self.subject}\x1f{self.client_id or ''}"

    def missing(self, required: Iterable[str]) -> tuple[str, ...]:
        """The scopes of ``required`` this principal lacks, in the order given."""
        scopes = self.scopes
        return tuple(scope for scope in required if scope not in scopes)

    def has_scopes(self, *required: str) -> bool:
        """Whether the token grants every scope of ``required``."""
        return not self.missing(required)

    def __str__(self) -> str:
        return self.identity

    # Written out rather than generated: a request's session check compares its
    # principal with the session's, most often the very same object, and the generated
    # ``!=`` makes two Python calls of it. Equal: the same identity (issuer, subject,
    # client), as ``identity`` says.
    def __eq__(self, other: object) -> bool:
        if other is self:
            return True
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, Principal)
        return (self.subject, self.issuer, self.client_id) == (
            other.subject,
            other.issuer,
            other.client_id,
        )

    def __ne__(self, other: object) -> bool:
        if other is self:
            return False
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    def __hash__(self) -> int:
        return hash((self.subject, self.issuer, self.client_id))
