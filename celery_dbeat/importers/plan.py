"""What importing a source does to each entry, and what its report says of it; no I/O.

Each entry becomes one :class:`Step`: ``created``, ``updated`` or ``unchanged`` (what
:meth:`Schedules.apply <celery_dbeat.api.Schedules.apply>` did with it), ``skipped`` (not the
user's to import, or a name owned by ``beat_schedule``) or ``refused`` (celery-dbeat cannot
represent it). :func:`timing_notes` then says where celery-dbeat's next fire differs from the
source's, and why.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from ..api import ScheduleInfo, SyncReport
from ..core.definitions import TIMING_COLUMNS, Definition
from ..core.errors import ValidationError
from ..core.formats import iso, seconds_text
from ..core.misfire import MisfirePolicy, MisfireRules
from ..core.origins import CONFIG_ORIGIN
from .base import Imported, SourceRead

__all__ = ["ACTIONS", "Outlook", "Step", "outlook", "plan", "settle"]

#: The actions, in report order.
ACTIONS = ("created", "updated", "unchanged", "skipped", "refused")


@dataclass
class Step:
    entry: Imported
    action: str
    #: Why it is skipped or refused.
    reason: str | None = None
    #: The celery-dbeat schedule of that name before the import (known on a dry run).
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
    read: SourceRead, config_names: Collection[str], check: Callable[[Definition], object]
) -> list[Step]:
    """A step per entry; those to import have no action yet (:func:`settle` gives it).
    ``config_names``: the app's ``beat_schedule`` (beat syncs those itself); ``check``: raises
    ``ValidationError`` for a definition the writes would refuse
    (:meth:`Schedules.check <celery_dbeat.api.Schedules.check>`: the app's ``accept_content``),
    which is then refused with that reason rather than failing the import half-way."""
    steps: list[Step] = []
    seen: set[str] = set()
    for entry in read.entries:
        if entry.refused is not None:
            steps.append(Step(entry, "refused", entry.refused))
        elif entry.skipped is not None:
            steps.append(Step(entry, "skipped", entry.skipped))
        elif entry.name in seen:
            steps.append(Step(entry, "refused", "the source has two entries of that name"))
        elif entry.name in config_names:
            reason = "it is in this app's beat_schedule, which celery-dbeat's beat syncs itself"
            steps.append(Step(entry, "skipped", reason))
        else:
            assert entry.definition is not None
            try:
                check(entry.definition)
            except ValidationError as exc:
                steps.append(Step(entry, "refused", str(exc)))
            else:
                steps.append(Step(entry, ""))
        seen.add(entry.name)
    return steps


def settle(
    steps: Sequence[Step], report: SyncReport, stored: Mapping[str, ScheduleInfo], dry_run: bool
) -> None:
    """Give each step to import its action from what applying its definition did (``report``):
    ``created``, ``updated``, ``unchanged``, ``skipped`` (the schedule of that name belongs to
    ``beat_schedule``) or ``refused`` (by the database). ``stored``: the schedules of those
    names as read after the apply (before it, on a dry run)."""
    actions = {name: key for key in ACTIONS[:3] for name in getattr(report, key)}
    for step in steps:
        if step.action:
            continue
        if step.name in actions:
            step.action = actions[step.name]
            if dry_run:
                step.current = stored.get(step.name)
            else:
                step.stored = stored.get(step.name)
        elif step.name in report.refused:
            step.action, step.reason = "refused", report.refused[step.name]
        else:
            step.action = "skipped"
            step.reason = (
                f"the celery-dbeat schedule of that name belongs to beat_schedule ({CONFIG_ORIGIN})"
            )


def _same_timing(definition: Definition, current: ScheduleInfo | None) -> bool:
    """Whether ``definition`` keeps the stored timing of ``current``, by the rule the write
    itself applies (its columns against the stored ones)."""
    columns = definition.columns()
    return current is not None and all(
        columns[column] == getattr(current, column) for column in TIMING_COLUMNS
    )


def expected_next(step: Step, now: datetime) -> tuple[datetime | None, str]:
    """The next fire and state the step leaves its schedule with: as stored once written, else
    as the write would compute them."""
    info = step.stored or (step.current if step.action == "unchanged" else None)
    if info is not None:
        return info.next_run_at, info.state
    definition = step.definition
    if step.current is not None and _same_timing(definition, step.current):
        upcoming = step.current.next_run_at
    else:
        last = step.current.last_slot if step.current is not None else None
        after = now if last is None else max(now, last)
        upcoming = definition.timing(definition.start_at or now).first_after(after)
    if upcoming is None:
        return None, "finished"
    return upcoming, "active" if definition.enabled else "paused"


@dataclass
class Outlook:
    """What an imported step's schedule does next: its next fire and state (``active``,
    ``paused``, ``finished``), that said in words (when, and what a beat sends for it), and
    where that differs from the source's own next fire."""

    upcoming: datetime | None
    state: str
    text: str
    notes: list[str]


def outlook(step: Step, now: datetime, rules: MisfireRules) -> Outlook:
    upcoming, state = expected_next(step, now)
    text = state
    if state == "active" and upcoming is not None:
        text = next_text(step.definition, upcoming, now, rules)
    return Outlook(upcoming, state, text, timing_notes(step, upcoming, state, now))


#: What a beat starting now sends for a schedule whose next fire passed, by misfire policy.
_SENDS = {
    MisfirePolicy.LATEST: "one fire, for the newest missed slot",
    MisfirePolicy.EARLIEST: "one fire, for the oldest missed slot",
    MisfirePolicy.ALL: "a fire for each missed slot, at most {limit}",
}


def next_text(
    definition: Definition, upcoming: datetime, now: datetime, rules: MisfireRules
) -> str:
    """The next fire as the report shows it: ``next <instant>``, or, when it has passed (no beat
    ran since the schedule was written, e.g. on a second import before the beats start), what
    a beat starting now does about it, by the schedule's misfire policy (``rules``: the app's
    defaults)."""
    if upcoming > now:
        return f"next {iso(upcoming)}"
    policy = MisfirePolicy(definition.misfire_policy or rules.policy)
    if policy is MisfirePolicy.SKIP:
        return (
            f"missed since {iso(upcoming)}: no beat ran since; its misfire policy, skip, sends "
            "nothing for it, and a beat fires it at its first slot after it starts"
        )
    limit = rules.catchup_limit if definition.catchup_limit is None else definition.catchup_limit
    grace = rules.grace
    if definition.misfire_grace is not None:
        grace = timedelta(seconds=definition.misfire_grace)
    older = (
        "" if grace is None else f"; slots older than {seconds_text(grace.total_seconds())} dropped"
    )
    sends = _SENDS[policy].format(limit=limit)
    return (
        f"due since {iso(upcoming)}: no beat ran since; sent when a beat starts (misfire policy "
        f"{policy.value}: {sends}{older})"
    )


def _when(upcoming: datetime, now: datetime) -> str:
    return (
        f"at {iso(upcoming)}"
        if upcoming > now
        else f"as soon as a beat starts (due since {iso(upcoming)})"
    )


def timing_notes(step: Step, upcoming: datetime | None, state: str, now: datetime) -> list[str]:
    """Where the imported schedule's next fire differs from the source's (``source_next``)."""
    source = step.entry.source_next
    if step.entry.definition is None or state == "paused":
        return []
    if source is None:
        if upcoming is None:
            return []
        return [f"the source would not fire it again; celery-dbeat fires it {_when(upcoming, now)}"]
    if source <= now:
        then = "" if upcoming is None else f"; celery-dbeat fires it next {_when(upcoming, now)}"
        return [
            f"the source owes the fire of {iso(source)} (its beat is stopped or behind): it is "
            f"not sent{then}"
        ]
    if upcoming != source:
        shown = "never" if upcoming is None else _when(upcoming, now)
        return [f"the source would fire it next at {iso(source)}, celery-dbeat {shown}"]
    return []
