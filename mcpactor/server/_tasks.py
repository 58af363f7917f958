# Tasks, the sans-io half: the session era's (2025-11-25) and the hosts of both eras.
#
# A task-augmented request (``tools/call`` with ``params.task``) is answered at once with
# a ``CreateTaskResult``; the work goes on as a Task actor in the runtime
# (runtime/tasks/) and the requestor polls ``tasks/get``, waits on ``tasks/result``,
# lists with ``tasks/list`` and stops it with ``tasks/cancel``.
#
# This module is what needs no event loop:
#
# - the status machine, the one table of both eras (``TRANSITIONS``, kept in
#   protocol/_ext_tasks.py): a task starts ``working``, may go to ``input_required`` and
#   back while it waits on the client, and ends in one of the terminal states, which are
#   final (spec "Task Status Lifecycle");
# - ``TaskState``, one task's record and its ``Task`` wire form; times are numbers the
#   caller passes in (seconds on its clock), turned into ISO 8601 by a function it gives;
# - the gate deciding whether a ``tools/call`` runs as a task (tool-level negotiation);
# - opaque ``tasks/list`` cursors;
# - the four ``tasks/*`` handlers, which parse params and ask the ``TaskHost`` (the
#   runtime, reached through the Context's peer) for the rest;
# - ``TaskHost``, what ``serve_stateless`` asks of the runtime for the tasks extension
#   (``io.modelcontextprotocol/tasks``) at a revision without sessions: one process-wide
#   table, whose tasks are the same Task actors as a session's.
#
# ``SessionTaskHost`` lives beside ``Peer`` in _context.py and ``TaskMetadata`` beside
# ``TaskSupport`` in _execution.py, so this module imports them and neither imports it.

from __future__ import annotations

import base64
import datetime
from collections.abc import Awaitable, Callable
from typing import Final, Protocol

import attrs
import orjson

from .._exceptions import (
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    LocalProtocolError,
    RequestError,
)
from ..protocol import (
    TERMINAL,
    TRANSITIONS,
    JSONObject,
    RequestId,
    Revision,
    TaskStatus,
    Update,
    bounded_value,
    describe,
)
from ._context import Context, SessionTaskHost
from ._execution import TASK_METHODS, TaskMetadata, TaskSupport

__all__ = [
    "METHODS",
    "RELATED_TASK",
    "TERMINAL",
    "TRANSITIONS",
    "SessionTaskHost",
    "TaskHost",
    "TaskMetadata",
    "TaskState",
    "TaskStatus",
    "decode_cursor",
    "encode_cursor",
    "failure_message",
    "handle",
    "isoformat",
    "requested_task",
    "tasks_capability",
    "with_related_task",
]

#: the ``_meta`` key tying a message to its task
RELATED_TASK: Final = "io.modelcontextprotocol/related-task"

#: the ``tasks/*`` methods a server that offers tasks serves
METHODS: Final = TASK_METHODS


class TaskHost(Protocol):
    """The runtime's tasks of the tasks extension: one table for the whole process.

    Each task belongs to the principal that created it (None: no authorization); a task
    of another principal is not found. Task ids are opaque and unguessable.
    """

    async def create(
        self,
        work: Callable[[Context], Awaitable[JSONObject]],
        ctx: Context,
        *,
        principal: str | None = None,
    ) -> JSONObject:
        """Start ``work`` as a Task actor; return the ``CreateTaskResult`` once stored.

        Raises:
            RequestError: too many tasks run or are kept (-32603).
        """

    async def get(
        self, task_id: str, *, principal: str | None = None, request_id: RequestId | None = None
    ) -> JSONObject:
        """Return the ``GetTaskResult``; -32602 RemoteProtocolError for an unknown id."""

    async def update(
        self, update: Update, *, principal: str | None = None, request_id: RequestId | None = None
    ) -> JSONObject:
        """Hand the answers to a parked task; return the empty acknowledgement."""

    async def cancel(
        self, task_id: str, *, principal: str | None = None, request_id: RequestId | None = None
    ) -> JSONObject:
        """Cancel the task's actor (a finished task stays as it is); return the ack."""

    def known(self, task_id: str, *, principal: str | None = None) -> bool:
        """Whether ``task_id`` names a task of ``principal`` (listen's ``taskIds``)."""


def tasks_capability() -> JSONObject:
    """The server's ``tasks`` capability: list, cancel and task-augmented ``tools/call``."""
    return {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}


def isoformat(epoch_seconds: float) -> str:
    """An ISO 8601 UTC timestamp with milliseconds, e.g. ``2025-11-25T10:30:00.000Z``."""
    moment = datetime.datetime.fromtimestamp(epoch_seconds, datetime.UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


@attrs.define(eq=False)
class TaskState:
    """One task's status and times; ``move`` enforces the status machine."""

    task_id: str
    #: seconds on the owner's clock
    created_at: float
    #: the ttl in milliseconds, None for unlimited
    ttl_ms: int | None
    poll_interval_ms: int | None = None
    status: TaskStatus = "working"
    status_message: str | None = None
    updated_at: float = attrs.field()

    @updated_at.default
    def _created(self) -> float:
        return self.created_at

    @property
    def terminal(self) -> bool:
        """Whether the task reached a final status."""
        return self.status in TERMINAL

    @property
    def expires_at(self) -> float | None:
        """When the task may be deleted (owner's clock), or None if never."""
        if self.ttl_ms is None:
            return None
        return self.created_at + self.ttl_ms / 1000

    def move(self, status: TaskStatus, message: str | None, now: float) -> None:
        """Change the status; LocalProtocolError if the status machine forbids it."""
        if status not in TRANSITIONS[self.status]:
            raise LocalProtocolError(
                f"task {describe(self.task_id)} cannot go from {describe(self.status)} to "
                f"{describe(status)}"
            )
        self.status = status
        self.status_message = message
        self.updated_at = now

    def wire(self, instant: Callable[[float], str]) -> JSONObject:
        """The ``Task`` object of the 2025-11-25 schema."""
        task: JSONObject = {
            "taskId": self.task_id,
            "status": self.status,
            "createdAt": instant(self.created_at),
            "lastUpdatedAt": instant(self.updated_at),
            "ttl": self.ttl_ms,
        }
        if self.status_message is not None:
            task["statusMessage"] = self.status_message
        if self.poll_interval_ms is not None:
            task["pollInterval"] = self.poll_interval_ms
        return task


def requested_task(
    params: JSONObject,
    *,
    tool: str,
    support: TaskSupport,
    revision: Revision,
    offered: bool,
) -> TaskMetadata | None:
    """Decide whether a ``tools/call`` runs as a task; None means a plain call.

    Raises:
        RequestError: -32601 for a ``required`` tool called without a task or a
            ``forbidden`` one called with one (tool-level negotiation); -32602 for a
            malformed ``task``.
    """
    if not (revision.tasks and offered):
        # A server that does not declare tasks processes the request normally,
        # ignoring task metadata (spec "Task Support and Handling").
        return None
    task = params.get("task")
    if task is None:
        if support == "required":
            raise RequestError(
                METHOD_NOT_FOUND,
                f"task augmentation required for tools/call requests: tool {describe(tool)} "
                "must be called with a 'task'",
                {"tool": tool, "taskSupport": support},
            )
        return None
    if support == "forbidden":
        raise RequestError(
            METHOD_NOT_FOUND,
            f"tool {describe(tool)} does not support task-augmented calls; call it without 'task'",
            {"tool": tool, "taskSupport": support},
        )
    if type(task) is not dict:
        raise RequestError(INVALID_PARAMS, f"'task' must be an object, got {describe(task)}")
    ttl = task.get("ttl")
    if ttl is not None and (type(ttl) is not int or ttl < 0):
        raise RequestError(
            INVALID_PARAMS, f"'task.ttl' must be a non-negative integer (ms), got {describe(ttl)}"
        )
    return TaskMetadata(ttl_ms=ttl)


def with_related_task(payload: JSONObject, task_id: str) -> JSONObject:
    """A copy of ``payload`` whose ``_meta`` names the task it belongs to."""
    meta = payload.get("_meta")
    meta = dict(meta) if isinstance(meta, dict) else {}
    meta[RELATED_TASK] = {"taskId": task_id}
    return {**payload, "_meta": meta}


def failure_message(result: JSONObject) -> str:
    """The text of a failed tool result (``isError: true``), for ``statusMessage``."""
    for block in result.get("content") or ():
        if isinstance(block, dict) and block.get("type") == "text":
            text = block.get("text")
            if isinstance(text, str) and text:
                return text
    return "the tool reported an error"


def encode_cursor(after: int) -> str:
    """An opaque ``tasks/list`` cursor: list the tasks created after number ``after``."""
    return base64.urlsafe_b64encode(orjson.dumps(["tasks", after])).decode("ascii")


def decode_cursor(cursor: object) -> int:
    """Read a cursor made by ``encode_cursor``; -32602 RequestError if it is not one."""
    if isinstance(cursor, str):
        try:
            decoded = orjson.loads(base64.urlsafe_b64decode(cursor.encode("ascii")))
            if decoded[0] == "tasks" and type(decoded[1]) is int and decoded[1] >= 0:
                return int(decoded[1])
        except (ValueError, TypeError, IndexError, KeyError):
            pass
    raise RequestError(
        INVALID_PARAMS, f"invalid cursor {describe(cursor)}", {"cursor": bounded_value(cursor)}
    )


def _task_id(params: JSONObject, method: str) -> str:
    task_id = params.get("taskId")
    if not isinstance(task_id, str):
        raise RequestError(
            INVALID_PARAMS, f"{method} needs a string 'taskId', got {describe(task_id)}"
        )
    return task_id


async def handle(method: str, params: JSONObject, ctx: Context) -> JSONObject:
    """Serve one ``tasks/*`` request through the context's task host."""
    if not ctx.negotiated.revision.tasks:
        raise RequestError(
            METHOD_NOT_FOUND,
            f"method not found: {describe(method)}",
            {"method": bounded_value(method)},
        )
    host: SessionTaskHost = ctx._peer.tasks
    if method == "tasks/get":
        return await host.get(_task_id(params, method))
    if method == "tasks/result":
        return await host.result(_task_id(params, method), request_id=ctx.request_id)
    if method == "tasks/cancel":
        return await host.cancel(_task_id(params, method))
    assert method == "tasks/list"
    cursor = params.get("cursor")
    return await host.page(0 if cursor is None else decode_cursor(cursor))
