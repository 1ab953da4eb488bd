"""What the ``import --from`` report says: of each schedule's next fire when the stored one has
passed (imported once, then again with no beat having run: what a beat starting now does, not a
next fire in the past), and of a crontab whose two day fields must both match."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import sqlalchemy as sa
from celery.schedules import crontab, schedule
from redbeat import RedBeatSchedulerEntry

from celery_dbeat.store import Store
from tests.integration.cli.conftest import Cli
from tests.integration.conftest import S

UTC = timezone.utc


def test_a_second_import_with_no_beat_running_says_the_fire_is_due_not_a_past_next(
    cli: Cli, redis_url: str, redis_prefix: str
) -> None:
    cli.app.conf.update(redbeat_redis_url=redis_url, redbeat_key_prefix=f"{redis_prefix}rb:")
    now = datetime.now(UTC).replace(microsecond=0)
    entry = RedBeatSchedulerEntry(
        "poll", "proj.tasks.poll", schedule(timedelta(minutes=10)), app=cli.app
    ).save()
    entry.reschedule(last_run_at=now - timedelta(minutes=2))
    cli.ok("import", "--from", "redbeat")
    # No beat runs; as if the import had been a quarter of an hour ago.
    store = Store(cli.app.conf.dbeat_database_url)
    with store.engine.begin() as conn:
        conn.execute(sa.update(S).values(next_run_at=now - timedelta(minutes=5)))
    store.close()
    passed = (now - timedelta(minutes=5)).isoformat().replace("+00:00", "Z")

    out = cli.ok("import", "--from", "redbeat")

    (line,) = [line for line in out.splitlines() if line.startswith("unchanged")]
    assert line.endswith(
        f"; due since {passed}: no beat ran since; sent when a beat starts (misfire policy "
        "latest: one fire, for the newest missed slot)"
    )
    assert f"celery-dbeat as soon as a beat starts (due since {passed})" in out
    assert f"next {passed}" not in out


def test_an_imported_crontab_explains_days_all_where_both_day_fields_are_set(
    cli: Cli, redis_url: str, redis_prefix: str
) -> None:
    cli.app.conf.update(redbeat_redis_url=redis_url, redbeat_key_prefix=f"{redis_prefix}rb:")
    for name, day_of_month in (("first-monday", "1-7"), ("mondays", "*")):
        every = crontab(minute=0, hour=9, day_of_month=day_of_month, day_of_week="mon")
        RedBeatSchedulerEntry(name, f"proj.tasks.{name}", every, app=cli.app).save()

    lines = cli.ok("import", "--from", "redbeat", "--dry-run").splitlines()

    (both,) = [line for line in lines if line.startswith("created    first-monday")]
    (one,) = [line for line in lines if line.startswith("created    mondays")]
    assert "UTC days=all (both day fields must match, as in Celery's crontab); next " in both
    assert "days=" not in one
