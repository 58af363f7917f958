# What a handler sees of the session serving it.
#
# ``Context`` lives in the server layer (no trio here): everything that needs the event
# loop goes through ``Peer``, which the runtime implements for a session (and later for
# a stateless request). The negotiated revision and client capabilities are values the
# context carries, never looked up from a session (DESIGN "two eras").
#
# ``Context[StateT]`` is generic in what the server's lifespan yields (``ctx.state``):
# the state belongs to the Server while it runs (``Server.running``), not to a session or
# a request, so reading it is one attribute lookup and nothing is copied per request.

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from .._exceptions import INVALID_REQUEST, CapabilityError, RequestError
from ..protocol import (
    REVISIONS,
    JSONObject,
    Negotiated,
    RequestId,
    describe,
    structure,
    unstructure,
)
from ._rounds import InputNeeded

if TYPE_CHECKING:
    from ..auth import Principal
    from ..protocol import (
        CreateMessageResult,
        ElicitResult,
        Root,
        SamplingMessage,
    )
    from ._execution import Offload, TaskMetadata
    from ._round_answers import Rounds

__all__ = ["Asker", "Context", "Peer", "SessionTaskHost", "StateT"]

T = TypeVar("T")

if TYPE_CHECKING:
    # A default (PEP 696) keeps a bare ``Context`` or ``Server`` annotation valid under
    # ``mypy --strict``, its state then untyped; typing_extensions is only needed by the
    # type checker, which depends on it.
    from typing_extensions import TypeVar as _DefaultTypeVar

    StateT = _DefaultTypeVar("StateT", covariant=True, default=Any)
else:
    StateT = TypeVar("StateT", covariant=True)

_log = logging.getLogger("mcpactor")


class Peer(Protocol):
    """The runtime's side of a context: how a handler reaches the client."""

    async def notify(
        self, method: str, params: JSONObject, *, related_request_id: RequestId | None
    ) -> None:
        """Send a notification, tied to a request when ``related_request_id`` is set."""

    async def request(
        self,
        method: str,
        params: JSONObject,
        *,
        related_request_id: RequestId | None,
        timeout: float | None,
    ) -> JSONObject:
        """Send a server→client request and wait for its result."""

    async def close_sse_stream(self, *, related_request_id: RequestId) -> None:
        """Close the response stream of a request so the client resumes it (HTTP only)."""

    def log_enabled(self, level: str) -> bool:
        """Return whether the client wants log messages at ``level``."""

    def subscribe(self, uri: str) -> None:
        """Remember that the client wants updates of ``uri``."""

    def unsubscribe(self, uri: str) -> None:
        """Forget the client's subscription to ``uri``."""

    async def subscriptions_changed(self) -> None:
        """Make a change of the subscriptions known where it must be before the answer."""

    async def run_sync(self, fn: Callable[[], T]) -> T:
        """Run a blocking callable in a worker thread, cancellable cooperatively."""

    async def call(
        self,
        fn: Callable[..., Any],
        kwargs: Mapping[str, Any],
        *,
        offload: Offload,
        timeout: float | None,
    ) -> Any:
        """Run a tool's function as ``offload`` says; HandlerTimeout after ``timeout`` s."""

    @property
    def tasks(self) -> SessionTaskHost:
        """The tasks of this requestor (2025-11-25)."""

    @property
    def principal(self) -> Principal | None:
        """Who the request was admitted as (HTTP authorization), or None."""


class SessionTaskHost(Protocol):
    """The runtime's task table for one requestor (a session, 2025-11-25)."""

    async def create(
        self,
        work: Callable[[Context], Awaitable[JSONObject]],
        ctx: Context,
        task: TaskMetadata,
    ) -> JSONObject:
        """Start ``work`` as a task; return the ``CreateTaskResult``."""

    async def get(self, task_id: str) -> JSONObject:
        """Return the ``Task``; -32602 RequestError if there is no such task."""

    async def result(self, task_id: str, *, request_id: RequestId | None) -> JSONObject:
        """Wait until the task is terminal; return its result or raise its error."""

    async def page(self, after: int) -> JSONObject:
        """Return one page of tasks created after number ``after`` (``ListTasksResult``)."""

    async def cancel(self, task_id: str) -> JSONObject:
        """Cancel a task; return it (now ``cancelled``); -32602 if it is terminal."""


class _Stateful(Protocol[StateT]):
    # What a Context needs of its Server (which imports this module) to read its state.

    @property
    def state(self) -> StateT: ...


class Asker(Protocol):
    """Who answers a handler's questions in place (a task of the tasks extension)."""

    async def ask(self, key: str, request: JSONObject) -> JSONObject:
        """Wait for the client's answer to ``request`` (an input request) under ``key``."""


class Context(Generic[StateT]):
    """A handler's view of its request: progress, logging, and requests to the client.

    Annotate the parameter ``Context[State]`` where ``State`` is what the server's
    lifespan yields, and ``ctx.state`` is typed ``State``.
    """

    __slots__ = (
        "_asker",
        "_origin",
        "_peer",
        "_rounds",
        "last_progress",
        "meta",
        "negotiated",
        "request_id",
        "server",
    )

    def __init__(
        self,
        peer: Peer,
        request_id: RequestId | None,
        negotiated: Negotiated,
        meta: Mapping[str, Any] | None,
        server: Any = None,
    ) -> None:
        self._peer = peer
        #: the id of the request being served
        self.request_id = request_id
        #: the revision and client capabilities this request is served under
        self.negotiated = negotiated
        #: the request's ``_meta`` (progress token and friends), or an empty mapping
        self.meta: Mapping[str, Any] = meta or {}
        #: the Server the handler belongs to (a mounted server's own, in a mounted one)
        self.server = server
        #: the last progress reported, with its total and message: (progress, total, message)
        self.last_progress: tuple[float, float | None, str | None] | None = None
        # The request's own Context when this one was derived from it for a mounted
        # server's handler: progress is the request's, whichever Context reports it.
        self._origin: Context[Any] | None = None
        # This round of a multi round-trip request (stateless revisions); set by
        # serve_stateless from the retry, else made on the first question.
        self._rounds: Rounds | None = None
        # Set in a task of the tasks extension: questions park the task until the client
        # answers with tasks/update, instead of ending a round.
        self._asker: Asker | None = None

    @property
    def state(self) -> StateT:
        """What the lifespan of the handler's server yielded (``Server(lifespan=...)``).

        The same object for every request while the server runs, in every session and at
        every revision; a mounted server's handlers see their own server's.

        Raises:
            RuntimeError: the server has a lifespan but is not running it.
        """
        # None only for a Context made by hand, outside a served request.
        server: _Stateful[StateT] | None = self.server
        if server is None:
            raise RuntimeError("this Context belongs to no server, so it has no state")
        return server.state

    # --- what the request carried -----------------------------------------------

    @property
    def protocol_version(self) -> str:
        """The negotiated protocol revision, e.g. ``"2025-11-25"``."""
        return self.negotiated.revision.version

    @property
    def client_capabilities(self) -> JSONObject:
        """The capabilities the client declared."""
        return self.negotiated.client_capabilities

    @property
    def client_info(self) -> JSONObject | None:
        """The client's ``clientInfo`` (name, version), if it sent one."""
        return self.negotiated.client_info

    @property
    def input_responses(self) -> Mapping[str, JSONObject]:
        """The client's answers to earlier ``inputRequests``, by key (2026-07-28 retries).

        Empty on a first attempt and in a session, where questions are requests.
        """
        return self._rounds.answers if self._rounds is not None else {}

    @property
    def request_state(self) -> Any:
        """The state a handler's own ``InputRequired`` asked to get back, or None."""
        return self._rounds.state if self._rounds is not None else None

    @property
    def principal(self) -> Principal | None:
        """The caller the HTTP layer admitted this request as, or None.

        In a session it is the session's principal as of the latest request (a refreshed
        token of the same caller brings its new scopes); at 2026-07-28 the request's own.
        None over stdio and on an HTTP server without authorization.
        """
        return self._peer.principal

    def require_scopes(self, *scopes: str) -> None:
        """Demand more scopes at call time (step-up); does nothing without a principal.

        Raises:
            InsufficientScope: the caller's token lacks one of ``scopes``; the request
                is answered with the -32010 error naming them (403 over HTTP), so the
                client can obtain a token with them and retry.
        """
        principal = self._peer.principal
        if principal is not None and principal.missing(scopes):
            from ..auth import InsufficientScope

            raise InsufficientScope(scopes)

    @property
    def progress_token(self) -> str | int | None:
        """The request's progress token, or None when the client asked for no progress."""
        token = self.meta.get("progressToken")
        return token if type(token) is str or type(token) is int else None

    # --- notifications ----------------------------------------------------------

    async def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Report progress; sent only when the client gave a progress token.

        Progress must increase from one report to the next; a report that does not is
        dropped (with a warning in the server log), as the spec forbids sending it.
        """
        token = self.progress_token
        if token is None:
            return
        request = self._origin or self
        last = request.last_progress
        if last is not None and progress <= last[0]:
            _log.warning(
                "progress must increase: dropped %r after %r (request %s)",
                progress,
                last[0],
                describe(self.request_id),
            )
            return
        self.last_progress = request.last_progress = (progress, total, message)
        params: JSONObject = {"progressToken": token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None and self.negotiated.revision.progress_message:
            params["message"] = message
        await self._peer.notify(
            "notifications/progress", params, related_request_id=self.request_id
        )

    async def notify(self, method: str, params: JSONObject | None = None) -> None:
        """Send an extension's notification ``method`` to the client, tied to this request.

        The method must be a ``CustomNotification`` of an extension the handler's server
        enabled, and ``params`` must match its schema.

        Raises:
            ExtensionError: no enabled extension declares ``method``.
            SchemaError: ``params`` break its params schema.
        """
        server = self.server
        if server is None:
            raise RuntimeError("this Context belongs to no server, so it has no extensions")
        checked = server.extensions.outgoing(method, params or {})
        await self._peer.notify(method, checked, related_request_id=self.request_id)

    async def log(self, level: str, data: Any, *, logger: str | None = None) -> None:
        """Send a log message to the client if it passes the level the client set.

        In a session that is the level of ``logging/setLevel``; where each request says
        its own level (2026-07-28) it is the request's, and a request that named none
        gets no log messages at all.
        """
        if self.negotiated.revision.log_level_per_request:
            enabled = getattr(self.negotiated, "log_enabled", None)
            if enabled is None or not enabled(level):
                return
        elif not self._peer.log_enabled(level):
            return
        params: JSONObject = {"level": level, "data": data}
        if logger is not None:
            params["logger"] = logger
        await self._peer.notify(
            "notifications/message", params, related_request_id=self.request_id
        )

    async def debug(self, data: Any, *, logger: str | None = None) -> None:
        """Log at ``debug``."""
        await self.log("debug", data, logger=logger)

    async def info(self, data: Any, *, logger: str | None = None) -> None:
        """Log at ``info``."""
        await self.log("info", data, logger=logger)

    async def warning(self, data: Any, *, logger: str | None = None) -> None:
        """Log at ``warning``."""
        await self.log("warning", data, logger=logger)

    async def error(self, data: Any, *, logger: str | None = None) -> None:
        """Log at ``error``."""
        await self.log("error", data, logger=logger)

    async def close_sse_stream(self) -> None:
        """Close this request's SSE stream now; the client reconnects and resumes it.

        Over Streamable HTTP the request keeps running and what it sends next waits in
        the stream's replay buffer until the client comes back with ``Last-Event-ID``
        (polling, 2025-11-25). Elsewhere, e.g. over stdio, this does nothing.
        """
        if self.request_id is not None:
            await self._peer.close_sse_stream(related_request_id=self.request_id)

    # --- requests to the client -------------------------------------------------

    async def sample(
        self,
        messages: str | Sequence[SamplingMessage],
        *,
        max_tokens: int,
        system_prompt: str | None = None,
        temperature: float | None = None,
        stop_sequences: Sequence[str] | None = None,
        model_preferences: Any = None,
        include_context: str | None = None,
        metadata: JSONObject | None = None,
        timeout: float | None = None,
    ) -> CreateMessageResult:
        """Ask the client's model for a message (``sampling/createMessage``).

        Raises:
            CapabilityError: the client did not declare ``sampling``.
            RequestError: the client answered with an error, or did not answer in time.
        """
        # The wire types of server→client requests load the first time one is sent.
        from ..protocol import CreateMessageResult, SamplingMessage, TextContent

        if isinstance(messages, str):
            messages = [SamplingMessage(role="user", content=TextContent(text=messages))]
        params: JSONObject = {"messages": unstructure(list(messages)), "maxTokens": max_tokens}
        optional = {
            "systemPrompt": system_prompt,
            "temperature": temperature,
            "stopSequences": list(stop_sequences) if stop_sequences is not None else None,
            "modelPreferences": unstructure(model_preferences),
            "includeContext": include_context,
            "metadata": metadata,
        }
        params.update({k: v for k, v in optional.items() if v is not None})
        result = await self._request("sampling/createMessage", params, timeout)
        return structure(result, CreateMessageResult)

    async def elicit(
        self,
        message: str,
        requested_schema: JSONObject,
        *,
        timeout: float | None = None,
    ) -> ElicitResult:
        """Ask the user for structured input through the client (form mode).

        ``requested_schema`` is a flat object schema of primitive properties, as the
        elicitation page allows. Raises CapabilityError without ``elicitation``.
        """
        from ..protocol import ElicitResult

        params: JSONObject = {"message": message, "requestedSchema": requested_schema}
        if self.negotiated.revision.elicitation_url:
            params["mode"] = "form"
            if not _supports_mode(self.negotiated, "form"):
                raise CapabilityError(
                    "the client's elicitation capability does not include form mode",
                    code=self._capability_code(),
                    data={"requiredCapabilities": {"elicitation": {"form": {}}}},
                )
        result = await self._request("elicitation/create", params, timeout)
        return structure(result, ElicitResult)

    async def elicit_url(
        self, message: str, url: str, elicitation_id: str, *, timeout: float | None = None
    ) -> ElicitResult:
        """Send the user to ``url`` for out-of-band input (URL mode, 2025-11-25)."""
        from ..protocol import ElicitResult

        if not self.negotiated.revision.elicitation_url:
            first = next(row.version for row in REVISIONS.values() if row.elicitation_url)
            raise CapabilityError(
                f"URL-mode elicitation needs revision {first}, "
                f"the session negotiated {self.protocol_version}"
            )
        if not _supports_mode(self.negotiated, "url"):
            raise CapabilityError(
                "the client did not declare URL-mode elicitation",
                code=self._capability_code(),
                data={"requiredCapabilities": {"elicitation": {"url": {}}}},
            )
        params: JSONObject = {"mode": "url", "message": message, "url": url}
        # Where URL elicitations have no id (2026-07-28) the retry itself says how it went.
        if self.negotiated.revision.elicitation_ids:
            params["elicitationId"] = elicitation_id
        result = await self._request("elicitation/create", params, timeout)
        return structure(result, ElicitResult)

    async def list_roots(self, *, timeout: float | None = None) -> list[Root]:
        """Ask the client for its roots (``roots/list``)."""
        from ..protocol import Root

        result = await self._request("roots/list", {}, timeout)
        roots = result.get("roots")
        if not isinstance(roots, list):
            raise RequestError(-32603, "the client's roots/list result has no 'roots' list")
        return [structure(root, Root) for root in roots]

    async def _request(self, method: str, params: JSONObject, timeout: float | None) -> JSONObject:
        if self.negotiated.revision.input_requests:
            request = self._question(method, params)
            if self._rounds is None:
                from ._round_answers import Rounds

                self._rounds = Rounds()
            if self._asker is None:
                return self._rounds.ask(request)
            # In a task: an answer the creating request carried is used as a round's
            # would be; an unanswered question parks the task under the round's key.
            try:
                return self._rounds.ask(request)
            except InputNeeded as needed:
                [key] = needed.requests
            answer = await self._asker.ask(key, request)
            self._rounds.answers[key] = answer
            return answer
        return await self._peer.request(
            method, params, related_request_id=self.request_id, timeout=timeout
        )

    def _question(self, method: str, params: JSONObject) -> JSONObject:
        # A question asked in a result (multi round-trip requests, _rounds.py, or a parked
        # task): the input request, once the client is known to take it.
        from ..protocol import client_lacks, needed_capabilities

        request: JSONObject = {"method": method, "params": params}
        lacking = client_lacks(self.negotiated, needed_capabilities(request))
        if lacking:
            raise CapabilityError(
                f"the client did not declare what {method!r} needs: {describe(lacking)}",
                code=self._capability_code(),
                data={"requiredCapabilities": lacking},
            )
        return request

    def _capability_code(self) -> int:
        # -32021 where the revision has the code (it asks in results), else as sessions do.
        from ..protocol import MISSING_CLIENT_CAPABILITY

        return (
            MISSING_CLIENT_CAPABILITY
            if self.negotiated.revision.input_requests
            else INVALID_REQUEST
        )


def _supports_mode(negotiated: Negotiated, mode: str) -> bool:
    elicitation = negotiated.client_capabilities.get("elicitation")
    if not isinstance(elicitation, dict):
        return False
    if "form" not in elicitation and "url" not in elicitation:
        # An empty object declares form mode only (backwards compatible).
        return mode == "form"
    return mode in elicitation
