# Peer methods shared by the Contexts' peers that are not a session's (``SessionPeer``).
#
# A stateless request's peer and a task's peers each say what is theirs (notifications,
# the refusal's words, the task table); what is the same for them lives here once.

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from .. import auth
from ..protocol import JSONObject, RequestId

if TYPE_CHECKING:
    from ..auth import Principal
    from ..server import Offload, Peer

__all__ = ["Delegating", "Sessionless", "principal_of"]

T = TypeVar("T")


def principal_of(admitted: object) -> Principal | None:
    """The Principal a request was admitted as: what the transport passed, as one.

    An authentication hook that returns something else (a name, True) admitted a
    caller nobody granted scopes to: it is a Principal without scopes, so a tool that
    needs some is refused rather than served.
    """
    if admitted is None:
        return None
    # Read through the package: a server nobody authenticates to never builds it.
    principal = auth.Principal
    if isinstance(admitted, principal):
        return admitted
    return principal(subject=str(admitted))


class Sessionless:
    """The Peer methods of a Context with no session behind it: nothing to ask or keep.

    There is no client to ask (``_refusal`` says why, each in its own words), no stream
    to close and resume, no session log level and no subscriptions to remember.
    """

    __slots__ = ()

    def _refusal(self, method: str) -> Exception:
        raise NotImplementedError

    async def request(
        self,
        method: str,
        params: JSONObject,
        *,
        related_request_id: RequestId | None,
        timeout: float | None,
    ) -> JSONObject:
        """Refused: there is no session to send the client a request on."""
        raise self._refusal(method)

    async def close_sse_stream(self, *, related_request_id: RequestId) -> None:
        """Nothing to close: no stream of this Context can be resumed."""

    def log_enabled(self, level: str) -> bool:
        """No session log level (Context.log reads a request's envelope instead)."""
        return False

    def subscribe(self, uri: str) -> None:
        """Nothing to remember: without sessions listen streams name their URIs."""

    def unsubscribe(self, uri: str) -> None:
        """Nothing to forget."""

    async def subscriptions_changed(self) -> None:
        """Nothing to tell."""


class Delegating:
    """The Peer methods that hand a Context's work (threads, processes) to ``_peer``."""

    __slots__ = ()

    _peer: Peer

    @property
    def principal(self) -> Principal | None:
        """The principal of the Context this one's work came from."""
        return self._peer.principal

    async def run_sync(self, fn: Callable[[], T]) -> T:
        """Run a blocking callable in a worker thread, cancellable cooperatively."""
        return await self._peer.run_sync(fn)

    async def call(
        self,
        fn: Callable[..., Any],
        kwargs: Mapping[str, Any],
        *,
        offload: Offload,
        timeout: float | None,
    ) -> Any:
        """Run a tool's function as ``offload`` says, under its timeout."""
        return await self._peer.call(fn, kwargs, offload=offload, timeout=timeout)
