"""DST shown before it bites: each spec's notes of the wall times a DST change moved or repeated,
on ``SEMANTICS.md``'s examples ("Time zones and DST")."""

from __future__ import annotations

from datetime import datetime, timedelta
from itertools import islice

import pytest

from celery_dbeat.core.timing import (
    CronSpec,
    DstChange,
    IntervalSpec,
    OnceSpec,
    SolarSpec,
    Spec,
    Timing,
)
from tests.unit.conftest import utc, utcs


def _notes(expr: str, zone: str, day: str, **policies: str) -> list[tuple[str, str, list[str]]]:
    spec = CronSpec.parse(expr, zone, **policies)
    start = utc(f"{day}T00:00Z") - timedelta(days=1)
    return [
        (note.kind.value, f"{note.wall:%H:%M}", [f"{f:%H:%MZ}" for f in note.fires])
        for note in spec.dst_notes(start, start + timedelta(days=3))
    ]


@pytest.mark.parametrize(
    ("expr", "zone", "day", "policies", "expected"),
    [
        pytest.param(
            "30 2 * * *", "America/New_York", "2024-03-10", {}, [("gap", "02:30", ["07:00Z"])],
            id="ny-gap-fires-at-the-end-of-the-gap",
        ),
        pytest.param(
            "30 2 * * *", "America/New_York", "2024-11-03", {}, [], id="ny-0230-not-in-the-fold"
        ),
        pytest.param(
            "30 1 * * *", "America/New_York", "2024-11-03", {}, [("fold", "01:30", ["05:30Z"])],
            id="ny-fold-fires-at-the-first",
        ),
        pytest.param(
            "0 * * * *", "America/New_York", "2024-11-03", {},
            [("fold", "01:00", ["05:00Z", "06:00Z"])], id="ny-wildcard-fold-fires-both",
        ),
        pytest.param(
            "0 * * * *", "America/New_York", "2024-03-10", {}, [("gap", "02:00", [])],
            id="ny-wildcard-gap-minute-does-not-exist",
        ),
        pytest.param(
            "30 1 * * *", "Europe/London", "2024-03-31", {}, [("gap", "01:30", ["01:00Z"])],
            id="london-gap",
        ),
        pytest.param(
            "30 1 * * *", "Europe/London", "2024-10-27", {}, [("fold", "01:30", ["00:30Z"])],
            id="london-fold",
        ),
        pytest.param(
            "30 2 * * *", "America/New_York", "2024-03-10", {"dst_gap": "shift"},
            [("gap", "02:30", ["07:30Z"])], id="shift",
        ),
        pytest.param(
            "30 1 * * *", "America/New_York", "2024-11-03", {"dst_fold": "second"},
            [("fold", "01:30", ["06:30Z"])], id="second",
        ),
        pytest.param("30 1 * * *", "UTC", "2024-03-31", {}, [], id="utc-has-none"),
    ],
)  # fmt: skip
def test_a_cron_notes_each_wall_time_a_dst_change_touched(
    expr: str,
    zone: str,
    day: str,
    policies: dict[str, str],
    expected: list[tuple[str, str, list[str]]],
) -> None:
    assert _notes(expr, zone, day, **policies) == expected


@pytest.mark.parametrize(
    ("expr", "zone", "start"),
    [
        pytest.param("30 2 * * *", "America/New_York", "2024-03-09T00:00Z", id="gap"),
        pytest.param("30 1 * * *", "America/New_York", "2024-11-02T00:00Z", id="fold-first"),
        pytest.param("0 * * * *", "America/New_York", "2024-11-03T00:00Z", id="fold-both"),
        pytest.param("*/20 1,2 * * *", "Europe/London", "2024-03-30T00:00Z", id="collapsed"),
    ],
)
def test_every_fire_a_note_names_is_a_slot_the_spec_yields(
    expr: str, zone: str, start: str
) -> None:
    spec = CronSpec.parse(expr, zone)
    after = utc(start)
    slots = set(islice(spec.slots_after(after), 200))
    notes = spec.dst_notes(after, after + timedelta(days=3))
    assert notes
    assert {fire for note in notes for fire in note.fires} <= slots


def test_the_sentences_say_where_the_wall_time_fires() -> None:
    gap = CronSpec.parse("30 2 * * *", "America/New_York").dst_notes(
        utc("2024-03-09T00:00Z"), utc("2024-03-12T00:00Z")
    )
    assert gap[0].text == (
        "02:30 on 2024-03-10 did not exist in America/New_York (clocks went forward): moved to "
        "the end of the gap, 03:00 EDT (2024-03-10T07:00:00Z) (dst_gap=gap_end)"
    )
    fold = CronSpec.parse("30 1 * * *", "America/New_York").dst_notes(
        utc("2024-11-02T00:00Z"), utc("2024-11-04T00:00Z")
    )
    assert fold[0].kind is DstChange.FOLD
    assert fold[0].occurrences == tuple(utcs("2024-11-03T05:30Z", "2024-11-03T06:30Z"))
    assert fold[0].text == (
        "01:30 on 2024-11-03 happened twice in America/New_York (clocks went back): fires at the "
        "first only, 01:30 EDT (2024-11-03T05:30:00Z), not at 01:30 EST (2024-11-03T06:30:00Z) "
        "(dst_fold=first)"
    )


def test_a_year_of_a_zone_with_dst_has_one_gap_and_one_fold() -> None:
    spec = CronSpec.parse("30 1 * * *", "Europe/Paris")
    notes = spec.dst_notes(utc("2025-01-01T00:00Z"), utc("2026-01-01T00:00Z"))
    assert [n.kind for n in notes] == []  # 01:30 is before Paris' 02:00-03:00 changes
    notes = CronSpec.parse("30 2 * * *", "Europe/Paris").dst_notes(
        utc("2025-01-01T00:00Z"), utc("2026-01-01T00:00Z")
    )
    assert [(n.kind, n.wall.date().isoformat()) for n in notes] == [
        (DstChange.GAP, "2025-03-30"),
        (DstChange.FOLD, "2025-10-26"),
    ]


@pytest.mark.parametrize(
    "spec",
    [
        pytest.param(IntervalSpec.parse(3600, utc("2024-01-01T00:00Z")), id="interval"),
        pytest.param(OnceSpec(utc("2024-03-10T07:00Z")), id="once"),
        pytest.param(SolarSpec.parse("sunrise", 40.7, -74.0), id="solar"),
    ],
)
def test_specs_of_elapsed_time_have_no_notes(spec: Spec) -> None:
    assert spec.dst_notes(utc("2024-01-01T00:00Z"), utc("2025-01-01T00:00Z")) == []


def test_the_bounds_keep_only_their_notes() -> None:
    spec = CronSpec.parse("30 2 * * *", "America/New_York")
    year = (utc("2024-01-01T00:00Z"), utc("2025-01-01T00:00Z"))
    assert len(Timing(spec).dst_notes(*year)) == 1
    assert Timing(spec, end_at=utc("2024-03-10T06:59Z")).dst_notes(*year) == []
    assert Timing(spec, start_at=utc("2024-03-10T07:00Z")).dst_notes(*year) != []


def test_is_slot_tells_a_slot_from_another_instant() -> None:
    timing = Timing(CronSpec.parse("30 1 * * *", "America/New_York"))
    assert timing.is_slot(utc("2024-11-03T05:30Z"))
    assert not timing.is_slot(utc("2024-11-03T06:30Z"))
    assert not timing.is_slot(datetime.fromisoformat("2024-11-03T05:31:00+00:00"))


def test_dst_marks_name_the_notes_of_each_slot_however_far_apart_the_slots() -> None:
    yearly = Timing(CronSpec.parse("30 2 10 3 *", "America/New_York"))  # 10 March, 02:30
    slots = yearly.preview(utc("2020-01-01T00:00Z"), 25)
    marks = yearly.dst_marks(slots)
    moved = [slot for slot, dst in zip(slots, marks, strict=True) if dst]
    # The second Sunday of March (spring forward at 02:00) is the 10th in 2024, 2030, 2041.
    assert [slot.year for slot in moved] == [2024, 2030, 2041]
    assert {f"{slot:%H:%M}" for slot in moved} == {"07:00"}  # the gap's end, 03:00 EDT
