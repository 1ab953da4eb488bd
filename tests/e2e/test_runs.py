"""Run tracking, overlap policies and metrics with real beat and worker processes.

The worker loads the run-tracking hook (``celery_dbeat.beat.worker``); tasks really run, sleep and
fail. The overlap scenario is Temporal's hourly job with 90-minute runs, scaled down: a slot
every 4 s, runs of 6 s.
"""

from __future__ import annotations

import itertools
import urllib.request
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, cast

import pytest
import sqlalchemy as sa
from prometheus_client.parser import text_string_to_metric_families

from celery_dbeat.core.fires import fire_task_id
from celery_dbeat.store.models import Fire, Schedule
from tests.e2e.harness import Harness, cron, every
from tests.services import free_port

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

F = cast(sa.Table, Fire.__table__)
S = cast(sa.Table, Schedule.__table__)


@dataclass(frozen=True)
class Run:
    schedule: str
    #: The schedule's identity, from which its task ids derive.
    uid: str
    slot: datetime
    status: str
    task_id: str | None
    sent_at: datetime | None
    run_status: str | None
    started_at: datetime | None
    finished_at: datetime | None
    runtime: float | None
    worker: str | None
    run_error: str | None


def runs(harness: Harness) -> dict[str, list[Run]]:
    """Every fire row with its run columns, by schedule, oldest slot first (typed columns, so
    instants come back aware in UTC on every database)."""
    columns = [F.c[name] for name in ("slot", "status", "task_id", "sent_at", "run_status")]
    columns += [F.c[name] for name in ("started_at", "finished_at", "runtime", "worker")]
    query = (
        sa.select(S.c.name, S.c.uid, *columns, F.c.run_error)
        .join(S, S.c.id == F.c.schedule_id)
        .order_by(F.c.slot)
    )
    by_schedule: dict[str, list[Run]] = defaultdict(list)
    with harness.engine.connect() as conn:
        for row in conn.execute(query):
            by_schedule[row[0]].append(Run(*tuple(row)))
    return by_schedule


def finished(harness: Harness, names: list[str], timeout: float = 20) -> dict[str, list[Run]]:
    """Wait until every sent fire of ``names`` has a final run status; return the runs."""

    def done() -> dict[str, list[Run]] | None:
        found = runs(harness)
        for name in names:
            sent = [r for r in found.get(name, []) if r.status == "sent"]
            if not sent or any(r.finished_at is None for r in sent):
                return None
        return found

    return harness.wait_until(done, timeout=timeout, what="every run to be reported finished")


@pytest.fixture
def tracked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DBEAT_E2E_TRACK_RUNS", "1")


@pytest.mark.parametrize("e2e_database_url", ["postgresql"], indirect=True)
def test_the_history_shows_each_fire_start_finish_outcome_and_duration(
    harness: Harness, tracked: None
) -> None:
    harness.configure(
        {
            "ok": every(2),
            "slow": {**every(3), "task": "e2e.sleep", "args": [1.5]},
            "boom": {**every(3), "task": "e2e.fail"},
        }
    )
    harness.start_worker()
    harness.start_beat("beat-1")
    harness.wait_ready()
    harness.wait_until(
        lambda: all(
            len([r for r in runs(harness).get(name, []) if r.status == "sent"]) >= 2
            for name in ("ok", "slow", "boom")
        ),
        timeout=60,
        what="two fires of each schedule sent",
    )
    harness.stop(harness.beats()[0])
    harness.drain()

    found = finished(harness, ["ok", "slow", "boom"])

    for name, outcome in (("ok", "succeeded"), ("slow", "succeeded"), ("boom", "failed")):
        sent = [r for r in found[name] if r.status == "sent"]
        assert len(sent) >= 2, (name, sent)
        for run in sent:
            assert run.run_status == outcome, run
            assert run.task_id == fire_task_id(run.uid, run.slot)
            assert run.sent_at is not None
            assert run.started_at is not None
            assert run.finished_at is not None
            assert run.runtime is not None
            # sent_at is written after the publish, so a quick worker may start first.
            assert run.slot <= run.sent_at, run
            assert run.slot <= run.started_at <= run.finished_at, run
            assert (run.worker or "").startswith(harness.queue), run
    assert all(r.runtime is not None and r.runtime >= 1.5 for r in found["slow"])
    assert all(r.run_error == "RuntimeError: boom failed on purpose" for r in found["boom"])
    assert all(r.run_error is None for r in found["ok"])


def _overlapping(runs: list[Run]) -> list[tuple[datetime, datetime]]:
    """Pairs of slots whose runs were going at the same time."""
    spans = sorted(
        (r.started_at, r.finished_at, r.slot)
        for r in runs
        if r.started_at is not None and r.finished_at is not None
    )
    return [(a[2], b[2]) for a, b in itertools.pairwise(spans) if b[0] < a[1]]


@pytest.mark.parametrize("e2e_database_url", ["postgresql"], indirect=True)
def test_overlap_policies_with_real_long_running_tasks(harness: Harness, tracked: None) -> None:
    # Every 4 s, runs of 6 s: the scaled-down hourly job with 90-minute runs.
    long_run = {**cron("* * * * * */4"), "task": "e2e.sleep", "args": [6]}
    harness.configure(
        {
            "allow": {**long_run, "overlap_policy": "allow"},
            "skip": {**long_run, "overlap_policy": "skip"},
            "buffer": {**long_run, "overlap_policy": "buffer_one"},
        }
    )
    for _ in range(4):  # enough concurrency for two "allow" runs besides the others
        harness.start_worker()
    harness.start_beat("beat-1")
    harness.wait_ready()
    harness.run_for(20)
    harness.stop(harness.beats()[0])
    harness.drain(timeout=30)
    found = finished(harness, ["allow", "skip", "buffer"], timeout=30)

    # allow: a slot starts while the previous one still runs.
    assert _overlapping(found["allow"]), found["allow"]

    # skip: never two at once; the slots that found a run going are recorded, never sent.
    skip = found["skip"]
    assert not _overlapping(skip), skip
    assert {r.status for r in skip} == {"sent", "overlap"}, skip
    assert all(r.run_status is None for r in skip if r.status == "overlap")

    # buffer_one: never two at once; a buffered slot starts once the run before it finished,
    # keeping its slot and task id.
    buffer = found["buffer"]
    assert not _overlapping(buffer), buffer
    ran = [r for r in buffer if r.status == "sent"]
    late = [
        (before, after)
        for before, after in itertools.pairwise(ran)
        if after.sent_at is not None and after.sent_at - after.slot > timedelta(seconds=1)
    ]
    assert late, buffer
    for before, after in late:
        assert before.finished_at is not None
        assert after.started_at is not None
        assert after.started_at >= before.finished_at, (before, after)
        assert after.task_id == fire_task_id(after.uid, after.slot)


@pytest.mark.parametrize("e2e_database_url", ["postgresql"], indirect=True)
def test_metrics_are_served_and_count_what_beat_did(harness: Harness, tracked: None) -> None:
    port = free_port()
    harness.configure({"tick": every(1), "boom": {**every(2), "task": "e2e.fail"}})
    harness.start_worker()
    harness.start_beat("beat-1", metrics_port=port, metrics_address="127.0.0.1")
    harness.wait_ready()

    def scrape() -> dict[str, list[Any]] | None:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
            text = response.read().decode()
        samples: dict[str, list[Any]] = defaultdict(list)
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                samples[sample.name].append(sample)
        # The last-success gauge appears once the worker reported a success and beat read it.
        if not samples.get("dbeat_schedule_last_success_timestamp_seconds"):
            return None
        sent = [s.value for s in samples["dbeat_fires_total"] if s.labels["outcome"] == "sent"]
        return samples if sum(sent) >= 5 else None

    samples = harness.wait_until(
        scrape, timeout=60, what="the last-success metric and five fires sent"
    )

    def value(name: str, **labels: str) -> float:
        matching = [s.value for s in samples[name] if labels.items() <= s.labels.items()]
        assert matching, (name, labels, samples.get(name))
        return float(sum(matching))

    sent = value("dbeat_fires_total", outcome="sent")
    assert sent >= 5
    assert value("dbeat_fire_lag_seconds_count") == sent
    assert value("dbeat_lock_claims_total", result="won") >= sent
    assert value("dbeat_tick_duration_seconds_count") >= 1
    # Schedules due and not yet handled: a count of schedules (at most every one), not of slots.
    assert value("dbeat_due_backlog") <= len(harness.schedule_rows())
    assert value("dbeat_beat_info", instance="beat-1") == 1
    successes = {
        s.labels["schedule"] for s in samples["dbeat_schedule_last_success_timestamp_seconds"]
    }
    assert successes == {"tick"}  # "boom" never succeeds


@pytest.mark.parametrize("e2e_database_url", ["postgresql"], indirect=True)
def test_a_schedule_failing_pause_after_failures_times_is_paused_and_sends_no_more(
    harness: Harness, tracked: None
) -> None:
    port = free_port()
    harness.configure(
        {
            "tick": every(1),
            "boom": {**every(1), "task": "e2e.fail", "pause_after_failures": 3},
        }
    )
    harness.start_worker()
    harness.start_beat("beat-1", metrics_port=port, metrics_address="127.0.0.1")
    harness.wait_ready()

    def paused() -> dict[str, Any] | None:
        query = sa.select(S.c.enabled, S.c.pause_note, S.c.pause_source, S.c.paused_at).where(
            S.c.name == "boom"
        )
        with harness.engine.connect() as conn:
            row = conn.execute(query).one()
        return None if row.enabled else dict(row._mapping)

    row = harness.wait_until(paused, timeout=30, what="'boom' to pause itself")
    assert row["pause_source"] == "failures"
    assert row["pause_note"] == (
        "paused after 3 consecutive failed runs; last: RuntimeError: boom failed on purpose"
    )

    def gauge() -> float | None:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
            text = response.read().decode()
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name == "dbeat_paused_schedules" and sample.labels == {
                    "source": "failures"
                }:
                    return float(sample.value) or None
        return None

    assert harness.wait_until(gauge, timeout=20, what="the paused-schedules gauge") == 1
    before = len(runs(harness)["tick"])
    harness.wait_until(
        lambda: len(runs(harness)["tick"]) >= before + 3 or None,
        timeout=20,
        what="three more fires of 'tick'",
    )
    # Recorded before the pause and on their way at most: nothing is recorded after it.
    assert [r.slot for r in runs(harness)["boom"] if r.slot > row["paused_at"]] == []
