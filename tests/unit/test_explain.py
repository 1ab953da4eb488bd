"""Why a slot did or did not fire (``core/explain.py``): each verdict, from the record and the
definition."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

import pytest

from celery_dbeat.core.calendars import Calendar
from celery_dbeat.core.explain import Verdict, explain
from celery_dbeat.core.timing import CronSpec, Timing
from tests.unit.conftest import utc

NOW = utc("2024-06-10T12:30Z")
JUNE_1 = utc("2024-06-01T00:00Z")
NOON = utc("2024-06-10T12:00Z")
TEN = utc("2024-06-10T10:00Z")
HOURLY = Timing(CronSpec.parse("0 * * * *", "UTC"))


@dataclass(frozen=True)
class Schedule:
    name: str = "report"
    uid: str | None = "0" * 32
    enabled: bool = True
    created_at: datetime = JUNE_1
    updated_at: datetime = JUNE_1
    run_count: int = 10
    max_runs: int | None = None
    last_slot: datetime | None = NOON
    last_error: str | None = None
    pause_note: str | None = None
    paused_at: datetime | None = None
    misfire_policy: str | None = None
    misfire_grace: float | None = None
    overlap_policy: str | None = None
    jitter: float | None = None
    pruned_until: datetime | None = None


@dataclass(frozen=True)
class Fire:
    slot: datetime
    status: str = "sent"
    slot_count: int = 1
    first_slot: datetime | None = None
    beat: str | None = "beat-a"
    recorded_at: datetime = TEN
    sent_at: datetime | None = None
    error: str | None = None
    calendar: str | None = None
    run_status: str | None = None
    task_id: str | None = "t"
    origin: str | None = None


@dataclass(frozen=True)
class Entry:
    at: datetime
    action: str
    actor: str = "alice"
    surface: str = "cli"
    changes: dict[str, list[Any]] = field(default_factory=dict)


def test_a_sent_slot_names_its_beat_and_lag() -> None:
    slot = utc("2024-06-10T10:00Z")
    fire = Fire(slot, sent_at=slot + timedelta(seconds=1.5), run_status="succeeded")
    said = explain(Schedule(), HOURLY, slot, now=NOW, fires=[fire])
    assert said.verdict is Verdict.SENT
    assert said.details["beat"] == "beat-a"
    assert said.details["lag"] == timedelta(seconds=1.5)
    assert said.sentence == (
        "Sent by beat beat-a at 2024-06-10T10:00:01.500000Z, 1.5s after its slot; "
        "its run succeeded."
    )


def test_a_sent_slot_with_jitter_says_when_it_was_due() -> None:
    slot = utc("2024-06-10T10:00Z")
    said = explain(Schedule(jitter=600), HOURLY, slot, now=NOW, fires=[Fire(slot, sent_at=slot)])
    due = said.details["due_at"]
    assert slot < due < slot + timedelta(seconds=600)
    assert "moved by jitter" in said.sentence


@pytest.mark.parametrize(
    ("fire", "verdict", "words"),
    [
        pytest.param(Fire(utc("2024-06-10T10:00Z"), "pending"), Verdict.PENDING, "not sent yet"),
        pytest.param(Fire(utc("2024-06-10T10:00Z"), "queued"), Verdict.QUEUED, "spare capacity"),
        pytest.param(
            Fire(utc("2024-06-10T10:00Z"), "skipped", calendar="holidays"),
            Verdict.CALENDAR,
            "calendar 'holidays'",
        ),
        pytest.param(Fire(utc("2024-06-10T10:00Z"), "overlap"), Verdict.OVERLAP, "previous run"),
        pytest.param(Fire(utc("2024-06-10T10:00Z"), "buffered"), Verdict.OVERLAP, "held until"),
        pytest.param(
            Fire(utc("2024-06-10T10:00Z"), "failed", error="kwargs: bad JSON"),
            Verdict.ERROR,
            "set aside in error: kwargs: bad JSON",
        ),
    ],
)
def test_a_recorded_slot_says_what_its_record_says(
    fire: Fire, verdict: Verdict, words: str
) -> None:
    said = explain(Schedule(), HOURLY, fire.slot, now=NOW, fires=[fire])
    assert said.verdict is verdict
    assert words in said.sentence


def test_a_slot_missed_in_an_outage_names_the_outage_and_the_policy() -> None:
    # SEMANTICS' canonical check: beats down 09:59:30 to 13:10, policy latest: 10:00..12:00
    # skipped as one record, 13:00 sent.
    skipped = Fire(
        utc("2024-06-10T12:00Z"),
        "skipped",
        slot_count=3,
        first_slot=utc("2024-06-10T10:00Z"),
        recorded_at=utc("2024-06-10T13:10Z"),
    )
    before = Fire(utc("2024-06-10T09:00Z"), sent_at=utc("2024-06-10T09:00:01Z"))
    said = explain(
        Schedule(misfire_policy="latest"),
        HOURLY,
        utc("2024-06-10T11:00Z"),
        now=utc("2024-06-10T13:30Z"),
        fires=[skipped],
        previous=before,
    )
    assert said.verdict is Verdict.SKIPPED
    assert said.details["outage_from"] == utc("2024-06-10T09:00:01Z")
    assert said.details["outage_until"] == utc("2024-06-10T13:10Z")
    assert "misfire policy (latest)" in said.sentence
    assert "3 slots missed together" in said.sentence


def test_a_dropped_slot_names_the_grace_window() -> None:
    slot = utc("2024-06-10T10:00Z")
    said = explain(
        Schedule(misfire_grace=5400),
        HOURLY,
        slot,
        now=NOW,
        fires=[Fire(slot, "dropped", recorded_at=utc("2024-06-10T13:10Z"))],
    )
    assert said.verdict is Verdict.DROPPED
    assert "grace window (1h30m)" in said.sentence


def test_an_instant_that_is_no_slot_gets_the_nearest_slots() -> None:
    said = explain(Schedule(), HOURLY, utc("2024-06-10T10:17Z"), now=NOW)
    assert said.verdict is Verdict.NOT_A_SLOT
    assert said.nearest == (utc("2024-06-10T10:00Z"), utc("2024-06-10T11:00Z"))
    assert said.as_json()["nearest"] == {
        "before": "2024-06-10T10:00:00Z",
        "after": "2024-06-10T11:00:00Z",
    }


def test_the_second_copy_of_a_repeated_hour_is_no_slot_and_says_why() -> None:
    timing = Timing(CronSpec.parse("30 1 * * *", "America/New_York"))
    said = explain(
        Schedule(created_at=utc("2024-01-01T00:00Z")),
        timing,
        utc("2024-11-03T06:30Z"),
        now=NOW,
    )
    assert said.verdict is Verdict.NOT_A_SLOT
    assert said.nearest == (utc("2024-11-03T05:30Z"), utc("2024-11-04T06:30Z"))
    assert "happened twice" in said.sentence
    assert "first only" in said.sentence


def test_a_slot_moved_by_a_dst_gap_says_so() -> None:
    timing = Timing(CronSpec.parse("30 2 * * *", "America/New_York"))
    slot = utc("2024-03-10T07:00Z")
    said = explain(
        Schedule(created_at=utc("2024-01-01T00:00Z"), last_slot=utc("2024-06-10T06:30Z")),
        timing,
        slot,
        now=NOW,
        fires=[Fire(slot, sent_at=slot)],
    )
    assert said.verdict is Verdict.SENT
    assert [n.kind.value for n in said.dst] == ["gap"]
    assert "moved to the end of the gap" in said.sentence


def test_unrecorded_slots_say_why_from_the_definition_and_state() -> None:
    base = Schedule()

    def verdict(schedule: Schedule, slot: str, **kw: Any) -> Verdict:
        return explain(schedule, kw.pop("timing", HOURLY), utc(slot), now=NOW, **kw).verdict

    assert verdict(base, "2024-06-10T14:00Z") is Verdict.NOT_YET_DUE
    assert verdict(base, "2024-05-01T00:00Z") is Verdict.BEFORE_CREATED
    bounded = Timing(HOURLY.spec, end_at=utc("2024-06-10T11:00Z"))
    assert verdict(base, "2024-06-10T14:00Z", timing=bounded) is Verdict.OUTSIDE_BOUNDS
    finished = replace(base, max_runs=10, last_slot=utc("2024-06-10T09:00Z"))
    assert verdict(finished, "2024-06-10T10:00Z") is Verdict.MAX_RUNS
    broken = replace(base, last_error="bad zone", last_slot=utc("2024-06-10T09:00Z"))
    assert verdict(broken, "2024-06-10T10:00Z") is Verdict.ERROR
    holidays = Calendar.create("holidays", dates="2024-06-11")
    assert verdict(base, "2024-06-11T10:00Z", calendar=holidays) is Verdict.CALENDAR
    behind = replace(base, last_slot=utc("2024-06-10T09:00Z"))
    assert verdict(behind, "2024-06-10T11:00Z") is Verdict.DUE
    pruned = replace(base, pruned_until=utc("2024-06-05T00:00Z"))
    assert verdict(pruned, "2024-06-04T00:00Z") is Verdict.NO_RECORD


def test_a_slot_in_a_pause_names_who_paused_and_who_resumed() -> None:
    trail = [
        Entry(utc("2024-06-10T09:30Z"), "pause", changes={"pause_note": [None, "deploy"]}),
        Entry(utc("2024-06-10T11:30Z"), "resume", actor="bob"),
    ]
    said = explain(Schedule(), HOURLY, utc("2024-06-10T10:00Z"), now=NOW, audit=trail)
    assert said.verdict is Verdict.PAUSED
    assert said.sentence == (
        "Not fired: paused by alice (cli) at 2024-06-10T09:30:00Z: 'deploy'; "
        "resumed by bob at 2024-06-10T11:30:00Z without catching it up."
    )
    after = explain(Schedule(), HOURLY, utc("2024-06-10T12:00Z"), now=NOW, audit=trail)
    assert after.verdict is not Verdict.PAUSED


def test_a_future_slot_of_a_paused_schedule_waits_for_the_resume() -> None:
    paused = Schedule(enabled=False, paused_at=utc("2024-06-10T12:10Z"), pause_note="alice: db")
    said = explain(paused, HOURLY, utc("2024-06-10T13:00Z"), now=NOW)
    assert said.verdict is Verdict.PAUSED
    assert said.sentence.startswith("Will not fire: paused at 2024-06-10T12:10:00Z")


def test_a_recorded_instant_is_explained_by_its_record_after_an_edit_made_it_no_slot() -> None:
    slot = utc("2024-06-10T10:00Z")
    half_past = Timing(CronSpec.parse("30 * * * *", "UTC"))
    said = explain(Schedule(), half_past, slot, now=NOW, fires=[Fire(slot, sent_at=slot)])
    assert said.verdict is Verdict.SENT
    assert explain(Schedule(), half_past, slot, now=NOW).verdict is Verdict.NOT_A_SLOT
