# A request's story: what the detail view shows of one request, running or ended.
#
# Its arguments come from the request itself (a running one's view) or from the
# history's latest params (``History.stories``); they are bounded before anything is
# formatted (depth, entries, string lengths, nodes in all), then redacted: the fields a
# rule names for the request's tool (``[admin] redact``, "*" for every tool) and, always,
# keys that look like secrets. Its log lines are the records the process logged while
# the request ran (the request's ``LOG_CONTEXT``), kept by ``RequestLogs`` while the
# admin listener serves: a few lines for each of the latest requests. Its trace link is
# ``[admin] trace_url`` with the request's trace id in it, when both exist.
#
# Replicas sharing a store share a smaller story with each history entry
# (``shared_story``, written by ``RedisSharedHistory.run``): the arguments as this page
# shows them (bounded and redacted here, by this replica's rules, before they leave the
# process), cut to ``SHARED_ARGUMENTS`` characters, and its first ``SHARED_LOG_LINES`` log
# lines cut to ``SHARED_LOG_LINE``. Another replica's page opens it from the shared
# history (``shared_story_of``): no request goes from one replica to another.

from __future__ import annotations

import collections
import itertools
import logging
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

import orjson
import trio

from ..protocol import CLIENT_INFO, PROTOCOL_VERSION
from ..runtime import LOG_CONTEXT, METRICS, Observatory, RequestView
from ._responses import MAX_PARAM

__all__ = [
    "LOG_LINES",
    "LOG_REQUESTS",
    "MAX_ARGUMENTS",
    "REDACTED",
    "SHARED_ARGUMENTS",
    "SHARED_LOG_LINE",
    "SHARED_LOG_LINES",
    "RequestLogs",
    "bounded",
    "check_trace_url",
    "redacted",
    "shared_story",
    "shared_story_of",
    "story",
    "task_story",
    "trace_link",
]

#: what a redacted value is shown as
REDACTED: Final = "[redacted]"
#: the longest arguments text shown (the rest is cut)
MAX_ARGUMENTS: Final = 16 * 1024
#: requests whose log lines are kept (the oldest go first)
LOG_REQUESTS: Final = 500
#: log lines kept per request (its first ones)
LOG_LINES: Final = 20
#: the longest log line kept
_LONGEST_LINE: Final = 1000
#: the longest arguments text shared with the other replicas
SHARED_ARGUMENTS: Final = 1500
#: log lines shared with the other replicas per request
SHARED_LOG_LINES: Final = 5
#: the longest log line shared
SHARED_LOG_LINE: Final = 200
# The bounds of what is formatted of arguments.
_DEPTH: Final = 8
_ENTRIES: Final = 50
_STRING: Final = 1000
_NODES: Final = 2000
# Keys whose values are secrets whatever the rules say: a word of the key (split at
# "_", "-", "." and lowerCase/UpperCase), or two words together ("api_key", "apiKey"),
# is one of these. "max_tokens" is not a secret; "access_token" is.
_SECRET_WORDS: Final = frozenset(
    {
        "apikey",
        "auth",
        "authorization",
        "bearer",
        "cookie",
        "cookies",
        "credential",
        "credentials",
        "jwt",
        "otp",
        "passphrase",
        "passwd",
        "password",
        "privatekey",
        "pwd",
        "secret",
        "secrets",
        "sessionkey",
        "signature",
        "token",
    }
)
_WORD: Final = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+")
_TRACE_ID: Final = re.compile(r"[0-9a-f]{32}")
_TRACEPARENT: Final = re.compile(r"[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}")


class RequestLogs(logging.Handler):
    """Keeps the first ``LOG_LINES`` records logged in each of the latest
    ``LOG_REQUESTS`` requests, by (session id, request id as text)."""

    def __init__(self) -> None:
        super().__init__(logging.NOTSET)
        self._lines: collections.OrderedDict[tuple[str | None, str], list[dict[str, Any]]] = (
            collections.OrderedDict()
        )

    def emit(self, record: logging.LogRecord) -> None:
        """Keep ``record`` under the request the emitting task serves, if any."""
        context = LOG_CONTEXT.get()
        if context is None:
            return
        key = (context[0], str(context[1]))
        lines = self._lines.get(key)
        if lines is None:
            lines = self._lines[key] = []
            while len(self._lines) > LOG_REQUESTS:
                self._lines.popitem(last=False)
        if len(lines) >= LOG_LINES:
            return
        try:
            message = record.getMessage()
        except Exception:  # a record whose arguments do not fit its format
            message = str(record.msg)
        if record.exc_info and record.exc_info[1] is not None:
            error = record.exc_info[1]
            message += f" ({type(error).__name__}: {error})"
        lines.append(
            {
                "at": round(record.created, 3),
                "level": record.levelname,
                "logger": record.name[:MAX_PARAM],
                "message": _clip(message, _LONGEST_LINE),
            }
        )

    def lines(self, session: str | None, request: str) -> list[dict[str, Any]]:
        """The lines kept of a request (empty if none)."""
        return list(self._lines.get((session, request), ()))


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def bounded(value: Any) -> tuple[Any, bool]:
    """``value`` cut to what the view formats (see the module), and whether it was cut."""
    budget = [_NODES]
    cut = [False]

    def walk(item: Any, depth: int) -> Any:
        budget[0] -= 1
        if budget[0] < 0 or depth > _DEPTH:
            cut[0] = True
            return "…"
        if isinstance(item, str):
            if len(item) > _STRING:
                cut[0] = True
            return _clip(item, _STRING)
        if item is None or isinstance(item, bool | int | float):
            return item
        if isinstance(item, Mapping):
            out = {}
            for index, (key, inner) in enumerate(item.items()):
                if index >= _ENTRIES:
                    cut[0] = True
                    out["…"] = f"{len(item) - _ENTRIES} more"
                    break
                out[_clip(str(key), MAX_PARAM)] = walk(inner, depth + 1)
            return out
        if isinstance(item, list | tuple):
            items = [walk(inner, depth + 1) for inner in item[:_ENTRIES]]
            if len(item) > _ENTRIES:
                cut[0] = True
                items.append(f"… {len(item) - _ENTRIES} more")
            return items
        return _clip(repr(item), _STRING)

    return walk(value, 0), cut[0]


def redacted(value: Any, fields: Sequence[str] = ()) -> tuple[Any, int]:
    """``value`` (already bounded) with ``fields`` (dotted paths) and keys that look like
    secrets replaced by ``REDACTED``, and how many were."""
    count = [0]
    paths = {tuple(field.split(".")) for field in fields}

    def walk(item: Any, path: tuple[str, ...]) -> Any:
        if isinstance(item, dict):
            out = {}
            for key, inner in item.items():
                here = (*path, key)
                if here in paths or _secret(key):
                    out[key] = REDACTED
                    count[0] += 1
                else:
                    out[key] = walk(inner, here)
            return out
        if isinstance(item, list):
            return [walk(inner, path) for inner in item]
        return item

    return walk(value, ()), count[0]


def check_trace_url(template: str | None) -> str | None:
    """``template`` if it is a trace link template (http(s), with ``{trace_id}``)."""
    if template is None:
        return None
    if not template.startswith(("https://", "http://")) or "{trace_id}" not in template:
        raise ValueError(
            "the trace link template must be an http(s) URL with {trace_id} in it, got "
            f"{template[:MAX_PARAM]!r}"
        )
    return template


def _secret(key: str) -> bool:
    # Whether ``key`` looks like it names a secret (see _SECRET_WORDS).
    words = [word.lower() for word in _WORD.findall(key[:MAX_PARAM])]
    if any(word in _SECRET_WORDS for word in words):
        return True
    return any(first + second in _SECRET_WORDS for first, second in itertools.pairwise(words))


def trace_link(template: str | None, trace_id: str | None) -> str | None:
    """``template`` with ``{trace_id}`` filled in, when both are given and the id is one."""
    if not template or trace_id is None or _TRACE_ID.fullmatch(trace_id) is None:
        return None
    return template.replace("{trace_id}", trace_id)


def _trace_id(params: Any) -> str | None:
    # The trace id of the client's W3C trace context in ``_meta``, if it sent one.
    meta = params.get("_meta") if isinstance(params, dict) else None
    parent = meta.get("traceparent") if isinstance(meta, dict) else None
    if not isinstance(parent, str) or len(parent) > 64:
        return None
    match = _TRACEPARENT.fullmatch(parent)
    return match.group(1) if match is not None else None


def _arguments(
    method: str | None, params: Any, rules: Mapping[str, Sequence[str]]
) -> dict[str, Any]:
    # What the view shows of a request's params: a tool's or prompt's arguments, else
    # the params without ``_meta``; bounded, redacted, formatted, cut.
    if not isinstance(params, dict):
        return {"text": None, "redacted": 0, "cut": False}
    name = params.get("name") if method in ("tools/call", "prompts/get") else None
    if name is not None:
        shown = params.get("arguments") or {}
    else:
        shown = {key: value for key, value in params.items() if key != "_meta"}
    fields = [*rules.get("*", ()), *(rules.get(name, ()) if isinstance(name, str) else ())]
    value, cut = bounded(shown)
    value, count = redacted(value, fields)
    text = orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()
    if len(text) > MAX_ARGUMENTS:
        text, cut = _clip(text, MAX_ARGUMENTS), True
    return {"text": text, "redacted": count, "cut": cut}


def story(
    observatory: Observatory,
    logs: RequestLogs | None,
    *,
    session: str | None,
    request: str,
    key: int | None = None,
    at: float | None = None,
    rules: Mapping[str, Sequence[str]] | None = None,
    trace_url: str | None = None,
    cancelled_by: Mapping[tuple[str, str], str] | None = None,
) -> dict[str, Any] | None:
    """A request's story: running (by session and id, or a stateless ``key``) or ended
    (by session, id and when it ended), or None if neither knows it."""
    rules = rules or {}
    found = observatory.running(session, request, key) if at is None else None
    if found is not None:
        view, item = found
        params: Any = view.params
        answer = _running(view, item, key)
        trace_id = None
    else:
        history = METRICS.history
        wanted = _session_of(session)
        ended = history.story(wanted, request, at, cancelled_by) if history else None
        if ended is None:
            return None
        item, params = ended
        answer = {"state": "ended", **item}
        trace_id = item.get("trace_id")
    method = answer.get("method")
    trace_id = trace_id or _trace_id(params)
    answer["arguments"] = _arguments(method, params, rules)
    answer["kept"] = params is not None
    answer["trace_id"] = trace_id
    answer["trace_url"] = trace_link(trace_url, trace_id)
    log_session = None if session is None or session.startswith("~") else session
    answer["logs"] = logs.lines(log_session, request) if logs is not None else []
    return answer


def shared_story(
    logs: RequestLogs | None, rules: Mapping[str, Sequence[str]] | None = None
) -> Callable[[Mapping[str, Any], Any], dict[str, Any] | None]:
    """What a history entry shares of its request's story with the other replicas:
    its arguments (with ``params``, bounded, redacted by ``rules``, cut) and first log
    lines; None when neither is kept."""
    rules = rules or {}

    def told(entry: Mapping[str, Any], params: Any) -> dict[str, Any] | None:
        session, request = entry.get("session"), entry.get("request")
        lines = logs.lines(session, str(request)) if logs is not None else []
        if params is None and not lines:
            return None
        arguments = _arguments(entry.get("method"), params, rules)
        text = arguments["text"]
        if text is not None and len(text) > SHARED_ARGUMENTS:
            arguments.update(text=_clip(text, SHARED_ARGUMENTS), cut=True)
        return {
            "arguments": arguments,
            "kept": params is not None,
            "logs": [
                {**line, "message": _clip(line["message"], SHARED_LOG_LINE)}
                for line in lines[:SHARED_LOG_LINES]
            ],
        }

    return told


def shared_story_of(
    item: Mapping[str, Any], told: Any, trace_url: str | None = None
) -> dict[str, Any]:
    """Another replica's request's story, from its shared history entry (``item``, as
    the page lists it) and the story shared with it (``told``, off the store: checked)."""
    answer: dict[str, Any] = {"state": "ended", **item}
    told = told if isinstance(told, dict) else {}
    arguments = told.get("arguments")
    if not isinstance(arguments, dict) or not isinstance(arguments.get("text"), str | None):
        arguments = {"text": None, "redacted": 0, "cut": False}
    text = arguments.get("text")
    redacted_count = arguments.get("redacted")
    answer["arguments"] = {
        "text": _clip(text, SHARED_ARGUMENTS) if isinstance(text, str) else None,
        "redacted": redacted_count if type(redacted_count) is int else 0,
        "cut": arguments.get("cut") is True,
    }
    answer["kept"] = told.get("kept") is True
    lines = told.get("logs")
    answer["logs"] = [
        {
            "at": line.get("at") if isinstance(line.get("at"), int | float) else None,
            "level": _clip(str(line.get("level")), 20),
            "logger": _clip(str(line.get("logger")), MAX_PARAM),
            "message": _clip(str(line.get("message")), SHARED_LOG_LINE),
        }
        for line in (lines[:SHARED_LOG_LINES] if isinstance(lines, list) else [])
        if isinstance(line, dict)
    ]
    answer["trace_url"] = trace_link(trace_url, item.get("trace_id"))
    return answer


def task_story(observatory: Observatory, task_id: str) -> dict[str, Any] | None:
    """A task's story: its status, message, times and owner while its table keeps it,
    and its outcome once it ended (from the history), or None if neither knows it."""
    kept = observatory.task(task_id)
    history = METRICS.history
    ended = history.task(task_id) if history is not None else None
    if kept is None and ended is None:
        return None
    answer: dict[str, Any] = {"kind": "task", "task": task_id, "state": "ended"}
    if ended is not None:
        answer.update(outcome=ended["outcome"], seconds=ended["seconds"], at=ended["at"])
        answer["message"] = ended["detail"]
    if kept is not None:
        task, owner = kept
        now = trio.current_time()
        answer.update(owner)
        answer.update(
            state="running" if not task.terminal else "ended",
            status=task.status,
            message=_clip(task.message, MAX_PARAM) if task.message else answer.get("message"),
            age=round(now - task.created, 3),
            ttl_left=round(task.expires - now, 3) if task.expires is not None else None,
        )
        if task.principal is not None:
            answer["principal"] = _clip(str(task.principal), MAX_PARAM)
    return answer


def _running(view: RequestView, item: dict[str, Any], key: int | None) -> dict[str, Any]:
    # A running request as the view shows it; ``item`` is what the tree says of its
    # session (or of the stateless request itself, with ``key``).
    params = view.params if isinstance(view.params, dict) else {}
    meta = params.get("_meta")
    meta = meta if isinstance(meta, dict) else {}
    name = params.get("name") if view.method in ("tools/call", "prompts/get") else None
    info = meta.get(CLIENT_INFO)
    client = item.get("client")
    if key is not None and isinstance(info, dict):
        client = _clip(f"{info.get('name')} {info.get('version')}", MAX_PARAM)
    revision = item.get("revision") if key is None else meta.get(PROTOCOL_VERSION)
    started = view.started if view.started is not None else trio.current_time()
    return {
        "state": "running",
        "method": view.method,
        "name": _clip(name, MAX_PARAM) if isinstance(name, str) else None,
        "request": item["id"] if key is not None else view.id,
        "key": key,
        "session": None if key is not None else item["id"],
        "transport": item.get("transport", "http"),
        "client": client,
        "principal": item.get("principal"),
        "revision": revision if isinstance(revision, str) else None,
        "age": round(trio.current_time() - started, 3),
        "progress": view.progress,
        "total": view.total,
        "message": view.message,
        "cancelled": view.cancelled,
    }


def _session_of(session: str | None) -> str | None:
    # The history's session of a tree's session key: a session without an id (stdio's,
    # shown as "~…") has none.
    return None if session is None or session.startswith("~") else session
