"""Beat's banner (``celery beat`` prints ``Scheduler.info`` before it starts): where the schedules
live, with passwords masked, and the checks that need no I/O."""

from __future__ import annotations

import celery

from celery_dbeat.beat.scheduler import Scheduler


def banner(**conf: object) -> str:
    app = celery.Celery("dbeat-banner-test", set_as_current=False)
    app.conf.update(conf)
    return Scheduler(app, lazy=True).info


def test_the_banner_masks_passwords_and_shows_contradicting_settings() -> None:
    text = banner(
        dbeat_database_url="postgresql+psycopg://beat:s3cret@db.example/prod",
        dbeat_redis_url="redis://:hunter2@cache.example:6379/1",
        dbeat_misfire_grace=2,  # shorter than the 5 s misfire tolerance
        dbeat_metrics_port=9808,
    )

    assert "s3cret" not in text
    assert "hunter2" not in text
    assert "postgresql+psycopg://beat:***@db.example/prod" in text
    assert "dbeat metrics -> http://127.0.0.1:9808/metrics" in text
    assert (
        "dbeat WARNING -> dbeat_misfire_grace (2 s) is shorter than dbeat_misfire_tolerance" in text
    )


def test_a_consistent_configuration_shows_no_warning() -> None:
    assert "WARNING" not in banner(dbeat_database_url="sqlite:////srv/beat/schedules.db")
