"""``mcpactor top URL --token-file F``: the live tree of a running server, in the terminal.

Reads the admin listener's ``/api/tree`` (``mcpactor serve --admin``) once a second and
redraws it with plain ANSI sequences; ``--once`` prints one frame and exits; ``--history
N`` adds the last N requests and tasks that ended (``/api/history``); ``--rates
SECONDS`` adds requests/s, errors/s and latency percentiles per tool and per client
over the last SECONDS, with a line of each one's rate (``/api/rates``). What the
server sends is shown as text with control characters removed, so a client's name
cannot move the cursor or change colours.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
import urllib.parse
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Final

import orjson

from .._exceptions import ConfigError

__all__ = ["add_top_parser", "render", "render_history", "render_rates", "top"]

#: the largest tree read from the server, in bytes
MAX_TREE_BYTES: Final = 8 * 1024 * 1024
_CONTROL: Final = dict.fromkeys([*range(0x20), *range(0x7F, 0xA0)], " ")


def add_top_parser(commands: Any, add_global_arguments: Callable[..., None]) -> None:
    """Add ``top`` to ``commands``, with the options ``add_global_arguments`` adds."""
    top = commands.add_parser(
        "top",
        help="show the live tree of a server running with --admin, in the terminal",
        description="Read the admin listener of a running `mcpactor serve --admin` and show "
        "its servers, sessions, requests, tasks and streams, redrawn every second.",
    )
    add_global_arguments(top, command=True)
    top.add_argument("url", metavar="URL", help="the admin listener (http://127.0.0.1:PORT/)")
    top.add_argument(
        "--token-file",
        metavar="FILE",
        required=True,
        help="the admin token, the file's first line",
    )
    top.add_argument("--once", action="store_true", help="print one frame and exit")
    top.add_argument(
        "--interval",
        type=float,
        default=1.0,
        metavar="SECONDS",
        help="seconds between frames (default: 1; at least 0.25)",
    )
    top.add_argument("--tool", metavar="NAME", help="only requests whose method or name has NAME")
    top.add_argument("--client", metavar="NAME", help="only sessions whose client name has NAME")
    top.add_argument(
        "--slow-ms", type=float, metavar="MS", help="only requests running for at least MS ms"
    )
    top.add_argument(
        "--limit", type=int, default=50, metavar="N", help="at most N sessions (default: 50)"
    )
    top.add_argument(
        "--history",
        type=int,
        default=0,
        metavar="N",
        help="also list the last N requests and tasks that ended (default: none)",
    )
    top.add_argument(
        "--rates",
        type=float,
        default=0,
        metavar="SECONDS",
        help="also show requests/s, errors/s and p50/p95/p99 per tool and per client over "
        "the last SECONDS (60 or 300; default: none)",
    )


def _token(path: str) -> str:
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"--token-file: cannot read {path!r} ({exc})") from exc
    token = lines[0].strip() if lines else ""
    if not token:
        raise ConfigError(f"--token-file {path!r}: the first line holds no token")
    return token


def _tree_url(args: argparse.Namespace) -> str:
    given = str(args.url)
    base = given if given.endswith("/") else given + "/"
    parts = urllib.parse.urlsplit(base)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigError(f"top expects the admin listener's http(s):// URL, got {given!r}")
    query: dict[str, str] = {"limit": str(max(1, args.limit))}
    for name in ("tool", "client"):
        if getattr(args, name):
            query[name] = str(getattr(args, name))
    if args.slow_ms is not None:
        query["slow_ms"] = str(args.slow_ms)
    return urllib.parse.urljoin(base, "api/tree") + "?" + urllib.parse.urlencode(query)


def _history_url(args: argparse.Namespace) -> str:
    # The history beside the tree, with the same tool and client filters.
    return _beside(args, "api/history", {"limit": str(max(1, min(args.history, 1000)))})


def _rates_url(args: argparse.Namespace) -> str:
    # The rates beside the tree, with the same tool and client filters.
    return _beside(args, "api/rates", {"window": str(max(1.0, min(args.rates, 300.0)))})


def _beside(args: argparse.Namespace, where: str, query: dict[str, str]) -> str:
    tree = urllib.parse.urlsplit(_tree_url(args))
    for name in ("tool", "client"):
        if getattr(args, name):
            query[name] = str(getattr(args, name))
    path = tree.path.removesuffix("api/tree") + where
    return urllib.parse.urlunsplit(tree._replace(path=path, query=urllib.parse.urlencode(query)))


def fetch_tree(url: str, token: str, *, timeout: float = 5.0) -> dict[str, Any]:
    """GET the tree at ``url`` with the admin token; ConfigError saying what went wrong."""
    # Here, not with the module: urllib.request brings http.client and email, and every
    # start of ``mcpactor`` imports this module to build its command line.
    import urllib.error
    import urllib.request

    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            body = response.read(MAX_TREE_BYTES + 1)
    except urllib.error.HTTPError as exc:
        if exc.code == 401:
            raise ConfigError(f"{url}: the admin token was refused") from exc
        raise ConfigError(f"{url}: the admin listener answered {exc.code}") from exc
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise ConfigError(f"{url}: cannot reach the admin listener ({reason})") from exc
    if len(body) > MAX_TREE_BYTES:
        raise ConfigError(f"{url}: the tree is larger than {MAX_TREE_BYTES} bytes")
    try:
        tree = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise ConfigError(f"{url}: the answer is not JSON") from exc
    if type(tree) is not dict:
        raise ConfigError(f"{url}: the answer is not a tree")
    return tree


def _text(value: object, width: int = 60) -> str:
    text = str(value).translate(_CONTROL)
    return text if len(text) <= width else text[: width - 1] + "…"


def _age(seconds: object) -> str:
    if not isinstance(seconds, int | float):
        return "—"
    if seconds < 1:
        return f"{seconds * 1000:.0f}ms"
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes = int(seconds // 60)
    if minutes < 60:
        return f"{minutes}m{int(seconds % 60):02d}s"
    return f"{minutes // 60}h{minutes % 60:02d}m"


def _request_line(request: dict[str, Any]) -> str:
    label = _text(request.get("method", "?"), 30)
    if request.get("name"):
        label += " " + _text(request["name"], 40)
    parts = [f"request #{_text(request.get('id'), 20)}", label, _age(request.get("age"))]
    if request.get("progress") is not None:
        progress = f"progress {_text(request['progress'], 12)}"
        if request.get("total") is not None:
            progress += f" of {_text(request['total'], 12)}"
        parts.append(progress)
    if request.get("message"):
        parts.append(_text(request["message"], 60))
    if request.get("deadline_in") is not None:
        parts.append(f"deadline in {_age(request['deadline_in'])}")
    if request.get("cancelled"):
        parts.append("CANCELLED")
    return "  ".join(parts)


def _task_line(task: dict[str, Any]) -> str:
    parts = [f"task {_text(task.get('id'), 14)}", _text(task.get("status"), 16)]
    parts.append(f"age {_age(task.get('age'))}")
    if task.get("ttl_left") is not None:
        parts.append(f"ttl {_age(task['ttl_left'])} left")
    return "  ".join(parts)


def _stream_line(stream: dict[str, Any]) -> str:
    kind = "server messages (GET)" if stream.get("kind") == "GET" else "a response (POST)"
    parts = [
        f"stream {_text(stream.get('id'), 10)}: {kind}",
        "connected" if stream.get("attached") else "waiting for its client",
    ]
    if stream.get("pending"):
        parts.append(f"{_text(stream['pending'], 8)} answers to come")
    if stream.get("buffered"):
        parts.append(f"{_text(stream['buffered'], 8)} queued")
    return "  ".join(parts)


def _opened(stream: dict[str, Any]) -> bool:
    # The GET stream of a client that never asked for it is not shown.
    return bool(
        stream.get("attached")
        or stream.get("pending")
        or stream.get("buffered")
        or stream.get("last_event_id")
    )


def _branches(lines: list[str]) -> Iterator[str]:
    for index, line in enumerate(lines):
        yield ("└─ " if index == len(lines) - 1 else "├─ ") + line


def render(tree: dict[str, Any], *, width: int = 100, color: bool = False) -> str:
    """One frame of ``mcpactor top`` for ``tree`` (the shape of ``Observatory.snapshot``)."""
    bold, dim, reset = ("\x1b[1m", "\x1b[2m", "\x1b[0m") if color else ("", "", "")
    replica = tree.get("replica", {})
    counts = tree.get("counts", {})
    workers = tree.get("workers", {})
    out = [
        f"{bold}mcpactor top{reset} — {_text(replica.get('id'), 40)} "
        f"(pid {_text(replica.get('pid'), 10)}) up {_age(replica.get('uptime'))}",
        f"sessions {counts.get('sessions', 0)} ({counts.get('awake', 0)} awake)  "
        f"requests {counts.get('requests', 0)}  stateless {counts.get('stateless', 0)}  "
        f"tasks {counts.get('tasks_running', 0)}/{counts.get('tasks_stored', 0)}  "
        f"streams {counts.get('streams', 0)}  connections {counts.get('connections', 0)}  "
        f"listens {counts.get('listens', 0)}  "
        f"workers {workers.get('busy', 0)}/{workers.get('busy', 0) + workers.get('idle', 0)}",
        "",
        f"{bold}SERVERS{reset}",
    ]
    for plugin in tree.get("plugins", []):
        line = f"  {_text(plugin.get('name'), 30):<30} {_text(plugin.get('state'), 10):<9}"
        if plugin.get("in_flight") is not None:
            line += f" in flight {plugin['in_flight']}  served {plugin.get('total')}"
        if plugin.get("error"):
            line += f"  {_text(plugin['error'], 60)}"
        out.append(line)
    sessions = tree.get("sessions", {})
    out += [
        "",
        f"{bold}SESSIONS{reset} ({sessions.get('shown', 0)} of {sessions.get('total', 0)})",
    ]
    for session in sessions.get("items", []):
        out.append(
            f"  {_text(session.get('id'), 14):<14} {_text(session.get('transport'), 16):<16} "
            f"{_text(session.get('state'), 8):<8} {_text(session.get('client') or '-', 24):<24} "
            f"{_text(session.get('revision') or '-', 10):<10} age {_age(session.get('age'))}"
            + (
                f" idle {_age(session['idle'])}"
                if session.get("idle") is not None and not session.get("requests")
                else ""
            )
            + (f"  {_text(session['principal'], 40)}" if session.get("principal") else "")
        )
        children = [_request_line(r) for r in session.get("requests", [])]
        children += [_task_line(t) for t in session.get("tasks", [])]
        children += [_stream_line(s) for s in session.get("streams", []) if _opened(s)]
        more = session.get("more", {})
        hidden = sum(v for v in more.values() if isinstance(v, int))
        if hidden:
            children.append(f"{dim}… {hidden} more{reset}")
        out += [f"    {line}" for line in _branches(children)]
    hidden = sessions.get("total", 0) - sessions.get("shown", 0)
    if hidden > 0:
        out.append(
            f"  {dim}… {hidden} more sessions, {sessions.get('hidden_requests', 0)} "
            f"requests in them{reset}"
        )
    stateless = tree.get("stateless", {})
    flights = stateless.get("requests", []) + stateless.get("listens", [])
    if flights:
        out += ["", f"{bold}STATELESS{reset}"]
        out += [f"  {_request_line(f)}  key {_text(f.get('key'), 12)}" for f in flights]
    tasks = tree.get("tasks", {}).get("items", [])
    if tasks:
        out += ["", f"{bold}TASKS{reset}"]
        out += [f"  {_task_line(t)}" for t in tasks]
    return "\n".join(line if len(line) <= width else line[: width - 1] + "…" for line in out)


def _ended_line(item: dict[str, Any]) -> str:
    label = _text(item.get("method", "?"), 30)
    if item.get("name"):
        label += " " + _text(item["name"], 40)
    at = item.get("at")
    when = time.strftime("%H:%M:%S", time.localtime(at)) if isinstance(at, int | float) else "—"
    parts = [when, f"{_text(item.get('outcome'), 10):<10}", label]
    if item.get("request") is not None:
        parts.append(f"#{_text(item['request'], 20)}")
    if item.get("session"):
        parts.append(f"session {_text(item['session'], 14)}")
    if item.get("client"):
        parts.append(_text(item["client"], 24))
    if item.get("replica"):
        parts.append(f"on {_text(item['replica'], 40)}")
    parts.append(_age(item.get("seconds")))
    if item.get("cancelled_by"):
        parts.append(f"by {_text(item['cancelled_by'], 60)}")
    elif item.get("detail"):
        parts.append(_text(item["detail"], 60))
    return "  ".join(parts)


def render_history(history: dict[str, Any], *, width: int = 120, color: bool = False) -> str:
    """The requests and tasks that ended lately (``/api/history``), as text lines."""
    bold, reset = ("\x1b[1m", "\x1b[0m") if color else ("", "")
    items = history.get("items", [])
    if not history.get("kept"):
        out = [f"{bold}ENDED LATELY{reset} (not kept by this server)"]
    else:
        out = [f"{bold}ENDED LATELY{reset} ({len(items)} of up to {history.get('size', 0)} kept)"]
    shared = history.get("shared")
    if isinstance(shared, dict):
        # Replicas sharing a store: every replica's, unless the store is out of reach.
        out[0] += (
            "; this replica's only: the shared history is unavailable"
            if shared.get("unavailable")
            else "; of every replica"
        )
    out += [f"  {_ended_line(item)}" for item in items if isinstance(item, dict)]
    return "\n".join(line if len(line) <= width else line[: width - 1] + "…" for line in out)


_BARS: Final = "▁▂▃▄▅▆▇█"


def _spark(values: object) -> str:
    # A line of block characters, one per slot, scaled to the highest.
    if not isinstance(values, list):
        return ""
    numbers = [v if isinstance(v, int | float) and v >= 0 else 0 for v in values[:120]]
    top = max(numbers, default=0)
    if top <= 0:
        return _BARS[0] * len(numbers)
    return "".join(_BARS[min(7, int(v / top * 7.999))] for v in numbers)


def _latency(seconds: object) -> str:
    if not isinstance(seconds, int | float):
        return "—"
    if seconds < 0.001:
        return f"{seconds * 1e6:.0f}µs"
    if seconds < 1:
        return f"{seconds * 1000:.1f}ms"
    return f"{seconds:.2f}s"


def _rate_line(label: str, row: dict[str, Any]) -> str:
    rate, errors = row.get("rate"), row.get("error_rate")
    return (
        f"  {_text(label, 36):<36} {rate if isinstance(rate, int | float) else 0:>9.2f} "
        f"{errors if isinstance(errors, int | float) else 0:>8.2f} "
        f"{_latency(row.get('p50')):>9} {_latency(row.get('p95')):>9} "
        f"{_latency(row.get('p99')):>9}  {_spark(row.get('chart'))}"
    )


def render_rates(rates: dict[str, Any], *, width: int = 120, color: bool = False) -> str:
    """Requests/s, errors/s and latency per tool and per client (``/api/rates``)."""
    bold, reset = ("\x1b[1m", "\x1b[0m") if color else ("", "")
    if not rates.get("kept"):
        return f"{bold}RATES{reset} (not kept by this server)"
    head = f"{'req/s':>9} {'err/s':>8} {'p50':>9} {'p95':>9} {'p99':>9}  per {rates.get('slot')} s"
    out = [
        f"{bold}RATES{reset} (the last {_age(rates.get('window'))}, "
        f"{_age(rates.get('covered'))} counted)",
        f"  {'TOOL OR METHOD':<36} {head}",
    ]
    for row in rates.get("tools", []):
        if isinstance(row, dict):
            label = f"{row.get('method')} {row['name']}" if row.get("name") else row.get("method")
            out.append(_rate_line(str(label), row))
    out.append(f"  {'CLIENT':<36} {head}")
    for row in rates.get("clients", []):
        if isinstance(row, dict):
            out.append(_rate_line(str(row.get("client")), row))
    return "\n".join(line if len(line) <= width else line[: width - 1] + "…" for line in out)


def _frame(args: argparse.Namespace, token: str, width: int, color: bool) -> str:
    frame = render(fetch_tree(_tree_url(args), token), width=width, color=color)
    if getattr(args, "rates", 0) > 0:
        rates = fetch_tree(_rates_url(args), token)
        frame += "\n\n" + render_rates(rates, width=width, color=color)
    if args.history > 0:
        history = fetch_tree(_history_url(args), token)
        frame += "\n\n" + render_history(history, width=width, color=color)
    return frame


def top(args: argparse.Namespace) -> int:
    """Run ``mcpactor top`` as ``args`` say; return the exit status."""
    token = _token(args.token_file)
    _tree_url(args)  # a wrong URL is an error before anything is drawn
    interval = max(0.25, args.interval)
    tty = sys.stdout.isatty()
    if args.once:
        width = shutil.get_terminal_size((120, 40)).columns if tty else 200
        print(_frame(args, token, width, tty))
        return 0
    sys.stdout.write("\x1b[2J")
    try:
        while True:
            size = shutil.get_terminal_size((120, 40))
            frame = _frame(args, token, size.columns, tty)
            lines = frame.split("\n")[: max(1, size.lines - 1)]
            # Home, the frame, then clear what the last frame left below it.
            sys.stdout.write("\x1b[H" + "\x1b[K\n".join(lines) + "\x1b[K\n\x1b[J")
            sys.stdout.flush()
            time.sleep(interval)
    except KeyboardInterrupt:
        return 0
