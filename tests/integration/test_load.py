"""``Schedules.load()`` on every backend: the next 24 hours as beat will send them (a calendar's
days removed, a schedule beat sets aside not counted) and the day before, counted in SQL per
hour, with the lag of every sent fire or of an even sample of them."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
import sqlalchemy as sa

from celery_dbeat import Cron, Every
from celery_dbeat.api import Schedules
from celery_dbeat.core.definitions import Definition
from celery_dbeat.store import load as store_load
from tests.integration.conftest import START, F, S

SECOND, MINUTE, HOUR = timedelta(seconds=1), timedelta(minutes=1), timedelta(hours=1)


def fire(schedule_id: int, slot: Any, n: int, **given: Any) -> dict[str, Any]:
    values = {
        "schedule_id": schedule_id,
        "slot": slot,
        "manual": False,
        "origin": None,
        "status": "sent",
        "slot_count": 1,
        "task_id": f"t-{schedule_id}-{n}",
        "recorded_at": slot,
        "sent_at": slot + timedelta(seconds=n % 10 + 1),
        "attempts": 1,
        "run_status": None,
    }
    values.update(given)
    return values


def history(api: Schedules, fires: list[dict[str, Any]]) -> None:
    with api.store.engine.begin() as conn:
        conn.execute(sa.insert(F), fires)


def test_the_next_day_counts_only_the_slots_beat_will_send(api: Schedules) -> None:
    api.calendars.add("closed", dates=["2024-05-06", "2024-05-07"])
    api.calendars.add("tuesday", timezone="Europe/Paris", dates="2024-05-07")
    for i in range(12):
        api.add(f"report-{i}", "t", Cron("0 * * * *"))
    api.add("closed", "t", Cron("0 * * * *"), calendar="closed")
    api.add("poll", "t", Every(600), calendar="tuesday")
    api.add("gone", "t", Cron("0 * * * *"), calendar="closed")
    with api.store.engine.begin() as conn:  # as a hand edit would leave it: beat sets it aside
        conn.execute(sa.update(S).where(S.c.name == "gone").values(calendar="missing"))

    load = api.load(start=START)

    # Tuesday in Paris starts at 22:00 UTC on Monday: the polls from 09:10 to 21:50 are sent.
    assert (load.schedules, load.unreadable) == (15, 1)
    assert load.total == 12 * 24 + 77
    assert load.excluded == 24 + 67
    assert load.herds[0].makers[0].schedules == 12


def test_the_past_day_is_counted_per_hour_with_every_lag(api: Schedules) -> None:
    info = api.add("poll", "t", Every(60))
    day = START - timedelta(hours=24)
    fires = [
        fire(info.id, day + h * HOUR + m * MINUTE, 60 * h + m) for h in (0, 23) for m in range(20)
    ]
    fires += [
        fire(info.id, day + 23 * HOUR + 30 * MINUTE, 1, task_id="f", run_status="failed"),
        fire(info.id, day + 23 * HOUR + 31 * MINUTE, 1, task_id="m", manual=True),
        fire(info.id, day + 5 * HOUR, 1, task_id="s", status="skipped", sent_at=None),
        fire(info.id, day - HOUR, 1, task_id="before"),
        fire(info.id, START, 1, task_id="after"),
    ]
    history(api, fires)

    past = api.load(start=START).past

    assert past is not None
    assert (past.sent, past.failed, past.sampled) == (41, 1, False)
    assert [h.sent for h in past.hours if h.sent] == [20, 21]
    assert past.hours[23].failed == 1
    assert (past.hours[0].lag_p50, past.hours[0].lag_p99) == (5.0, 10.0)
    assert (past.lag_p50, past.lag_p99) == (5.0, 10.0)


def test_a_day_larger_than_the_sample_is_estimated_from_an_even_sample(
    api: Schedules, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store_load, "LAG_SAMPLE", 50)
    api.add_many(
        Definition.create(name=f"report-{i}", task="t", schedule=Cron("0 * * * *"))
        for i in range(90)
    )
    ids = [info.id for info in api.list()]
    day = START - timedelta(hours=24)
    fires = []
    for h in range(24):  # each hour: a herd of 90 at :00, 30 s late; 10 fires 1 s late
        slot = day + h * HOUR
        for n, schedule_id in enumerate(ids[:90]):
            fires.append(fire(schedule_id, slot, 100 * h + n, sent_at=slot + 30 * SECOND))
        for m in range(1, 11):
            late = slot + m * MINUTE
            fires.append(fire(ids[0], late, 100 * h + 89 + m, sent_at=late + SECOND))
    history(api, fires)

    past = api.load(start=START).past

    assert past is not None
    assert past.sampled
    assert past.sent == pytest.approx(24 * 100, rel=0.05)  # estimated from the 50
    assert (past.lag_p50, past.lag_p99) == (30.0, 30.0)


def test_a_backfill_recorded_late_hides_no_fire_of_the_day_and_is_not_lag(
    api: Schedules,
) -> None:
    beat = api.add("poll", "t", Every(60))
    filled = api.add("report", "t", Every(60))
    day = START - timedelta(hours=24)
    fires = [
        fire(
            beat.id,
            day + h * HOUR + m * MINUTE,
            60 * h + m,
            run_status="failed" if m == 10 else None,
        )
        for h in range(24)
        for m in range(10, 21)
    ]
    # Recorded after them: a backfill of each hour's first and last minute, sent now.
    fires += [
        fire(filled.id, slot, 0, task_id=f"b-{slot:%H%M}", origin="backfill", sent_at=START)
        for h in range(24)
        for slot in (day + h * HOUR, day + h * HOUR + 59 * MINUTE)
    ]
    history(api, fires)

    past = api.load(start=START).past

    assert past is not None
    assert (past.sent, past.backfilled, past.failed) == (24 * 11 + 48, 48, 24)
    assert [(h.sent, h.backfilled) for h in past.hours] == [(13, 2)] * 24
    assert (past.lag_p50, past.lag_p99) == (5.0, 10.0)  # beat's own fires only


def test_a_long_history_is_read_from_the_first_fire_recorded_in_the_day(
    api: Schedules, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store_load, "LAG_SAMPLE", 100)  # fewer than the history, more than the day
    info = api.add("poll", "t", Every(60))
    day = START - timedelta(hours=24)
    older = [fire(info.id, day - 48 * HOUR + n * MINUTE, n, task_id=f"o-{n}") for n in range(200)]
    today = [fire(info.id, day + n * MINUTE, n, task_id=f"d-{n}") for n in range(40)]
    late = [
        fire(info.id, day + n * HOUR + 30 * MINUTE, 0, task_id=f"b-{n}", origin="backfill")
        for n in range(1, 24)
    ]
    history(api, older)
    history(api, today)
    history(api, late)  # recorded last, slots early in the day

    past = api.load(start=START).past

    assert past is not None
    assert (past.sent, past.backfilled, past.sampled) == (40 + 23, 23, False)
