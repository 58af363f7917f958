# The stateless revision's part of a client session: choosing the era, discovery, the
# rounds of a request answered ``input_required``, and listen streams.
#
# ``start`` is the era's choice the transports pages describe: ``server/discover`` at
# our newest stateless revision, falling back to ``initialize`` when the answer is
# neither a result listing one we speak nor an error only the stateless era has (or
# when the probe goes unanswered). ``run_rounds`` runs one request to its end: each round
# is a request of its own (a new id), and between rounds the handlers answer every
# input request by its key; the retry carries the answers and the ``requestState``
# echoed back exactly; a ``tools/call`` refused as a header mismatch is tried once more
# after listing the tools (whose answer tells the transport what to mirror). ``listen``
# opens a ``subscriptions/listen`` stream and yields its ``Subscription`` once
# acknowledged; leaving the block cancels it (the waiting is _requests.py's).
# ``ClientSession`` inherits this, as it inherits the typed methods; what they share is
# declared below.

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Final

import trio

from .._exceptions import INTERNAL_ERROR, RemoteProtocolError, RequestError
from ..protocol import (
    LATEST,
    MODERN_ERRORS,
    REVISIONS,
    SESSION_REVISIONS,
    STATELESS_REVISIONS,
    ClientSessionCore,
    JSONObject,
    Request,
    Revision,
    clip,
    describe,
)
from ._handlers import ClientHandlers, ProgressHandler
from ._requests import Requests
from ._rounds import (
    INPUT_REQUIRED,
    HeaderMismatch,
    UnsupportedProtocolVersion,
    read_input_required,
    result_type,
    retry_params,
)
from ._subscription import Subscription

__all__ = ["AUTO", "DEFAULT_MAX_INPUT_ROUNDS", "StatelessMethods", "run_rounds"]

_log = logging.getLogger("mcpactor.client")

#: ``start``'s choice of era: probe with ``server/discover``, fall back to ``initialize``
AUTO: Final = "auto"
# How long the probe waits before taking silence for a server of the session era.
_PROBE_TIMEOUT: Final = 10.0
#: input_required rounds one request may take before the client gives up
DEFAULT_MAX_INPUT_ROUNDS: Final = 8


class StatelessMethods:
    """Discovery, the era's choice and listen streams; a base of ``ClientSession``."""

    handlers: ClientHandlers
    client_info: JSONObject
    request_timeout: float | None
    _core: ClientSessionCore
    _requests: Requests

    if TYPE_CHECKING:
        # Provided by ClientSession, which owns the connection.

        async def initialize(
            self,
            protocol_version: str = LATEST.version,
            capabilities: JSONObject | None = None,
            client_info: JSONObject | None = None,
        ) -> JSONObject: ...

        async def request(
            self,
            method: str,
            params: JSONObject | None = None,
            *,
            timeout: float | None = None,
            progress_handler: ProgressHandler | None = None,
        ) -> JSONObject: ...

    async def start(self, protocol_version: str = AUTO, *, discover: bool = True) -> JSONObject:
        """Open the conversation at ``protocol_version``; return the server's answer.

        A session revision is ``initialize``'s. A stateless revision is asked with
        ``server/discover`` and used if the server lists it (no fallback); with
        ``discover=False`` it is spoken at once, for a server known to speak it (nothing
        is sent and ``{}`` is returned). ``"auto"`` probes with ``server/discover`` at
        our newest stateless revision and falls back to ``initialize`` (our newest
        session revision) when the server answers with anything but a result listing
        one we speak or an error of the stateless era (or is silent for the probe's
        timeout), as the transports pages say. Returns the ``server/discover`` or
        ``initialize`` result.

        Raises:
            RequestError: the server refused (for a stateless server of other revisions:
                ``UnsupportedProtocolVersion``).
            RemoteProtocolError: the server lists no revision this client speaks.
            LocalProtocolError: ``discover=False`` with a revision that has sessions, or
                with ``"auto"``.
        """
        if not discover:
            declared = self.handlers.capabilities(REVISIONS.get(protocol_version, LATEST))
            self._core.use_envelope(protocol_version, declared, self.client_info)
            return {}
        if protocol_version in SESSION_REVISIONS:
            return await self.initialize(protocol_version)
        if protocol_version != AUTO:
            return await self.discover(protocol_version)
        probe = self.request_timeout if self.request_timeout is not None else _PROBE_TIMEOUT
        try:
            return await self.discover(timeout=probe)
        except UnsupportedProtocolVersion as exc:
            ours = [v for v in reversed(STATELESS_REVISIONS) if v in exc.supported]
            if not ours:
                raise
            return await self.discover(ours[0])
        except RequestError as exc:
            if exc.code in MODERN_ERRORS:
                raise
            _log.debug("server/discover refused (%s): opening a session", clip(exc.message))
        except RemoteProtocolError as exc:
            # A DiscoverResult without a stateless revision of ours: a session one may do.
            listed = exc.data.get("supportedVersions") if type(exc.data) is dict else None
            if not (type(listed) is list and set(listed) & set(SESSION_REVISIONS)):
                raise
        except trio.TooSlowError:
            _log.debug("server/discover unanswered for %g s: opening a session", probe)
        return await self.initialize()

    async def discover(
        self,
        protocol_version: str | None = None,
        capabilities: JSONObject | None = None,
        client_info: JSONObject | None = None,
        *,
        timeout: float | None = None,
    ) -> JSONObject:
        """Send ``server/discover`` at a stateless revision (default: our newest).

        The declared capabilities are the handlers' at that revision, updated with
        ``capabilities``. When the server lists a stateless revision we speak, every
        later request carries its envelope (``protocol_version`` if listed). Returns
        the ``DiscoverResult``.

        Raises:
            ValueError: ``protocol_version`` is not a stateless revision.
            RequestError: the server answered with an error.
            RemoteProtocolError: the server lists no stateless revision we speak.
        """
        version = protocol_version or STATELESS_REVISIONS[-1]
        row = REVISIONS.get(version)
        if row is None or row.sessions:
            raise ValueError(
                f"{describe(version)} is not a revision without sessions; those are "
                f"{', '.join(STATELESS_REVISIONS)}"
            )
        declared = self.handlers.capabilities(row)
        declared.update(capabilities or {})
        self._requests.check_open()
        request = self._core.discover(
            version, declared, client_info or self.client_info, self._core.log_level
        )
        return await self._requests.call(request, timeout, None)

    async def set_logging_level(self, level: str) -> JSONObject:
        """Ask for log messages at ``level`` and above.

        In a session this is ``logging/setLevel``; at a stateless revision every later
        request says it in its envelope, and nothing is sent now.
        """
        if self._core.stateless:
            self._core.log_level = level
            return {}
        return await self.request("logging/setLevel", {"level": level})

    @contextlib.asynccontextmanager
    async def listen(
        self,
        *,
        tools_list_changed: bool = False,
        prompts_list_changed: bool = False,
        resources_list_changed: bool = False,
        resource_subscriptions: Sequence[str] = (),
        extra: JSONObject | None = None,
        timeout: float | None = None,
    ) -> AsyncIterator[Subscription]:
        """Open a ``subscriptions/listen`` stream; yield it once the server acknowledged it.

        The filter asks for the list changes named and for updates of the resources in
        ``resource_subscriptions``; ``extra`` adds keys of extensions (``taskIds``).
        Iterate the ``Subscription`` for its notifications; its ``notifications`` is
        the filter the server honours. Leaving the block ends the stream (over HTTP the
        response is closed; on stdio ``notifications/cancelled`` is sent).

        Raises:
            LocalProtocolError: no stateless revision is in use.
            RequestError: the server refused the stream.
            trio.TooSlowError: no acknowledgment within ``timeout`` (or ``request_timeout``).
        """
        wanted: JSONObject = {}
        if tools_list_changed:
            wanted["toolsListChanged"] = True
        if prompts_list_changed:
            wanted["promptsListChanged"] = True
        if resources_list_changed:
            wanted["resourcesListChanged"] = True
        if resource_subscriptions:
            wanted["resourceSubscriptions"] = list(resource_subscriptions)
        wanted.update(extra or {})
        async with self._requests.listen(wanted, timeout) as subscription:
            yield subscription


async def run_rounds(
    requests: Requests,
    handlers: ClientHandlers,
    relist: Callable[[], Awaitable[object]],
    revision: Revision,
    method: str,
    params: JSONObject | None,
    *,
    max_rounds: int,
    timeout: float | None,
    progress_handler: ProgressHandler | None,
) -> JSONObject:
    """Run one request until its result is not ``input_required``; return that result.

    Each round is a request of its own (a new id); the handlers answer the questions in
    between. ``timeout`` bounds each round. ``relist`` lists the tools (once) when a
    ``tools/call`` is refused as a header mismatch.
    """
    core = requests.core
    progress = progress_handler is not None
    responses: JSONObject = {}
    state: str | None = None
    relisted = False
    for _ in range(max_rounds + 1):
        request = core.send_request(
            method, retry_params(params, responses, state), progress=progress
        )
        try:
            result = await requests.call(request, timeout, progress_handler)
        except HeaderMismatch:
            # The tool's mirrored parameters may have changed (or were never
            # listed): the transports page says to list the tools and try again.
            if method != "tools/call" or relisted:
                raise
            relisted = True
            await relist()
            request = core.send_request(
                method, retry_params(params, responses, state), progress=progress
            )
            result = await requests.call(request, timeout, progress_handler)
        if result_type(result) != INPUT_REQUIRED:
            return result
        asked = read_input_required(result, revision)
        responses = {}
        for key, input_request in asked.input_requests.items():
            question = Request(key, input_request["method"], input_request.get("params"))
            responses[key] = await handlers.answer(question)
        state = asked.request_state
    raise RemoteProtocolError(
        f"{describe(method)} still asked for input after {max_rounds} rounds",
        code=INTERNAL_ERROR,
    )
