# What a request is served under: the revision and what the client declared, built by a
# session at ``initialize`` (_session.py) or from a stateless request's own envelope
# (_envelope.py).

from __future__ import annotations

from typing import Any

import attrs

from ._jsonrpc import JSONObject
from ._revisions import Revision

__all__ = ["Negotiated"]


@attrs.frozen
class Negotiated:
    """What a request is served under: the revision and what the client declared.

    A session builds one at ``initialize``; a stateless request (2026-07-28) will build one
    from its own ``_meta``. Handlers read it from their context, never from a session.
    """

    revision: Revision
    client_capabilities: JSONObject = attrs.field(factory=dict)
    client_info: JSONObject | None = None

    def client_has(self, *path: str) -> bool:
        """Return whether the client declared the capability at ``path``."""
        node: Any = self.client_capabilities
        for key in path:
            if not isinstance(node, dict) or key not in node:
                return False
            node = node[key]
        return node is not None and node is not False
