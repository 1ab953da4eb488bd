"""Slot arguments with a real beat and a real worker (docs/how-to/slot-arguments.md): the task
receives its fire's slot and the schedule's slot before it as keyword arguments, the same on time
and backfilled, each message with its fire's task id; a run now passes the instant it was asked
for and the last slot by then, its message marked ``dbeat_manual``."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from celery_dbeat import Cron, Every, fire_task_id
from celery_dbeat.api import Schedules
from celery_dbeat.core.formats import iso
from celery_dbeat.store import migrate
from tests.e2e.app import received_key
from tests.e2e.harness import Harness

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

MINUTE = timedelta(minutes=1)
SECOND = timedelta(seconds=1)


def _instant(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def receipts(harness: Harness, name: str) -> list[dict[str, Any]]:
    """What the worker received for schedule ``name``: task id, kwargs and dbeat headers."""
    raw = harness.redis.lrange(received_key(harness.prefix), 0, -1)
    return [entry for entry in map(json.loads, raw) if entry["schedule"] == name]


@pytest.mark.parametrize("e2e_database_url", ["postgresql"], indirect=True)
def test_the_task_receives_its_slot_and_the_previous_one_on_time_backfilled_and_run_now(
    harness: Harness,
) -> None:
    harness.configure({})
    asking: dict[str, Any] = {"slot_kwarg": "slot", "previous_slot_kwarg": "previous"}
    with Schedules(harness.database_url) as api:
        migrate(api.store.engine)
        now = api.clock.now().replace(second=0, microsecond=0)
        api.add("tick", "e2e.record", Every(1), args=["tick"], **asking)
        api.add(
            "minutely",
            "e2e.record",
            Cron("* * * * *"),
            args=["minutely"],
            start_at=now - 10 * MINUTE,
            **asking,
        )
        backfilled = [now - n * MINUTE for n in range(5, 0, -1)]
        assert api.backfill("minutely", backfilled[0], backfilled[-1]).queued == backfilled
        uids = {name: str(api.get(name).uid) for name in ("tick", "minutely")}

    harness.start_worker()
    harness.start_beat("beat-1")
    harness.wait_ready(received=False)
    harness.wait_until(
        lambda: (
            len(receipts(harness, "tick")) >= 3
            and len(receipts(harness, "minutely")) >= len(backfilled)
        ),
        timeout=60,
        what="three on-time fires of 'tick' and the backfill of 'minutely'",
    )
    with Schedules(harness.database_url) as api:
        manual_id = api.trigger("tick")
    harness.wait_until(
        lambda: any(r["task_id"] == manual_id for r in receipts(harness, "tick")),
        timeout=30,
        what="the run now of 'tick'",
    )
    harness.stop(harness.beats()[0])

    on_time = [r for r in receipts(harness, "tick") if r["task_id"] != manual_id]
    for receipt in on_time:
        slot = _instant(receipt["kwargs"]["slot"])
        assert _instant(receipt["extra"]["dbeat_slot"]) == slot  # the fire's own slot
        assert receipt["task_id"] == fire_task_id(uids["tick"], slot)
        previous = receipt["kwargs"]["previous"]
        if previous is not None:  # None: the interval's first slot
            assert _instant(previous) == slot - SECOND
        assert "dbeat_manual" not in receipt["extra"]

    # The backfilled slots, and any on-time one since: each passes its slot and the one before.
    sent = {_instant(r["kwargs"]["slot"]): r for r in receipts(harness, "minutely")}
    assert set(backfilled) <= set(sent)
    for slot, receipt in sent.items():
        assert receipt["kwargs"] == {"slot": iso(slot), "previous": iso(slot - MINUTE)}
        assert receipt["task_id"] == fire_task_id(uids["minutely"], slot)

    (manual,) = [r for r in receipts(harness, "tick") if r["task_id"] == manual_id]
    asked_at = _instant(manual["kwargs"]["slot"])
    assert manual["extra"]["dbeat_manual"] is True
    assert manual_id == fire_task_id(uids["tick"], asked_at, manual=True)
    # The last slot of 'tick' at or before that instant: on its grid, within a second of it.
    grid = _instant(on_time[0]["kwargs"]["slot"])
    before = _instant(manual["kwargs"]["previous"])
    assert timedelta(0) <= asked_at - before < SECOND
    assert (before - grid) % SECOND == timedelta(0)
    assert before.tzinfo == timezone.utc
