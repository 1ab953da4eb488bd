"""A Celery crontab keeps the zone it is evaluated in: its nowfun's, else the app's."""

from __future__ import annotations

from datetime import datetime, timezone
from zoneinfo import ZoneInfo

import pytest
from celery import Celery
from celery.schedules import crontab

from celery_dbeat import Cron
from celery_dbeat.beat_schedule import spec_from_celery


def _app(zone: str) -> Celery:
    app = Celery("zones", set_as_current=False)
    app.conf.update(timezone=zone)
    return app


@pytest.mark.parametrize(
    ("nowfun", "expected"),
    [
        pytest.param(None, "Europe/Paris", id="app-timezone"),
        pytest.param(lambda: datetime.now(ZoneInfo("Asia/Tokyo")), "Asia/Tokyo", id="nowfun-zone"),
        pytest.param(lambda: datetime.now(timezone.utc), "UTC", id="nowfun-utc"),
    ],
)
def test_a_crontab_is_stored_in_the_zone_celery_evaluates_it_in(nowfun, expected) -> None:  # type: ignore[no-untyped-def]
    spec = spec_from_celery(crontab(minute=30, hour=7, nowfun=nowfun), _app("Europe/Paris"))
    assert spec == Cron("30 7 * * *", timezone=expected, days="all")


def test_a_nowfun_whose_zone_has_no_name_is_refused() -> None:
    from datetime import timedelta

    fixed = timezone(timedelta(hours=2))
    with pytest.raises(ValueError, match="no IANA name"):
        spec_from_celery(crontab(nowfun=lambda: datetime.now(fixed)), _app("UTC"))
