"""Random specs, zones, durations, instants and JSON thrown at the Python API: each write is
either refused with the standard ValidationError, leaving the database as it was, or stored as a
row beat plans without an error and fires at the right slots (``checks.py``)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from typing import Any

from hypothesis import event, given
from hypothesis import strategies as st

from celery_dbeat import Cron, Every
from celery_dbeat.api import Schedules
from celery_dbeat.clock import FixedClock
from celery_dbeat.core.definitions import definition_from_form
from celery_dbeat.core.errors import ValidationError
from celery_dbeat.store import Store
from tests.fuzz import checks
from tests.fuzz.conftest import fuzz_settings
from tests.fuzz.strategies import (
    CLOCK_YEARS,
    aware_instants,
    cron_expressions,
    durations,
    instant_strings,
    oracle_cron_expressions,
    payloads,
    timezones,
)
from tests.fuzz.strategies import add_arguments as add_arguments_strategy

UTC = timezone.utc
CREATED = aware_instants(CLOCK_YEARS).map(lambda t: t.astimezone(UTC))


def _expected_json(value: Any, default: Any) -> Any:
    """What an accepted args/kwargs/options value must read back as."""
    if value is None:
        return default
    if isinstance(value, (str, bytes)):
        return json.loads(value)
    return json.loads(json.dumps(value))


def add_and_check(store: Store, created: datetime, arguments: dict[str, Any]) -> str:
    """``Schedules.add(**arguments)`` at ``created``: refused cleanly or usable. Returns the
    outcome for Hypothesis' statistics."""
    checks.clear(store.engine)
    before = checks.snapshot(store.engine)
    api = Schedules(store, clock=FixedClock(created))
    try:
        api.add(**arguments)
    except ValidationError as exc:
        checks.assert_standard_error(exc)
        assert checks.snapshot(store.engine) == before, "a refused write changed the database"
        event(f"refused: {exc.field}")
        return "refused"
    payload = {
        "args": _expected_json(arguments.get("args"), []),
        "kwargs": _expected_json(arguments.get("kwargs"), {}),
        "options": _expected_json(arguments.get("options"), {}),
    }
    if isinstance(payload["args"], tuple):
        payload["args"] = list(payload["args"])
    name = arguments["name"]
    checks.assert_usable(store, name, created, payload)
    info = api.get(name)
    if not info.enabled and info.finished_at is None:
        resumed = Schedules(store, clock=FixedClock(created)).resume(name)
        assert resumed.enabled
        assert resumed.last_error is None
        checks.assert_usable(store, name, created, payload)
    event(f"accepted: {checks.stored(store.engine, name).kind}")
    return "accepted"


@fuzz_settings(scale=1.5)
@given(created=CREATED, arguments=add_arguments_strategy())
def test_any_add_is_refused_with_the_standard_error_or_stored_usable_by_beat(
    sqlite_store: Store, created: datetime, arguments: dict[str, Any]
) -> None:
    add_and_check(sqlite_store, created, arguments)


@fuzz_settings()
@given(
    created=CREATED,
    expr=st.one_of(cron_expressions(), oracle_cron_expressions()),
    zone=timezones(),
    start_at=st.one_of(st.none(), aware_instants()),
    jitter=st.one_of(st.none(), durations()),
)
def test_cron_specs_and_zones_are_refused_cleanly_or_fire_on_their_slots(
    sqlite_store: Store,
    created: datetime,
    expr: str,
    zone: Any,
    start_at: datetime | None,
    jitter: Any,
) -> None:
    add_and_check(
        sqlite_store,
        created,
        {
            "name": "c",
            "task": "proj.tasks.c",
            "schedule": Cron(expr, zone),
            "start_at": start_at,
            "jitter": jitter,
        },
    )


@fuzz_settings()
@given(
    created=CREATED,
    every=durations(),
    start_at=st.one_of(st.none(), aware_instants()),
    end_at=st.one_of(st.none(), aware_instants()),
    max_runs=st.one_of(st.none(), st.integers(-1, 4)),
    policy=st.sampled_from([None, "skip", "latest", "earliest", "all"]),
    grace=st.one_of(st.none(), durations()),
    catchup_limit=st.one_of(st.none(), st.integers(-1, 3)),
)
def test_interval_durations_and_bounds_are_refused_cleanly_or_fire_on_the_grid(
    sqlite_store: Store,
    created: datetime,
    every: Any,
    start_at: datetime | None,
    end_at: datetime | None,
    max_runs: int | None,
    policy: str | None,
    grace: Any,
    catchup_limit: int | None,
) -> None:
    add_and_check(
        sqlite_store,
        created,
        {
            "name": "i",
            "task": "proj.tasks.i",
            "schedule": Every(every),
            "start_at": start_at,
            "end_at": end_at,
            "max_runs": max_runs,
            "misfire_policy": policy,
            "misfire_grace": grace,
            "catchup_limit": catchup_limit,
        },
    )


@fuzz_settings()
@given(
    created=CREATED,
    args=payloads("list"),
    kwargs=payloads("dict"),
    options=payloads("options"),
)
def test_json_payloads_are_refused_cleanly_or_published_as_given(
    sqlite_store: Store, created: datetime, args: Any, kwargs: Any, options: Any
) -> None:
    add_and_check(
        sqlite_store,
        created,
        {
            "name": "j",
            "task": "proj.tasks.j",
            "schedule": Every(60),
            "args": args,
            "kwargs": kwargs,
            "options": options,
        },
    )


FORM_TEXT = st.one_of(st.none(), st.text(max_size=12))


@st.composite
def forms(draw: st.DrawFn) -> dict[str, Any]:
    """Plain forms (what the admin forms and import files hand to ``definition_from_form``)."""
    kind = draw(st.sampled_from(["cron", "interval", "once", "solar", "", "weekly", None]))
    form: dict[str, Any] = {"name": "f", "task": "proj.tasks.f", "kind": kind}
    fields: dict[str, st.SearchStrategy[Any]] = {
        "cron": st.one_of(cron_expressions(), oracle_cron_expressions()),
        "timezone": st.one_of(timezones(), st.none()),
        "dst_gap": st.sampled_from(["", "gap_end", "skip", "shift", "bad"]),
        "dst_fold": st.sampled_from(["", "first", "both", "bad"]),
        "cron_days": st.sampled_from(["", "any", "all", "some"]),
        "every": durations(),
        "run_at": st.one_of(instant_strings(), aware_instants()),
        "args": payloads("list"),
        "kwargs": payloads("dict"),
        "options": payloads("options"),
        "enabled": st.sampled_from([True, False, "yes", "no", "", "maybe", 1]),
        "start_at": st.one_of(instant_strings(), st.none()),
        "end_at": st.one_of(instant_strings(), st.none()),
        "max_runs": st.one_of(st.sampled_from(["", "1", "3", "-1", "x", "1.5", " 2 "]), st.none()),
        "misfire_policy": st.sampled_from(["", "skip", "latest", "earliest", "all", "bad"]),
        "misfire_grace": st.one_of(durations(), FORM_TEXT),
        "catchup_limit": st.sampled_from(["", "0", "5", "-2", "z"]),
        "jitter": st.one_of(durations(), FORM_TEXT),
        "latitude": st.sampled_from(["48.85", "", "x", "91", "nan"]),
        "longitude": st.sampled_from(["2.35", "", "181", "inf"]),
        "solar_event": st.sampled_from(["sunset", "sunrise", "", "midnight"]),
    }
    valid: dict[str, st.SearchStrategy[Any]] = {
        "cron": oracle_cron_expressions(),
        "every": st.sampled_from(["30s", "5m", "1h30m", "3600"]),
        "run_at": aware_instants().map(lambda t: t.isoformat()),
        "solar_event": st.just("sunset"),
        "latitude": st.just("48.85"),
        "longitude": st.just("2.35"),
    }
    fuzzed = set(draw(st.lists(st.sampled_from(sorted(fields)), max_size=2)))
    for key, strategy in fields.items():
        if key in fuzzed:
            form[key] = draw(strategy)
        elif key in valid and (kind == "solar" or key == kind or (kind, key) in _MAIN):
            form[key] = draw(valid[key])
    if draw(st.integers(0, 20)) == 0:
        form["bogus"] = "x"
    return form


_MAIN = {("interval", "every"), ("once", "run_at")}


@fuzz_settings()
@given(created=CREATED, form=forms())
def test_plain_forms_are_refused_cleanly_or_stored_usable_by_beat(
    sqlite_store: Store, created: datetime, form: dict[str, Any]
) -> None:
    checks.clear(sqlite_store.engine)
    before = checks.snapshot(sqlite_store.engine)
    api = Schedules(sqlite_store, clock=FixedClock(created))
    try:
        info = api.create(definition_from_form(form))
    except ValidationError as exc:
        checks.assert_standard_error(exc)
        assert checks.snapshot(sqlite_store.engine) == before
        event(f"refused: {exc.field}")
        return
    event(f"accepted: {info.schedule.__class__.__name__}")
    payload = {"args": info.args, "kwargs": info.kwargs, "options": info.options}
    checks.assert_usable(sqlite_store, "f", created, payload)


@fuzz_settings(scale=0.6)
@given(
    created=CREATED,
    later=st.timedeltas(min_value=timedelta(0), max_value=timedelta(minutes=4)),
    changes=add_arguments_strategy(),
)
def test_updates_are_refused_leaving_the_row_as_it_was_or_leave_a_usable_row(
    sqlite_store: Store, created: datetime, later: Any, changes: dict[str, Any]
) -> None:
    checks.clear(sqlite_store.engine)
    Schedules(sqlite_store, clock=FixedClock(created)).add(
        "u", "proj.tasks.u", Every("5m"), args=[1]
    )
    before = checks.snapshot(sqlite_store.engine)
    edited = created + later
    changes.pop("name")
    changes = {k: v for k, v in changes.items() if k != "enabled"}
    try:
        Schedules(sqlite_store, clock=FixedClock(edited)).update("u", **changes)
    except ValidationError as exc:
        checks.assert_standard_error(exc)
        assert checks.snapshot(sqlite_store.engine) == before
        event(f"refused: {exc.field}")
        return
    info = Schedules(sqlite_store).get("u")
    event("accepted")
    payload = {"args": info.args, "kwargs": info.kwargs, "options": info.options}
    checks.assert_usable(sqlite_store, "u", edited, payload)
