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
#
# The resource URIs a client subscribes to are held for as long as the stream (or, at a
# session revision, the session) lives, idle or not: ``ResourceSubscriptions`` is that
# set, bounded in count, in each URI's size and in total size, with one error for each
# limit. A listen filter and a session's ``resources/subscribe`` both fill one, so the
# two eras refuse the same things the same way.

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Final, cast

import attrs

from .._exceptions import INVALID_PARAMS, RemoteProtocolError
from ._bounded import describe, over_limit, utf8_size
from ._envelope import SUBSCRIPTION_ID, EnvelopeError
from ._jsonrpc import JSONObject, RequestId
from ._session_events import SERVER_INFO

__all__ = [
    "ACKNOWLEDGED",
    "MAX_RESOURCE_SUBSCRIPTIONS",
    "MAX_SUBSCRIPTION_BYTES",
    "MAX_URI_BYTES",
    "ListenFilter",
    "ResourceSubscriptions",
    "Subscription",
    "read_filter",
]

ACKNOWLEDGED: Final = "notifications/subscriptions/acknowledged"
#: the most resources one session, or one listen request, may subscribe to
MAX_RESOURCE_SUBSCRIPTIONS: Final = 1024
#: the longest URI one may subscribe to, in bytes of its UTF-8 encoding
MAX_URI_BYTES: Final = 8192
#: the most bytes (UTF-8) the subscribed URIs of one session or listen request hold
MAX_SUBSCRIPTION_BYTES: Final = 256 * 1024

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
# Shared by every filter that names nothing (each empty frozenset made is 216 bytes that
# a held listen stream keeps).
_NONE: Final[frozenset[str]] = frozenset()


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
        EnvelopeError: the filter is missing or malformed, or its URIs break a limit
            of ``ResourceSubscriptions`` (-32602, HTTP status 400).
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
    resources = _NONE
    if uris is not None:
        if type(uris) is not list:
            raise EnvelopeError(
                f"notifications.resourceSubscriptions must list URIs, got {describe(uris)}",
                code=INVALID_PARAMS,
                request_id=request_id,
            )
        try:
            if len(uris) > MAX_RESOURCE_SUBSCRIPTIONS:
                # Refused before any URI is looked at.
                raise ResourceSubscriptions.too_many(len(uris))
            subscribed = ResourceSubscriptions()
            for uri in uris:
                subscribed.add(uri)
        except RemoteProtocolError as exc:
            # The words of a session's resources/subscribe: one refusal, both eras.
            raise EnvelopeError(
                exc.message,
                code=exc.code,
                data=exc.data,
                request_id=request_id,
            ) from None
        resources = frozenset(subscribed)
    return ListenFilter(frozenset(flags) if flags else _NONE, resources)


@attrs.define(slots=True, eq=False)
class ResourceSubscriptions:
    """A bounded set of subscribed resource URIs: a session's, or a listen request's.

    At most ``MAX_RESOURCE_SUBSCRIPTIONS`` URIs of at most ``MAX_URI_BYTES`` each and
    ``MAX_SUBSCRIPTION_BYTES`` in all (UTF-8); ``add`` refuses what would break one with
    ``over_limit``'s error (-32602, ``data: {"limit": …}``) and changes nothing.
    """

    _uris: set[str] = attrs.field(factory=set, init=False)
    #: the UTF-8 bytes of the URIs held
    size: int = attrs.field(default=0, init=False)

    def add(self, uri: object) -> None:
        """Hold ``uri`` (holding it already costs nothing).

        Raises:
            RemoteProtocolError: ``uri`` is not a non-empty string, or the set would go
                past one of its limits (-32602).
        """
        size = self.check_uri(uri)
        uri = cast("str", uri)
        uris = self._uris
        if uri in uris:
            return
        if len(uris) >= MAX_RESOURCE_SUBSCRIPTIONS:
            raise self.too_many(len(uris) + 1)
        if self.size + size > MAX_SUBSCRIPTION_BYTES:
            raise over_limit(
                f"too many bytes of subscribed resource URIs: {self.size + size}, at most "
                f"{MAX_SUBSCRIPTION_BYTES} (UTF-8) in all",
                MAX_SUBSCRIPTION_BYTES,
            )
        uris.add(uri)
        self.size += size

    @staticmethod
    def check_uri(uri: object) -> int:
        """Return the size of ``uri`` if one may subscribe to it (before it is looked up).

        Raises:
            RemoteProtocolError: ``uri`` is not a non-empty string, or is longer than
                ``MAX_URI_BYTES`` (-32602).
        """
        if type(uri) is not str or not uri:
            raise RemoteProtocolError(
                f"a resource URI must be a non-empty string, got {describe(uri)}",
                code=INVALID_PARAMS,
            )
        # A string of more characters than the limit is more bytes too: never encoded.
        size = MAX_URI_BYTES + 1 if len(uri) > MAX_URI_BYTES else utf8_size(uri)
        if size > MAX_URI_BYTES:
            raise over_limit(
                f"a resource URI longer than {MAX_URI_BYTES} bytes (UTF-8) cannot be "
                "subscribed to",
                MAX_URI_BYTES,
            )
        return size

    @staticmethod
    def too_many(count: int) -> RemoteProtocolError:
        """The error for ``count`` subscriptions, past ``MAX_RESOURCE_SUBSCRIPTIONS``."""
        return over_limit(
            f"too many resource subscriptions: {count}, at most {MAX_RESOURCE_SUBSCRIPTIONS}",
            MAX_RESOURCE_SUBSCRIPTIONS,
        )

    def discard(self, uri: str) -> None:
        """Stop holding ``uri``, if it is held."""
        uris = self._uris
        if uri in uris:
            uris.remove(uri)
            self.size -= utf8_size(uri)

    def __contains__(self, uri: object) -> bool:
        return uri in self._uris

    def __len__(self) -> int:
        return len(self._uris)

    def __iter__(self) -> Iterator[str]:
        return iter(self._uris)


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
        subscribe = _offers(capabilities, "resources", "subscribe")
        resources = requested.resources if subscribe else _NONE
        return cls(request_id, ListenFilter(flags or _NONE, resources))

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
