"""Ground truth for the chaos suite, computed by plain arithmetic, never by celery-dbeat.

* Slots: a cron schedule here is seconds-only (``* * * * * S``, seconds last), so its slots are the
  whole seconds whose second-of-minute matches ``S``, from ``start_at`` (inclusive); an interval's
  slots are ``start_at + n * every`` for ``n >= 1``. Every schedule of the suite has a
  ``start_at``, so no slot depends on when a beat happened to create the row.
* Misfires: :func:`misfire_expectation` is SEMANTICS.md's table written out again, slot by slot.
* Task ids: ``uuid5(namespace, uid NUL "slot" NUL slot)``, the documented deterministic id, with
  the namespace written here as a literal: an id that changed between versions would let two
  beats of different versions publish one fire twice. ``uid`` is the schedule's identity, random
  when its row is created: the one thing read from the schedule database.

:func:`judge` compares what reached the broker (every message the worker executed, plus anything
left in the queue) with the expected fires. Each message carries the headers ``dbeat_schedule``
and ``dbeat_slot``.
"""

from __future__ import annotations

import base64
import json
import math
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from itertools import pairwise
from typing import Any

from tests.e2e.app import PUBLISHED_AT, PUBLISHED_BY
from tests.e2e.harness import Event, parse_seconds_field

TASK_ID_NAMESPACE = uuid.UUID("6c1b3a8e-5d57-4b0f-9a55-2f6a3c0d9e11")
#: Slots are compared rounded to the microsecond, as they are stored.
Slot = float


def epoch(value: str | datetime) -> float:
    moment = datetime.fromisoformat(value) if isinstance(value, str) else value
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return round(moment.timestamp(), 6)


def iso(t: float) -> str:
    return datetime.fromtimestamp(t, timezone.utc).isoformat()


def hms(t: float) -> str:
    return datetime.fromtimestamp(t, timezone.utc).strftime("%H:%M:%S.%f")[:-3]


def expected_task_id(uid: str, slot: float) -> str:
    instant = datetime.fromtimestamp(slot, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return str(uuid.uuid5(TASK_ID_NAMESPACE, f"{uid}\x00slot\x00{instant}"))


# --- slots -----------------------------------------------------------------------------------


def slots(spec: Mapping[str, Any], start: float, end: float) -> list[Slot]:
    """The slots of ``spec`` in ``[start, end]``."""
    start_at = epoch(spec["start_at"])
    if "cron" in spec:
        fields = spec["cron"].split()
        if len(fields) != 6 or fields[:5] != ["*"] * 5:
            raise ValueError(f"ground truth only knows '* * * * * <seconds>', not {spec['cron']!r}")
        seconds = parse_seconds_field(fields[5])
        low = math.ceil(max(start, start_at))
        return [float(t) for t in range(low, math.floor(end) + 1) if t % 60 in seconds]
    every = float(spec["every"])
    n = max(1, math.ceil((start - start_at) / every - 1e-9))
    found = []
    while (t := round(start_at + n * every, 6)) <= end:
        if t >= start:
            found.append(t)
        n += 1
    return found


def on_grid(spec: Mapping[str, Any], slot: float) -> bool:
    return bool(slots(spec, slot - 1e-6, slot + 1e-6))


def misfire_expectation(
    spec: Mapping[str, Any],
    last: float | None,
    now: float,
    tolerance: float,
    default_policy: str = "latest",
    default_limit: int = 100,
) -> tuple[list[Slot], list[Slot]]:
    """``(published, not published)`` among the slots after ``last`` up to ``now`` (SEMANTICS.md).

    ``M`` are the missed slots (older than the tolerance), ``E`` those within the grace window;
    slots within the tolerance are merely late and published whatever the policy.
    """
    after = epoch(spec["start_at"]) - 1 if last is None else last + 1e-6
    due = slots(spec, after, now)
    missed = [t for t in due if now - t > tolerance]
    late = [t for t in due if now - t <= tolerance]
    grace = spec.get("misfire_grace")
    eligible = [t for t in missed if grace is None or now - t <= float(grace)]
    policy = spec.get("misfire_policy", default_policy)
    chosen: list[Slot]
    if not eligible or policy == "skip":
        chosen = []
    elif policy == "latest":
        chosen = [eligible[-1]]
    elif policy == "earliest":
        chosen = [eligible[0]]
    elif policy == "all":
        limit = int(spec.get("catchup_limit", default_limit))
        chosen = eligible[len(eligible) - limit :] if limit else []
    else:
        raise ValueError(f"unknown policy {policy!r}")
    published = sorted(chosen + late)
    return published, [t for t in due if t not in published]


# --- messages --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Message:
    """One message that reached the broker."""

    task_id: str
    #: The schedule name the task was called with (its first argument).
    schedule: str
    #: The ``dbeat_schedule`` and ``dbeat_slot`` headers.
    header_schedule: str | None
    slot: float | None
    #: When the worker ran it (``None``: still in the queue at the end).
    received_at: float | None
    #: When and by which beat it was published (tests/e2e/app.py's headers; ``None``: unknown).
    published_at: float | None = None
    published_by: str | None = None

    @property
    def sent_at(self) -> float | None:
        """When it was published, or else received: the instant a copy is judged by."""
        return self.received_at if self.published_at is None else self.published_at

    @classmethod
    def from_record(cls, raw: bytes) -> Message:
        """An entry the worker's ``record`` task appended (see tests/e2e/app.py)."""
        entry = json.loads(raw)
        extra = entry.get("extra", {})
        slot = extra.get("dbeat_slot")
        return cls(
            entry["task_id"],
            entry["schedule"],
            extra.get("dbeat_schedule"),
            None if slot is None else epoch(slot),
            entry["received_at"],
            _float(extra.get(PUBLISHED_AT)),
            extra.get(PUBLISHED_BY),
        )

    @classmethod
    def from_queue(cls, raw: bytes) -> Message:
        """A message left in kombu's Redis queue (JSON envelope, JSON body)."""
        envelope = json.loads(raw)
        if isinstance(envelope, list):  # kombu's unacked hash: [message, exchange, routing key]
            envelope = envelope[0]
        headers = envelope.get("headers", {})
        body = envelope["body"]
        if envelope.get("properties", {}).get("body_encoding") == "base64":
            body = base64.b64decode(body)
        args = json.loads(body)[0]
        slot = headers.get("dbeat_slot")
        return cls(
            headers["id"],
            args[0] if args else "",
            headers.get("dbeat_schedule"),
            None if slot is None else epoch(slot),
            None,
            _float(headers.get(PUBLISHED_AT)),
            headers.get(PUBLISHED_BY),
        )


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


# --- the verdict -----------------------------------------------------------------------------


@dataclass
class Outcome:
    scenario: str
    beats: int
    schedules: int
    expected: int = 0
    received: int = 0
    duplicates: list[str] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)
    wrong: list[str] = field(default_factory=list)
    #: Ids received more than once, in a documented crash window or not.
    repeats: list[str] = field(default_factory=list)
    unexplained_repeats: list[str] = field(default_factory=list)
    worst_lag: float = 0.0
    median_lag: float = 0.0
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)

    def problems(self) -> list[str]:
        return [*self.duplicates, *self.lost, *self.unexpected, *self.wrong]

    def summary(self, limit: int = 25) -> str:
        lines = [
            f"{self.scenario}: {self.expected} fires expected, {self.received} messages;"
            f" duplicates {len(self.duplicates)}, lost {len(self.lost)}, unexpected"
            f" {len(self.unexpected)}, other problems {len(self.wrong)}, repeated ids"
            f" {len(self.repeats)} ({len(self.unexplained_repeats)} outside documented windows),"
            f" lag median {self.median_lag:.2f} s worst {self.worst_lag:.2f} s",
            *(f"  note: {n}" for n in self.notes),
        ]
        documented = sorted(set(self.repeats) - set(self.unexplained_repeats))
        for title, items, shown in (
            ("duplicate", self.duplicates, limit),
            ("lost", self.lost, limit),
            ("unexpected", self.unexpected, limit),
            ("wrong", self.wrong, limit),
            ("repeat outside documented windows", self.unexplained_repeats, limit),
            ("repeat in a documented window", documented, 3),
        ):
            lines += [f"  {title}: {item}" for item in items[:shown]]
            if len(items) > shown:
                lines.append(f"  ... {len(items) - shown} more {title}")
        return "\n".join(lines)


#: Faults of the whole fleet after (or shortly before) which a beat may have published fires it
#: could not mark sent: the database lost between the publish and the mark, or the broker
#: connection broken with a publish in flight (the broker may have taken the message although
#: the beat saw the publish fail, and publishes it again under the same id).
_FLEET_FAULTS = ("pg-restart-fast", "pg-crash", "pg-terminate-backends", "broker-cut")
#: What ends one beat process: Celery beat's SIGTERM handler raises ``SystemExit`` wherever beat
#: is, publishing included, so a SIGTERM counts as a kill.
_ENDS = ("kill", "stop")


@dataclass(frozen=True)
class Copy:
    """One copy of a fire as the judge places it: when and by which beat it was published (or,
    for a message without the harness's headers, when it was received)."""

    at: float
    by: str | None = None


def _documented_window(copies: list[Copy], events: list[Event], lease: float) -> bool:
    """The crash windows of the manual (docs/explanation/design.md, "Limits"), judged on when
    and by whom each copy was published, so a worker that takes its time (a busy host) moves
    nothing.

    * A beat killed (or SIGTERMed) after publishing and before marking the fires sent: the first
      copy is the killed beat's, published before the kill, and the next one was published after
      it (by the beat that took the fire over).
    * A fault of the whole fleet (the database lost, the broker cut) up to two leases after the
      first copy or one before it, and the next one published after the fault.
    * A beat paused longer than the lease between its last lease check and the end of its
      publish, while another beat took the fire over: one copy is the paused beat's, and both
      were published between a lease before the pause and a lease after the resume.

    More than two copies: each copy after the first must follow from such a window around the
    one before (the beat that took the fire over was itself killed before marking it sent).
    """
    if len(copies) < 2:
        return False
    ordered = sorted(copies, key=lambda c: c.at)
    return all(_explained(first, second, events, lease) for first, second in pairwise(ordered))


def _explained(first: Copy, second: Copy, events: list[Event], lease: float) -> bool:
    """A second copy of a fire whose first copy is ``first``, by one crash window.

    A beat marks what it published sent at least every half lease while it publishes, so an
    unmarked copy is younger than that at the crash: twice the lease leaves a busy host room
    and still refuses a copy long marked sent that came back."""
    if first.by is None:  # no publisher known: a crash of any beat around the first copy
        ends = [e for e in events if e.what in _ENDS and e.at - lease <= first.at <= e.at + lease]
    else:  # the end of the process that published the first copy: its next kill or stop
        ends = sorted(
            (e for e in events if e.what in _ENDS and e.proc == first.by and e.at >= first.at),
            key=lambda e: e.at,
        )
        ends = [e for e in ends[:1] if first.at >= e.at - 2 * lease]
    # A batch recorded before a fault is published on for most of a lease after it.
    faults = [
        e
        for e in events
        if e.what in _FLEET_FAULTS and e.at - 2 * lease <= first.at <= e.at + lease
    ]
    if any(second.at > e.at for e in [*ends, *faults]):
        return True
    for pause in (e for e in events if e.what == "pause"):
        resume = next(
            (e for e in events if e.what == "resume" and e.proc == pause.proc and e.at > pause.at),
            None,
        )
        if resume is None or resume.at - pause.at <= lease:
            continue
        if first.by is not None and pause.proc not in (first.by, second.by):
            continue
        if pause.at - lease <= first.at and second.at <= resume.at + lease:
            return True
    return False


def judge(
    scenario: str,
    schedules: Mapping[str, Mapping[str, Any]],
    messages: Iterable[Message],
    expected: Mapping[str, Iterable[Slot]],
    *,
    uids: Mapping[str, str],
    judged_until: float,
    beats: int,
    events: Iterable[Event] = (),
    lease: float = 3.0,
    beat_time: Callable[[float], float] | None = None,
    early: float = 0.05,
    lag_excludes: Mapping[str, Iterable[Slot]] | None = None,
) -> Outcome:
    """Exactly once, message by message.

    ``expected`` are the fires that must each arrive exactly once (``uids``: each schedule's
    identity, from which its task ids derive); any other fire at or before
    ``judged_until`` is unexpected (fires after it may arrive or not). ``beat_time`` maps a
    receipt time to the beats' clock (the misfire scenario's offset); a message may arrive
    ``early`` seconds before its slot (the clock skew of the beat that sent it), not more.
    Lag is measured for the expected fires except ``lag_excludes`` (catch-up fires, late by
    design).
    """
    events = list(events)
    outcome = Outcome(scenario, beats, len(schedules))
    wanted = {name: {round(t, 6) for t in ts} for name, ts in expected.items()}
    outcome.expected = sum(len(ts) for ts in wanted.values())
    excluded = {(name, round(t, 6)) for name, ts in (lag_excludes or {}).items() for t in ts}
    copies: dict[str, list[Message]] = defaultdict(list)
    ids_of: dict[tuple[str, float], set[str]] = defaultdict(set)
    first_at: dict[tuple[str, float], float] = {}
    for m in messages:
        outcome.received += 1
        copies[m.task_id].append(m)
        spec = schedules.get(m.schedule)
        if spec is None or m.slot is None or m.header_schedule != m.schedule:
            outcome.wrong.append(
                f"message {m.task_id} for {m.schedule!r}: headers schedule="
                f"{m.header_schedule!r} slot={m.slot!r}"
            )
            continue
        key = (m.schedule, round(m.slot, 6))
        ids_of[key].add(m.task_id)
        if m.task_id != expected_task_id(uids[m.schedule], key[1]):
            outcome.wrong.append(f"{m.schedule}@{iso(m.slot)} published under id {m.task_id}")
        if not on_grid(spec, m.slot):
            outcome.wrong.append(f"{m.schedule}@{iso(m.slot)} is not a slot of {dict(spec)}")
        if m.received_at is not None:
            at = m.received_at if beat_time is None else beat_time(m.received_at)
            first_at[key] = min(first_at.get(key, at), at)

    for (name, slot), ids in sorted(ids_of.items()):
        if len(ids) > 1:
            outcome.duplicates.append(f"{name}@{iso(slot)} published under ids {sorted(ids)}")
        if slot <= judged_until and slot not in wanted.get(name, set()):
            outcome.unexpected.append(f"{name}@{iso(slot)} was published but is not expected")
    for name, ts in sorted(wanted.items()):
        for slot in sorted(ts):
            if (name, slot) not in ids_of:
                outcome.lost.append(f"{name}@{iso(slot)} never reached the broker")

    lags = []
    for key, at in first_at.items():
        if at < key[1] - early:
            outcome.wrong.append(f"{key[0]}@{iso(key[1])} ran {key[1] - at:.3f} s before its slot")
        if key[1] in wanted.get(key[0], set()) and key not in excluded:
            lags.append(at - key[1])
    lags.sort()
    if lags:
        outcome.worst_lag, outcome.median_lag = lags[-1], lags[len(lags) // 2]

    for task_id, got in sorted(copies.items()):
        if len(got) < 2:
            continue
        placed = sorted(
            (Copy(m.sent_at, m.published_by) for m in got if m.sent_at is not None),
            key=lambda c: c.at,
        )
        around = [
            f"{e.what} {e.proc} {hms(e.at)}"
            for e in events
            if placed and placed[0].at - lease <= e.at <= placed[-1].at and e.what != "start"
        ]
        m = got[0]
        text = (
            f"{m.schedule}@{iso(m.slot or 0)} id {task_id} published {len(got)} times: "
            + ", ".join(f"{hms(c.at)} by {c.by or '?'}" for c in placed)
            + f" [meanwhile: {', '.join(around) or 'nothing'}]"
        )
        outcome.repeats.append(text)
        if not _documented_window(placed, events, lease):
            outcome.unexplained_repeats.append(text)
    return outcome
