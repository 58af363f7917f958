# ``subscriptions/listen``: one long-lived request whose answer is a stream of notifications.
#
# At a revision with ``Revision.listen`` the change notifications (list changes and
# resource updates) are no longer sent on a session's standalone stream: a client opts in
# to each kind with a listen request's ``notifications`` filter. This is the sans-io half
# of one such stream: ``read_filter`` checks the filter (bounded), ``Subscription`` holds
# the subset the server honours (only what its capabilities offer), builds the
# acknowledgement that must come first, says which changes the stream wants, tags every
# notification with the subscription id (the listen request's id) and builds the result
# that ends the stream gracefully. The stream itself (an actor, keep-alives, fan-out) is
# the runtime's.

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import attrs

from .._exceptions import INVALID_PARAMS
from ._bounded import describe
from ._envelope import SERVER_INFO, SUBSCRIPTION_ID, EnvelopeError
from ._jsonrpc import JSONObject, RequestId

__all__ = [
    "ACKNOWLEDGED",
    "MAX_RESOURCE_SUBSCRIPTIONS",
    "ListenFilter",
    "Subscription",
    "read_filter",
]

ACKNOWLEDGED: Final = "notifications/subscriptions/acknowledged"
#: the most URIs one listen request may subscribe to
MAX_RESOURCE_SUBSCRIPTIONS: Final = 1024
#: the longest URI accepted in ``resourceSubscriptions``
MAX_URI_LENGTH: Final = 8192

# filter flag -> (the notification it opts in to, the capability and key offering it)
_FLAGS: Final = {
    "toolsListChanged": ("notifications/tools/list_changed", "tools", "listChanged"),
    "promptsListChanged": ("notifications/prompts/list_changed", "prompts", "listChanged"),
    "resourcesListChanged": (
        "notifications/resources/list_changed",
        "resources",
        "listChanged",
    ),
}
_UPDATED: Final = "notifications/resources/updated"


@attrs.frozen
class ListenFilter:
    """What one listen stream carries: list changes by kind, updates of some URIs."""

    #: the list-changed notifications opted in to, by filter flag (``toolsListChanged``…)
    flags: frozenset[str] = frozenset()
    #: the URIs whose ``notifications/resources/updated`` the stream carries
    resources: frozenset[str] = frozenset()

    def wire(self) -> JSONObject:
        """The ``SubscriptionFilter`` object."""
        found: JSONObject = dict.fromkeys(sorted(self.flags), True)
        if self.resources:
            found["resourceSubscriptions"] = sorted(self.resources)
        return found


def read_filter(params: JSONObject | None, *, request_id: RequestId | None = None) -> ListenFilter:
    """Read a listen request's ``notifications`` filter.

    Unknown keys are ignored (an extension's, or a newer revision's); a flag set to
    false is not subscribed.

    Raises:
        EnvelopeError: the filter is missing or malformed, or lists too many URIs
            (-32602, HTTP status 400).
    """
    notifications = (params or {}).get("notifications")
    if type(notifications) is not dict:
        raise EnvelopeError(
            f"subscriptions/listen needs a 'notifications' object, got {describe(notifications)}",
            code=INVALID_PARAMS,
            request_id=request_id,
        )
    flags = set()
    for flag in _FLAGS:
        value = notifications.get(flag)
        if value is None:
            continue
        if type(value) is not bool:
            raise EnvelopeError(
                f"notifications.{flag} must be a boolean, got {describe(value)}",
                code=INVALID_PARAMS,
                request_id=request_id,
            )
        if value:
            flags.add(flag)
    uris = notifications.get("resourceSubscriptions")
    resources: frozenset[str] = frozenset()
    if uris is not None:
        if type(uris) is not list or not all(
            type(uri) is str and 0 < len(uri) <= MAX_URI_LENGTH for uri in uris
        ):
            raise EnvelopeError(
                "notifications.resourceSubscriptions must list URIs (non-empty strings of "
                f"at most {MAX_URI_LENGTH} characters), got {describe(uris)}",
                code=INVALID_PARAMS,
                request_id=request_id,
            )
        if len(uris) > MAX_RESOURCE_SUBSCRIPTIONS:
            raise EnvelopeError(
                f"notifications.resourceSubscriptions lists {len(uris)} URIs; "
                f"at most {MAX_RESOURCE_SUBSCRIPTIONS}",
                code=INVALID_PARAMS,
                request_id=request_id,
            )
        resources = frozenset(uris)
    return ListenFilter(frozenset(flags), resources)


def _offers(capabilities: Mapping[str, Any], capability: str, key: str) -> bool:
    node = capabilities.get(capability)
    return type(node) is dict and node.get(key) is True


@attrs.frozen
class Subscription:
    """One listen stream: its id and the part of the client's filter the server honours."""

    #: the listen request's id, which tags everything on the stream
    id: RequestId
    honoured: ListenFilter

    @classmethod
    def open(
        cls, request_id: RequestId, requested: ListenFilter, capabilities: Mapping[str, Any]
    ) -> Subscription:
        """The subscription of a listen request, given the server's capabilities."""
        flags = frozenset(
            flag
            for flag in requested.flags
            if _offers(capabilities, _FLAGS[flag][1], _FLAGS[flag][2])
        )
        resources = (
            requested.resources if _offers(capabilities, "resources", "subscribe") else frozenset()
        )
        return cls(request_id, ListenFilter(flags, resources))

    def acknowledgement(self) -> JSONObject:
        """The first message of the stream: the honoured filter, tagged."""
        return self.tag(ACKNOWLEDGED, {"notifications": self.honoured.wire()})

    def wants_list_changed(self, kind: str) -> bool:
        """Whether the stream carries list changes of ``tools``, ``prompts`` or ``resources``."""
        return f"{kind}ListChanged" in self.honoured.flags

    def wants_update(self, uri: str) -> bool:
        """Whether the stream carries updates of the resource at ``uri``."""
        return uri in self.honoured.resources

    def list_changed(self, kind: str) -> JSONObject | None:
        """The tagged list-changed notification of ``kind``, or None if not subscribed."""
        if not self.wants_list_changed(kind):
            return None
        return self.tag(_FLAGS[f"{kind}ListChanged"][0], {})

    def resource_updated(self, uri: str) -> JSONObject | None:
        """The tagged update of ``uri``, or None if the stream does not carry it."""
        if not self.wants_update(uri):
            return None
        return self.tag(_UPDATED, {"uri": uri})

    def tag(self, method: str, params: JSONObject) -> JSONObject:
        """A notification of the stream: ``params._meta`` names the subscription."""
        meta = params.get("_meta")
        tagged = {
            **params,
            "_meta": {**(meta if type(meta) is dict else {}), SUBSCRIPTION_ID: self.id},
        }
        return {"jsonrpc": "2.0", "method": method, "params": tagged}

    def closing_result(self, server_info: JSONObject) -> JSONObject:
        """The ``SubscriptionsListenResult`` that ends the stream gracefully."""
        return {
            "resultType": "complete",
            "_meta": {SUBSCRIPTION_ID: self.id, SERVER_INFO: server_info},
        }
