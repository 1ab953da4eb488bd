"""Solar specs: the same instants as Celery's ``solar``, polar days and nights, validation, the
``beat_schedule`` conversion, and the migration that adds the columns."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from itertools import islice, pairwise
from pathlib import Path
from typing import Any, cast

import pytest
import sqlalchemy as sa
from alembic import command
from celery import Celery
from celery.schedules import solar

from celery_dbeat import Solar
from celery_dbeat.beat_schedule import definitions_from_app, spec_from_celery
from celery_dbeat.core.definitions import Definition, definition_from_form, definition_to_form
from celery_dbeat.core.errors import ValidationError
from celery_dbeat.core.timing import SolarSpec, build_timing
from celery_dbeat.store.database import _config, create_engine, migrate
from tests.unit.conftest import utc

pytest.importorskip("ephem")

UTC = timezone.utc


def celery_app() -> Celery:
    app = Celery("solar-tests", set_as_current=False)
    app.conf.update(timezone="UTC", enable_utc=True)
    return app


def celery_next(event: str, lat: float, lon: float, last_run_at: datetime) -> datetime:
    """The next event after ``last_run_at`` as Celery's ``solar`` computes it."""
    now = utc("2000-01-01T00:00Z")
    schedule: Any = solar(cast(Any, event), lat, lon, nowfun=lambda: now, app=celery_app())
    remaining: timedelta = schedule.remaining_estimate(last_run_at)
    return now + remaining


CASES = [
    pytest.param("sunrise", 48.8566, 2.3522, utc("2024-03-25T12:00Z"), id="paris-sunrise-dst"),
    pytest.param("sunset", 40.7128, -74.006, utc("2024-10-30T00:00Z"), id="new-york-sunset"),
    pytest.param("solar_noon", -33.8688, 151.2093, utc("2024-06-01T00:00Z"), id="sydney-noon"),
    pytest.param("dawn_civil", 35.6762, 139.6503, utc("2025-01-01T00:00Z"), id="tokyo-dawn"),
    pytest.param(
        "dusk_astronomical",
        0,
        0,
        utc("2024-09-22T18:00Z"),
        id="null-island-dusk",
        # Celery before 5.6.3 put astronomical dusk 18 degrees above the horizon, not below
        # (celery/celery#10101); ours is the sun 18 degrees below, as the name says.
        marks=pytest.mark.skipif(
            cast(Any, solar)._horizons["dusk_astronomical"] == "18",
            reason="this Celery's dusk_astronomical is the sun 18 degrees above the horizon",
        ),
    ),
    pytest.param("dawn_nautical", 59.33, 18.07, utc("2024-02-10T00:00Z"), id="stockholm-dawn"),
]


@pytest.mark.parametrize(("event", "lat", "lon", "after"), CASES)
def test_slots_are_celerys_events_rounded_down_to_the_second(
    event: str, lat: float, lon: float, after: datetime
) -> None:
    spec = SolarSpec.parse(event, lat, lon)
    slots = list(islice(spec.slots_after(after), 10))
    assert all(slot.tzinfo is UTC and slot.microsecond == 0 for slot in slots)
    assert slots[0] > after
    assert all(a < b for a, b in pairwise(slots))
    # Searched from the same instant (the slot's day start), Celery finds the very same event.
    for slot in slots:
        assert celery_next(event, lat, lon, spec.day_start(slot)).replace(microsecond=0) == slot
    # From wherever a Celery beat searches, ephem stops within 0.1 s of the event.
    last_run_at = after
    for slot in slots:
        instant = celery_next(event, lat, lon, last_run_at)
        assert abs(instant - slot - timedelta(seconds=0.5)) < timedelta(seconds=0.7)
        last_run_at = instant + timedelta(seconds=1)


@pytest.mark.parametrize(("event", "lat", "lon", "after"), CASES)
def test_slots_are_the_same_whichever_slot_a_beat_restarts_from(
    event: str, lat: float, lon: float, after: datetime
) -> None:
    spec = SolarSpec.parse(event, lat, lon)
    slots = list(islice(spec.slots_after(after), 6))
    assert len(slots) == 6
    for i, slot in enumerate(slots[:-1]):
        assert list(islice(spec.slots_after(slot), 5 - i)) == slots[i + 1 :]
        for before in (timedelta(microseconds=1), timedelta(seconds=0.5), timedelta(hours=3)):
            assert next(spec.slots_after(slot - before)) == slot


def test_polar_night_yields_the_first_sunrise_after_it() -> None:
    spec = SolarSpec.parse("sunrise", 78.2, 15.6)  # Longyearbyen
    first, second = islice(spec.slots_after(utc("2024-12-01T00:00Z")), 2)
    assert utc("2025-02-10T00:00Z") < first < utc("2025-02-20T00:00Z")
    assert timedelta(hours=23) < second - first < timedelta(hours=25)


def test_polar_day_skips_to_the_first_sunset_after_it() -> None:
    spec = SolarSpec.parse("sunset", 78.2, 15.6)
    first = next(spec.slots_after(utc("2024-05-01T00:00Z")))
    assert utc("2024-08-20T00:00Z") < first < utc("2024-09-01T00:00Z")


def test_a_search_past_the_bound_ends_the_spec(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("celery_dbeat.core.timing.solar.MAX_SEARCH_DAYS", 30)
    spec = SolarSpec.parse("sunrise", 78.2, 15.6)
    assert list(spec.slots_after(utc("2024-12-01T00:00Z"))) == []


@pytest.mark.parametrize(
    ("event", "lat", "lon", "field"),
    [
        pytest.param("sunrize", 0, 0, "solar_event", id="unknown-event"),
        pytest.param(None, 0, 0, "solar_event", id="no-event"),
        pytest.param("sunrise", 90.5, 0, "latitude", id="latitude-too-high"),
        pytest.param("sunrise", -91, 0, "latitude", id="latitude-too-low"),
        pytest.param("sunrise", float("nan"), 0, "latitude", id="latitude-nan"),
        pytest.param("sunrise", "north", 0, "latitude", id="latitude-text"),
        pytest.param("sunrise", True, 0, "latitude", id="latitude-bool"),
        pytest.param("sunrise", 0, 180.1, "longitude", id="longitude-too-high"),
        pytest.param("sunrise", 0, -181, "longitude", id="longitude-too-low"),
    ],
)
def test_bad_fields_are_refused_naming_the_field(
    event: Any, lat: Any, lon: Any, field: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        build_timing(kind="solar", solar_event=event, latitude=lat, longitude=lon)
    assert caught.value.field == field


def test_missing_ephem_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "ephem", None)  # makes `import ephem` raise ImportError
    with pytest.raises(ValidationError, match=r"celery-dbeat\[solar\]") as caught:
        SolarSpec.parse("sunrise", 0, 0)
    assert caught.value.field == "kind"


def test_timing_bounds_apply_to_solar() -> None:
    timing = build_timing(
        kind="solar",
        solar_event="sunrise",
        latitude=48.8566,
        longitude=2.3522,
        start_at=utc("2024-06-10T00:00Z"),
        end_at=utc("2024-06-12T23:59Z"),
    )
    slots = timing.preview(utc("2024-01-01T00:00Z"), 10)
    assert [s.day for s in slots] == [10, 11, 12]


def test_definition_and_form_round_trip() -> None:
    definition = Definition.create(
        name="lights", task="tasks.lights", schedule=Solar("sunset", 48.8566, 2.3522)
    )
    columns = definition.columns()
    assert (columns["kind"], columns["solar_event"], columns["latitude"], columns["longitude"]) == (
        "solar",
        "sunset",
        48.8566,
        2.3522,
    )
    form = definition_to_form(definition)
    assert definition_from_form(form) == definition
    typed = {**form, "latitude": "48.8566", "longitude": " 2.3522 "}
    assert definition_from_form(typed) == definition
    with pytest.raises(ValidationError) as caught:
        definition_from_form({**form, "longitude": "east"})
    assert caught.value.field == "longitude"


def test_celery_solar_becomes_solar_spec() -> None:
    app = celery_app()
    assert spec_from_celery(solar("sunrise", -33.87, 151.21, app=app), app) == Solar(
        "sunrise", -33.87, 151.21
    )
    app.conf.beat_schedule = {
        "dawn": {"task": "tasks.dawn", "schedule": solar("dawn_civil", 60, 25, app=app)}
    }
    (definition,) = definitions_from_app(app)
    assert definition.spec == {
        "kind": "solar",
        "solar_event": "dawn_civil",
        "latitude": 60,
        "longitude": 25,
    }


def test_migration_0002_upgrades_and_downgrades_on_sqlite(tmp_path: Path) -> None:
    engine = create_engine(f"sqlite:///{tmp_path / 'beat.db'}")
    solar_columns = {"solar_event", "latitude", "longitude"}

    def columns() -> set[str]:
        return {c["name"] for c in sa.inspect(engine).get_columns("dbeat_schedules")}

    try:
        assert migrate(engine, "0001") == "0001"
        assert not solar_columns & columns()
        with engine.begin() as connection:
            connection.execute(
                sa.text(
                    "INSERT INTO dbeat_schedules (name, task, args, kwargs, options, enabled,"
                    " origin, kind, cron, timezone, run_count, version, created_at, updated_at)"
                    " VALUES ('r', 't', '[]', '{}', '{}', 1, 'api', 'cron', '0 * * * *', 'UTC',"
                    " 0, 1, '2024-01-01 00:00:00', '2024-01-01 00:00:00')"
                )
            )
            connection.execute(
                sa.text(
                    "INSERT INTO dbeat_fires (schedule_id, slot, manual, status, slot_count,"
                    " recorded_at, attempts) VALUES (1, '2024-01-01 01:00:00', 0, 'sent', 1,"
                    " '2024-01-01 01:00:00', 0)"
                )
            )
        assert migrate(engine, "0002") == "0002"
        assert solar_columns <= columns()
        with engine.begin() as connection:
            command.downgrade(_config(connection), "0001")
        assert not solar_columns & columns()
        with engine.connect() as connection:
            # Dropping the columns kept the rows, and the fire history with them.
            assert connection.execute(sa.text("SELECT count(*) FROM dbeat_schedules")).scalar() == 1
            assert connection.execute(sa.text("SELECT count(*) FROM dbeat_fires")).scalar() == 1
        assert migrate(engine, "0002") == "0002"
    finally:
        engine.dispose()
