# Multi round-trip requests in the server: the same handler code in both eras.
#
# In a session ``ctx.elicit(...)``, ``ctx.sample(...)`` and ``ctx.list_roots()`` send the
# client a request and wait for its answer. At a revision that asks in results instead
# (``Revision.input_requests``), the handler runs again from the top on every round: each
# question it asks gets a key from the order it is asked in (``1:elicitation/create``,
# ``2:sampling/createMessage``, …); a question already answered returns its answer at
# once, and the first unanswered one ends the round (``InputNeeded``), which
# ``serve_stateless`` answers with ``input_required``. The answers so far travel in the
# sealed ``requestState``, so any process holding the key serves the next round.
#
# The rule handlers must follow: the work before a question runs again on every retry,
# so it must be safe to repeat (read, don't write, before asking). A handler that wants
# to manage the rounds itself reads ``ctx.input_responses`` and returns an
# ``InputRequired`` (its own keyed requests and a state it gets back as
# ``ctx.request_state``).
#
# ``Rounds``, the answers of one round, is in _round_answers.py: it is made with a
# round's first question, so a server that asks none never builds it.

from __future__ import annotations

from collections.abc import Mapping
from typing import NoReturn

import attrs

from .._exceptions import LocalProtocolError
from ..protocol import JSONObject, JSONValue, Revision

__all__ = ["InputNeeded", "InputRequired", "end_round"]


@attrs.frozen
class InputRequired:
    """What a handler returns to ask the client before it can finish (2026-07-28).

    ``requests`` maps keys of the handler's choosing to input requests (build them with
    ``mcpactor.protocol._mrtr``: ``elicitation_request``, ``sampling_request``,
    ``roots_request``); the client's answers come back in ``ctx.input_responses`` under
    the same keys on the retry, and ``state`` (any JSON value, sealed on the way) comes
    back as ``ctx.request_state``.
    """

    requests: Mapping[str, JSONObject] = attrs.field(factory=dict)
    state: JSONValue = None


class InputNeeded(Exception):
    """Ends a round: the handler needs answers the request does not carry yet.

    Raised by the Context's questions at a stateless revision and for a returned
    ``InputRequired``; ``serve_stateless`` turns it into the ``input_required`` result.
    Handlers let it pass.
    """

    def __init__(self, requests: Mapping[str, JSONObject], state: JSONValue = None) -> None:
        super().__init__(f"input required: {', '.join(requests) or 'state only'}")
        self.requests = dict(requests)
        self.state = state


def end_round(returned: InputRequired, revision: Revision) -> NoReturn:
    """End the round of a handler that returned ``InputRequired`` (callers check the type).

    Raises:
        InputNeeded: at a revision that asks in results.
        LocalProtocolError: at a revision that asks with requests instead.
    """
    if not revision.input_requests:
        raise LocalProtocolError(
            f"a handler returned InputRequired at {revision.version}, which has no multi "
            "round-trip requests; ask with ctx.elicit, ctx.sample or ctx.list_roots"
        )
    raise InputNeeded(returned.requests, returned.state)
