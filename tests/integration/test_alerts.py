"""Alerts recorded once per episode on every backend (SEMANTICS, "Alerts"): the worker hook's
outcome count raises ``failing`` after ``alert_after_failures`` failed runs in a row and
``recovered`` at the next success; beats raise ``missed`` for a slot whose run has not succeeded
by its ``alert_deadline``. Several writers racing the same episode record it once."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any, cast

import pytest
import sqlalchemy as sa

from celery_dbeat.core.alerts import alert_id
from celery_dbeat.core.audit import Actor
from celery_dbeat.core.definitions import Definition
from celery_dbeat.core.fires import RunStatus
from celery_dbeat.core.specs import Cron
from celery_dbeat.store import Store
from celery_dbeat.store.models import Alert
from celery_dbeat.store.runs import RunEvent, record_runs
from tests.integration.conftest import F, Tables, at, statements_sent

AL = cast(sa.Table, Alert.__table__)
BEAT = Actor("beat-1", "beat")


def nightly(**fields: Any) -> Definition:
    return Definition.create(
        name="report", task="tasks.report", schedule=Cron("0 * * * *"), **fields
    )


def fire(
    store: Store,
    tables: Tables,
    task_id: str,
    slot: datetime,
    schedule: str = "report",
    **values: Any,
) -> None:
    schedule_id = tables.row(schedule).id
    with store.engine.begin() as conn:
        conn.execute(
            sa.insert(F).values(
                schedule_id=schedule_id,
                slot=slot,
                manual=values.pop("manual", False),
                status=values.pop("status", "sent"),
                slot_count=1,
                task_id=task_id,
                recorded_at=slot,
                attempts=0,
                **values,
            )
        )


def alerts(store: Store) -> list[tuple[str, datetime, datetime | None, int, str | None]]:
    query = sa.select(AL.c.kind, AL.c.episode_slot, AL.c.slot, AL.c.failures, AL.c.error)
    with store.engine.connect() as conn:
        return [tuple(r) for r in conn.execute(query.order_by(AL.c.id))]


def ended(task_id: str, ok: bool, when: datetime, error: str = "OSError: disk full") -> RunEvent:
    if ok:
        return RunEvent(task_id, RunStatus.SUCCEEDED, when, worker="w1")
    return RunEvent(task_id, RunStatus.FAILED, when, worker="w1", error=error)


def test_two_failed_runs_raise_one_alert_and_the_next_success_one_recovery(
    store: Store, tables: Tables
) -> None:
    tables.sync([nightly(alert_after_failures=2)], at("09:30"))
    for hour in ("10", "11", "12", "13", "14"):
        fire(store, tables, f"t{hour}", at(f"{hour}:00"))
    engine = store.engine
    record_runs(engine, [ended("t10", False, at("10:01"))])
    assert alerts(store) == []
    record_runs(engine, [ended("t11", False, at("11:01"))])
    # Reported again (a redelivery), and a third failure: the episode is open already.
    record_runs(engine, [ended("t11", False, at("11:02")), ended("t12", False, at("12:01"))])
    failing = ("failing", at("11:00"), at("11:00"), 2, "OSError: disk full")
    assert alerts(store) == [failing]
    assert (tables.row("report").alert_kind, tables.row("report").alert_episode) == (
        "failing",
        at("11:00"),
    )
    record_runs(engine, [ended("t13", True, at("13:01"))])
    record_runs(engine, [ended("t13", True, at("13:02")), ended("t14", True, at("14:01"))])
    assert alerts(store) == [failing, ("recovered", at("11:00"), at("13:00"), 0, None)]
    assert tables.row("report").alert_kind is None
    uid = tables.row("report").uid
    with engine.connect() as conn:
        ids = conn.execute(sa.select(AL.c.alert_id).order_by(AL.c.id)).scalars().all()
        trail = conn.execute(
            sa.text("SELECT actor, surface, action FROM dbeat_audit WHERE action = 'alert'")
        ).all()
    assert ids == [alert_id(uid, "failing", at("11:00")), alert_id(uid, "recovered", at("11:00"))]
    assert [tuple(t) for t in trail] == [("w1", "worker", "alert")] * 2


def test_a_success_reported_again_does_not_end_a_later_episode(
    store: Store, tables: Tables
) -> None:
    tables.sync([nightly(alert_after_failures=1)], at("09:30"))
    for hour in ("10", "11", "12"):
        fire(store, tables, f"t{hour}", at(f"{hour}:00"))
    record_runs(store.engine, [ended("t10", True, at("10:01"))])
    record_runs(store.engine, [ended("t11", False, at("11:01"))])
    # The 10:00 message redelivered to a second worker, which reports its success again.
    record_runs(store.engine, [ended("t10", True, at("11:30"))])
    assert [a[0] for a in alerts(store)] == ["failing"]
    record_runs(store.engine, [ended("t12", True, at("12:01"))])
    assert [a[0] for a in alerts(store)] == ["failing", "recovered"]


def race(callables: list[Callable[[], Any]]) -> None:
    """Run each at once in its own thread, released together; re-raise the first error."""
    start = threading.Barrier(len(callables))
    errors: list[BaseException] = []

    def go(call: Callable[[], Any]) -> None:
        start.wait()
        try:
            call()
        except BaseException as exc:  # the test reports it
            errors.append(exc)

    threads = [threading.Thread(target=go, args=(c,)) for c in callables]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def test_workers_reporting_the_failed_runs_of_one_schedule_at_once_raise_one_alert(
    store: Store, tables: Tables
) -> None:
    tables.sync([nightly(alert_after_failures=2)], at("09:30"))
    hours = [f"{h:02d}" for h in range(10, 18)]
    for hour in hours:
        fire(store, tables, f"t{hour}", at(f"{hour}:00"))
    engine = store.engine
    # Eight workers report eight failed runs (and each reports one of them twice) at once.

    def report(hour: str) -> Callable[[], Any]:
        events = [
            ended(f"t{hour}", False, at(f"{hour}:01")),
            ended(f"t{hour}", False, at(f"{hour}:02")),
        ]
        return lambda: record_runs(engine, events)

    race([report(h) for h in hours])
    assert [a[0] for a in alerts(store)] == ["failing"]
    assert tables.row("report").consecutive_failures == len(hours)
    fire(store, tables, "ok", at("19:00"))
    race([lambda: record_runs(engine, [ended("ok", True, at("19:01"))]) for _ in range(4)])
    assert [a[0] for a in alerts(store)] == ["failing", "recovered"]


def test_a_slot_not_run_by_its_deadline_raises_one_missed_alert_across_beats(
    store: Store, tables: Tables
) -> None:
    tables.sync([nightly(alert_deadline="15m")], at("09:30"))
    fire(store, tables, "t10", at("10:00"))  # sent; no worker ever starts it
    fire(store, tables, "t11", at("11:00"))
    assert store.open_missed(at("10:14"), BEAT) == []
    # Four beats look at once, twice each.
    found: list[Any] = []
    race([lambda: found.extend(store.open_missed(at("10:15"), BEAT)) for _ in range(4)])
    found += store.open_missed(at("11:20"), BEAT)
    assert [(a.kind, a.episode_slot) for a in found] == [("missed", at("10:00"))]
    assert alerts(store) == [
        ("missed", at("10:00"), at("10:00"), 0, "no successful run 900 s after the slot")
    ]
    # The workers come back: the stale 10:00 message runs and succeeds.
    record_runs(store.engine, [ended("t10", True, at("11:30"))])
    assert [a[0] for a in alerts(store)] == ["missed", "recovered"]
    # 11:00 has not run either, but its deadline was over before the workers came back: it
    # belongs to the episode that just ended, not to a new one as the workers catch up.
    assert store.open_missed(at("11:31"), BEAT) == []
    fire(store, tables, "t12", at("12:00"))
    assert store.open_missed(at("12:14"), BEAT) == []
    again = store.open_missed(at("12:15"), BEAT)
    assert [(a.kind, a.episode_slot) for a in again] == [("missed", at("12:00"))]


@pytest.mark.parametrize(
    ("values", "missed"),
    [
        pytest.param({"run_status": "succeeded"}, False, id="succeeded"),
        pytest.param({"run_status": "started"}, True, id="still-running"),
        pytest.param({"run_status": "failed"}, True, id="failed"),
        pytest.param({"status": "skipped"}, False, id="skipped-by-the-misfire-policy"),
        pytest.param({"origin": "backfill"}, False, id="a-backfill"),
        pytest.param({"manual": True}, False, id="a-run-now"),
    ],
)
def test_what_misses_a_deadline(
    store: Store, tables: Tables, values: dict[str, Any], missed: bool
) -> None:
    tables.sync([nightly(alert_deadline="15m")], at("09:30"))
    fire(store, tables, "t10", at("10:00"), **values)
    assert bool(store.open_missed(at("12:00"), BEAT)) is missed


def test_each_schedule_misses_by_its_own_deadline_and_looks_back_from_it(
    store: Store, tables: Tables
) -> None:
    # One query finds the schedules to look at for them all, over the widest window any
    # deadline asks for; each is still judged by its own deadline and look-back.
    def hourly(name: str, **fields: Any) -> Definition:
        return Definition.create(name=name, task="t", schedule=Cron("0 * * * *"), **fields)

    tables.sync(
        [
            hourly("quick", alert_deadline="15m"),
            hourly("slow", alert_deadline="2h"),
            hourly("unwatched"),
            hourly("quick-old", alert_deadline="15m"),
        ],
        at("09:30"),
    )
    for name in ("quick", "slow", "unwatched"):
        fire(store, tables, f"{name}-10", at("10:00"), name)
    # The day before: at 10:14, inside the look-back of the 2 h deadline (from 08:14 the day
    # before) but not that of the 15 min one (from 09:59).
    fire(store, tables, "quick-old-09", at("09:00") - timedelta(days=1), "quick-old")

    assert store.open_missed(at("10:14"), BEAT) == []
    assert [a.schedule for a in store.open_missed(at("10:15"), BEAT)] == ["quick"]
    assert store.open_missed(at("11:59"), BEAT) == []
    assert [a.schedule for a in store.open_missed(at("12:00"), BEAT)] == ["slow"]
    assert [(kind, slot) for kind, slot, *_ in alerts(store)] == [
        ("missed", at("10:00")),
        ("missed", at("10:00")),
    ]


def test_looking_for_missed_deadlines_takes_as_many_statements_for_50_schedules_as_for_5(
    store: Store, tables: Tables
) -> None:
    # A beat looks every dbeat_max_interval, in its tick: two queries per watched schedule
    # held a beat with 10,000 of them for 11 s a pass.
    def hourly(name: str) -> Definition:
        return Definition.create(
            name=name, task="t", schedule=Cron("0 * * * *"), alert_deadline="15m"
        )

    def looked(size: int) -> int:
        tables.sync([hourly(f"s{n}") for n in range(size)], at("09:30"))
        for n in range(size):
            fire(store, tables, f"s{n}-10", at("10:00"), f"s{n}", run_status="succeeded")
        with statements_sent(store) as statements:
            assert store.open_missed(at("10:30"), BEAT) == []
        with store.engine.begin() as conn:
            conn.execute(sa.delete(F))
        return len(statements)

    assert looked(50) == looked(5)


def test_a_schedule_in_alert_opens_no_other_episode_until_it_recovers(
    store: Store, tables: Tables
) -> None:
    tables.sync([nightly(alert_deadline="15m", alert_after_failures=1)], at("09:30"))
    fire(store, tables, "t10", at("10:00"))
    fire(store, tables, "t11", at("11:00"))
    assert [a.kind for a in store.open_missed(at("10:30"), BEAT)] == ["missed"]
    record_runs(store.engine, [ended("t11", False, at("11:01"))])
    assert store.open_missed(at("12:00"), BEAT) == []
    assert [a[0] for a in alerts(store)] == ["missed"]


def test_delivery_leases_each_alert_to_one_beat_and_retries_until_delivered(
    store: Store, tables: Tables
) -> None:
    tables.sync([nightly(alert_deadline="15m", alert_task="tasks.on_alert")], at("09:30"))
    fire(store, tables, "t10", at("10:00"))
    store.open_missed(at("10:20"), BEAT)
    lease = timedelta(seconds=60)
    claims: list[Any] = []
    race([lambda: claims.extend(store.claim_alerts(at("10:21"), at("10:21") + lease, 10))] * 3)
    (claimed,) = claims
    assert (claimed.kind, claimed.task, claimed.attempts) == ("missed", "tasks.on_alert", 1)
    assert store.claim_alerts(at("10:21:30"), at("10:21:30") + lease, 10) == []
    store.finish_alert(claimed.id, at("10:21:40"), error="broker down", retry_in=lease)
    assert store.claim_alerts(at("10:22"), at("10:22") + lease, 10) == []
    (again,) = store.claim_alerts(at("10:22:41"), at("10:22:41") + lease, 10)
    assert (again.alert_id, again.attempts) == (claimed.alert_id, 2)
    store.finish_alert(again.id, at("10:22:42"))
    assert store.claim_alerts(at("11:00"), at("11:00") + lease, 10) == []
    # A lease over (its beat died) is taken by another beat.
    fire(store, tables, "t11", at("11:00"))
    record_runs(store.engine, [ended("t10", True, at("11:01"))])
    (recovery,) = store.claim_alerts(at("11:02"), at("11:02") + lease, 10)
    (taken,) = store.claim_alerts(at("11:03:01"), at("11:03:01") + lease, 10)
    assert (taken.alert_id, taken.attempts) == (recovery.alert_id, 2)
