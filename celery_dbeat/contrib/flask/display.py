"""How schedules and fires read in the admin: instants, durations, spec summaries, states.

Plain functions of stored rows, no Flask: the views wrap them into column formatters.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

from ...core.definitions import SPEC_COLUMNS
from ...core.specs import spec_from_fields
from ...core.states import schedule_state
from ...store.models import Fire, Schedule

__all__ = [
    "duration",
    "fire_outcome",
    "instant",
    "local_instant",
    "next_run",
    "overlap_summary",
    "spec_summary",
]


def instant(value: datetime | None) -> str:
    """``2024-05-06 09:00:00 UTC``; sub-second parts are left to the lag column."""
    if value is None:
        return ""
    return value.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def local_instant(value: datetime, zone: str) -> str:
    """``value`` on the wall clock of ``zone``, with its abbreviation and offset."""
    local = value.astimezone(ZoneInfo(zone))
    return local.strftime("%Y-%m-%d %H:%M:%S %Z (%z)")


def duration(delta: timedelta) -> str:
    """``250 ms``, ``2.5 s``, ``30 s``, ``1 h 30 min``."""
    total = delta.total_seconds()
    sign = "-" if total < 0 else ""
    seconds = abs(total)
    if seconds < 1:
        return f"{sign}{seconds * 1000:.0f} ms"
    if seconds < 60:
        return f"{sign}{seconds:.3g} s"
    parts = []
    rest = round(seconds)
    for unit, size in (("d", 86_400), ("h", 3_600), ("min", 60), ("s", 1)):
        count, rest = divmod(rest, size)
        if count:
            parts.append(f"{count} {unit}")
    return sign + " ".join(parts)


def spec_summary(row: Schedule) -> str:
    """One line saying when the schedule fires, e.g. ``cron '30 9 * * 1-5' America/New_York``
    (the spec's own text, as on the command line), then its bounds."""
    spec = spec_from_fields({column: getattr(row, column) for column in SPEC_COLUMNS})
    text = spec.text() if spec is not None else f"{row.kind} (incomplete)"
    if row.start_at is not None:
        text += f", from {instant(row.start_at)}"
    if row.end_at is not None:
        text += f", until {instant(row.end_at)}"
    if row.max_runs is not None:
        text += f", at most {row.max_runs} run{'s' if row.max_runs != 1 else ''}"
    jitter = getattr(row, "jitter", None)  # a column newer than some databases' rows
    if jitter:
        text += f", jitter {duration(timedelta(seconds=jitter))}"
    return text


def next_run(row: Schedule) -> str:
    """When the schedule fires next, or why it does not: only an active schedule sends its
    stored ``next_run_at`` (a paused one's is recomputed when it resumes, one in error is set
    aside, a finished one has no slot left), as ``ScheduleInfo.next_run``."""
    state = schedule_state(row)
    return instant(row.next_run_at) if state == "active" else f"none ({state})"


def overlap_summary(row: Schedule) -> str:
    """``allow``, or ``skip (runs lost after 10 min)``; without a max run time of its own a
    schedule uses ``dbeat_max_run_time``."""
    policy = row.overlap_policy or "allow"
    if policy == "allow":
        return policy
    if row.max_run_time is None:
        return f"{policy} (runs lost after dbeat_max_run_time)"
    return f"{policy} (runs lost after {duration(timedelta(seconds=row.max_run_time))})"


def fire_outcome(fire: Fire) -> str:
    """The status, with what a row stands for: ``sent (run now)``, ``dropped (3 slots ...)``,
    and who asked for it as ``dbeat history`` says it: ``sent (backfill)``, ``queued (backfill,
    100 slots ...)``."""
    notes = []
    if fire.manual:
        notes.append("run now")
    if fire.origin:
        notes.append(fire.origin)
    if fire.slot_count > 1:
        notes.append(f"{fire.slot_count} slots from {instant(fire.first_slot)}")
    return f"{fire.status} ({', '.join(notes)})" if notes else fire.status
