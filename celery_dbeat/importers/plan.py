"""What importing a source does to each entry, decided before anything is written; no I/O.

Each entry becomes one :class:`Step`: ``created``, ``updated`` or ``unchanged`` (compared with the
schedule of that name, if any), ``skipped`` (not the user's to import, or a name owned by
``beat_schedule``) or ``refused`` (celery-dbeat cannot represent it). :func:`timing_notes` then
says where celery-dbeat's next fire differs from the source's, and why.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone

from ..api import ScheduleInfo
from ..definitions import TIMING_COLUMNS, Definition
from ..store.schedules import API_ORIGIN
from .base import Imported, SourceRead

__all__ = ["ACTIONS", "Step", "expected_next", "plan", "timing_notes"]

#: The actions, in report order.
ACTIONS = ("created", "updated", "unchanged", "skipped", "refused")


@dataclass
class Step:
    entry: Imported
    action: str
    #: Why it is skipped or refused.
    reason: str | None = None
    #: The celery-dbeat schedule of that name before the import.
    current: ScheduleInfo | None = None
    #: The schedule as written (``None`` on a dry run, or when nothing is written).
    stored: ScheduleInfo | None = None

    @property
    def name(self) -> str:
        return self.entry.name

    @property
    def definition(self) -> Definition:
        assert self.entry.definition is not None
        return self.entry.definition


def plan(
    read: SourceRead,
    current: Mapping[str, ScheduleInfo],
    config_names: Collection[str],
    action: Callable[[Definition, ScheduleInfo | None], str],
) -> list[Step]:
    """A step per entry. ``config_names``: the app's ``beat_schedule`` (beat syncs those itself);
    ``action``: ``created``, ``updated`` or ``unchanged`` for a definition and its schedule."""
    steps: list[Step] = []
    seen: set[str] = set()
    for entry in read.entries:
        info = current.get(entry.name)
        if entry.refused is not None:
            steps.append(Step(entry, "refused", entry.refused))
        elif entry.skipped is not None:
            steps.append(Step(entry, "skipped", entry.skipped))
        elif entry.name in seen:
            steps.append(Step(entry, "refused", "the source has two entries of that name"))
        elif entry.name in config_names:
            reason = "it is in this app's beat_schedule, which celery-dbeat's beat syncs itself"
            steps.append(Step(entry, "skipped", reason))
        elif info is not None and info.origin != API_ORIGIN:
            reason = (
                f"the celery-dbeat schedule of that name belongs to beat_schedule ({info.origin})"
            )
            steps.append(Step(entry, "skipped", reason, info))
        else:
            assert entry.definition is not None
            steps.append(Step(entry, action(entry.definition, info), current=info))
        seen.add(entry.name)
    return steps


def _same_timing(definition: Definition, old: Definition | None) -> bool:
    if old is None:
        return False
    new, before = definition.columns(), old.columns()
    return all(new[column] == before[column] for column in TIMING_COLUMNS)


def expected_next(step: Step, now: datetime, old: Definition | None) -> tuple[datetime | None, str]:
    """The next fire and state the step leaves its schedule with: as stored once written, else
    as the write would compute them (``old``: the current schedule's definition, if readable)."""
    info = step.stored or (step.current if step.action == "unchanged" else None)
    if info is not None:
        return info.next_run_at, info.state
    definition = step.definition
    if step.current is not None and _same_timing(definition, old):
        upcoming = step.current.next_run_at
    else:
        last = step.current.last_slot if step.current is not None else None
        after = now if last is None else max(now, last)
        upcoming = definition.timing(definition.start_at or now).first_after(after)
    if upcoming is None:
        return None, "finished"
    return upcoming, "active" if definition.enabled else "paused"


def _iso(value: datetime) -> str:
    return value.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


def timing_notes(step: Step, upcoming: datetime | None, state: str, now: datetime) -> list[str]:
    """Where the imported schedule's next fire differs from the source's (``source_next``)."""
    source = step.entry.source_next
    if step.entry.definition is None or state == "paused":
        return []
    if source is None:
        if upcoming is None:
            return []
        return [f"the source would not fire it again; celery-dbeat fires it at {_iso(upcoming)}"]
    if source <= now:
        then = "" if upcoming is None else f"; celery-dbeat fires it next at {_iso(upcoming)}"
        return [
            f"the source owes the fire of {_iso(source)} (its beat is stopped or behind): it is "
            f"not sent{then}"
        ]
    if upcoming != source:
        shown = "never" if upcoming is None else _iso(upcoming)
        return [f"the source would fire it next at {_iso(source)}, celery-dbeat at {shown}"]
    return []
