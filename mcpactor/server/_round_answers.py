# The answers of one round of a multi round-trip request (_rounds.py says how rounds
# go): made with a round's first question or retry, not on a server's start.

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from ..protocol import JSONObject, JSONValue
from ._rounds import InputNeeded

__all__ = ["Rounds"]


@attrs.define
class Rounds:
    """One round of a multi round-trip request, as its handlers see it."""

    #: every answer the client gave so far, by key (earlier rounds' and this retry's)
    answers: dict[str, JSONObject] = attrs.field(factory=dict)
    #: the state a handler's own ``InputRequired`` asked to get back
    state: JSONValue = None
    # the questions asked so far in this round, for their keys
    _asked: int = 0

    def ask(self, request: JSONObject) -> JSONObject:
        """The answer to the next question, or InputNeeded asking it."""
        self._asked += 1
        key = f"{self._asked}:{request['method']}"
        answer = self.answers.get(key)
        if answer is None:
            raise InputNeeded({key: request}, self.state)
        return answer

    def sealed_payload(self, state: Any) -> JSONObject:
        """What the next round's ``requestState`` carries."""
        return {"answers": self.answers, "state": state}

    @classmethod
    def opened(cls, payload: Any, responses: Mapping[str, JSONObject]) -> Rounds:
        """The round a retry starts: the sealed answers and state, and the new answers."""
        answers: dict[str, JSONObject] = {}
        state: JSONValue = None
        if type(payload) is dict:
            previous = payload.get("answers")
            if type(previous) is dict:
                answers.update(previous)
            state = payload.get("state")
        answers.update(responses)
        return cls(answers, state)
