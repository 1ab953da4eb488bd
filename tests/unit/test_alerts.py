"""The episode logic of alerts (celery_dbeat.core.alerts): when a finished run raises an alert,
when a slot misses its deadline, the alert id, the retry delays and what is delivered."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from celery_dbeat.core.alerts import (
    AlertKind,
    Step,
    alert_id,
    alert_payload,
    missed_slot,
    retry_delay,
    step,
)

T = datetime(2024, 5, 6, 2, 0, tzinfo=timezone.utc)
EARLIER = T - timedelta(days=1)


@pytest.mark.parametrize(
    ("succeeded", "failures", "threshold", "open_kind", "expected"),
    [
        pytest.param(False, 1, 2, None, Step(None, None, None), id="one-failure-of-two"),
        pytest.param(False, 2, 2, None, Step(AlertKind.FAILING, "failing", T), id="reaches-it"),
        pytest.param(False, 3, 2, "failing", Step(None, "failing", EARLIER), id="already-failing"),
        pytest.param(False, 5, 2, "missed", Step(None, "missed", EARLIER), id="already-missed"),
        pytest.param(False, 9, None, None, Step(None, None, None), id="no-threshold"),
        pytest.param(True, 0, 2, "failing", Step(AlertKind.RECOVERED, None, None), id="recovers"),
        pytest.param(
            True, 0, None, "missed", Step(AlertKind.RECOVERED, None, None), id="missed-ends"
        ),
        pytest.param(True, 0, 2, None, Step(None, None, None), id="success-in-no-episode"),
    ],
)
def test_a_finished_run_steps_the_episode(
    succeeded: bool, failures: int, threshold: int | None, open_kind: str | None, expected: Step
) -> None:
    open_slot = EARLIER if open_kind else None
    assert (
        step(
            succeeded=succeeded,
            failures=failures,
            threshold=threshold,
            open_kind=open_kind,
            open_slot=open_slot,
            slot=T,
        )
        == expected
    )


@pytest.mark.parametrize(
    ("oldest", "now", "expected"),
    [
        pytest.param(None, T, None, id="nothing-unsucceeded"),
        pytest.param(T, T + timedelta(minutes=14, seconds=59), None, id="before-the-deadline"),
        pytest.param(T, T + timedelta(minutes=15), T, id="at-the-deadline"),
    ],
)
def test_a_slot_misses_its_deadline_once_it_is_over(
    oldest: datetime | None, now: datetime, expected: datetime | None
) -> None:
    assert missed_slot(oldest, 900.0, now) == expected


def test_the_alert_id_depends_on_the_schedule_kind_and_episode_only() -> None:
    one = alert_id("a" * 32, AlertKind.FAILING, T)
    assert one == alert_id("a" * 32, "failing", T.astimezone(timezone(timedelta(hours=2))))
    others = {
        alert_id("b" * 32, "failing", T),
        alert_id("a" * 32, "recovered", T),
        alert_id("a" * 32, "failing", T + timedelta(microseconds=1)),
    }
    assert one not in others
    assert len(others) == 3


def test_retries_wait_twice_as_long_each_time_up_to_ten_minutes() -> None:
    assert [retry_delay(n).total_seconds() for n in range(1, 9)] == [
        10, 20, 40, 80, 160, 320, 600, 600,
    ]  # fmt: skip
    assert retry_delay(10_000) == timedelta(minutes=10)


def test_the_payload_holds_every_field_with_instants_in_utc() -> None:
    alert = {
        "alert_id": "id",
        "kind": "missed",
        "schedule": "report",
        "schedule_uid": "u",
        "episode_slot": T,
        "slot": T,
        "error": None,
        "failures": 0,
        "raised_at": T + timedelta(minutes=15),
    }
    assert alert_payload(alert) == {
        "alert_id": "id",
        "kind": "missed",
        "schedule": "report",
        "schedule_uid": "u",
        "episode": "2024-05-06T02:00:00Z",
        "slot": "2024-05-06T02:00:00Z",
        "error": None,
        "failures": 0,
        "raised_at": "2024-05-06T02:15:00Z",
    }
