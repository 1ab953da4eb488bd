"""One failing write isolates one schedule (SEMANTICS: "one failing write (a constraint, a value
the database refuses) never stops other schedules: that schedule is marked with its error and
set aside; everything else keeps firing. Only lost connectivity is an outage").

Before, a constraint violation while recording one schedule's fires failed the batch's
transaction, every tick failed the same way, beat logged "schedule database unreachable" for
ever, nothing fired, and ``dbeat status`` counted nothing in error.
"""

from __future__ import annotations

import logging
import re
from datetime import timedelta

import pytest
import sqlalchemy as sa

from celery_dbeat import Every
from celery_dbeat.api import Schedules
from celery_dbeat.beat.ticker import Ticker
from celery_dbeat.clock import FixedClock
from celery_dbeat.locks import DatabaseLock
from celery_dbeat.store import Store
from tests.integration.conftest import (
    START,
    F,
    MakeTicker,
    RecordingPublisher,
    Tables,
    run,
    settings,
    task_id_of,
)
from tests.services import pg_role

MINUTE = timedelta(minutes=1)


def occupy_task_id(tables: Tables, victim: str, slot_of_victim: int, holder: str) -> None:
    """Record, under ``holder``, a fire holding the task id ``victim``'s fire of its
    ``slot_of_victim``-th slot will have: as a hand edit or an old bug could leave it."""
    task_id = task_id_of(victim, START + slot_of_victim * MINUTE)
    holder_id = tables.row(holder).id
    with tables.store.engine.begin() as conn:
        conn.execute(
            sa.insert(F).values(
                schedule_id=holder_id,
                slot=START - timedelta(days=1),
                manual=False,
                status="sent",
                slot_count=1,
                task_id=task_id,
                recorded_at=START,
                attempts=0,
            )
        )


def test_a_write_the_database_refuses_sets_that_schedule_aside_and_the_others_fire(
    api: Schedules,
    tables: Tables,
    make_ticker: MakeTicker,
    clock: FixedClock,
    publisher: RecordingPublisher,
    caplog: pytest.LogCaptureFixture,
) -> None:
    for name in ("a", "b", "victim", "c", "d"):
        api.add(name, f"t.{name}", Every(60))
    occupy_task_id(tables, "victim", 2, holder="d")
    caplog.set_level(logging.INFO, logger="celery_dbeat")

    run(make_ticker(), clock, START + 3 * MINUTE)

    sent = set(publisher.fires)
    for name in ("a", "b", "c", "d"):
        assert {(name, START + n * MINUTE) for n in (1, 2, 3)} <= sent
    assert ("victim", START + MINUTE) in sent  # its first slot went out before the refusal
    assert ("victim", START + 2 * MINUTE) not in sent
    victim = api.get("victim")
    assert victim.state == "error"
    assert victim.last_error is not None
    assert "refused to record its fires" in victim.last_error
    assert api.counts()["error"] == 1
    assert [info.name for info in api.failing()] == ["victim"]
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1  # logged once, not on every tick
    assert "victim" in errors[0]
    assert not [m for m in errors if "unreachable" in m]


def test_a_schedule_set_aside_fires_again_once_its_timing_is_given_again(
    api: Schedules,
    tables: Tables,
    make_ticker: MakeTicker,
    clock: FixedClock,
    publisher: RecordingPublisher,
) -> None:
    api.add("victim", "t.v", Every(60))
    api.add("other", "t.o", Every(60))
    occupy_task_id(tables, "victim", 1, holder="other")
    ticker = make_ticker()
    run(ticker, clock, START + MINUTE)
    assert api.get("victim").state == "error"

    with tables.store.engine.begin() as conn:  # the operator removes the bad row ...
        conn.execute(sa.delete(F).where(F.c.slot == START - timedelta(days=1)))
    api.update("victim", schedule=Every(120))  # ... and gives the timing again
    run(ticker, clock, START + 4 * MINUTE)

    assert api.get("victim").state == "active"
    assert ("victim", START + 3 * MINUTE) in publisher.fires


# SQLite reports a trigger's RAISE as a constraint failed: one schedule's refusal (below), not the
# tick's. PostgreSQL's RAISE EXCEPTION and MySQL's SIGNAL '45000' are neither a constraint nor a
# value refused.
@pytest.mark.parametrize("database_url", ["postgresql", "mysql"], indirect=True)
def test_a_tick_the_database_refuses_is_reported_as_refused_never_as_unreachable(
    api: Schedules,
    tables: Tables,
    make_ticker: MakeTicker,
    clock: FixedClock,
    caplog: pytest.LogCaptureFixture,
) -> None:
    api.add("a", "t.a", Every(1))
    # A rule that refuses every change of a fire row (marking it sent), as a server-side rule or
    # a permission would: the database answers, so it is not an outage.
    tables.refuse("UPDATE", "dbeat_fires", "changes are refused here", constraint=False)
    ticker = make_ticker()
    caplog.set_level(logging.INFO, logger="celery_dbeat")

    sleeps = []
    for _ in range(4):
        clock.advance(timedelta(seconds=1))
        sleeps.append(ticker.tick())
        clock.advance(timedelta(seconds=sleeps[-1]))

    messages = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert messages
    assert all("refused this tick's work" in m for m in messages), messages
    assert any("changes are refused here" in m for m in messages)
    assert not [m for m in messages if "unreachable" in m]
    assert len(messages) < 4  # once when it begins, not once a tick
    assert all(s > 0 for s in sleeps)  # backs off instead of spinning


def test_a_fire_the_database_refuses_to_mark_sent_costs_its_schedule_and_is_never_sent_again(
    api: Schedules,
    tables: Tables,
    make_ticker: MakeTicker,
    clock: FixedClock,
    publisher: RecordingPublisher,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Before, the refusal failed the whole batch's marking: the tick was refused, and every
    fire of the batch, the other schedules' too, was taken over and published again."""
    for name in ("a", "victim", "c"):
        api.add(name, f"t.{name}", Every(60))
    victim = tables.row("victim").id
    when = f"NEW.status = 'sent' AND OLD.schedule_id = {victim}"
    tables.refuse("UPDATE", "dbeat_fires", "refused for victim", when=when)
    caplog.set_level(logging.INFO, logger="celery_dbeat")

    run(make_ticker(), clock, START + 5 * MINUTE)

    assert len(publisher.task_ids) == len(set(publisher.task_ids))  # nothing sent twice
    for name in ("a", "c"):
        assert {(name, START + n * MINUTE) for n in range(1, 6)} <= set(publisher.fires)
    assert [f for f in publisher.fires if f[0] == "victim"] == [("victim", START + MINUTE)]
    victim = api.get("victim")
    assert victim.state == "error"
    assert victim.last_error is not None
    assert "refused to mark it sent" in victim.last_error
    assert api.counts()["error"] == 1
    (fire,) = tables.fires("victim")
    assert fire.status == "failed"
    assert fire.error.startswith("sent to the broker, but the database refused to mark it sent")
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors
    assert all("victim" in m for m in errors), errors
    assert not [m for m in errors if "unreachable" in m or "this tick's work" in m]


def test_a_prune_the_database_refuses_keeps_the_history_and_every_schedule_fires(
    api: Schedules,
    tables: Tables,
    make_ticker: MakeTicker,
    clock: FixedClock,
    publisher: RecordingPublisher,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Before, the refused delete failed every tick that pruned: nothing fired meanwhile."""
    api.add("a", "t.a", Every(60))
    ticker = make_ticker(history_retention="1m")
    run(ticker, clock, START + 2 * MINUTE)  # fires old enough to prune
    tables.refuse("DELETE", "dbeat_fires", "history is kept here")
    caplog.set_level(logging.INFO, logger="celery_dbeat")
    publisher.clear()

    run(ticker, clock, START + 5 * MINUTE)

    assert {("a", START + n * MINUTE) for n in (3, 4, 5)} <= set(publisher.fires)
    assert len(tables.fires("a")) == 5  # nothing pruned
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors
    assert all("refused to prune history" in m for m in errors), errors
    assert all("history is kept here" in m for m in errors), errors


#: A recorded fire whose lease holds what the driver cannot read, as a hand edit could leave it.
_UNREADABLE_LEASE = {
    "postgresql": "UPDATE dbeat_fires SET status = 'pending', lease_until = '-infinity'"
    " WHERE id = {fire}",
    # sorts before every instant, as '-infinity' does: due to be taken over
    "sqlite": "UPDATE dbeat_fires SET status = 'pending', lease_until = '0000-not-a-time'"
    " WHERE id = {fire}",
}


@pytest.mark.parametrize("database_url", ["sqlite", "postgresql"], indirect=True)
def test_a_recorded_fire_that_cannot_be_read_is_set_aside_and_the_others_fire(
    api: Schedules,
    tables: Tables,
    make_ticker: MakeTicker,
    clock: FixedClock,
    publisher: RecordingPublisher,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Before, taking over unpublished fires failed on that row on every tick, and nothing
    fired at all."""
    api.add("a", "t.a", Every(60))
    api.add("b", "t.b", Every(60))
    ticker = make_ticker()
    run(ticker, clock, START + MINUTE)
    (bad,) = tables.fires("a")
    dialect = tables.store.engine.dialect.name
    tables.execute(_UNREADABLE_LEASE[dialect].format(fire=bad.id))
    caplog.set_level(logging.INFO, logger="celery_dbeat")
    publisher.clear()

    run(ticker, clock, START + 4 * MINUTE)

    for name in ("a", "b"):
        assert {(name, START + n * MINUTE) for n in (2, 3, 4)} <= set(publisher.fires)
    assert ("a", START + MINUTE) not in publisher.fires  # sent once already; not again
    with tables.store.engine.connect() as conn:
        status, error = conn.execute(sa.select(F.c.status, F.c.error).where(F.c.id == bad.id)).one()
    assert status == "failed"
    assert "lease_until" in error
    assert "cannot be read" in error
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1, errors
    assert "set aside" in errors[0]


def test_rights_taken_from_a_running_beat_are_said_once_then_once_a_minute_then_when_given_back(
    postgres_store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    clock = FixedClock(START)
    with Schedules(postgres_store, clock=clock) as api:
        api.add("a", "t.a", Every(1))
    url = postgres_store.engine.url
    owner = sa.create_engine(url, isolation_level="AUTOCOMMIT")  # the tables' owner
    with pg_role("LOGIN") as role:
        with owner.connect() as conn:
            conn.execute(sa.text(f"GRANT ALL ON ALL TABLES IN SCHEMA public TO {role}"))
            conn.execute(sa.text(f"GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO {role}"))
        as_role = url.set(username=role).render_as_string(hide_password=False)
        beat_store = Store(as_role, server_clock=False)
        ticker = Ticker(beat_store, DatabaseLock(), RecordingPublisher(), settings(), clock)
        caplog.set_level(logging.INFO, logger="celery_dbeat")
        try:
            clock.advance(ticker.tick())
            assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
            with owner.connect() as conn:
                conn.execute(sa.text(f"REVOKE UPDATE ON dbeat_schedules FROM {role}"))
            errors = []
            while clock.monotonic() < 200:
                caplog.clear()
                clock.advance(ticker.tick())
                errors += [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
            with owner.connect() as conn:
                conn.execute(sa.text(f"GRANT UPDATE ON dbeat_schedules TO {role}"))
            caplog.clear()
            for _ in range(10):  # until the next try, at most 30 s on
                clock.advance(ticker.tick())
                if caplog.records:
                    break
            back = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
        finally:
            beat_store.close()
            with owner.connect() as conn:  # its grants here, or the role cannot be dropped
                conn.execute(sa.text(f"DROP OWNED BY {role}"))
            owner.dispose()

    assert all("permission denied for table dbeat_schedules" in m for m in errors), errors
    assert all("refused this beat's login or rights" in m for m in errors), errors
    assert not [m for m in errors if "unreachable" in m]
    assert "refused this beat's login or rights;" in errors[0]  # when it begins
    assert [re.findall(r"rights for (\d+) s;", m) for m in errors[1:]] == [["61"], ["121"], ["181"]]
    assert back == ["dbeat: the schedule database accepts this beat's work again"]
