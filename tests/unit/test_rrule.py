"""``rrule`` specs against python-dateutil, the oracle: the same wall times, resolved to UTC by
SEMANTICS.md's rules for fixed-time cron expressions (a wall time in a spring-forward gap fires
once at the end of the gap; one that happens twice fires once, at its first occurrence; several
that resolve to one instant fire once), across DST changes in several zones."""

from __future__ import annotations

import itertools
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest
from dateutil.rrule import rrulestr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from celery_dbeat import Rrule
from celery_dbeat.core.definitions import Definition
from celery_dbeat.core.errors import ValidationError
from celery_dbeat.core.timing import build_timing
from celery_dbeat.core.timing.rruletext import HORIZON_YEARS, MAX_COUNT

UTC = timezone.utc
ANCHOR = datetime(2024, 1, 10, 15, 45, tzinfo=UTC)
#: Zones with DST changes of an hour each way, half an hour (Lord Howe), southern seasons
#: (Santiago, Sydney) and changes at midnight (Santiago, Havana).
ZONES = (
    "America/New_York",
    "Europe/London",
    "Australia/Lord_Howe",
    "America/Santiago",
    "Australia/Sydney",
    "America/Havana",
    "UTC",
)


def slots(text: str, after: datetime, count: int, tz: str | None = None) -> list[datetime]:
    timing = build_timing(kind="rrule", rrule=text, timezone=tz, anchor_at=ANCHOR)
    return list(itertools.islice(timing.slots_after(after), count))


def oracle(text: str, zone: str, after: datetime, count: int) -> list[datetime]:
    """dateutil's wall times (from DTSTART;TZID=zone), each resolved by SEMANTICS.md's rules
    for fixed-time expressions, found minute by minute rather than by the code under test."""
    tz = ZoneInfo(zone)
    rule = rrulestr(text, forceset=True, tzids={zone: tz})
    found: list[datetime] = []
    for aware in rule:
        wall = aware.replace(tzinfo=None)
        instant = _first_occurrence_or_gap_end(wall, tz)
        if instant <= after or (found and instant == found[-1]):
            continue
        found.append(instant)
        if len(found) == count:
            break
    return found


def _first_occurrence_or_gap_end(wall: datetime, tz: ZoneInfo) -> datetime:
    def exists(w: datetime) -> bool:
        aware = w.replace(tzinfo=tz, fold=0)
        return aware.astimezone(UTC).astimezone(tz).replace(tzinfo=None) == w

    probe = wall
    while not exists(probe):  # in a gap: the first wall minute after it that exists
        probe = (probe + timedelta(minutes=1)).replace(second=0)
    return probe.replace(tzinfo=tz, fold=0).astimezone(UTC)


# SEMANTICS.md's examples, said as rules ---------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "after", "expected"),
    [
        pytest.param(
            "DTSTART;TZID=America/New_York:20240301T023000\nRRULE:FREQ=DAILY",
            datetime(2024, 3, 9, 12, tzinfo=UTC),
            ["2024-03-10T07:00:00+00:00", "2024-03-11T06:30:00+00:00"],
            id="gap-fires-once-at-its-end",
        ),
        pytest.param(
            "DTSTART;TZID=America/New_York:20240301T013000\nRRULE:FREQ=DAILY",
            datetime(2024, 11, 3, tzinfo=UTC),
            ["2024-11-03T05:30:00+00:00", "2024-11-04T06:30:00+00:00"],
            id="fold-fires-once-at-its-first",
        ),
        pytest.param(
            "DTSTART;TZID=Europe/London:20240301T013000\nRRULE:FREQ=DAILY",
            datetime(2024, 3, 30, 12, tzinfo=UTC),
            ["2024-03-31T01:00:00+00:00", "2024-04-01T00:30:00+00:00"],
            id="london-gap",
        ),
        pytest.param(
            "DTSTART;TZID=Europe/London:20240301T013000\nRRULE:FREQ=DAILY",
            datetime(2024, 10, 26, 12, tzinfo=UTC),
            ["2024-10-27T00:30:00+00:00", "2024-10-28T01:30:00+00:00"],
            id="london-fold",
        ),
        pytest.param(
            # 02:00 does not exist on 2024-03-10: its gap end is 03:00, the next slot too.
            "DTSTART;TZID=America/New_York:20240310T000000\nRRULE:FREQ=HOURLY;COUNT=5",
            datetime(2024, 3, 9, tzinfo=UTC),
            [
                "2024-03-10T05:00:00+00:00",
                "2024-03-10T06:00:00+00:00",
                "2024-03-10T07:00:00+00:00",
                "2024-03-10T08:00:00+00:00",
            ],
            id="collapsed-slots-fire-once",
        ),
    ],
)
def test_dst_rules_of_fixed_time_cron(text: str, after: datetime, expected: list[str]) -> None:
    assert [s.isoformat() for s in slots(text, after, len(expected) + 1)][: len(expected)] == (
        expected
    )
    assert [s.isoformat() for s in slots(text, after, len(expected))] == expected


def test_the_last_business_day_of_the_month_in_london() -> None:
    rule = "FREQ=MONTHLY;BYDAY=MO,TU,WE,TH,FR;BYSETPOS=-1;BYHOUR=18;BYMINUTE=0"
    found = slots(rule, datetime(2026, 1, 1, tzinfo=UTC), 5, "Europe/London")
    assert [s.isoformat() for s in found] == [
        "2026-01-30T18:00:00+00:00",  # Friday
        "2026-02-27T18:00:00+00:00",
        "2026-03-31T17:00:00+00:00",  # British Summer Time
        "2026-04-30T17:00:00+00:00",
        "2026-05-29T17:00:00+00:00",
    ]


def test_ordinal_weekdays_negative_month_days_several_rules_dates_and_exclusions() -> None:
    text = (
        "DTSTART;TZID=Europe/Paris:20260101T090000\n"
        "RRULE:FREQ=MONTHLY;BYDAY=2TU\n"  # the second Tuesday
        "RRULE:FREQ=MONTHLY;BYMONTHDAY=-1;BYHOUR=12\n"  # the last day, at noon
        "RDATE;TZID=Europe/Paris:20260115T070000\n"
        "RDATE:20260116T000000Z\n"
        "EXDATE;TZID=Europe/Paris:20260210T090000\n"
    )
    after = datetime(2026, 1, 1, tzinfo=UTC)
    assert [s.isoformat() for s in slots(text, after, 6)] == [
        "2026-01-13T08:00:00+00:00",
        "2026-01-15T06:00:00+00:00",
        "2026-01-16T00:00:00+00:00",
        "2026-01-31T11:00:00+00:00",
        "2026-02-28T11:00:00+00:00",  # February's second Tuesday is excluded
        "2026-03-10T08:00:00+00:00",
    ]


def test_count_and_until_end_the_rule() -> None:
    counted = "DTSTART;TZID=Europe/London:20260105T090000\nRRULE:FREQ=WEEKLY;COUNT=3"
    assert len(slots(counted, datetime(2026, 1, 1, tzinfo=UTC), 10)) == 3
    assert slots(counted, datetime(2026, 1, 13, tzinfo=UTC), 10) == [
        datetime(2026, 1, 19, 9, tzinfo=UTC)
    ]
    until = "DTSTART;TZID=Europe/London:20260105T090000\nRRULE:FREQ=DAILY;UNTIL=20260107T090000Z"
    assert len(slots(until, datetime(2026, 1, 1, tzinfo=UTC), 10)) == 3


@pytest.mark.parametrize(
    "rule", ["FREQ=HOURLY;INTERVAL=5", "FREQ=WEEKLY;INTERVAL=3", "FREQ=MONTHLY", "FREQ=YEARLY"]
)
def test_without_dtstart_a_rule_starts_on_monday_1_january_2001_in_its_zone(rule: str) -> None:
    """What the rule leaves out and its INTERVAL's phase come from 2001-01-01T00:00 local: the
    same slots whenever the schedule is made, the past ones too (a backfill finds them)."""
    zone = "America/New_York"
    after = datetime(2024, 3, 1, tzinfo=UTC)
    dated = f"DTSTART;TZID={zone}:20010101T000000\nRRULE:{rule}"
    assert slots(rule, after, 10, zone) == oracle(dated, zone, after, 10)
    assert slots(rule, datetime(2002, 1, 1, tzinfo=UTC), 1, zone)  # before any schedule existed


def test_count_needs_a_dtstart() -> None:
    with pytest.raises(ValidationError, match="COUNT counts from DTSTART: give one"):
        slots("FREQ=DAILY;COUNT=3", ANCHOR, 1)


def test_the_zone_of_dtstart_is_the_schedules_and_must_agree_with_it() -> None:
    text = "DTSTART;TZID=Asia/Tokyo:20260101T090000\nRRULE:FREQ=DAILY"
    assert Rrule(text).fields()["timezone"] == "Asia/Tokyo"
    assert slots(text, datetime(2025, 12, 31, tzinfo=UTC), 1, "Asia/Tokyo") == [
        datetime(2026, 1, 1, 0, tzinfo=UTC)
    ]
    with pytest.raises(ValidationError, match="DTSTART is in Asia/Tokyo but the schedule's"):
        slots(text, ANCHOR, 1, "Europe/Paris")


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "must be an RFC 5545 rule"),
        ("FREQ=FORTNIGHTLY", "FREQ must be one of YEARLY"),
        ("DTSTART:20260101T000000\nRRULE:FREQ=DAILY;COUNT=2;UNTIL=20270101T000000Z", "both COUNT"),
        (f"DTSTART:20260101T000000\nRRULE:FREQ=DAILY;COUNT={MAX_COUNT + 1}", "COUNT must lie"),
        ("FREQ=DAILY;INTERVAL=0", "INTERVAL must be 1 or more"),
        ("FREQ=HOURLY;BYHOUR=25", "BYHOUR=25: each value must be a whole number from 0 to 23"),
        ("FREQ=MONTHLY;BYMONTHDAY=0", "from -31 to 31, not 0"),
        ("FREQ=WEEKLY;BYDAY=XX", "rule 'FREQ=WEEKLY;BYDAY=XX'"),
        ("FREQ=DAILY;FREQ=WEEKLY", "rule part FREQ is given twice"),
        ("EXRULE:FREQ=DAILY", "EXRULE is deprecated by RFC 5545"),
        ("RRULE:FREQ=DAILY\nRDATE;VALUE=PERIOD:20260101T000000Z/PT1H", "periods are not supported"),
        ("DTSTART:2026-01-01\nRRULE:FREQ=DAILY", "is not a date-time such as"),
        ("DTSTART:20260101T000000\nDTSTART:20260102T000000\nRRULE:FREQ=DAILY", "more than one"),
        ("DTSTART:20260101T000000", "has no RRULE and no RDATE"),
        ("VEVENT:X\nRRULE:FREQ=DAILY", "has a VEVENT line"),
        ("FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30", f"no instant within {HORIZON_YEARS} years"),
        ("FREQ=MINUTELY;BYMONTH=2;BYMONTHDAY=31", f"no instant within {HORIZON_YEARS} years"),
        ("FREQ=HOURLY;INTERVAL=2;BYHOUR=1,3", "generates an empty set"),
        ("x" * 5000, "is longer than 4000 characters"),
    ],
)
def test_a_bad_rule_is_refused_in_one_line_naming_the_field(text: str, problem: str) -> None:
    with pytest.raises(ValidationError) as raised:
        Definition.create(name="r", task="t", schedule=Rrule(text))
    assert raised.value.field == "rrule"
    assert problem in str(raised.value)
    assert "\n" not in raised.value.problem


def test_a_rule_far_from_its_dtstart_is_walked_from_a_later_period() -> None:
    # Minutes since 2000: walked from DTSTART, every call would take seconds.
    text = "DTSTART;TZID=Europe/Paris:20000101T000700\nRRULE:FREQ=MINUTELY;INTERVAL=7"
    after = datetime(2026, 12, 7, tzinfo=UTC)
    first = slots(text, after, 1)[0]
    wall = first.astimezone(ZoneInfo("Europe/Paris")).replace(tzinfo=None)
    assert (wall - datetime(2000, 1, 1, 0, 7)) % timedelta(minutes=7) == timedelta(0)
    assert first - after <= timedelta(minutes=7)


# Against the oracle ----------------------------------------------------------------------------

_FREQS = ("YEARLY", "MONTHLY", "WEEKLY", "DAILY", "HOURLY", "MINUTELY")
_DAYS = ("MO", "TU", "WE", "TH", "FR", "SA", "SU")


@st.composite
def rules(draw: st.DrawFn) -> tuple[str, str, datetime]:
    zone = draw(st.sampled_from(ZONES))
    freq = draw(st.sampled_from(_FREQS))
    start = draw(st.datetimes(datetime(2019, 1, 1), datetime(2026, 12, 31))).replace(microsecond=0)
    parts = [f"FREQ={freq}", f"INTERVAL={draw(st.integers(1, 3))}"]
    if freq in ("YEARLY", "MONTHLY") and draw(st.booleans()):
        ordinal = draw(st.sampled_from(["", "1", "2", "-1", "-2"]))
        parts.append(f"BYDAY={ordinal}{draw(st.sampled_from(_DAYS))}")
    elif freq in ("MONTHLY", "YEARLY") and draw(st.booleans()):
        days = draw(
            st.lists(
                st.sampled_from([1, 2, 15, 28, 30, 31, -1, -2]), min_size=1, max_size=3, unique=True
            )
        )
        parts.append("BYMONTHDAY=" + ",".join(map(str, days)))
    elif draw(st.booleans()):
        parts.append(
            "BYDAY="
            + ",".join(draw(st.lists(st.sampled_from(_DAYS), min_size=1, max_size=4, unique=True)))
        )
    if freq in ("YEARLY", "MONTHLY", "WEEKLY", "DAILY") and draw(st.booleans()):
        # Hours around every zone's changes: 0-3 (most), 23 (Havana, Santiago).
        hours = draw(
            st.lists(st.sampled_from([0, 1, 2, 3, 12, 23]), min_size=1, max_size=3, unique=True)
        )
        parts.append("BYHOUR=" + ",".join(map(str, sorted(hours))))
        parts.append(f"BYMINUTE={draw(st.sampled_from([0, 15, 30, 45]))}")
    if freq in ("MONTHLY", "YEARLY") and "BYDAY=" in ";".join(parts) and draw(st.booleans()):
        parts.append(f"BYSETPOS={draw(st.sampled_from([1, -1, 2]))}")
    if draw(st.booleans()):
        parts.append(f"COUNT={draw(st.integers(1, 40))}")
    text = f"DTSTART;TZID={zone}:{start:%Y%m%dT%H%M%S}\nRRULE:{';'.join(parts)}"
    # Start looking from a little after DTSTART (fine rules) to a few years after (coarse).
    reach = {"YEARLY": 3000, "MONTHLY": 1500, "WEEKLY": 400, "DAILY": 200, "HOURLY": 20}
    later = draw(st.integers(0, reach.get(freq, 2)))
    after = start.replace(tzinfo=ZoneInfo(zone)).astimezone(UTC) + timedelta(days=later)
    return text, zone, after


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rules())
def test_slots_are_dateutils_wall_times_resolved_by_the_fixed_time_dst_rules(
    case: tuple[str, str, datetime],
) -> None:
    text, zone, after = case
    try:
        found = slots(text, after, 12)
    except ValidationError as exc:
        refused: ValidationError | None = exc
    else:
        refused = None
    if refused is not None:
        # Refused only when dateutil has no wall time either (within the horizon).
        assert "no instant within" in str(refused) or "empty set" in str(refused), refused
        return
    assert found == oracle(text, zone, after, 12), text


def test_every_zone_crosses_its_changes() -> None:
    """A daily rule at each hour and half hour of the night, over two years in every zone, is
    the oracle's: every gap and fold of each zone is crossed."""
    for zone, hour, minute in itertools.product(ZONES, range(4), (0, 30)):
        text = f"DTSTART;TZID={zone}:20240101T{hour:02d}{minute:02d}00\nRRULE:FREQ=DAILY"
        after = datetime(2024, 1, 1, tzinfo=UTC)
        assert slots(text, after, 731) == oracle(text, zone, after, 731), text


def test_dst_notes_mark_the_wall_times_a_change_moved_or_repeated() -> None:
    text = "DTSTART;TZID=America/New_York:20240301T013000\nRRULE:FREQ=DAILY;BYHOUR=1,2"
    timing = build_timing(kind="rrule", rrule=text, anchor_at=ANCHOR)

    spring = timing.dst_notes(datetime(2024, 3, 9, tzinfo=UTC), datetime(2024, 3, 11, tzinfo=UTC))
    autumn = timing.dst_notes(datetime(2024, 11, 2, tzinfo=UTC), datetime(2024, 11, 4, tzinfo=UTC))

    assert [(n.kind.value, f"{n.wall:%H:%M}", n.fires) for n in spring] == [
        ("gap", "02:30", (datetime(2024, 3, 10, 7, tzinfo=UTC),))
    ]
    assert [(n.kind.value, f"{n.wall:%H:%M}", n.fires) for n in autumn] == [
        ("fold", "01:30", (datetime(2024, 11, 3, 5, 30, tzinfo=UTC),))
    ]
    # Each note's fire is a slot of the schedule.
    for note in spring + autumn:
        assert timing.first_after(note.fires[0] - timedelta(seconds=1)) == note.fires[0]
