"""A pause carries a note (SEMANTICS: "Pausing stops fires"): who paused it and why, and when,
shown until the resume clears them; ``pause_after_failures`` pauses a schedule after N
consecutive failed runs (reported by the worker hook) with a note naming the last error; and
``history_limit`` keeps at most N fires per schedule beside the age bound."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

import pytest
import sqlalchemy as sa

from celery_dbeat import Cron, ValidationError
from celery_dbeat.api import Schedules
from celery_dbeat.clock import FixedClock
from celery_dbeat.core.definitions import Definition
from celery_dbeat.core.fires import RunStatus
from celery_dbeat.store import Store
from celery_dbeat.store.models import S
from celery_dbeat.store.runs import (
    FailurePause,
    RunEvent,
    prune_history,
    prune_history_limits,
    record_runs,
)
from celery_dbeat.store.schedules import paused_counts
from tests.integration.conftest import START, F, MakeTicker, RecordingPublisher, Tables, at, run

HOUR = timedelta(hours=1)


def _fire(store: Store, name: str, slot: datetime, task_id: str, status: str = "sent") -> None:
    with store.engine.begin() as conn:
        schedule_id = conn.execute(
            sa.text("SELECT id FROM dbeat_schedules WHERE name = :n"), {"n": name}
        ).scalar_one()
        conn.execute(
            sa.insert(F).values(
                schedule_id=schedule_id,
                slot=slot,
                manual=False,
                status=status,
                slot_count=1,
                task_id=task_id,
                recorded_at=slot,
                attempts=0,
            )
        )


def _ran(store: Store, task_id: str, status: RunStatus, error: str | None = None) -> list[Any]:
    finished = START + HOUR
    return record_runs(
        store.engine, [RunEvent(task_id, status, finished, worker="w1", error=error)]
    ).paused


# Notes ------------------------------------------------------------------------------------------


def test_a_pause_keeps_its_note_and_time_until_the_resume_clears_them(
    api: Schedules, clock: FixedClock
) -> None:
    api.add("report", "t.report", Cron("0 * * * *"))
    clock.advance(timedelta(minutes=5))
    paused = api.pause("report", note="alice: the mail server is down (INC-42)")
    assert (paused.state, paused.pause_note, paused.paused_at, paused.pause_source) == (
        "paused",
        "alice: the mail server is down (INC-42)",
        START + timedelta(minutes=5),
        "person",
    )

    clock.advance(timedelta(minutes=5))
    again = api.pause("report", note="bob: still down")
    assert (again.pause_note, again.paused_at) == ("bob: still down", paused.paused_at)

    resumed = api.resume("report")
    assert (resumed.state, resumed.pause_note, resumed.paused_at, resumed.pause_source) == (
        "active",
        None,
        None,
        None,
    )
    assert api.pause("report").pause_note is None  # a note is optional


BAD_NOTES = [
    pytest.param("", "non-empty", id="empty"),
    pytest.param("   ", "non-empty", id="blank"),
    pytest.param("x" * 501, "longer than 500 characters", id="too-long"),
    pytest.param("down\nsee INC-42", "control character U+000A", id="newline"),
    pytest.param(42, "non-empty string", id="not-text"),
]


@pytest.mark.parametrize(("note", "problem"), BAD_NOTES)
def test_a_bad_note_is_refused_with_one_line_naming_it_and_the_schedule_keeps_firing(
    api: Schedules, note: object, problem: str
) -> None:
    api.add("report", "t.report", Cron("0 * * * *"))
    with pytest.raises(ValidationError) as raised:
        api.pause("report", note=note)  # type: ignore[arg-type]
    message = str(raised.value)
    assert "note" in message
    assert problem in message
    assert "\n" not in message
    assert api.get("report").state == "active"


def test_beat_schedule_disabling_a_schedule_says_so_in_its_note_and_enabling_clears_it(
    tables: Tables, api: Schedules
) -> None:
    entry: dict[str, Any] = {"name": "report", "task": "t.report", "schedule": Cron("0 * * * *")}
    tables.sync([Definition.create(**entry)], at("09:00"))
    tables.sync([Definition.create(**entry, enabled=False)], at("09:10"))
    paused = api.get("report")
    assert (paused.pause_source, paused.paused_at) == ("config", at("09:10"))
    assert "beat_schedule" in str(paused.pause_note)

    tables.sync([Definition.create(**entry)], at("09:20"))
    assert (api.get("report").state, api.get("report").pause_note) == ("active", None)


# pause_after_failures ---------------------------------------------------------------------------


def test_n_consecutive_failed_runs_pause_the_schedule_with_a_note_naming_the_last_error(
    api: Schedules, store: Store
) -> None:
    api.add("report", "t.report", Cron("0 * * * *"), pause_after_failures=3)
    for n in range(5):
        _fire(store, "report", START - (5 - n) * HOUR, f"run-{n}")

    assert _ran(store, "run-0", RunStatus.FAILED, "KeyError: 'a'") == []
    assert _ran(store, "run-1", RunStatus.FAILED, "KeyError: 'b'") == []
    assert _ran(store, "run-2", RunStatus.SUCCEEDED) == []  # a success starts the count again
    assert _ran(store, "run-3", RunStatus.FAILED, "KeyError: 'c'") == []
    assert _ran(store, "run-4", RunStatus.FAILED, "ValueError: bad\nTraceback ...") == []
    assert api.get("report").state == "active"

    _fire(store, "report", START, "run-5")
    note = "paused after 3 consecutive failed runs; last: ValueError: boom"
    assert _ran(store, "run-5", RunStatus.FAILED, "ValueError: boom") == [
        FailurePause("report", 3, note)
    ]
    paused = api.get("report")
    assert (paused.state, paused.pause_note, paused.pause_source, paused.paused_at) == (
        "paused",
        note,
        "failures",
        START + HOUR,
    )
    with store.engine.connect() as conn:
        assert paused_counts(conn)["failures"] == 1


def test_a_schedule_paused_after_failures_no_longer_fires_and_resumes_on_request(
    api: Schedules,
    store: Store,
    make_ticker: MakeTicker,
    clock: FixedClock,
    publisher: RecordingPublisher,
) -> None:
    api.add("report", "t.report", Cron("0 * * * *"), pause_after_failures=1)
    clock.set(at("10:00"))
    ticker = make_ticker()
    run(ticker, clock, at("10:00"))
    ((request, *_),) = list(publisher)
    record_runs(store.engine, [RunEvent(request.task_id, RunStatus.FAILED, at("10:00:05"))])

    run(ticker, clock, at("12:30"), step=timedelta(minutes=15))
    assert publisher.fires == [("report", at("10:00"))]
    assert api.get("report").pause_note == "paused after 1 consecutive failed runs"

    clock.set(at("12:40"))
    api.resume("report")
    run(ticker, clock, at("13:00"), step=timedelta(minutes=15))
    assert publisher.fires == [("report", at("10:00")), ("report", at("13:00"))]


def test_without_pause_after_failures_failed_runs_never_pause(api: Schedules, store: Store) -> None:
    api.add("report", "t.report", Cron("0 * * * *"))
    for n in range(3):
        _fire(store, "report", START - n * HOUR, f"run-{n}")
        assert _ran(store, f"run-{n}", RunStatus.FAILED, "KeyError") == []
    assert (api.get("report").state, api.get("report").consecutive_failures) == ("active", 3)


def test_the_count_of_consecutive_failures_is_reset_by_a_success_not_by_a_retry_or_revocation(
    api: Schedules, store: Store
) -> None:
    api.add("report", "t.report", Cron("0 * * * *"))
    for n in range(4):
        _fire(store, "report", START - (4 - n) * HOUR, f"run-{n}")

    def count() -> int:
        return api.get("report").consecutive_failures

    _ran(store, "run-0", RunStatus.FAILED, "KeyError")
    assert count() == 1
    _ran(store, "run-1", RunStatus.RETRIED)  # runs again under the same task id
    assert count() == 1
    _ran(store, "run-1", RunStatus.FAILED, "KeyError")
    assert count() == 2
    _ran(store, "run-2", RunStatus.REVOKED)  # neither a success nor a failure
    _ran(store, "run-0", RunStatus.FAILED, "KeyError")  # the same run reported again
    assert count() == 2
    _ran(store, "run-3", RunStatus.SUCCEEDED)
    assert count() == 0


def test_failures_whose_fires_a_history_limit_pruned_still_count_towards_the_pause(
    api: Schedules, store: Store, tables: Tables, clock: FixedClock
) -> None:
    api.add("report", "t.report", Cron("0 * * * *"), pause_after_failures=2, history_limit=1)
    _fire(store, "report", START - 2 * HOUR, "run-0")
    _fire(store, "report", START - HOUR, "run-1")
    assert _ran(store, "run-0", RunStatus.FAILED, "KeyError: 'a'") == []
    assert prune_history_limits(store.engine, monotonic=clock.monotonic) == (1, 0)
    assert [f.task_id for f in tables.fires("report")] == ["run-1"]

    note = "paused after 2 consecutive failed runs; last: KeyError: 'b'"
    assert _ran(store, "run-1", RunStatus.FAILED, "KeyError: 'b'") == [
        FailurePause("report", 2, note)
    ]
    assert api.get("report").state == "paused"


def test_a_monthly_schedule_pauses_after_failures_older_than_the_history_retention(
    api: Schedules, store: Store
) -> None:
    api.add("monthly", "t.report", Cron("0 9 1 * *"), pause_after_failures=2)
    _fire(store, "monthly", START - 40 * 24 * HOUR, "april")
    _ran(store, "april", RunStatus.FAILED, "KeyError")
    assert prune_history(store.engine, START - 30 * 24 * HOUR) == 1
    _fire(store, "monthly", START - 5 * 24 * HOUR, "may")

    assert [p.schedule for p in _ran(store, "may", RunStatus.FAILED, "KeyError")] == ["monthly"]


def test_the_pause_after_failures_is_in_the_audit_trail_as_the_worker_that_reported_it(
    api: Schedules, store: Store
) -> None:
    api.add("report", "t.report", Cron("0 * * * *"), pause_after_failures=1, actor="alice")
    _fire(store, "report", START - HOUR, "run-0")
    (pause,) = _ran(store, "run-0", RunStatus.FAILED, "KeyError: 'a'")

    entry = api.audit("report")[0]
    assert (entry.actor, entry.surface, entry.action, entry.at) == (
        "w1",
        "worker",
        "pause",
        START + HOUR,
    )
    assert entry.changes == {
        "enabled": [True, False],
        "pause_note": [None, pause.note],
        "pause_source": [None, "failures"],
    }


@pytest.mark.parametrize("worker", [None, "  "], ids=["unknown", "blank"])
def test_a_pause_after_failures_reported_by_an_unnamed_worker_is_audited_as_worker(
    api: Schedules, store: Store, worker: str | None
) -> None:
    api.add("report", "t.report", Cron("0 * * * *"), pause_after_failures=1)
    _fire(store, "report", START - HOUR, "run-0")
    failed = RunEvent("run-0", RunStatus.FAILED, START, worker=worker, error="KeyError")
    assert [p.schedule for p in record_runs(store.engine, [failed]).paused] == ["report"]
    assert (api.audit("report")[0].actor, api.audit("report")[0].action) == ("worker", "pause")


def _waiting_on_a_lock(conn: sa.Connection) -> bool:
    """Whether some transaction of this database waits for a lock. (InnoDB refreshes what its
    ``innodb_trx`` shows only when it was last read 0.1 s ago or more: poll it more slowly.)"""
    if conn.dialect.name == "postgresql":
        query = (
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
            " AND datname = current_database()"
        )
    else:
        query = (
            "SELECT count(*) FROM information_schema.innodb_trx t"
            " JOIN information_schema.processlist p ON p.id = t.trx_mysql_thread_id"
            " WHERE t.trx_state = 'LOCK WAIT' AND p.db = database()"
        )
    return bool(conn.execute(sa.text(query)).scalar())


def _while_a_worker_writes_a_failure(
    store: Store, open_store: Any, task_id: str, late: Callable[[Store], object]
) -> None:
    """Another worker in the middle of writing ``task_id``'s failure (holding the schedule row,
    its count raised, not committed) while ``late`` writes on a store of its own; returns once
    ``late`` waited for that lock and then wrote."""
    other, watcher = open_store(), open_store()
    thread = threading.Thread(target=lambda: late(other))
    with store.engine.begin() as conn:
        conn.execute(sa.text("SELECT id FROM dbeat_schedules FOR UPDATE"))
        conn.execute(sa.update(F).where(F.c.task_id == task_id).values(run_status="failed"))
        conn.execute(
            sa.text("UPDATE dbeat_schedules SET consecutive_failures = consecutive_failures + 1")
        )
        thread.start()
        with watcher.engine.connect() as watching:
            while thread.is_alive() and not _waiting_on_a_lock(watching):
                watching.rollback()
                thread.join(0.2)
    thread.join()


@pytest.mark.parametrize("database_url", ["postgresql", "mariadb"], indirect=True)
def test_failures_written_at_once_by_two_workers_are_both_counted(
    api: Schedules, store: Store, open_store: Any
) -> None:
    """The worker writing the last failure waits for the one writing the failure before it,
    then counts it: the schedule row's lock orders them. On PostgreSQL and MariaDB, which say
    when a transaction waits for a lock; SQLite has one writer."""
    api.add("report", "t.report", Cron("0 * * * *"), pause_after_failures=3)
    for n in range(3):
        _fire(store, "report", START - (3 - n) * HOUR, f"run-{n}")
    _ran(store, "run-0", RunStatus.FAILED, "KeyError")
    paused: list[FailurePause] = []

    _while_a_worker_writes_a_failure(
        store,
        open_store,
        "run-1",
        lambda other: paused.extend(_ran(other, "run-2", RunStatus.FAILED, "KeyError: z")),
    )

    assert [p.schedule for p in paused] == ["report"]
    assert (api.get("report").state, api.get("report").consecutive_failures) == ("paused", 3)


@pytest.mark.parametrize("database_url", ["postgresql", "mariadb"], indirect=True)
def test_the_same_failure_reported_by_two_workers_at_once_counts_once(
    api: Schedules, store: Store, open_store: Any
) -> None:
    """A run redelivered to a second worker: both report its failure; the second, waiting for
    the first's lock, reads the failure it committed and does not count it again."""
    api.add("report", "t.report", Cron("0 * * * *"), pause_after_failures=2)
    _fire(store, "report", START - HOUR, "run-0")

    _while_a_worker_writes_a_failure(
        store, open_store, "run-0", lambda other: _ran(other, "run-0", RunStatus.FAILED, "E")
    )

    assert (api.get("report").state, api.get("report").consecutive_failures) == ("active", 1)


# history_limit ----------------------------------------------------------------------------------

# A prune's budget is measured on the clock it is given: the tests' clock does not move, so a
# prune there does a whole pass, however busy the host (with the host's clock, 0.2 s ran out
# after the first schedule on a busy host, and the pass went on from there the next time).


def test_the_prune_keeps_the_newest_history_limit_fires_of_each_schedule_and_unsent_ones(
    api: Schedules, store: Store, tables: Tables, clock: FixedClock
) -> None:
    api.add("limited", "t.a", Cron("0 * * * *"), history_limit=2)
    api.add("unlimited", "t.b", Cron("0 * * * *"))
    for n in range(6):
        _fire(store, "limited", START - n * HOUR, f"a-{n}")
        _fire(store, "unlimited", START - n * HOUR, f"b-{n}")
    _fire(store, "limited", START - 9 * HOUR, "a-pending", status="pending")

    deleted, after = prune_history_limits(store.engine, monotonic=clock.monotonic)

    assert (deleted, after) == (4, 0)
    assert [f.task_id for f in tables.fires("limited")] == ["a-pending", "a-1", "a-0"]
    assert len(tables.fires("unlimited")) == 6
    assert prune_history_limits(store.engine, monotonic=clock.monotonic) == (0, 0)


def test_a_prune_out_of_time_goes_on_where_it_stopped_next_time(
    api: Schedules, store: Store, tables: Tables, clock: FixedClock
) -> None:
    for name in ("a", "b"):
        api.add(name, "t", Cron("0 * * * *"), history_limit=1)
        for n in range(3):
            _fire(store, name, START - n * HOUR, f"{name}-{n}")

    # No time at all: one batch per prune.
    deleted, after = prune_history_limits(
        store.engine, batch=1, budget=0, monotonic=clock.monotonic
    )
    assert (deleted, after) == (1, tables.row("a").id - 1)  # "a" again: it may keep more
    for _ in range(6):
        more, after = prune_history_limits(
            store.engine, after, batch=1, budget=0, monotonic=clock.monotonic
        )
        deleted += more
    assert deleted == 4
    assert [f.task_id for f in tables.fires()] == ["a-0", "b-0"]


def test_the_age_bound_still_prunes_beside_the_history_limit(
    api: Schedules, store: Store, tables: Tables, clock: FixedClock
) -> None:
    api.add("limited", "t.a", Cron("0 * * * *"), history_limit=5)
    for n in range(3):
        _fire(store, "limited", START - n * 24 * HOUR, f"a-{n}")
    assert prune_history(store.engine, START - 36 * HOUR, monotonic=clock.monotonic) == 1
    assert prune_history_limits(store.engine, monotonic=clock.monotonic) == (0, 0)
    assert [f.task_id for f in tables.fires("limited")] == ["a-1", "a-0"]


def test_a_prune_marks_each_schedule_with_the_newest_slot_it_deleted_and_never_lowers_a_mark(
    api: Schedules, store: Store, tables: Tables, clock: FixedClock
) -> None:
    day = 24 * HOUR
    api.add("a", "t.a", Cron("0 * * * *"))
    api.add("b", "t.b", Cron("0 * * * *"))
    for n in (5, 4, 3):
        _fire(store, "a", START - n * day, f"a-{n}")
    _fire(store, "b", START - 4 * day, "b-4")
    a = tables.row("a").id
    with store.engine.begin() as conn:  # a run now (no slot), and b's mark from another prune
        conn.execute(
            sa.insert(F).values(
                schedule_id=a, slot=START - 2.5 * day, manual=True,
                status="sent", slot_count=1, task_id="a-now", recorded_at=START, attempts=0,
            )
        )  # fmt: skip
        conn.execute(sa.update(S).where(S.c.name == "b").values(pruned_until=START - day))

    assert prune_history(store.engine, START - 2 * day, batch=2, monotonic=clock.monotonic) == 5

    assert api.get("a").pruned_until == START - 3 * day
    assert api.get("b").pruned_until == START - day
