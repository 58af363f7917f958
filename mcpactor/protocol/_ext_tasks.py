# The tasks extension (``io.modelcontextprotocol/tasks``, SEP-2663): its wire shapes.
#
# At a revision with a request envelope a client that can follow a task says so on each
# request, in ``params._meta["io.modelcontextprotocol/clientCapabilities"].extensions``;
# the server lists the extension under ``capabilities.extensions`` of ``server/discover``.
# The server alone decides whether a ``tools/call`` becomes a task: nothing on the request
# asks for one, and a ``CreateTaskResult`` (``resultType: "task"``) goes only to a request
# that declared the extension. A tool that cannot run without a task refuses an
# undeclaring request with -32021 and ``data.requiredCapabilities``.
#
# The spec page still names that code -32003; the revision's schema
# (MissingRequiredClientCapabilityError) and the conformance suite both want -32021, the
# code the envelope already uses, so that is the one sent.
#
# The client then drives the task with three methods, each named by its ``taskId`` (the
# ``Mcp-Name`` header on Streamable HTTP): ``tasks/get`` answers the whole task with what
# its status carries inlined (``result``, ``error`` or ``inputRequests``), ``tasks/update``
# hands in ``inputResponses`` for a task parked in ``input_required``, ``tasks/cancel``
# asks it to stop. Both of the latter are answered with an empty ``resultType: "complete"``
# acknowledgement. ``tasks/result`` and ``tasks/list`` of the session era do not exist
# here (-32601). A ``subscriptions/listen`` filter may name ``taskIds``; each listed task
# then sends ``notifications/tasks`` with the same body ``tasks/get`` would answer.
#
# This module holds what needs no event loop: the status table, the builders of every
# message above (checked against the extension's schema in the tests), the readers of the
# client's params (bounded as _bounded.py asks) and the decision whether a request runs
# as a task. The Task actor that owns the work lives in the runtime.

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

import attrs

from .._exceptions import INVALID_PARAMS, LocalProtocolError, RemoteProtocolError
from ._bounded import bounded_value, clip_all, describe
from ._envelope import EnvelopeError
from ._jsonrpc import JSONObject, RequestId
from ._mrtr import read_retry
from ._names import (
    AUGMENTABLE,
    EXTENSION,
    INITIAL,
    LISTEN_FILTER_KEY,
    MAX_LISTEN_TASK_IDS,
    MAX_TASK_ID_LENGTH,
    METHODS,
    MISSING_CLIENT_CAPABILITY,
    NAMED_BY,
    REMOVED_METHODS,
    STATUS_NOTIFICATION,
    SUBSCRIPTION_ID,
    TERMINAL,
    TRANSITIONS,
    TaskStatus,
    TaskSupport,
)
from ._session import Negotiated
from ._session_events import COMPLETE

__all__ = [
    "AUGMENTABLE",
    "EXTENSION",
    "INITIAL",
    "LISTEN_FILTER_KEY",
    "MAX_LISTEN_TASK_IDS",
    "MAX_TASK_ID_LENGTH",
    "METHODS",
    "NAMED_BY",
    "REMOVED_METHODS",
    "REQUIRED_CAPABILITIES",
    "STATUS_NOTIFICATION",
    "TASK",
    "TERMINAL",
    "TRANSITIONS",
    "Snapshot",
    "TaskStatus",
    "TaskSupport",
    "Update",
    "UpdateOutcome",
    "acknowledgement",
    "apply_update",
    "check_transition",
    "client_declares",
    "create_task_result",
    "detailed_task",
    "get_task_result",
    "honoured_task_ids",
    "read_listen_task_ids",
    "read_task_id",
    "read_update",
    "require_declared",
    "runs_as_task",
    "server_capability",
    "task_not_found",
    "task_notification_params",
]

#: what a refusal names in ``data.requiredCapabilities`` (ClientCapabilities-shaped)
REQUIRED_CAPABILITIES: Final[JSONObject] = {"extensions": {EXTENSION: {}}}

#: the ``resultType`` of a ``CreateTaskResult``, and of nothing else
TASK: Final = "task"

# The session era's _meta key tying a message to its task: an inlined result must not
# carry it (the task id is at the root of the answer).
_RELATED_TASK: Final = "io.modelcontextprotocol/related-task"
# Keys that only a status carries, by status.
_PAYLOAD: Final[Mapping[TaskStatus, str]] = {
    "input_required": "inputRequests",
    "completed": "result",
    "failed": "error",
}


def server_capability() -> JSONObject:
    """The entry to merge into ``capabilities.extensions`` of ``server/discover``."""
    return {EXTENSION: {}}


def client_declares(negotiated: Negotiated) -> bool:
    """Whether the request (or session) declared the extension."""
    return negotiated.client_has("extensions", EXTENSION)


def require_declared(negotiated: Negotiated, *, request_id: RequestId | None = None) -> None:
    """Refuse a request that needs the extension and did not declare it.

    Used for every ``tasks/*`` method, for a listen filter naming ``taskIds`` and for a
    tool that must run as a task.

    Raises:
        EnvelopeError: -32021 with ``data.requiredCapabilities`` (HTTP status 400).
    """
    if not client_declares(negotiated):
        raise EnvelopeError(
            f"the request needs the client capability extensions[{EXTENSION!r}], "
            "which it did not declare",
            code=MISSING_CLIENT_CAPABILITY,
            data={"requiredCapabilities": REQUIRED_CAPABILITIES},
            request_id=request_id,
        )


def runs_as_task(
    method: str,
    support: TaskSupport,
    negotiated: Negotiated,
    *,
    request_id: RequestId | None = None,
) -> bool:
    """Whether to answer this request with a task.

    A method the extension does not augment, or a tool that forbids tasks, runs as it
    always does; so does an optional one for a client that did not declare the extension.
    A declaring client gets a task from an optional or required tool (a caller that
    finishes fast may still answer with the plain result: the spec allows both).

    Raises:
        EnvelopeError: -32021, the tool requires a task and the client cannot take one.
    """
    if method not in AUGMENTABLE or support == "forbidden":
        return False
    if support == "required":
        require_declared(negotiated, request_id=request_id)
        return True
    return client_declares(negotiated)


def check_transition(old: TaskStatus, new: TaskStatus) -> None:
    """Raise LocalProtocolError when the status table forbids ``old`` -> ``new``."""
    if new not in TRANSITIONS[old]:
        raise LocalProtocolError(f"a task cannot go from {describe(old)} to {describe(new)}")


def _positive_or_none(instance: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is None:
        return
    if type(value) is not int or value <= 0:
        raise LocalProtocolError(
            f"{attribute.name} must be a positive whole number of milliseconds, "
            f"got {describe(value)}"
        )


@attrs.frozen
class Snapshot:
    """One task as it stands: everything ``tasks/get`` and ``notifications/tasks`` say.

    Times are ISO 8601 texts the caller made from its own clock; ``ttl_ms`` None means
    the task is kept without limit. The payload fields are read only for the status
    that carries them (``detailed_task`` checks that it is there).
    """

    task_id: str
    status: TaskStatus
    created_at: str
    last_updated_at: str
    ttl_ms: int | None = attrs.field(validator=_positive_or_none)
    poll_interval_ms: int | None = attrs.field(default=None, validator=_positive_or_none)
    status_message: str | None = None
    #: the final result of the request (``completed``; a tool error is completed too)
    result: JSONObject | None = None
    #: the JSON-RPC error the request ended with (``failed``)
    error: JSONObject | None = None
    #: the server→client requests still unanswered, by key (``input_required``)
    input_requests: Mapping[str, JSONObject] | None = None


def _task_fields(task: Snapshot) -> JSONObject:
    fields: JSONObject = {
        "taskId": task.task_id,
        "status": task.status,
        "createdAt": task.created_at,
        "lastUpdatedAt": task.last_updated_at,
        "ttlMs": task.ttl_ms,
    }
    if task.poll_interval_ms is not None:
        fields["pollIntervalMs"] = task.poll_interval_ms
    if task.status_message is not None:
        fields["statusMessage"] = task.status_message
    return fields


def create_task_result(task: Snapshot) -> JSONObject:
    """The ``CreateTaskResult`` answering the request that made ``task``.

    Flat (``Result & Task``), and never with a payload or a ``requestState``: those
    belong to ``tasks/get``.
    """
    return {"resultType": TASK, **_task_fields(task)}


def detailed_task(task: Snapshot) -> JSONObject:
    """The ``DetailedTask`` of ``task``: its fields and what its status carries inlined.

    Raises:
        LocalProtocolError: the status's payload is missing or malformed (a completed
            task without ``result``, a failed one whose ``error`` lacks an integer
            ``code`` or a string ``message``, an ``input_required`` one with no request).
    """
    detailed = _task_fields(task)
    key = _PAYLOAD.get(task.status)
    if key == "result":
        if task.result is None:
            raise LocalProtocolError(f"completed task {describe(task.task_id)} has no result")
        detailed["result"] = _without_related_task(task.result)
    elif key == "error":
        error = task.error
        if (
            error is None
            or type(error.get("code")) is not int
            or type(error.get("message")) is not str
        ):
            raise LocalProtocolError(
                f"failed task {describe(task.task_id)} needs a JSON-RPC error with an integer "
                f"code and a string message, got {describe(error)}"
            )
        detailed["error"] = dict(error)
    elif key == "inputRequests":
        if not task.input_requests:
            raise LocalProtocolError(
                f"input_required task {describe(task.task_id)} has no input requests"
            )
        detailed["inputRequests"] = dict(task.input_requests)
    return detailed


def _without_related_task(result: JSONObject) -> JSONObject:
    meta = result.get("_meta")
    if type(meta) is not dict or _RELATED_TASK not in meta:
        return result
    rest = {key: value for key, value in meta.items() if key != _RELATED_TASK}
    stripped = {key: value for key, value in result.items() if key != "_meta"}
    if rest:
        stripped["_meta"] = rest
    return stripped


def get_task_result(task: Snapshot) -> JSONObject:
    """The ``GetTaskResult`` answering ``tasks/get``: the detailed task, ``complete``."""
    return {"resultType": COMPLETE, **detailed_task(task)}


def acknowledgement() -> JSONObject:
    """The empty result answering ``tasks/update`` and ``tasks/cancel``."""
    return {"resultType": COMPLETE}


def task_notification_params(task: Snapshot, subscription_id: RequestId) -> JSONObject:
    """The params of ``notifications/tasks`` on the listen stream ``subscription_id``."""
    return {**detailed_task(task), "_meta": {SUBSCRIPTION_ID: subscription_id}}


def task_not_found(task_id: str, *, request_id: RequestId | None = None) -> RemoteProtocolError:
    """The -32602 error for a task id the server does not know (or has dropped)."""
    return RemoteProtocolError(
        f"Failed to retrieve task: Task not found: {describe(task_id)}",
        code=INVALID_PARAMS,
        data={"taskId": bounded_value(task_id)},
        request_id=request_id,
    )


def _invalid(message: str, request_id: RequestId | None) -> EnvelopeError:
    return EnvelopeError(message, code=INVALID_PARAMS, request_id=request_id)


def _valid_id(value: Any) -> bool:
    return type(value) is str and 0 < len(value) <= MAX_TASK_ID_LENGTH


def read_task_id(params: JSONObject | None, *, request_id: RequestId | None = None) -> str:
    """The ``taskId`` of a ``tasks/*`` request.

    Raises:
        EnvelopeError: -32602, the params or the id are missing or malformed, or the id is
            longer than ``MAX_TASK_ID_LENGTH``.
    """
    task_id = params.get("taskId") if type(params) is dict else None
    if not _valid_id(task_id):
        raise _invalid(
            f"'taskId' must be a string of 1 to {MAX_TASK_ID_LENGTH} characters, "
            f"got {describe(task_id)}",
            request_id,
        )
    return task_id  # type: ignore[return-value]


@attrs.frozen
class Update:
    """What a ``tasks/update`` request hands in."""

    task_id: str
    #: the client's answers, by the keys of the ``inputRequests`` they answer
    responses: Mapping[str, JSONObject]


def read_update(params: JSONObject | None, *, request_id: RequestId | None = None) -> Update:
    """Read a ``tasks/update`` request's ``taskId`` and ``inputResponses``.

    Raises:
        EnvelopeError: -32602, either is missing or malformed, there are more than
            ``_mrtr.MAX_INPUT_REQUESTS`` answers, a key is too long or an answer is not an
            object.
    """
    task_id = read_task_id(params, request_id=request_id)
    assert params is not None  # read_task_id refused anything else
    responses = params.get("inputResponses")
    if type(responses) is not dict:
        raise _invalid(
            f"'inputResponses' must be an object, got {describe(responses)}", request_id
        )
    # The same bounds as a retry's answers (one shape, the MRTR page's).
    retry = read_retry({"inputResponses": responses}, request_id=request_id)
    return Update(task_id, retry.responses)


@attrs.frozen
class UpdateOutcome:
    """How a ``tasks/update`` changes a parked task."""

    #: the answers to requests the task is waiting on, by key
    accepted: Mapping[str, JSONObject]
    #: keys answered that are not outstanding (never asked, already answered): ignored
    ignored: tuple[str, ...]
    #: the requests still unanswered after this update
    remaining: Mapping[str, JSONObject]

    @property
    def status(self) -> TaskStatus:
        """The status the task goes to once the answers are handed to its work."""
        return "input_required" if self.remaining else "working"


def apply_update(
    outstanding: Mapping[str, JSONObject], responses: Mapping[str, JSONObject]
) -> UpdateOutcome:
    """Split ``responses`` into answers to ``outstanding`` requests and keys to ignore.

    A subset of the keys is a partial answer: the task stays ``input_required`` with the
    rest. Keys are never reused within a task, so an answer to a key no longer
    outstanding is stale and ignored, as the spec asks.
    """
    accepted = {key: value for key, value in responses.items() if key in outstanding}
    ignored = tuple(key for key in responses if key not in outstanding)
    remaining = {key: value for key, value in outstanding.items() if key not in accepted}
    return UpdateOutcome(accepted, ignored, remaining)


def read_listen_task_ids(
    notifications: JSONObject,
    negotiated: Negotiated,
    *,
    request_id: RequestId | None = None,
) -> tuple[str, ...] | None:
    """The ``taskIds`` a ``subscriptions/listen`` filter names; None when it names none.

    Raises:
        EnvelopeError: -32021, the request did not declare the extension; -32602,
            ``taskIds`` is not a list of task ids or is longer than ``MAX_LISTEN_TASK_IDS``.
    """
    if LISTEN_FILTER_KEY not in notifications:
        return None
    require_declared(negotiated, request_id=request_id)
    ids = notifications[LISTEN_FILTER_KEY]
    if type(ids) is not list:
        raise _invalid(f"'taskIds' must be a list, got {describe(ids)}", request_id)
    if len(ids) > MAX_LISTEN_TASK_IDS:
        raise _invalid(
            f"'taskIds' names {len(ids)} tasks; at most {MAX_LISTEN_TASK_IDS}", request_id
        )
    bad = [describe(value) for value in ids if not _valid_id(value)]
    if bad:
        raise EnvelopeError(
            f"'taskIds' holds strings of 1 to {MAX_TASK_ID_LENGTH} characters; not so: "
            + ", ".join(bad[:5]),
            code=INVALID_PARAMS,
            data={"taskIds": clip_all(bad)},
            request_id=request_id,
        )
    return tuple(dict.fromkeys(ids))


def honoured_task_ids(requested: Iterable[str], known: Callable[[str], bool]) -> list[str]:
    """The ``taskIds`` to acknowledge: those of ``requested`` the server will report on."""
    return [task_id for task_id in requested if known(task_id)]
