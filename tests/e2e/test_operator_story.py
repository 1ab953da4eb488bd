"""Issue 29 as an operator tries it, with a real beat and a real worker: a report on the last
business day of each month in Europe/London (an RRULE) that receives its slot, fails twice (one
alert), recovers (one more), is backfilled over months (each task its own slot, none twice, a
second backfill sends nothing) and is explained slot by slot."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

import pytest

from celery_dbeat import Rrule, fire_task_id
from celery_dbeat.api import Schedules
from celery_dbeat.core.explain import Verdict
from celery_dbeat.core.formats import iso
from celery_dbeat.store import migrate
from tests.e2e.app import alerts_key, received_key
from tests.e2e.harness import Harness

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

UTC = timezone.utc
RULE = Rrule("FREQ=MONTHLY;BYDAY=MO,TU,WE,TH,FR;BYSETPOS=-1;BYHOUR=18", "Europe/London")
#: The last business days of July to November 2026 at 18:00 in London (BST until 25 October).
SLOTS = [
    datetime(2026, 7, 31, 17, tzinfo=UTC),
    datetime(2026, 8, 31, 17, tzinfo=UTC),
    datetime(2026, 9, 30, 17, tzinfo=UTC),
    datetime(2026, 10, 30, 18, tzinfo=UTC),
    datetime(2026, 11, 30, 18, tzinfo=UTC),
]


def _json_list(harness: Harness, key: str) -> list[dict[str, Any]]:
    return [json.loads(entry) for entry in harness.redis.lrange(key, 0, -1)]


@pytest.fixture
def tracked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DBEAT_E2E_TRACK_RUNS", "1")


@pytest.mark.parametrize("e2e_database_url", ["postgresql"], indirect=True)
def test_a_month_end_report_gets_its_slot_alerts_recovers_backfills_and_is_explained(
    harness: Harness, tracked: None
) -> None:
    harness.configure({})
    with Schedules(harness.database_url) as api:
        migrate(api.store.engine)
        api.add(
            "month-end",
            "e2e.flaky",
            RULE,
            args=["month-end", 2],
            slot_kwarg="slot",
            alert_after_failures=2,
            alert_task="e2e.alert",
        )
        uid = str(api.get("month-end").uid)
        report = api.backfill("month-end", SLOTS[0], SLOTS[-1])
        assert report.queued == SLOTS

    harness.start_worker()
    harness.start_beat("beat-1")
    harness.wait_ready(received=False)
    harness.wait_until(
        lambda: len(_json_list(harness, alerts_key(harness.prefix))) >= 2 or None,
        timeout=90,
        what="the failing alert and the recovery",
    )
    with Schedules(harness.database_url) as api:
        again = api.backfill("month-end", SLOTS[0], SLOTS[-1])
        explained = [api.explain("month-end", slot=slot) for slot in SLOTS]
        between = api.explain("month-end", slot=datetime(2026, 11, 27, 18, tzinfo=UTC))
    harness.stop(harness.beats()[0])
    harness.drain()

    # Each task received its own slot, under its fire's task id, and no slot twice.
    received = _json_list(harness, received_key(harness.prefix))
    assert sorted(r["kwargs"]["slot"] for r in received) == [iso(s) for s in SLOTS]
    for entry in received:
        slot = datetime.fromisoformat(entry["kwargs"]["slot"].replace("Z", "+00:00"))
        assert entry["task_id"] == fire_task_id(uid, slot)
    # Two failures in a row: one alert; the next success: one recovery.
    alerts = _json_list(harness, alerts_key(harness.prefix))
    assert [a["kwargs"]["kind"] for a in alerts] == ["failing", "recovered"]
    assert alerts[0]["kwargs"]["schedule"] == "month-end"
    assert alerts[0]["kwargs"]["failures"] == 2
    assert (again.slots, again.queued) == (len(SLOTS), [])
    # Slot by slot: each sent; an instant between two slots is none, with its neighbours.
    assert [e.verdict for e in explained] == [Verdict.SENT] * len(SLOTS)
    assert between.verdict is Verdict.NOT_A_SLOT
    assert between.nearest == (datetime(2026, 10, 30, 18, tzinfo=UTC), SLOTS[-1])
