"""An MCP server that tells the time: any zone, conversions, durations, and a countdown.

``countdown`` is the cancellation demo: it reports progress every second and stops the
moment the client cancels it, logging where it stopped. 2025-11-25 clients may also call
it as a task, which they poll, wait on or cancel with ``tasks/*``.
"""

from __future__ import annotations

import difflib
import functools
import json
import logging
import os
import zoneinfo
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Final, TypedDict

import trio

from mcpactor import Context, RequestError, Server, ToolAnnotations, ToolError

__all__ = ["ClockConfig", "Duration", "Instant", "configure", "server"]
__version__ = "0.1.0"

_log = logging.getLogger("mcpactor_clock")

#: how long the countdown's farewell log message may take once it was cancelled
_FAREWELL_TIMEOUT: Final = 1.0
_READ_ONLY: Final = ToolAnnotations(read_only_hint=True, open_world_hint=False)
_TIMEZONE_HELP: Final = (
    "use an IANA time zone name such as 'UTC', 'Europe/Oslo' or 'America/New_York'; "
    "the resource clock://timezones lists every name, and completion suggests them"
)

server = Server(
    "clock",
    version=__version__,
    title="Clock",
    instructions=(
        "Tells the current time in any IANA time zone, converts times between zones and "
        "measures durations. Times are ISO 8601; a time without an offset is read in the "
        "zone the tool names."
    ),
)


@dataclass(frozen=True)
class ClockConfig:
    """The clock server's settings."""

    #: the longest countdown a client may ask for, in seconds
    max_countdown: int = 3600


_config = ClockConfig()


def configure(*, max_countdown: int | None = None) -> ClockConfig:
    """Set the clock server's settings; what is not given comes from the environment.

    ``MCPACTOR_CLOCK_MAX_COUNTDOWN`` sets the longest countdown (default 3600 seconds).
    """
    global _config
    if max_countdown is None:
        raw = os.environ.get("MCPACTOR_CLOCK_MAX_COUNTDOWN", "3600")
        try:
            max_countdown = int(raw)
        except ValueError:
            raise ValueError(
                f"MCPACTOR_CLOCK_MAX_COUNTDOWN must be a whole number of seconds, got {raw!r}"
            ) from None
    if max_countdown < 0:
        raise ValueError(f"max_countdown must be at least 0, got {max_countdown!r}")
    _config = ClockConfig(max_countdown=max_countdown)
    return _config


class Instant(TypedDict):
    """A moment in time, as seen in one time zone."""

    iso: str
    unix: float
    timezone: str


class Duration(TypedDict):
    """The time from one moment to another."""

    seconds: float
    description: str


# --- time zones ----------------------------------------------------------------------


@functools.cache
def _zone_names() -> tuple[str, ...]:
    # Walks the zone database once; every later call is free.
    return tuple(sorted(zoneinfo.available_timezones()))


def _zone(name: str) -> zoneinfo.ZoneInfo:
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        # ValueError: not a valid key ("../x", ""); OSError: a folder such as "Europe".
        pass
    by_lower = {zone.lower(): zone for zone in _zone_names()}
    close = by_lower.get(name.lower())
    if close is None:
        matches = difflib.get_close_matches(name, _zone_names(), n=3, cutoff=0.6)
        hint = f"; did you mean {' or '.join(map(repr, matches))}?" if matches else ""
    else:
        hint = f"; did you mean {close!r}? (names are case-sensitive)"
    raise ToolError(f"unknown time zone {name!r}{hint}\n{_TIMEZONE_HELP}")


def _instant(moment: datetime, zone: zoneinfo.ZoneInfo) -> Instant:
    local = moment.astimezone(zone)
    return {"iso": local.isoformat(), "unix": local.timestamp(), "timezone": zone.key}


def _parse(text: str, what: str) -> datetime:
    try:
        return datetime.fromisoformat(text.strip())
    except ValueError:
        raise ToolError(
            f"{what} {text!r} is not an ISO 8601 time; expected e.g. '2025-06-01T14:30', "
            "'2025-06-01T14:30:00+02:00' or '2025-06-01T12:30Z'"
        ) from None


def _localize(naive: datetime, zone: zoneinfo.ZoneInfo) -> datetime:
    """Attach ``zone`` to a wall-clock time; ToolError if the clocks skip it."""
    aware = naive.replace(tzinfo=zone)
    # In a spring-forward gap the wall time never happens: the round trip through UTC
    # lands somewhere else. Ambiguous times (fall back) take the first occurrence.
    if aware.astimezone(UTC).astimezone(zone).replace(tzinfo=None) != naive:
        raise ToolError(
            f"{naive.isoformat()} does not exist in {zone.key}: the clocks skip it "
            "(daylight saving time starts)"
        )
    return aware


def _describe(delta: timedelta) -> str:
    total = abs(delta.total_seconds())
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, seconds = divmod(rest, 60)
    seconds = round(seconds, 3)
    parts = [
        f"{int(n)} {unit}{'' if n == 1 else 's'}"
        for n, unit in ((days, "day"), (hours, "hour"), (minutes, "minute"))
        if n
    ]
    if seconds or not parts:
        shown = int(seconds) if seconds == int(seconds) else seconds
        parts.append(f"{shown} second{'' if shown == 1 else 's'}")
    words = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    return words + (" (end is before start)" if delta < timedelta(0) else "")


# --- tools ---------------------------------------------------------------------------


@server.tool(annotations=_READ_ONLY)
def now(timezone: str = "UTC") -> Instant:
    """The current time in a time zone.

    Args:
        timezone: an IANA time zone name, e.g. "Europe/Oslo"
    """
    zone = _zone(timezone)
    return _instant(datetime.now(UTC), zone)


@server.tool(annotations=_READ_ONLY)
def convert(time: str, from_zone: str, to_zone: str) -> Instant:
    """Convert a time from one time zone to another.

    Args:
        time: an ISO 8601 time; one without an offset is read as wall-clock time in
            from_zone, one with an offset (or "Z") is read as written
        from_zone: the IANA zone the time is given in
        to_zone: the IANA zone to express it in
    """
    source = _zone(from_zone)
    target = _zone(to_zone)
    moment = _parse(time, "time")
    if moment.tzinfo is None:
        moment = _localize(moment, source)
    return _instant(moment, target)


@server.tool(annotations=_READ_ONLY)
def time_between(start: str, end: str) -> Duration:
    """The duration from one time to another.

    Args:
        start: an ISO 8601 time; without an offset it is read as UTC
        end: an ISO 8601 time; without an offset it is read as UTC
    """
    first = _parse(start, "start")
    last = _parse(end, "end")
    first = first if first.tzinfo is not None else first.replace(tzinfo=UTC)
    last = last if last.tzinfo is not None else last.replace(tzinfo=UTC)
    delta = last - first
    return {"seconds": delta.total_seconds(), "description": _describe(delta)}


@server.tool(annotations=_READ_ONLY, task_support="optional")
async def countdown(seconds: int, ctx: Context) -> str:
    """Count down, reporting progress every second; cancel it to stop it at once.

    It may run as a task (2025-11-25): cancelling the task stops it just the same.

    Args:
        seconds: how long to count down
    """
    limit = _config.max_countdown
    if not 0 <= seconds <= limit:
        raise ToolError(f"seconds must be between 0 and {limit}, got {seconds}")
    start = trio.current_time()
    elapsed = 0
    try:
        while elapsed < seconds:
            # Sleeping until a deadline keeps the ticks on whole seconds from the start,
            # however long each progress report took to send.
            await trio.sleep_until(start + elapsed + 1)
            elapsed += 1
            await ctx.report_progress(elapsed, seconds, message=f"{seconds - elapsed} s left")
    finally:
        if elapsed < seconds:
            _log.info("countdown stopped after %d of %d s", elapsed, seconds)
            # The request may be cancelled: only a shielded, bounded send can still
            # tell the client where the countdown stopped.
            with trio.move_on_after(_FAREWELL_TIMEOUT, shield=True):
                await ctx.info(f"countdown stopped after {elapsed} of {seconds} s", logger="clock")
    return f"countdown of {seconds} s finished"


# --- resources, prompts and completion -------------------------------------------------


@server.resource(
    "clock://timezones",
    name="timezones",
    title="Time zones",
    mime_type="application/json",
)
def timezones() -> str:
    """Every IANA time zone name this server knows, sorted."""
    return json.dumps(list(_zone_names()))


@server.resource(
    "clock://now/{+timezone}", name="now", title="Current time", mime_type="application/json"
)
def now_in(timezone: str) -> str:
    """The current time in a time zone, e.g. clock://now/Europe/Oslo."""
    try:
        zone = _zone(timezone)
    except ToolError as exc:
        # A resource has no tool result to carry the error: say it as a JSON-RPC error.
        raise RequestError(-32602, str(exc), {"timezone": timezone}) from None
    return json.dumps(_instant(datetime.now(UTC), zone))


@server.prompt(title="Plan a meeting across time zones")
def plan_meeting(time: str, from_zone: str, to_zone: str) -> str:
    """Work out what a meeting time means for someone in another time zone.

    Args:
        time: the meeting time, e.g. "2025-06-01T14:00"
        from_zone: the organiser's IANA time zone
        to_zone: the attendee's IANA time zone
    """
    return (
        f"A meeting is set for {time} in {from_zone}. Use the convert tool to find the "
        f"time in {to_zone}, then tell me whether it falls within working hours "
        f"(09:00–17:00) there, and if not, suggest the nearest time that suits both zones."
    )


def complete_zone(value: str, context: dict[str, str]) -> list[str]:
    """Time zone names starting with ``value``, or whose city does (case-insensitive)."""
    prefix = value.lower()
    names = _zone_names()
    found = [name for name in names if name.lower().startswith(prefix)]
    if prefix and "/" not in prefix:
        seen = set(found)
        found += [
            name
            for name in names
            if name not in seen and name.rsplit("/", 1)[-1].lower().startswith(prefix)
        ]
    return found


for _argument in ("from_zone", "to_zone"):
    server.completion("plan_meeting", _argument)(complete_zone)
server.completion("clock://now/{+timezone}", "timezone")(complete_zone)
del _argument

configure()
