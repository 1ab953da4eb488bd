"""django-celery-beat's periodic tasks, read from its tables with SQLAlchemy: no Django settings.

The tables (``django_celery_beat_periodictask`` and its interval, crontab, solar and clocked
schedule tables) are reflected, so a release without some column (``headers``,
``expire_seconds``, the clocked table) reads as that field unset. This module only reads them,
in :func:`_load`; it is the one place that issues SQL to a source database.

What maps to what: interval -> ``Every`` (days, hours, minutes, seconds and microseconds exactly),
crontab -> ``Cron`` in the crontab's time zone with both day fields required (Celery's rule,
:mod:`.celery_specs`), solar -> ``Solar``, clocked -> ``Once``; queue, exchange, routing_key,
priority, headers and ``expire_seconds`` -> options (plus the ``periodic_task_name`` header
django-celery-beat sends with every message); ``expires`` -> ``end_at``; ``start_time`` ->
``start_at``; ``one_off`` -> ``max_runs=1``.

The source's next fire, as its ``ModelEntry`` computes it (django-celery-beat 2.x):

1. its last run is ``last_run_at``; never run, ``date_changed`` (the last save); never run and
   with a ``start_time``, long ago, so it is due as soon as ``start_time`` passes;
2. interval: last run + period; crontab and solar: the first match after the last run;
   clocked: ``clocked_time``;
3. not before ``start_time``;
4. none once ``expires`` has passed, and none for a ``one_off`` that has run (it is disabled at
   django-celery-beat's next look).

An interval's ``start_at`` is that next fire less one period, so its slots continue the source's.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime, timedelta, tzinfo
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from ..core.errors import ValidationError
from ..core.specs import Every, Once, Solar
from ..core.timing import build_timing
from ..core.urls import mask_url
from .base import MICROSECOND, Imported, SourceRead, SourceUnavailable, aware, build
from .celery_specs import CRONTAB_FIELDS, crontab_spec, crontab_text, is_celery_cleanup

__all__ = ["TASK_TABLE", "read_django_celery_beat"]

TASK_TABLE = "django_celery_beat_periodictask"
#: The schedule kinds, each a foreign key column ``<kind>_id`` of a task and a table.
KINDS = ("interval", "crontab", "solar", "clocked")
PERIODS = ("days", "hours", "minutes", "seconds", "microseconds")

Row = Mapping[str, Any]


def _load(engine: Engine) -> tuple[list[Row], dict[str, dict[Any, Row]]]:
    """The task rows by name, and each schedule table's rows by id."""
    metadata = sa.MetaData()
    with engine.connect() as conn:
        present = set(sa.inspect(conn).get_table_names())
        if TASK_TABLE not in present:
            raise SourceUnavailable(
                f"no {TASK_TABLE} table: give --source-url with the database django-celery-beat "
                "uses (Django's DATABASES)"
            )
        tasks = sa.Table(TASK_TABLE, metadata, autoload_with=conn)
        query = sa.select(tasks).order_by(tasks.c.name)
        rows: list[Row] = [dict(r) for r in conn.execute(query).mappings()]
        schedules: dict[str, dict[Any, Row]] = {}
        for kind in KINDS:
            name = f"django_celery_beat_{kind}schedule"
            schedules[kind] = {}
            if name in present:
                table = sa.Table(name, metadata, autoload_with=conn)
                for r in conn.execute(sa.select(table)).mappings():
                    schedules[kind][r["id"]] = dict(r)
    return rows, schedules


def read_django_celery_beat(engine: Engine, *, naive_zone: tzinfo, now: datetime) -> SourceRead:
    """Every periodic task of the database behind ``engine``. ``naive_zone``: the zone of naive
    timestamps (MySQL, SQLite: UTC when Django's ``USE_TZ`` is on). ``now`` only decides which
    fires the source owes; the definitions do not depend on it."""
    rows, schedules = _load(engine)
    where = f"django-celery-beat at {mask_url(engine.url.render_as_string(False))}"
    entries = []
    for row in rows:
        name = str(row["name"])
        try:
            entries.append(_entry(name, row, schedules, naive_zone, now))
        except _Refused as exc:
            entries.append(Imported.refuse(name, str(exc)))
        except (ArithmeticError, ValueError) as exc:  # instants beyond the calendar
            entries.append(Imported.refuse(name, f"cannot be read ({exc})"))
    return SourceRead(where, entries)


def _json(row: Row, column: str, empty: str) -> Any:
    text = row.get(column)
    try:
        return json.loads(text or empty)
    except (ValueError, RecursionError):
        raise ValueError(
            f"{column}={text!r} is not valid JSON (django-celery-beat disables such a task)"
        ) from None


class _Refused(Exception):
    """The entry cannot be represented; the message says why."""


def _entry(
    name: str, row: Row, schedules: dict[str, dict[Any, Row]], zone: tzinfo, now: datetime
) -> Imported:
    kinds = [kind for kind in KINDS if row.get(f"{kind}_id") is not None]
    if len(kinds) != 1:
        raise _Refused(
            f"has {' and '.join(kinds) if kinds else 'none'} of interval, crontab, solar and "
            "clocked set; django-celery-beat needs exactly one"
        )
    kind = kinds[0]
    target = schedules[kind].get(row[f"{kind}_id"])
    if target is None:
        raise _Refused(f"its {kind} schedule (id {row[f'{kind}_id']}) is missing")
    try:
        args, kwargs = _json(row, "args", "[]"), _json(row, "kwargs", "{}")
        headers = _json(row, "headers", "{}")
        start_time = aware(row.get("start_time"), zone)
        last_run_at = aware(row.get("last_run_at"), zone)
        changed = aware(row.get("date_changed"), zone) or now
        expires = aware(row.get("expires"), zone)
    except ValueError as exc:
        raise _Refused(str(exc)) from None
    if not isinstance(headers, dict):
        raise _Refused(f"headers={row.get('headers')!r} is not a JSON object")
    options: dict[str, Any] = {
        key: row[key]
        for key in ("queue", "exchange", "routing_key", "priority")
        if row.get(key) not in (None, "")
    }
    if row.get("expire_seconds") and expires is None:
        options["expires"] = row["expire_seconds"]
    plain = dict(options, headers=headers) if headers else options
    crontab_fields = target if kind == "crontab" else None
    if (
        is_celery_cleanup(name, row.get("task"), crontab_fields, args, kwargs, plain)
        and start_time is None
        and expires is None
        and not row.get("one_off")
    ):
        return Imported.skip(
            name,
            "django-celery-beat's own daily result cleanup (it adds it whenever result_expires "
            "is set); celery-dbeat's beat adds its own, as Celery's beat does, when the result "
            "backend does not expire results itself (docs/tutorial/migrating.md)",
        )
    # django-celery-beat names every message after its task.
    options["headers"] = dict(headers, periodic_task_name=name)

    one_off, enabled = bool(row.get("one_off")), bool(row.get("enabled"))
    spent = one_off and int(row.get("total_run_count") or 0) > 0
    last = last_run_at or (None if start_time else changed)
    what, fields = _timing(kind, target, zone, start_time, last)
    notes = []
    if row.get("description"):
        notes.append("its description is not carried over (celery-dbeat keeps none)")
    if expires is not None:
        notes.append("expires becomes end_at; its messages no longer expire at that instant")
    imported = build(
        name,
        what,
        source_next=None,
        notes=notes,
        task=row.get("task"),
        args=args,
        kwargs=kwargs,
        options=options,
        enabled=enabled and not spent,
        end_at=None if expires is None else expires - MICROSECOND,
        max_runs=1 if one_off and kind != "clocked" else None,
        **fields,
    )
    if imported.definition is None or not enabled or spent:
        return imported
    return replace(imported, source_next=_source_next(imported, last, start_time, expires))


def _timing(
    kind: str, target: Row, zone: tzinfo, start_time: datetime | None, last: datetime | None
) -> tuple[str, dict[str, Any]]:
    """The source's spec in words, and the ``schedule`` and ``start_at`` it becomes. ``last``:
    the last run (``None``: never run, with a ``start_time``)."""
    if kind == "interval":
        period, count = target.get("period"), target.get("every")
        what = f"interval every {count} {period}"
        if period not in PERIODS or not isinstance(count, int):
            raise _Refused(f"{what}: the period must be one of {', '.join(PERIODS)}")
        try:
            every = timedelta(**{period: count})
            if last is None:  # never run, with a start_time: due at start_time
                assert start_time is not None
                first = start_time
            else:
                first = last + every if start_time is None else max(last + every, start_time)
            # The slots continue the source's: start_at + n * every, the first being `first`.
            return what, {"schedule": Every(every.total_seconds()), "start_at": first - every}
        except OverflowError:
            raise _Refused(f"{what}: too long") from None
    if kind == "crontab":
        spec = {key: target.get(key, "*") for key, _, _ in CRONTAB_FIELDS}
        cron_zone = str(target.get("timezone") or "UTC")
        what = f"crontab {crontab_text(spec)!r} in {cron_zone}"
        try:
            return what, {"schedule": crontab_spec(spec, cron_zone), "start_at": start_time}
        except ValidationError as exc:
            raise _Refused(f"{what}: {exc.problem}") from None
    if kind == "solar":
        event, latitude, longitude = (target.get(key) for key in ("event", "latitude", "longitude"))
        what = f"solar {event} at {latitude}, {longitude}"
        if latitude is None or longitude is None:
            raise _Refused(f"{what}: no latitude or longitude")
        solar = Solar(str(event), float(latitude), float(longitude))
        return what, {"schedule": solar, "start_at": start_time}
    try:
        clocked = aware(target.get("clocked_time"), zone)
    except ValueError as exc:
        raise _Refused(f"clocked: {exc}") from None
    if clocked is None:
        raise _Refused("clocked: no clocked_time")
    # Not due before start_time either.
    run_at = max(clocked, start_time) if start_time else clocked
    return f"clocked {clocked.isoformat()}", {"schedule": Once(run_at), "start_at": None}


def _source_next(
    imported: Imported, last: datetime | None, start_time: datetime | None, expires: datetime | None
) -> datetime | None:
    """When django-celery-beat would fire the (enabled, not spent) task next (module docstring)."""
    definition = imported.definition
    assert definition is not None
    spec = definition.spec
    if spec["kind"] == "interval":
        assert definition.start_at is not None
        upcoming: datetime | None = definition.start_at + timedelta(seconds=spec["every"])
    elif spec["kind"] == "once":
        upcoming = spec["run_at"]
    elif last is None:
        upcoming = start_time
    else:
        # Its own matches, without celery-dbeat's bounds: a source overdue since before
        # start_time fires at start_time itself.
        upcoming = build_timing(**spec).first_after(last)
        if upcoming is not None and start_time is not None:
            upcoming = max(upcoming, start_time)
    if upcoming is None or (expires is not None and upcoming >= expires):
        return None
    return upcoming
