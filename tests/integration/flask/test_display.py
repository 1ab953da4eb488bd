"""How instants, durations, specs and fire outcomes read in the admin (pure functions)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from celery_dbeat.contrib.flask.display import (
    duration,
    fire_outcome,
    instant,
    local_instant,
    next_run,
    spec_summary,
)
from celery_dbeat.store.models import Fire, Schedule

UTC = timezone.utc
AT = datetime(2024, 5, 6, 9, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("delta", "text"),
    [
        pytest.param(timedelta(0), "0 ms", id="zero"),
        pytest.param(timedelta(milliseconds=250), "250 ms", id="milliseconds"),
        pytest.param(timedelta(seconds=2.5), "2.5 s", id="seconds"),
        pytest.param(timedelta(seconds=30), "30 s", id="whole-seconds"),
        pytest.param(timedelta(minutes=5), "5 min", id="minutes"),
        pytest.param(timedelta(hours=1, minutes=30), "1 h 30 min", id="hours"),
        pytest.param(timedelta(days=2, seconds=3), "2 d 3 s", id="days"),
        pytest.param(timedelta(seconds=-1.5), "-1.5 s", id="early"),
    ],
)
def test_durations_read_in_the_largest_useful_units(delta: timedelta, text: str) -> None:
    assert duration(delta) == text


def test_instants_are_shown_in_utc_and_in_a_zone() -> None:
    assert instant(AT.astimezone(timezone(timedelta(hours=2)))) == "2024-05-06 09:00:00 UTC"
    assert instant(None) == ""
    assert local_instant(AT, "America/New_York") == "2024-05-06 05:00:00 EDT (-0400)"


def schedule(**columns: Any) -> Schedule:
    defaults: dict[str, Any] = {"kind": "cron", "cron": "0 * * * *", "timezone": "UTC"}
    return Schedule(**{**defaults, **columns})


@pytest.mark.parametrize(
    ("row", "text"),
    [
        pytest.param(schedule(), "cron '0 * * * *' UTC", id="cron-utc"),
        pytest.param(
            schedule(cron="0 * 1 * mon", timezone="Europe/Paris", dst_gap="skip", cron_days="all"),
            "cron '0 * 1 * mon' Europe/Paris dst_gap=skip days=all (both day fields must match, "
            "as in Celery's crontab)",
            id="cron-zone-overrides",
        ),
        pytest.param(schedule(kind="interval", every=90.0), "every 1m30s", id="interval"),
        pytest.param(schedule(kind="once", run_at=AT), "once 2024-05-06T09:00:00Z", id="once"),
        pytest.param(
            schedule(kind="solar", solar_event="sunset", latitude=48.85, longitude=-2.0),
            "solar sunset at 48.85, -2",
            id="solar",
        ),
        pytest.param(
            schedule(start_at=AT, end_at=AT + timedelta(days=1), max_runs=1),
            "cron '0 * * * *' UTC, from 2024-05-06 09:00:00 UTC, until 2024-05-07 09:00:00 UTC, "
            "at most 1 run",
            id="bounds",
        ),
    ],
)
def test_the_spec_summary_says_when_a_schedule_fires(row: Schedule, text: str) -> None:
    assert spec_summary(row) == text


@pytest.mark.parametrize(
    ("row", "text"),
    [
        pytest.param(
            schedule(enabled=True, next_run_at=AT), "2024-05-06 09:00:00 UTC", id="active"
        ),
        pytest.param(schedule(enabled=False, next_run_at=AT), "none (paused)", id="paused"),
        pytest.param(
            schedule(enabled=False, next_run_at=None, finished_at=AT),
            "none (finished)",
            id="finished",
        ),
        pytest.param(schedule(enabled=True, next_run_at=None), "", id="to-compute"),
        pytest.param(
            schedule(enabled=True, next_run_at=AT, last_error="stored value of start_at ..."),
            "none (error)",
            id="error",
        ),
    ],
)
def test_the_next_run_is_shown_only_when_the_schedule_will_send_it(
    row: Schedule, text: str
) -> None:
    assert next_run(row) == text


@pytest.mark.parametrize(
    ("fire", "text"),
    [
        pytest.param(Fire(status="sent", manual=False, slot_count=1), "sent", id="sent"),
        pytest.param(Fire(status="sent", manual=True, slot_count=1), "sent (run now)", id="manual"),
        pytest.param(
            Fire(status="dropped", manual=False, slot_count=2, first_slot=AT),
            "dropped (2 slots from 2024-05-06 09:00:00 UTC)",
            id="dropped-group",
        ),
        pytest.param(Fire(status="skipped", manual=False, slot_count=1), "skipped", id="one-skip"),
        pytest.param(
            Fire(status="sent", manual=False, origin="backfill", slot_count=1),
            "sent (backfill)",
            id="backfilled",
        ),
        pytest.param(
            Fire(status="queued", manual=False, origin="backfill", slot_count=3, first_slot=AT),
            "queued (backfill, 3 slots from 2024-05-06 09:00:00 UTC)",
            id="backfill-queued-run",
        ),
    ],
)
def test_a_fire_outcome_says_what_the_row_stands_for(fire: Fire, text: str) -> None:
    assert fire_outcome(fire) == text
