# Serving one request of a stateless revision (2026-07-28): the server's half.
#
# A stateless request reaches the server with a Context whose ``negotiated`` came from
# its own envelope (protocol/_envelope.py) instead of a session. ``serve_stateless`` is
# what the runtime calls for it in place of ``Server.handle_request``: it refuses the
# methods the revision does not have (-32601: ``ping``, ``initialize``,
# ``resources/subscribe``, … are gone), answers ``server/discover`` itself, and shapes
# every result as the revision's row says: ``resultType``, ``serverInfo`` in ``_meta``
# and, on the cacheable methods, the cache hints (_caching.py). The handlers underneath
# are the session era's, unchanged: they already shape content and fields per revision.
#
# Given a ``TaskHost`` (the runtime's process-wide table) it serves the tasks extension
# too: a ``tools/call`` of a tool whose ``task_support`` allows it, from a request that
# declared the extension, is answered with a ``CreateTaskResult`` while the call goes on
# as a Task actor (a ``required`` one refuses an undeclaring request with -32021);
# ``tasks/get``, ``tasks/update`` and ``tasks/cancel`` ask the host, and ``server/discover``
# lists the extension. Without a host the extension does not exist: every tool runs as a
# plain call and the ``tasks/*`` methods are not found.
#
# Nothing here names a revision; every decision reads the row.

from __future__ import annotations

from collections.abc import Coroutine, Iterable
from typing import TYPE_CHECKING, Any, Final

from .._exceptions import LocalProtocolError
from ..protocol import (
    ALL_VERSIONS,
    AUGMENTABLE,
    COMPLETE,
    SERVER_INFO,
    TASK_EXTENSION_METHODS,
    JSONObject,
    Revision,
    StateRefused,
    StateSealer,
    TaskSupport,
    input_required_result,
    plain_complete,
    read_retry,
    read_task_id,
    read_update,
    require_declared,
    runs_as_task,
    server_capability,
)
from ._caching import CacheHint, combine
from ._context import Context
from ._dispatch import method_not_found
from ._round_answers import Rounds
from ._rounds import InputNeeded
from ._scopes import check_scopes, scopes_of
from ._server import Server

if TYPE_CHECKING:
    from ._tasks import TaskHost

__all__ = [
    "ask_in_result",
    "cache_hint",
    "called_tool",
    "complete_result",
    "direct_methods",
    "discover_result",
    "finish_stateless",
    "route_stateless",
    "serve_stateless",
    "tool_task_support",
]

DISCOVER: Final = "server/discover"

# Which list of the catalog each cacheable list method answers with.
_LISTS: Final = {
    "tools/list": "tools",
    "prompts/list": "prompts",
    "resources/list": "resources",
    "resources/templates/list": "templates",
}


# By revision: the methods direct_methods names (the revisions are few and fixed).
_DIRECT: dict[str, frozenset[str]] = {}


def direct_methods(revision: Revision) -> frozenset[str]:
    """The methods ``route_stateless`` leaves to the handler and that need no cache hints.

    A request of one of them is served by ``server.handle_request`` alone and its result
    shaped by ``finish_stateless``; unless it carries a round (``requestState`` or
    ``inputResponses``) or is a call the tasks extension may run as a task: then
    ``route_stateless`` decides.
    """
    direct = _DIRECT.get(revision.version)
    if direct is None:
        # Shaped in one step: a resultType and the serverInfo, nothing else to decide.
        shaped_at_once = revision.result_type and revision.server_info_meta
        direct = _DIRECT[revision.version] = (
            revision.client_requests - revision.cacheable - {*TASK_EXTENSION_METHODS, DISCOVER}
            if shaped_at_once
            else frozenset()
        )
    return direct


def discover_result(
    server: Server,
    revision: Revision,
    *,
    supported: Iterable[str] = ALL_VERSIONS,
    tasks: TaskHost | None = None,
) -> JSONObject:
    """The ``server/discover`` result: versions, capabilities, instructions, identity.

    With a task host, and a tool that may run as a task, the capabilities list the
    tasks extension under ``extensions``.
    """
    capabilities = server.capabilities(revision)
    if tasks is not None and revision.extensions and _offers_tasks(server):
        extensions = capabilities.get("extensions")
        capabilities = {
            **capabilities,
            "extensions": {
                **(extensions if type(extensions) is dict else {}),
                **server_capability(),
            },
        }
    result: JSONObject = {
        "supportedVersions": list(supported),
        "capabilities": capabilities,
    }
    if server.instructions:
        result["instructions"] = server.instructions
    return complete_result(
        result,
        method=DISCOVER,
        revision=revision,
        server_info=server.info(revision),
        hint=server.cache,
    )


def complete_result(
    result: JSONObject,
    *,
    method: str,
    revision: Revision,
    server_info: JSONObject,
    hint: CacheHint | None,
) -> JSONObject:
    """``result`` as the revision sends it: ``resultType``, ``serverInfo``, cache hints.

    A result that already says its ``resultType`` (``input_required``) keeps it, and
    only a complete result of a cacheable method gets the hints. At a revision without
    these facts the result is returned as it is.
    """
    cacheable = method in revision.cacheable
    if (
        not cacheable
        and revision.result_type
        and revision.server_info_meta
        and "resultType" not in result
        and "_meta" not in result
    ):
        # Most results (a tool's), in one step.
        return plain_complete(result, server_info)
    if not (revision.result_type or revision.server_info_meta or cacheable):
        return result
    shaped = dict(result)
    if revision.result_type:
        shaped.setdefault("resultType", COMPLETE)
    if cacheable and shaped.get("resultType", COMPLETE) == COMPLETE:
        shaped.update((hint or CacheHint()).wire())
    if revision.server_info_meta:
        meta = shaped.get("_meta")
        shaped["_meta"] = {**(meta if type(meta) is dict else {}), SERVER_INFO: server_info}
    return shaped


def cache_hint(server: Server, method: str, params: JSONObject | None) -> CacheHint:
    """The hint for a complete result of ``method``: the server's, or its entries'."""
    default = server.cache
    catalog = server._catalog()
    kind = _LISTS.get(method)
    if kind is not None:
        entries: Iterable[Any] = getattr(catalog, kind).values()
        hint = combine(default, (getattr(entry, "cache", None) for entry in entries))
        if (
            hint.scope == "public"
            and server.hide_unauthorized
            and any(scopes_of(entry) for entry in getattr(catalog, kind).values())
        ):
            # What a hiding list shows depends on who asks: nobody may share it.
            hint = CacheHint(hint.ttl_ms, "private")
        return hint
    if method == "resources/read":
        uri = (params or {}).get("uri")
        if isinstance(uri, str):
            entry = catalog.resources.get(uri)
            if entry is None:
                entry = next(
                    (
                        template
                        for template in catalog.templates.values()
                        if template.template is not None and template.template.match(uri)
                    ),
                    None,
                )
            own = getattr(entry, "cache", None)
            hint = own if isinstance(own, CacheHint) else default
            if hint.scope == "public" and scopes_of(entry):
                # A read only some callers may make must not be served to others.
                hint = CacheHint(hint.ttl_ms, "private")
            return hint
    return default


def tool_task_support(server: Server, params: JSONObject | None) -> TaskSupport:
    """The ``task_support`` of the tool a ``tools/call`` names (``forbidden`` if none)."""
    return _task_support(called_tool(server, params))


def _task_support(entry: Any) -> TaskSupport:
    support = getattr(getattr(entry, "execution", None), "task_support", None)
    if support == "optional":
        return "optional"
    if support == "required":
        return "required"
    return "forbidden"


def called_tool(server: Server, params: JSONObject | None) -> Any:
    """The entry of the tool a ``tools/call`` names (None if there is none)."""
    # A server without mounts lists only its own tools: they are looked up without
    # building its catalog on every request.
    name = (params or {}).get("name")
    if type(name) is not str:
        return None
    tools = server._registry.tools if server._mounts is None else server._catalog().tools
    return tools.get(name)


def _runs_as_task(server: Server, method: str, params: JSONObject | None, ctx: Context) -> bool:
    if method not in AUGMENTABLE:
        return False
    if server._mounts is None and not server._registry.offers_tasks():
        # None of the server's tools may run as a task: no lookup of the one called.
        return False
    execution = getattr(called_tool(server, params), "execution", None)
    # Most tools forbid tasks: they are ruled out first, with one look at the entry.
    if execution is None or execution.task_support == "forbidden":
        return False
    if not runs_as_task(method, execution.task_support, ctx.negotiated, request_id=ctx.request_id):
        return False
    if not execution.task_after_input:
        return True
    # Rounds first: a first attempt runs as a plain call (it ends with input_required,
    # or answers at once); the retry that brings answers becomes the task.
    rounds = ctx._rounds
    return rounds is not None and bool(rounds.answers or rounds.state is not None)


def _offers_tasks(server: Server) -> bool:
    return any(
        getattr(getattr(entry, "execution", None), "task_support", "forbidden") != "forbidden"
        for entry in server._catalog().tools.values()
    )


async def serve_stateless(
    server: Server,
    method: str,
    params: JSONObject | None,
    ctx: Context,
    *,
    sealer: StateSealer | None = None,
    now: float = 0.0,
    principal: str | None = None,
    tasks: TaskHost | None = None,
) -> JSONObject:
    """Serve one request of a stateless revision and return its shaped result.

    ``sealer`` seals and opens the ``requestState`` of multi round-trip requests (none:
    a handler that asks the client fails, and a retry's state is refused); ``now`` is
    the time in seconds since the epoch and ``principal`` who is asking, both bound into
    the state (and ``principal`` owns the tasks it creates). ``tasks`` serves the tasks
    extension; without it the extension is not offered.

    Raises:
        RequestError: the request gets this JSON-RPC error (-32601 for a method the
            revision does not have).
        StateRefused: the retry's ``requestState`` does not open (-32602).
        EnvelopeError: its ``inputResponses`` or ``requestState`` are malformed (-32602);
            the request needs the tasks extension it did not declare (-32021).
        RemoteProtocolError: a ``tasks/*`` request names no task of this principal
            (-32602).
        CapabilityError: a handler asked what the client did not declare (-32021).
        LocalProtocolError: ``ctx`` was negotiated at a session revision, or a handler
            asked the client with no sealer to carry the answers.
    """
    special = route_stateless(
        server, method, params, ctx, sealer=sealer, now=now, principal=principal, tasks=tasks
    )
    if special is not None:
        return await special
    try:
        result = await server.handle_request(method, params, ctx)
    except InputNeeded as needed:
        result = ask_in_result(
            needed, method, params, ctx, sealer=sealer, now=now, principal=principal
        )
    return finish_stateless(server, method, params, ctx, result)


def route_stateless(
    server: Server,
    method: str,
    params: JSONObject | None,
    ctx: Context,
    *,
    sealer: StateSealer | None = None,
    now: float = 0.0,
    principal: str | None = None,
    tasks: TaskHost | None = None,
) -> Coroutine[Any, Any, JSONObject] | None:
    """The first half of ``serve_stateless``: checks, and the round a retry carries.

    Returns what serves a request the handler does not (the tasks extension's methods,
    discovery, a tool call that becomes a task), or None: then the caller awaits
    ``server.handle_request``, turns an ``InputNeeded`` into ``ask_in_result`` and
    shapes the result with ``finish_stateless`` (a frame of its own, not one more
    coroutine: this is every stateless request's path). Raises as ``serve_stateless``.
    """
    revision = ctx.negotiated.revision
    if not revision.request_envelope:
        raise LocalProtocolError(
            f"serve_stateless serves stateless revisions; {revision.version} has sessions"
        )
    if tasks is not None and method in TASK_EXTENSION_METHODS:
        return _completed(
            server, method, ctx, _serve_task_method(method, params, ctx, tasks, principal)
        )
    if method not in revision.client_requests and server.extensions.owner(method) is None:
        # Core methods the revision does not have; an extension's are the server's.
        raise method_not_found(method)
    if method == DISCOVER:
        return _ready(discover_result(server, revision, tasks=tasks))
    # A first attempt carries no round: the Context starts one at its first question.
    if (
        method in revision.input_required_methods
        and params is not None
        and (params.get("requestState") is not None or params.get("inputResponses") is not None)
    ):
        ctx._rounds = _open_round(params, ctx, sealer, method, now, principal)
    if tasks is not None and _runs_as_task(server, method, params, ctx):
        # The dispatcher's scope check would run only inside the task: refuse here,
        # before anything is created for a caller who may not call the tool.
        name = (params or {}).get("name")
        required = server.required_scopes(method, name) if type(name) is str else ()
        if required:
            check_scopes(required, ctx.principal)
        return _completed(
            server, method, ctx, _create_task(server, method, params, ctx, tasks, principal)
        )
    return None


def ask_in_result(
    needed: InputNeeded,
    method: str,
    params: JSONObject | None,
    ctx: Context,
    *,
    sealer: StateSealer | None = None,
    now: float = 0.0,
    principal: str | None = None,
) -> JSONObject:
    """The ``input_required`` result of a handler that asked the client ``needed``.

    Raises:
        LocalProtocolError: ``method`` cannot answer input_required, or there is no
            sealer to carry the answers.
    """
    if method not in ctx.negotiated.revision.input_required_methods:
        raise LocalProtocolError(
            f"a handler asked the client during {method}, which cannot answer input_required"
        ) from None
    return _input_required(needed, ctx, sealer, method, params, now, principal)


def finish_stateless(
    server: Server, method: str, params: JSONObject | None, ctx: Context, result: JSONObject
) -> JSONObject:
    """The last half of ``serve_stateless``: ``result`` as the revision sends it."""
    revision = ctx.negotiated.revision
    hint = cache_hint(server, method, params) if method in revision.cacheable else None
    return complete_result(
        result, method=method, revision=revision, server_info=server.info(revision), hint=hint
    )


async def _ready(result: JSONObject) -> JSONObject:
    return result


async def _completed(
    server: Server, method: str, ctx: Context, serving: Coroutine[Any, Any, JSONObject]
) -> JSONObject:
    revision = ctx.negotiated.revision
    return complete_result(
        await serving,
        method=method,
        revision=revision,
        server_info=server.info(revision),
        hint=None,
    )


async def _serve_task_method(
    method: str,
    params: JSONObject | None,
    ctx: Context,
    tasks: TaskHost,
    principal: str | None,
) -> JSONObject:
    request_id = ctx.request_id
    require_declared(ctx.negotiated, request_id=request_id)
    if method == "tasks/update":
        update = read_update(params, request_id=request_id)
        return await tasks.update(update, principal=principal, request_id=request_id)
    task_id = read_task_id(params, request_id=request_id)
    if method == "tasks/get":
        return await tasks.get(task_id, principal=principal, request_id=request_id)
    return await tasks.cancel(task_id, principal=principal, request_id=request_id)


async def _create_task(
    server: Server,
    method: str,
    params: JSONObject | None,
    ctx: Context,
    tasks: TaskHost,
    principal: str | None,
) -> JSONObject:
    revision = ctx.negotiated.revision
    # The answers this request already carried (a retry) are the task's first round.
    carried = ctx._rounds

    async def work(task_ctx: Context) -> JSONObject:
        if carried is not None and task_ctx._rounds is None:
            task_ctx._rounds = carried
        result = await server.handle_request(method, params, task_ctx)
        # Inlined by tasks/get as the request itself would have been answered.
        return complete_result(
            result, method=method, revision=revision, server_info=server.info(revision), hint=None
        )

    return await tasks.create(work, ctx, principal=principal)


def _open_round(
    params: JSONObject | None,
    ctx: Context,
    sealer: StateSealer | None,
    method: str,
    now: float,
    principal: str | None,
) -> Rounds:
    if params is None or (
        params.get("requestState") is None and params.get("inputResponses") is None
    ):
        # A first attempt: nothing to read, open or carry over.
        return Rounds()
    retry = read_retry(params, request_id=ctx.request_id)
    payload = None
    if retry.state is not None:
        if sealer is None:
            raise StateRefused("unknown_key", "this server keeps no sealing key")
        payload = sealer.open(
            retry.state, method=method, params=params, now=now, principal=principal
        )
    return Rounds.opened(payload, retry.responses)


def _input_required(
    needed: InputNeeded,
    ctx: Context,
    sealer: StateSealer | None,
    method: str,
    params: JSONObject | None,
    now: float,
    principal: str | None,
) -> JSONObject:
    if sealer is None:
        raise LocalProtocolError(
            "a handler asked the client for input, and multi round-trip requests need a "
            "StateSealer to carry the answers between rounds"
        )
    rounds = ctx._rounds if ctx._rounds is not None else Rounds()
    state = sealer.seal(
        rounds.sealed_payload(needed.state),
        method=method,
        params=params,
        now=now,
        principal=principal,
    )
    return input_required_result(
        ctx.negotiated, method=method, input_requests=needed.requests, request_state=state
    )
