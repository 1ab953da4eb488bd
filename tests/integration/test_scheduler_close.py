"""Closing the scheduler from Celery's SIGTERM handler in the middle of a tick.

Celery's handler calls ``Service.sync()`` (which closes the scheduler) wherever the main thread
is, then raises ``SystemExit``; Celery closes the scheduler again once that has unwound the
loop. The clean-up (removing the heartbeat, closing the store) must wait for that second close:
in the middle of a tick, an open transaction may hold the locks it needs. On SQLite the beat
waited for its own write lock (the end-to-end shutdown test saw three beats still running 5 s
after SIGTERM).
"""

from __future__ import annotations

from pathlib import Path

import celery
import pytest
import sqlalchemy as sa

from celery_dbeat.beat.scheduler import Scheduler


def test_a_close_during_a_tick_leaves_the_clean_up_to_the_close_after_it(
    tmp_path: Path,
) -> None:
    app = celery.Celery("dbeat-close", set_as_current=False)
    app.conf.update(
        broker_url="memory://", dbeat_database_url=f"sqlite:///{tmp_path / 'close.sqlite3'}"
    )
    scheduler = Scheduler(app)  # not lazy: opens the store, migrates, syncs
    scheduler.tick()  # the first tick writes this beat's heartbeat
    assert scheduler.store is not None
    assert scheduler._ticker is not None
    engine = scheduler.store.engine
    with engine.connect() as conn:
        assert conn.execute(sa.text("SELECT count(*) FROM dbeat_beats")).scalar() == 1
    ticker = scheduler._ticker
    stops: list[str] = []
    in_tick = False
    real_stop = ticker.stop

    def stop() -> None:
        stops.append("in tick" if in_tick else "after")
        real_stop()

    def interrupted_tick() -> float:
        nonlocal in_tick
        in_tick = True
        try:
            # The tick holds SQLite's write lock when SIGTERM arrives.
            with engine.begin() as conn:
                conn.execute(sa.text("UPDATE dbeat_beats SET pid = pid"))
                scheduler.close()  # what Celery's signal handler does first
                raise SystemExit()
        finally:
            in_tick = False

    ticker.stop = stop  # type: ignore[method-assign]
    ticker.tick = interrupted_tick  # type: ignore[method-assign]
    with pytest.raises(SystemExit):
        scheduler.tick()
    assert stops == []

    scheduler.close()  # Celery's Service.start: finally -> sync() -> close()
    scheduler.close()  # and a third close does nothing more

    assert stops == ["after"]
    check = sa.create_engine(app.conf.dbeat_database_url)
    with check.connect() as conn:
        assert conn.execute(sa.text("SELECT count(*) FROM dbeat_beats")).scalar() == 0
    check.dispose()
    with pytest.raises(SystemExit):  # closed: no further tick runs
        scheduler.tick()


def test_a_close_whose_system_exit_was_swallowed_ends_the_tick_before_any_wait(
    tmp_path: Path,
) -> None:
    # CPython ignores an exception raised in a weakref callback run by the garbage collector,
    # the SystemExit of Celery's SIGTERM handler included: a beat that went on to sleep or wait
    # for notifications for max_interval was still running when the shutdown test gave up.
    app = celery.Celery("dbeat-close", set_as_current=False)
    app.conf.update(
        broker_url="memory://",
        beat_max_loop_interval=120,
        dbeat_database_url=f"sqlite:///{tmp_path / 'close.sqlite3'}",
    )
    scheduler = Scheduler(app)
    scheduler.tick()
    assert scheduler._ticker is not None

    def interrupted_tick() -> float:
        scheduler.close()  # the handler's first step; its SystemExit is lost
        return 120.0

    scheduler._ticker.tick = interrupted_tick  # type: ignore[method-assign]
    with pytest.raises(SystemExit):
        scheduler.tick()
    scheduler.close()
