# The ``[admin]`` table of the deployment file: the admin listener beside the server.
#
# Its keys are the ``--admin*`` flags' (the flags win over them). The listener stays off
# unless ``listen`` (or ``--admin``) is given. A relative token file is the file's
# neighbour, as the other tables' paths are.

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import attrs

from ._reader import Reader

__all__ = ["ADMIN_KEYS", "AdminConfig", "read_admin_config"]

#: every key of the table
ADMIN_KEYS: Final = ("listen", "token_file", "allow_remote", "scope", "redact", "trace_url")


@attrs.frozen
class AdminConfig:
    """The ``[admin]`` table; None means the file does not set that key."""

    #: ``[HOST:]PORT`` the listener binds (``--admin``); None: the listener is off
    listen: str | None = None
    #: the admin token's file (its first line), the config file's neighbour if relative
    token_file: str | None = None
    #: let ``listen`` be an address other than loopback
    allow_remote: bool = False
    #: the scope that makes a token of the server's authorization an admin credential
    scope: str | None = None
    #: tool name ("*": every tool) -> argument fields (dotted paths) a request's story
    #: hides, besides keys that look like secrets
    redact: dict[str, tuple[str, ...]] = attrs.field(factory=dict)
    #: a tracing UI's link to a trace, ``{trace_id}`` in it; None: no link
    trace_url: str | None = None


def read_admin_config(reader: Reader, table: Mapping[str, Any]) -> AdminConfig:
    """Check and convert the ``[admin]`` table."""
    reader.known(table, set(ADMIN_KEYS))
    listen = reader.optional(table, "listen", (str, int))
    if listen is not None:
        listen = str(listen)
        _, colon, port = listen.rpartition(":")
        if not colon:
            port = listen
        if not port.isdigit() or int(port) > 65535:
            raise reader.error("listen", "expected '[HOST:]PORT' (or a port number)", listen)
    token_file = reader.optional(table, "token_file", str)
    scope = reader.optional(table, "scope", str)
    if scope is not None and (
        not scope or any(c in scope for c in ' "\\') or not scope.isprintable()
    ):
        raise reader.error("scope", "expected a scope name without spaces or quotes", scope)
    redact = reader.table(table, "redact")
    rules = {tool: reader.nested("redact").string_list(redact, tool) for tool in redact}
    trace_url = reader.optional(table, "trace_url", str)
    if trace_url is not None and (
        not trace_url.startswith(("https://", "http://")) or "{trace_id}" not in trace_url
    ):
        raise reader.error("trace_url", "expected an http(s) URL with {trace_id} in it", trace_url)
    return AdminConfig(
        redact={tool: fields or () for tool, fields in rules.items()},
        trace_url=trace_url,
        listen=listen,
        token_file=str(reader.directory / token_file) if token_file is not None else None,
        allow_remote=reader.optional(table, "allow_remote", bool, False),
        scope=scope,
    )
