"""Check what a client sends at a revision without sessions against its official schema."""

from __future__ import annotations

from typing import Any, Final

from mcpactor.protocol import JSONValue
from tests.spec_schema import check

#: the stateless revision the tests speak
STATELESS: Final = "2026-07-28"

# The schema definition of each message a client sends, by its method.
_REQUESTS: Final = {
    "server/discover": "DiscoverRequest",
    "subscriptions/listen": "SubscriptionsListenRequest",
    "tools/list": "ListToolsRequest",
    "tools/call": "CallToolRequest",
    "resources/list": "ListResourcesRequest",
    "resources/templates/list": "ListResourceTemplatesRequest",
    "resources/read": "ReadResourceRequest",
    "prompts/list": "ListPromptsRequest",
    "prompts/get": "GetPromptRequest",
    "completion/complete": "CompleteRequest",
}
_NOTIFICATIONS: Final = {"notifications/cancelled": "CancelledNotification"}


def check_client_message(message: JSONValue, revision: str = STATELESS) -> None:
    """Raise AssertionError unless ``message`` is a valid client message at ``revision``."""
    assert isinstance(message, dict), f"a message must be an object, got {message!r}"
    method = message.get("method")
    if "id" in message:
        definition = _REQUESTS.get(method)  # type: ignore[arg-type]
        assert definition is not None, f"not a request of {revision}: {message!r}"
        check(message, revision, "JSONRPCRequest")
    else:
        definition = _NOTIFICATIONS.get(method)  # type: ignore[arg-type]
        assert definition is not None, f"not a client notification of {revision}: {message!r}"
        check(message, revision, "JSONRPCNotification")
    check(message, revision, definition)


class ClientMessages:
    """Every message a client sent, each checked as it leaves (``on_client_message``)."""

    def __init__(self, revision: str = STATELESS) -> None:
        self.revision = revision
        self.sent: list[dict[str, Any]] = []

    def __call__(self, message: JSONValue) -> None:
        check_client_message(message, self.revision)
        self.sent.append(message)

    def methods(self) -> list[str]:
        """The methods sent, in order."""
        return [m["method"] for m in self.sent]
