"""The load forecast's counting (:mod:`celery_dbeat.core.load`): the same slots and due instants
as beat's timing code, however rows are grouped."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from types import SimpleNamespace
from typing import Any

import pytest

from celery_dbeat.core.lastday import past_day
from celery_dbeat.core.load import BUCKETS, ROW_COLUMNS, LoadCounter
from celery_dbeat.core.planning import due_times
from celery_dbeat.core.timing import build_timing

START = datetime(2026, 1, 5, 12, 0, tzinfo=timezone.utc)
HOUR = timedelta(hours=1)


def row(name: str, kind: str, **given: Any) -> Any:
    values: dict[str, Any] = dict.fromkeys(ROW_COLUMNS)
    values.update(name=name, uid=f"uid-{name}", kind=kind, run_count=0)
    values["created_at"] = START - timedelta(days=1, seconds=17.25)
    values.update(given)
    return SimpleNamespace(**values)


def expected(r: Any) -> list[int]:
    """Fires per minute of one row, slot by slot through beat's own code (its bounds and its
    last run included)."""
    timing = build_timing(
        kind=r.kind,
        cron=r.cron,
        timezone=r.timezone,
        every=r.every,
        anchor_at=r.anchor_at or r.created_at,
        run_at=r.run_at,
        start_at=r.start_at,
        end_at=r.end_at,
    )
    slots = []
    for slot in timing.slots_after(START):
        slots.append(slot)
        if slot > START + timedelta(hours=24):
            break
    kept = len(slots) - (slots[-1] > START + timedelta(hours=24) if slots else 0)
    if r.max_runs is not None:
        kept = min(kept, r.max_runs - r.run_count)
    jitter = timedelta(seconds=r.jitter) if r.jitter else None
    counts = [0] * BUCKETS
    # Jitter stays before the next slot beat's timing gives, the last run's or not.
    for _, due in list(due_times(r.uid, slots[: kept + 1], jitter))[:kept]:
        if due <= START + timedelta(hours=24):
            counts[min((due - START) // timedelta(minutes=1), BUCKETS - 1)] += 1
    return counts


@pytest.mark.parametrize(
    "r",
    [
        pytest.param(row("a", "cron", cron="0 * * * *"), id="hourly-cron"),
        pytest.param(row("b", "cron", cron="30 2 * * *", timezone="America/New_York"), id="zone"),
        pytest.param(row("c", "interval", every=45), id="every-45s"),
        pytest.param(row("d", "interval", every=7), id="every-7s-dense"),
        pytest.param(row("e", "interval", every=300), id="every-5m"),
        pytest.param(row("f", "cron", cron="*/5 * * * *", jitter=120), id="jittered-cron"),
        pytest.param(row("g", "interval", every=600, jitter=900), id="jitter-capped-by-gap"),
        pytest.param(row("h", "cron", cron="* * * * * */10"), id="seconds-cron-dense"),
    ],
)
def test_a_row_is_counted_at_the_instants_beat_computes(r: Any) -> None:
    counter = LoadCounter(START)
    counter.add([r])

    assert list(counter.result().per_minute) == expected(r)


AT = START + timedelta(hours=5, seconds=30.5)


@pytest.mark.parametrize(
    "r",
    [
        pytest.param(row("a", "cron", cron="* * * * *", end_at=AT), id="cron-ends"),
        pytest.param(
            row("b", "cron", cron="* * * * * */10", start_at=START + HOUR / 3, end_at=AT),
            id="seconds-cron-dense-between",
        ),
        pytest.param(row("c", "interval", every=10, end_at=AT), id="every-10s-ends"),
        pytest.param(row("d", "interval", every=45, start_at=AT), id="every-45s-starts-later"),
        pytest.param(
            row("e", "interval", every=600, jitter=900, end_at=AT), id="jittered-interval-ends"
        ),
        pytest.param(
            row("f", "cron", cron="*/5 * * * *", jitter=120, start_at=START + HOUR, end_at=AT),
            id="jittered-cron-between",
        ),
        pytest.param(
            row("g", "cron", cron="0 * * * *", start_at=AT, max_runs=5, run_count=2),
            id="last-runs-after-a-later-start",
        ),
        pytest.param(row("h", "interval", every=7, max_runs=100), id="dense-interval-last-run"),
        pytest.param(
            row("i", "cron", cron="* * * * * */2", max_runs=4000, run_count=1),
            id="dense-cron-last-run",
        ),
        pytest.param(
            row("j", "interval", every=30, jitter=20, max_runs=50, end_at=AT),
            id="jittered-interval-last-run",
        ),
    ],
)
def test_a_row_with_bounds_in_the_window_is_counted_at_the_instants_beat_computes(
    r: Any,
) -> None:
    counter = LoadCounter(START)
    counter.add([r])

    assert list(counter.result().per_minute) == expected(r)


def test_rows_differing_only_by_their_bounds_share_their_specs_window() -> None:
    rows = [
        row(f"m{i}", "cron", cron="* * * * *", end_at=START + timedelta(seconds=7 * i + 0.5))
        for i in range(1, 500)
    ]
    rows += [
        row(
            f"t{i}",
            "interval",
            every=10,
            created_at=START - timedelta(seconds=i / 7),
            end_at=START + timedelta(hours=1, seconds=i),
        )
        for i in range(500)
    ]
    counter = LoadCounter(START)
    counter.add(rows)

    load = counter.result()

    assert (
        len(counter._specs) <= 21
    )  # a cron spec; an interval phase per second, on its grid or not
    assert load.total == sum(sum(expected(r)) for r in rows)
    assert load.per_minute == tuple(map(float, map(sum, zip(*map(expected, rows), strict=True))))


def test_rows_sharing_a_spec_are_counted_once_each_and_make_one_herd_with_a_jitter_hint() -> None:
    rows = [row(f"r{i}", "cron", cron="0 * * * *") for i in range(50)]
    rows += [
        row(f"p{i}", "interval", every=60, created_at=START - timedelta(seconds=i))
        for i in range(30)
    ]
    counter = LoadCounter(START)
    counter.add(rows[:40])
    counter.add(rows[40:])

    load = counter.result()

    assert load.total == 50 * 24 + 30 * 1440
    (herd,) = load.herds
    assert herd.makers[0].spec == "cron '0 * * * *' UTC"
    assert herd.makers[0].schedules == 50
    assert herd.makers[0].names == ("r0", "r1", "r2")
    assert len(herd.again) == 23
    assert "jitter=" in herd.hint


def test_a_bad_spec_is_counted_as_unreadable_and_the_others_still_are() -> None:
    counter = LoadCounter(START)
    counter.add([row("bad", "cron", cron="61 * * * *"), row("ok", "cron", cron="0 0 * * *")])

    load = counter.result()

    assert (load.unreadable, load.total) == (1, 1)


def test_max_runs_stops_the_count_at_the_last_run() -> None:
    counter = LoadCounter(START)
    counter.add([row("m", "cron", cron="0 * * * *", max_runs=5, run_count=2)])

    assert counter.result().total == 3


def test_the_past_day_gives_lag_percentiles_and_failed_runs_per_hour() -> None:
    slots = [START - timedelta(minutes=m) for m in range(1, 101)]
    lags = [(slot, float(i + 1)) for i, slot in enumerate(slots)]
    sent = [0] * 22 + [40, 60]
    failed = [0] * 23 + [1]

    past = past_day(START, lags, sent, failed)

    assert (past.sent, past.lag_p50, past.lag_p99, past.failed) == (100, 50.0, 99.0, 1)
    assert past.hours[-1].failed == 1
    assert (past.hours[-1].sent, past.hours[-1].lag_p99) == (60, 60.0)
