"""Alerts with real beat and worker processes (SEMANTICS, "Alerts"): the operator's story (a job
fails twice: one alert; it recovers: one more), a missed deadline while no worker runs, and
several beats and workers killed with SIGKILL while alerts are raised and delivered: one alert
recorded per episode, none lost, every copy delivered under the alert's id."""

from __future__ import annotations

import json
import random
import time
from collections import Counter, defaultdict
from datetime import datetime
from typing import Any

import pytest
import sqlalchemy as sa

from celery_dbeat.core.alerts import alert_id
from tests.e2e.app import alerts_key
from tests.e2e.harness import Harness, every

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


@pytest.fixture
def tracked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DBEAT_E2E_TRACK_RUNS", "1")


def received_alerts(harness: Harness) -> list[dict[str, Any]]:
    """Every alert task the workers ran, in order: ``task_id`` and ``kwargs``."""
    raw = harness.redis.lrange(alerts_key(harness.prefix), 0, -1)
    return [json.loads(entry) for entry in raw]


def recorded_alerts(harness: Harness) -> list[dict[str, Any]]:
    query = sa.text(
        "SELECT a.alert_id, a.kind, a.episode_slot, a.delivered_at, a.attempts, s.uid"
        " FROM dbeat_alerts a JOIN dbeat_schedules s ON s.id = a.schedule_id ORDER BY a.id"
    )
    with harness.engine.connect() as conn:
        return [dict(row._mapping) for row in conn.execute(query)]


def kinds(received: list[dict[str, Any]]) -> list[str]:
    """The kinds of the distinct alerts received, in the order first received."""
    seen: dict[str, str] = {}
    for entry in received:
        seen.setdefault(entry["task_id"], entry["kwargs"]["kind"])
    return list(seen.values())


def check_ids(harness: Harness, received: list[dict[str, Any]]) -> None:
    """Every copy received carries its alert's id, derived from (schedule, kind, episode), and
    every alert recorded was delivered."""
    recorded = recorded_alerts(harness)
    for row in recorded:
        episode = row["episode_slot"]
        if isinstance(episode, str):  # SQLite gives text
            episode = datetime.fromisoformat(episode)
        assert row["alert_id"] == alert_id(row["uid"], row["kind"], episode), row
    ids = {row["alert_id"] for row in recorded}
    for entry in received:
        assert entry["task_id"] == entry["kwargs"]["alert_id"], entry
    assert {entry["task_id"] for entry in received} == ids


@pytest.mark.parametrize("e2e_database_url", ["postgresql"], indirect=True)
def test_a_report_that_fails_twice_alerts_once_and_recovering_alerts_once_more(
    harness: Harness, tracked: None
) -> None:
    harness.configure(
        {
            "nightly-report": {
                **every(2),
                "task": "e2e.flaky",
                "args": [2],
                "alert_after_failures": 2,
                "alert_task": "e2e.alert",
            }
        }
    )
    harness.start_worker()
    harness.start_beat("beat-1")
    harness.start_beat("beat-2")
    harness.wait_ready()
    harness.wait_until(
        lambda: kinds(received_alerts(harness)) == ["failing", "recovered"] or None,
        timeout=90,
        what="the failing alert and the recovery delivered to the alert task",
    )
    for beat in harness.beats():
        harness.stop(beat)
    harness.drain()
    received = received_alerts(harness)
    assert kinds(received) == ["failing", "recovered"]
    failing = received[0]["kwargs"]
    assert failing["schedule"] == "nightly-report"
    assert failing["failures"] == 2
    assert "RuntimeError: nightly-report failed on purpose" in failing["error"]
    assert [r["kind"] for r in recorded_alerts(harness)] == ["failing", "recovered"]
    check_ids(harness, received)


@pytest.mark.parametrize("e2e_database_url", ["postgresql"], indirect=True)
def test_a_slot_no_worker_runs_by_its_deadline_alerts_and_the_first_run_after_recovers(
    harness: Harness, tracked: None
) -> None:
    harness.configure(
        {"hourly-export": {**every(2), "alert_deadline": 3, "alert_task": "e2e.alert"}}
    )
    harness.start_beat("beat-1")
    harness.wait_ready(received=False)
    harness.wait_until(
        lambda: [r["kind"] for r in recorded_alerts(harness)] == ["missed"] or None,
        timeout=60,
        what="a missed alert recorded while no worker runs",
    )
    harness.start_worker()
    harness.wait_until(
        lambda: Counter(kinds(received_alerts(harness)))["recovered"] >= 1 or None,
        timeout=60,
        what="the missed alert and its recovery delivered once a worker runs",
    )
    harness.stop(harness.beats()[0])
    harness.drain()
    received = received_alerts(harness)
    assert kinds(received)[:2] == ["missed", "recovered"]
    missed = received[0]["kwargs"]
    assert (missed["schedule"], missed["episode"]) == ("hourly-export", missed["slot"])
    check_ids(harness, received)


@pytest.mark.parametrize("e2e_database_url", ["postgresql"], indirect=True)
def test_alerts_under_sigkill_of_beats_and_workers_are_recorded_once_and_none_is_lost(
    harness: Harness, tracked: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three beats, two workers; beats killed (SIGKILL) and restarted every second or two while
    six schedules fail twice and recover, and a worker killed once their alerts are flowing.
    A beat is killed only once the last one restarted ticks: with all three down (a start-up
    takes seconds on a loaded host), the next beat up would send each schedule's missed fire
    and its current one together, two workers would run them at once, and a success could
    come in between the two failures, which are then not "in a row" (SEMANTICS: alerts)."""
    monkeypatch.setenv("DBEAT_E2E_VISIBILITY_TIMEOUT", "5")
    names = [f"flaky-{i}" for i in range(6)]
    flaky = {"task": "e2e.flaky", "args": [2], "alert_after_failures": 2, "alert_task": "e2e.alert"}
    # A short webhook timeout makes a short lease: a killed beat's alerts go to another sooner.
    harness.configure({name: {**every(2), **flaky} for name in names}, alert_webhook_timeout=1)
    workers = [harness.start_worker(), harness.start_worker()]
    beats = [harness.start_beat(f"beat-{i}") for i in range(3)]
    harness.wait_ready()
    rng = random.Random(29)
    deadline = time.monotonic() + 30
    worker_killed = False
    while time.monotonic() < deadline:
        victim = rng.randrange(len(beats))
        harness.kill(beats[victim])
        beats[victim] = harness.restart(beats[victim], f"beat-{victim}-{rng.randrange(10**6)}")
        harness.wait_ticking([beats[victim]])
        failing = Counter(r["kind"] for r in recorded_alerts(harness))["failing"]
        if not worker_killed and failing == len(names):
            harness.kill(workers[0])
            workers[0] = harness.start_worker()
            worker_killed = True
        time.sleep(rng.uniform(0.5, 1.5))
    assert worker_killed

    def settled() -> bool:
        recorded = recorded_alerts(harness)
        got = {entry["task_id"] for entry in received_alerts(harness)}
        return bool(recorded) and all(
            row["delivered_at"] is not None and row["alert_id"] in got for row in recorded
        )

    try:
        harness.wait_until(settled, timeout=120, what="every alert recorded delivered and received")
    except AssertionError:
        got = Counter(entry["task_id"] for entry in received_alerts(harness))
        print(
            [
                (r["kind"], r["alert_id"][:8], r["attempts"], r["delivered_at"])
                for r in recorded_alerts(harness)
            ]
        )
        print(got)
        raise
    for beat in harness.beats():
        harness.stop(beat)

    by_schedule: dict[str, list[str]] = defaultdict(list)
    query = sa.text(
        "SELECT schedule_name, kind FROM dbeat_alerts ORDER BY schedule_name, raised_at, id"
    )
    with harness.engine.connect() as conn:
        for name, kind in conn.execute(query):
            by_schedule[name].append(kind)
    # One episode per schedule: its failing alert and its recovery, once each.
    assert by_schedule == {name: ["failing", "recovered"] for name in names}
    received = received_alerts(harness)
    check_ids(harness, received)
    copies = Counter(entry["task_id"] for entry in received)
    print(
        f"alerts: {sum(len(k) for k in by_schedule.values())} recorded, {len(received)} "
        f"received, {sum(n - 1 for n in copies.values())} repeat(s) under the same id"
    )
