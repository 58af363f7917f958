# The input a task of the tasks extension waits for: questions parked until answered.
#
# A question the handler asks (``ctx.elicit`` …) parks the task with keyed
# ``inputRequests`` until ``tasks/update`` brings the answers, and the handler goes on
# where it stopped; a returned ``InputRequired`` parks it too and runs the handler again
# with the answers, as a retry would run it.

from __future__ import annotations

from collections.abc import Mapping

import trio

from ..._exceptions import LocalProtocolError
from ...protocol import JSONObject, apply_update
from ...server import Context, InputNeeded, Rounds
from ._runner import Work
from ._table import Announce, TaskEntry

__all__ = ["TaskAsker", "TaskInput"]


class TaskInput:
    """Parks tasks on the client's input and hands them the answers ``tasks/update`` brings."""

    __slots__ = ("_announce",)

    def __init__(self, announce: Announce) -> None:
        self._announce = announce

    def accept(self, entry: TaskEntry, responses: Mapping[str, JSONObject]) -> bool:
        """Hand answers to a parked task; whether any was taken."""
        if entry.state.status != "input_required":
            return False
        outcome = apply_update(entry.outstanding, responses)
        if not outcome.accepted:
            return False
        entry.answers.update(outcome.accepted)
        entry.outstanding = dict(outcome.remaining)
        if outcome.status == "working":
            entry.state.move("working", None, trio.current_time())
        entry.answered.set()
        entry.answered = trio.Event()
        return True

    async def park(
        self, entry: TaskEntry, requests: Mapping[str, JSONObject]
    ) -> dict[str, JSONObject]:
        """Wait, input_required, until every one of ``requests`` is answered."""
        entry.outstanding.update(requests)
        if entry.state.status == "working":
            entry.state.move(
                "input_required", "waiting for the client's input", trio.current_time()
            )
        await self._announce(entry)
        while not all(key in entry.answers for key in requests):
            await entry.answered.wait()
        return {key: entry.answers.pop(key) for key in requests}

    async def rounds(self, entry: TaskEntry, work: Work, ctx: Context) -> JSONObject:
        """Run ``work`` again with the answers each time it returns ``InputRequired``.

        Its questions asked through ``ctx`` are answered in place instead (``TaskAsker``).
        """
        while True:
            try:
                return await work(ctx)
            except InputNeeded as needed:
                if not needed.requests:
                    raise LocalProtocolError(
                        "a task's handler returned InputRequired without input requests"
                    ) from None
                answers = await self.park(entry, needed.requests)
                before = ctx._rounds.answers if ctx._rounds is not None else {}
                ctx._rounds = Rounds({**before, **answers}, needed.state)


class TaskAsker:
    """Answers a task's questions in place: the task parks until ``tasks/update``."""

    __slots__ = ("_entry", "_input")

    def __init__(self, parked: TaskInput, entry: TaskEntry) -> None:
        self._input = parked
        self._entry = entry

    async def ask(self, key: str, request: JSONObject) -> JSONObject:
        """Park the task on ``request`` under ``key``; return the client's answer."""
        answers = await self._input.park(self._entry, {key: request})
        return answers[key]
