"""The audit trail: every write of the management API and of the ``beat_schedule`` sync leaves one
entry (actor, surface, action, old -> new per field), written in the edit's transaction: a
refused or rolled-back edit leaves none, and an edit that changes nothing leaves none."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
import sqlalchemy as sa

from celery_dbeat import Cron, Every, ScheduleExists, ValidationError
from celery_dbeat.api import Actor, Schedules
from celery_dbeat.clock import FixedClock
from celery_dbeat.core.definitions import Definition
from celery_dbeat.store import audit
from celery_dbeat.store.models import A
from tests.integration.conftest import START, Tables

DAY = timedelta(days=1)
HOUR = timedelta(hours=1)


def _trail(api: Schedules, name: str | None = None) -> list[tuple[str, str, str, str | None]]:
    """(action, actor, surface, name), oldest first."""
    return [(e.action, e.actor, e.surface, e.name) for e in reversed(api.audit(name))]


def test_each_write_leaves_one_entry_with_its_actor_surface_and_changes(
    api: Schedules, clock: FixedClock
) -> None:
    alice = Actor("alice", "cli")
    api.add("report", "t.report", Every(60), actor=alice)
    api.update("report", kwargs={"to": "ops"}, actor="bob")
    api.update("report", name="daily-report", actor=alice)
    api.pause("daily-report", actor=alice)
    api.resume("daily-report", actor=alice)
    task_id = api.trigger("daily-report", actor=alice)
    clock.advance(HOUR)
    api.backfill("daily-report", START, START + 3 * timedelta(minutes=1), actor=alice)
    api.remove("daily-report", actor=alice)

    entries = list(reversed(api.audit()))
    assert _trail(api) == [
        ("create", "alice", "cli", "report"),
        ("update", "bob", "api", "report"),
        ("rename", "alice", "cli", "daily-report"),
        ("pause", "alice", "cli", "daily-report"),
        ("resume", "alice", "cli", "daily-report"),
        ("run_now", "alice", "cli", "daily-report"),
        ("backfill", "alice", "cli", "daily-report"),
        ("remove", "alice", "cli", "daily-report"),
    ]
    create, update, rename, pause, resume, run_now, backfill, remove = entries
    assert create.changes["task"] == [None, "t.report"]
    assert create.changes["every"] == [None, 60.0]
    assert update.changes == {"kwargs": [{}, {"to": "ops"}]}
    assert rename.changes == {"name": ["report", "daily-report"]}
    assert pause.changes == {"enabled": [True, False], "pause_source": [None, "person"]}
    assert resume.changes == {"enabled": [False, True], "pause_source": ["person", None]}
    assert run_now.changes == {"task_id": [None, task_id]}
    assert backfill.changes == {
        "from": [None, "2024-05-06T09:00:00Z"],
        "to": [None, "2024-05-06T09:03:00Z"],
        "queued": [None, 3],
        "already": [None, 0],
    }
    assert remove.changes["name"] == ["daily-report", None]
    assert {e.uid for e in entries} == {create.uid} != {None}  # one identity through the rename
    assert {e.at for e in entries[:6]} == {START}  # the API's clock (the database's, live)
    assert _trail(api, "daily-report") == _trail(api)  # the renamed schedule's whole trail


def test_a_refused_or_empty_edit_leaves_no_entry(api: Schedules) -> None:
    api.add("report", "t.report", Every(60))
    before = _trail(api)

    with pytest.raises(ScheduleExists):
        api.add("report", "t.other", Every(30))
    with pytest.raises(ValidationError):
        api.update("report", jitter=-1)
    with pytest.raises(ValidationError):
        api.pause("report", actor="")
    api.update("report", task="t.report")  # the same value: nothing changes
    api.pause("report")
    api.pause("report")  # paused already
    api.backfill("report", START - HOUR, START, dry_run=True)

    assert _trail(api) == [*before, ("pause", api.actor.name, "api", "report")]


def fail_after_recording(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make every edit's transaction fail right after its entry is written."""
    record = audit.record

    def record_then_fail(conn: Any, entries: Any) -> None:
        record(conn, entries)
        raise RuntimeError("the edit's transaction fails after its entry was written")

    monkeypatch.setattr(audit, "record", record_then_fail)


def test_an_edit_rolled_back_takes_its_entry_with_it(
    api: Schedules, monkeypatch: pytest.MonkeyPatch
) -> None:
    api.add("report", "t.report", Every(60))
    fail_after_recording(monkeypatch)
    with pytest.raises(RuntimeError):
        api.pause("report")

    assert api.get("report").enabled
    assert [e.action for e in api.audit()] == ["create"]


def test_batch_writes_leave_one_entry_per_schedule_changed(api: Schedules) -> None:
    api.add_many(
        [Definition.create(name=f"s{n}", task="t.s", schedule=Every(60)) for n in range(3)],
        actor="loader",
    )
    api.update_many({"s0": {"args": [1]}, "s1": {"args": []}}, actor="loader")

    assert _trail(api) == [
        ("create", "loader", "api", "s0"),
        ("create", "loader", "api", "s1"),
        ("create", "loader", "api", "s2"),
        ("update", "loader", "api", "s0"),  # s1's args were [] already
    ]
    assert api.audit("s0")[0].changes == {"args": [[], [1]]}


def test_the_sync_records_what_it_creates_updates_and_disables_as_beat_schedule(
    api: Schedules, tables: Tables
) -> None:
    def entry(name: str, every: float) -> Definition:
        return Definition.create(name=name, task="t.x", schedule=Every(every))

    tables.sync([entry("a", 60), entry("b", 60)], START)
    tables.sync([entry("a", 60), entry("b", 60)], START)  # unchanged: nothing recorded
    tables.sync([entry("a", 120)], START + HOUR)

    assert _trail(api) == [
        ("create", "beat_schedule", "sync", "a"),
        ("create", "beat_schedule", "sync", "b"),
        ("update", "beat_schedule", "sync", "a"),
        ("disable", "beat_schedule", "sync", "b"),
    ]
    assert api.audit("a")[0].changes == {"every": [60.0, 120.0]}
    assert api.audit("b")[0].changes == {
        "origin": ["config", "config:removed"],
        "enabled": [True, False],
    }


def test_a_huge_value_is_cut_in_the_entry_and_the_edit_stores_it_whole(api: Schedules) -> None:
    big = {"blob": "x" * 50_000}
    api.add("big", "t.big", Cron("0 * * * *"), kwargs=big)

    (entry,) = api.audit("big")
    assert api.get("big").kwargs == big
    assert entry.changes["kwargs"][1].endswith("… (cut: 50012 characters)")
    assert len(entry.changes["kwargs"][1]) < 1100


def test_the_default_actor_is_the_os_user_through_the_api(
    api: Schedules, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(audit, "os_user", lambda: "deploy")
    with Schedules(api.store, clock=api.clock) as other:
        other.add("report", "t.report", Every(60))
    assert _trail(api) == [("create", "deploy", "api", "report")]


@pytest.mark.parametrize(
    "name", [pytest.param("ali\x1b[2Jce", id="escape"), pytest.param("bob\n", id="newline")]
)
def test_an_actor_with_a_control_character_is_refused_and_nothing_is_written(
    api: Schedules, name: str
) -> None:
    api.add("report", "t.report", Every(60))
    before = _trail(api)

    with pytest.raises(ValidationError) as caught:
        api.pause("report", actor=name)
    with pytest.raises(ValidationError):
        Schedules(api.store, actor=name)

    assert caught.value.field == "actor"
    assert str(caught.value).startswith(f"actor={name!r}: contains the control character U+00")
    assert api.get("report").enabled
    assert _trail(api) == before


def test_old_entries_are_pruned_by_age_and_since_limit_select(
    api: Schedules, clock: FixedClock
) -> None:
    api.add("old", "t.x", Every(60))
    clock.advance(100 * DAY)
    api.add("new", "t.x", Every(60))
    assert [e.name for e in api.audit(since=START + DAY)] == ["new"]
    assert [e.name for e in api.audit(limit=1)] == ["new"]

    pruned = audit.prune_audit(api.store.engine, START + 10 * DAY, batch=1)

    assert pruned == 1
    assert [e.name for e in api.audit()] == ["new"]
    with api.store.engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(A)).scalar_one() == 1
