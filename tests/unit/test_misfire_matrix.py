"""The misfire matrix through :func:`plan` (SEMANTICS.md "Misfires").

Every policy x every spec kind x 0, 1 and 100 missed slots x with and without a grace window,
planned from a stored row so the real spec code walks the slots. Expectations are hour
arithmetic written here, never a call to ``resolve``:

* the schedule's next slot is ``T0`` = 10:00 on 2024-01-01 and the beat has been down since;
* ``missed = 0``: beat is back at T0 + 3 s, so T0 is merely late (within ``eps``) and fires;
* ``missed = n``: beat is back at T0 + (n - 1) h + 10 min, so slots T0 ... T0 + (n - 1) h are
  missed (the newest one 10 min old) and the next regular slot is T0 + n h;
* a ``once`` schedule has one slot, T0, so "100 missed" is its one slot missed by 99 h 10 min;
* the grace window W is 90 min: of the missed slots only those at most 90 min old are eligible
  (10 and 70 min old), older ones are dropped.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from celery_dbeat.core.fires import FireStatus, NewFire, ScheduleRow, fire_task_id
from celery_dbeat.core.misfire import MisfirePolicy, MisfireRules
from celery_dbeat.core.planning import plan
from tests.unit.conftest import at
from tests.unit.test_planning import UTC, row

PENDING, SKIPPED, DROPPED = FireStatus.PENDING, FireStatus.SKIPPED, FireStatus.DROPPED
DEFAULTS = MisfireRules()
HOUR = timedelta(hours=1)
T0 = at("10:00")
GRACE = timedelta(minutes=90)

#: Row fields of each spec kind; all three have T0 as a slot.
KINDS: dict[str, dict[str, Any]] = {
    "cron": {"kind": "cron", "cron": "0 * * * *", "timezone": "UTC"},
    "interval": {"kind": "interval", "cron": None, "every": 3600.0, "anchor_at": at("00:00")},
    "once": {"kind": "once", "cron": None, "run_at": T0},
}
POLICIES = ["skip", "latest", "earliest", "all"]


def hour(n: int) -> datetime:
    """The ``n``-th hourly slot from T0."""
    return T0 + n * HOUR


def now_after(missed: int) -> datetime:
    if missed == 0:
        return T0 + timedelta(seconds=3)
    return hour(missed - 1) + timedelta(minutes=10)


def schedule(kind: str, **fields: Any) -> ScheduleRow:
    return row(**{**KINDS[kind], "next_run_at": T0, **fields})


def pending(*slots: datetime) -> list[NewFire]:
    return [NewFire(slot, PENDING, fire_task_id("s", slot)) for slot in slots]


def queued(*slots: datetime) -> list[NewFire]:
    """Catch-up fires of policy ``all``, sent with the capacity on-time fires leave: one queued
    run standing for all of them (a single slot is a queued fire of its own)."""
    if len(slots) == 1:
        return [NewFire(slots[0], FireStatus.QUEUED, fire_task_id("s", slots[0]))]
    if not slots:
        return []
    return [
        NewFire(
            slots[-1], FireStatus.QUEUED, slot_count=len(slots), first_slot=slots[0], slots=slots
        )
    ]


def group(status: FireStatus, slots: list[datetime]) -> list[NewFire]:
    """The one counted row of a run of slots (none for no slots)."""
    if not slots:
        return []
    return [NewFire(slots[-1], status, slot_count=len(slots), first_slot=slots[0])]


# The matrix --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    policy: str
    kind: str
    missed: int
    grace: timedelta | None
    #: What ``plan`` must return.
    fires: list[NewFire]
    next_run_at: datetime | None

    @property
    def id(self) -> str:
        window = "w90m" if self.grace else "no-grace"
        return f"{self.policy}-{self.kind}-{self.missed}-missed-{window}"


def _expected(policy: str, kind: str, missed: int, grace: timedelta | None) -> Case:
    now = now_after(missed)
    next_run_at = None if kind == "once" else hour(max(missed, 1))
    if missed == 0:
        # On time (late by less than eps): fires whatever the policy, nothing is missed.
        return Case(policy, kind, missed, grace, pending(T0), next_run_at)
    slots = [T0] if kind == "once" else [hour(n) for n in range(missed)]
    eligible = [t for t in slots if grace is None or now - t <= grace]
    dropped = [t for t in slots if t not in eligible]
    # SEMANTICS.md policy table: what is published out of E; the rest of E is skipped.
    chosen = {
        "skip": [],
        "latest": eligible[-1:],
        "earliest": eligible[:1],
        "all": eligible,
    }[policy]
    skipped = [t for t in eligible if t not in chosen]
    published = queued(*chosen) if policy == "all" else pending(*chosen)
    fires = published + group(SKIPPED, skipped) + group(DROPPED, dropped)
    return Case(policy, kind, missed, grace, fires, next_run_at)


MATRIX = [
    _expected(policy, kind, missed, grace)
    for policy in POLICIES
    for kind in KINDS
    for missed in (0, 1, 100)
    for grace in (None, GRACE)
]


def test_the_matrix_expectations_hold_the_spots_worth_reading_by_eye() -> None:
    cases = {case.id: case for case in MATRIX}
    assert len(cases) == 72
    assert cases["latest-cron-100-missed-w90m"].fires == [
        NewFire(hour(99), PENDING, fire_task_id("s", hour(99))),
        NewFire(hour(98), SKIPPED, slot_count=1, first_slot=hour(98)),
        NewFire(hour(97), DROPPED, slot_count=98, first_slot=T0),
    ]
    assert cases["earliest-interval-100-missed-no-grace"].fires == [
        NewFire(T0, PENDING, fire_task_id("s", T0)),
        NewFire(hour(99), SKIPPED, slot_count=99, first_slot=hour(1)),
    ]
    assert cases["skip-once-100-missed-w90m"].fires == [
        NewFire(T0, DROPPED, slot_count=1, first_slot=T0)
    ]
    assert cases["all-cron-0-missed-w90m"].fires == [NewFire(T0, PENDING, fire_task_id("s", T0))]
    assert cases["all-cron-100-missed-no-grace"].next_run_at == hour(100)


@pytest.mark.parametrize("case", [pytest.param(case, id=case.id) for case in MATRIX])
def test_missed_slots_are_published_skipped_or_dropped_as_the_policy_table_says(
    case: Case,
) -> None:
    grace = None if case.grace is None else case.grace.total_seconds()
    transition = plan(
        schedule(case.kind, misfire_policy=case.policy, misfire_grace=grace),
        now_after(case.missed),
        DEFAULTS,
    )

    assert transition.error is None
    assert transition.fires == case.fires
    sent = [f for f in transition.fires if f.status in (PENDING, FireStatus.QUEUED)]
    assert transition.runs_added == sum(f.slot_count for f in sent)
    assert transition.last_slot == max(f.slot for f in transition.fires)
    assert transition.next_run_at == case.next_run_at
    assert transition.finished is (case.kind == "once")
    assert transition.due_at is None


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("policy", POLICIES)
def test_a_slot_not_yet_due_records_nothing_whatever_the_policy(policy: str, kind: str) -> None:
    transition = plan(
        schedule(kind, misfire_policy=policy), T0 - timedelta(microseconds=1), DEFAULTS
    )
    assert transition.error is None
    assert transition.fires == []
    assert transition.runs_added == 0
    assert transition.next_run_at == T0
    assert not transition.finished


# catchup_limit -----------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["cron", "interval"])
@pytest.mark.parametrize(
    ("missed", "fields", "rules", "sent", "skipped", "dropped"),
    [
        pytest.param(100, {}, DEFAULTS, range(100), [], [], id="100-missed-default-limit-100"),
        pytest.param(150, {}, DEFAULTS, range(50, 150), range(50), [], id="150-missed-limit-100"),
        pytest.param(
            100, {"catchup_limit": 10}, DEFAULTS, range(90, 100), range(90), [], id="row-limit-10"
        ),
        pytest.param(100, {"catchup_limit": 1}, DEFAULTS, [99], range(99), [], id="row-limit-1"),
        pytest.param(100, {"catchup_limit": 0}, DEFAULTS, [], range(100), [], id="row-limit-0"),
        pytest.param(
            100, {"catchup_limit": 500}, DEFAULTS, range(100), [], [], id="limit-above-missed"
        ),
        pytest.param(
            100,
            {},
            MisfireRules(MisfirePolicy.ALL, catchup_limit=3),
            range(97, 100),
            range(97),
            [],
            id="beat-default-limit-3",
        ),
        pytest.param(
            100,
            {"catchup_limit": 1, "misfire_grace": GRACE.total_seconds()},
            DEFAULTS,
            [99],
            [98],
            range(98),
            id="limit-1-within-grace-90m",
        ),
    ],
)
def test_catchup_limit_keeps_the_newest_slots_of_all_and_counts_the_rest_skipped(
    kind: str,
    missed: int,
    fields: dict[str, Any],
    rules: MisfireRules,
    sent: range | list[int],
    skipped: range | list[int],
    dropped: range | list[int],
) -> None:
    transition = plan(schedule(kind, misfire_policy="all", **fields), now_after(missed), rules)
    assert transition.error is None
    assert transition.fires == (
        queued(*(hour(n) for n in sent))
        + group(SKIPPED, [hour(n) for n in skipped])
        + group(DROPPED, [hour(n) for n in dropped])
    )
    assert transition.runs_added == len(sent)
    assert transition.last_slot == hour(missed - 1)
    assert transition.next_run_at == hour(missed)


# A cron spec fires only at matching instants ------------------------------------------------------

ZONES = ["UTC", "Asia/Kathmandu", "America/St_Johns", "Australia/Lord_Howe", "Europe/London"]


@settings(max_examples=150, deadline=None)
@given(
    created=st.datetimes(
        min_value=datetime(2020, 1, 1), max_value=datetime(2030, 1, 1), timezones=st.just(UTC)
    ),
    down_for=st.timedeltas(min_value=timedelta(0), max_value=timedelta(days=4)),
    zone=st.sampled_from(ZONES),
    policy=st.sampled_from(POLICIES),
    grace=st.one_of(st.none(), st.integers(min_value=60, max_value=3 * 86_400)),
)
def test_an_hourly_cron_only_ever_fires_on_the_hour_of_its_zone(
    created: datetime, down_for: timedelta, zone: str, policy: str, grace: int | None
) -> None:
    fields = {
        "timezone": zone,
        "misfire_policy": policy,
        "misfire_grace": grace,
        "catchup_limit": 10_000,
        "created_at": created,
    }
    first = plan(row(**fields), created, DEFAULTS)
    assert first.error is None
    assert first.fires == []
    assert first.next_run_at is not None
    assert first.next_run_at > created

    now = created + down_for
    transition = plan(row(next_run_at=first.next_run_at, **fields), now, DEFAULTS)
    assert transition.error is None
    assert transition.next_run_at is not None
    instants = [transition.next_run_at, first.next_run_at]
    for fire in transition.fires:
        instants.append(fire.slot)
        if fire.first_slot is not None:
            instants.append(fire.first_slot)
        instants += fire.slots
    for instant in instants:
        local = instant.astimezone(ZoneInfo(zone))
        assert (local.minute, local.second, local.microsecond) == (0, 0, 0), instant
    for fire in transition.fires:
        assert fire.slot <= now
        if fire.status is PENDING or (fire.status is FireStatus.QUEUED and not fire.slots):
            assert fire.task_id == fire_task_id("s", fire.slot)
    assert transition.next_run_at > now
    if zone == "UTC":
        # Exactly one slot per whole UTC hour from the first slot up to now, none left out.
        hours = 0 if now < first.next_run_at else (now - first.next_run_at) // HOUR + 1
        assert sum(f.slot_count for f in transition.fires) == hours
        assert transition.next_run_at == first.next_run_at + hours * HOUR


# Window edges ------------------------------------------------------------------------------------

US = timedelta(microseconds=1)
EPS = DEFAULTS.tolerance
W45 = timedelta(minutes=45)


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize(
    ("now", "fields", "fires"),
    [
        pytest.param(T0 + EPS, {"misfire_policy": "skip"}, pending(T0), id="exactly-eps-late"),
        pytest.param(
            T0 + EPS + US, {"misfire_policy": "skip"}, group(SKIPPED, [T0]), id="eps-plus-1us-late"
        ),
        pytest.param(
            T0 + W45,
            {"misfire_grace": W45.total_seconds()},
            pending(T0),
            id="exactly-grace-old-is-eligible",
        ),
        pytest.param(
            T0 + W45 + US,
            {"misfire_grace": W45.total_seconds()},
            group(DROPPED, [T0]),
            id="grace-plus-1us-old-is-dropped",
        ),
    ],
)
def test_the_tolerance_and_grace_windows_include_their_edges(
    kind: str, now: datetime, fields: dict[str, Any], fires: list[NewFire]
) -> None:
    # The 11:00 slot is not due at any of these instants; only T0 is decided.
    transition = plan(schedule(kind, **fields), now, DEFAULTS)
    assert transition.error is None
    assert transition.fires == fires
    assert transition.next_run_at == (None if kind == "once" else hour(1))
