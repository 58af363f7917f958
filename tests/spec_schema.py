"""Validate messages the server sends against the official schema of a revision.

The official schemas are kept in the repository, in ``tests/spec/schema/<revision>/schema.json``
(where each came from: ``tests/spec/README.md``). Every test that looks at server output
should pass it through ``check_server_message`` so a message that breaks the spec fails
the test that produced it.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import jsonschema
import jsonschema.validators
import orjson

#: the folder holding ``schema/<revision>/schema.json``, laid out as upstream
SPEC_DIR = Path(__file__).resolve().parent / "spec"

# What each request's result must be, by the request's method.
RESULT_TYPES = {
    "initialize": "InitializeResult",
    "ping": "EmptyResult",
    "logging/setLevel": "EmptyResult",
    "tools/list": "ListToolsResult",
    "tools/call": "CallToolResult",
    "resources/list": "ListResourcesResult",
    "resources/templates/list": "ListResourceTemplatesResult",
    "resources/read": "ReadResourceResult",
    "resources/subscribe": "EmptyResult",
    "resources/unsubscribe": "EmptyResult",
    "prompts/list": "ListPromptsResult",
    "prompts/get": "GetPromptResult",
    "completion/complete": "CompleteResult",
    "tasks/get": "GetTaskResult",
    "tasks/result": "GetTaskPayloadResult",
    "tasks/list": "ListTasksResult",
    "tasks/cancel": "CancelTaskResult",
}

# Requests that may be task-augmented (2025-11-25): answered with a CreateTaskResult
# when the client asked for a task.
TASK_AUGMENTABLE = frozenset({"tools/call"})

# What each message the server starts must be, by its method.
MESSAGE_TYPES = {
    "notifications/progress": "ProgressNotification",
    "notifications/message": "LoggingMessageNotification",
    "notifications/cancelled": "CancelledNotification",
    "notifications/tools/list_changed": "ToolListChangedNotification",
    "notifications/prompts/list_changed": "PromptListChangedNotification",
    "notifications/resources/list_changed": "ResourceListChangedNotification",
    "notifications/resources/updated": "ResourceUpdatedNotification",
    "notifications/tasks/status": "TaskStatusNotification",
    "sampling/createMessage": "CreateMessageRequest",
    "elicitation/create": "ElicitRequest",
    "roots/list": "ListRootsRequest",
    "ping": "PingRequest",
}


@functools.cache
def _document(revision: str) -> dict[str, Any]:
    path = SPEC_DIR / "schema" / revision / "schema.json"
    return orjson.loads(path.read_bytes())  # type: ignore[no-any-return]


@functools.cache
def validator(revision: str, definition: str) -> Any:
    """A validator for one definition of a revision's schema."""
    document = _document(revision)
    key = "$defs" if "$defs" in document else "definitions"
    if definition not in document[key]:
        raise KeyError(f"{revision} schema has no definition {definition!r}")
    schema = {**document, "$ref": f"#/{key}/{definition}"}
    cls = jsonschema.validators.validator_for(schema)
    return cls(schema)


def check(value: Any, revision: str, definition: str) -> None:
    """Raise AssertionError naming every violation of ``definition`` by ``value``."""
    errors = sorted(
        validator(revision, definition).iter_errors(value), key=lambda e: list(e.absolute_path)
    )
    if errors:
        details = "; ".join(f"{list(e.absolute_path)}: {e.message}" for e in errors[:5])
        raise AssertionError(f"not a valid {definition} at {revision}: {details}\n{value!r}")


def check_server_message(
    message: Any, revision: str, *, request_method: str | None = None
) -> None:
    """Check one message the server sent.

    ``request_method`` names the method of the request a response answers, so that its
    result is checked against that method's result type.
    """
    if isinstance(message, list):
        for item in message:
            check_server_message(item, revision)
        return
    assert isinstance(message, dict), f"a message must be an object, got {message!r}"
    if "error" in message:
        # Older schemas have no form for an error whose request id could not be read;
        # 2025-11-25 lets the id be left out.
        schema_revision = revision if "id" in message else "2025-11-25"
        envelope = "JSONRPCError" if schema_revision < "2025-11-25" else "JSONRPCErrorResponse"
        check(message, schema_revision, envelope)
        return
    if "result" in message:
        check(message, revision, "JSONRPCResponse")
        if request_method is not None and request_method in RESULT_TYPES:
            result = message["result"]
            definition = RESULT_TYPES[request_method]
            if request_method in TASK_AUGMENTABLE and "task" in result and "content" not in result:
                definition = "CreateTaskResult"
            check(result, revision, definition)
        return
    method = message.get("method")
    definition = MESSAGE_TYPES.get(method)  # type: ignore[arg-type]
    if definition is None:
        raise AssertionError(f"the server sent an unexpected method {method!r}: {message!r}")
    check(message, revision, definition)
