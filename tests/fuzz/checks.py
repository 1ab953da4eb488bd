"""What "accepted and usable by beat" and "refused with the standard error" mean, as assertions
shared by the API and CLI properties.

* Refused: a :class:`ValidationError` whose message starts with ``field=value`` (its ``repr``),
  for a field users know, and the database exactly as before.
* Accepted: the row, read the way beat reads it (``Store.claim_due``), plans without an error at
  several instants, its slots are UTC, ascending, within the bounds and equal to an independent
  oracle where one is cheap (interval grid, the once instant, cronsim for plain 5-field cron in
  fixed-offset zones), and a :class:`Ticker` woken at each due instant publishes exactly that slot
  once, with the deterministic task id and the stored payload.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from itertools import islice
from typing import Any
from zoneinfo import ZoneInfo

import cronsim
import sqlalchemy as sa
from hypothesis import event as _event
from hypothesis.control import currently_in_test_context
from sqlalchemy.engine import Engine

from celery_dbeat.beat.ticker import Ticker
from celery_dbeat.config import Settings
from celery_dbeat.core.definitions import FORM_FIELDS
from celery_dbeat.core.errors import ValidationError, shown
from celery_dbeat.core.fires import PublishRequest, ScheduleRow, fire_task_id
from celery_dbeat.core.misfire import MisfireRules
from celery_dbeat.core.planning import plan
from celery_dbeat.locks import DatabaseLock
from celery_dbeat.store import Store
from celery_dbeat.store.models import S

UTC = timezone.utc
TABLES = ("dbeat_fires", "dbeat_schedules", "dbeat_beats")
#: Every field a ValidationError of a schedule write may name.
FIELDS = {
    "schedule",
    *FORM_FIELDS,
    "anchor_at",
    "bogus",  # the unknown form field test_api.forms() sometimes adds
}
#: Planning instants after a slot is due: on time, late, missed, long missed.
LATENESS = (
    timedelta(0),
    timedelta(seconds=1),
    timedelta(seconds=90),
    timedelta(hours=1),
    timedelta(days=3),
)
RULES = MisfireRules()
#: How many slots the ticker is woken for.
TICKS = 3


def event(text: str) -> None:
    """Hypothesis' statistics, when running under Hypothesis (the regressions call checks too)."""
    if currently_in_test_context():
        _event(text)


# The database ----------------------------------------------------------------------------------


def clear(engine: Engine) -> None:
    with engine.begin() as conn:
        for table in TABLES:
            conn.execute(sa.text(f"DELETE FROM {table}"))


def snapshot(engine: Engine) -> list[tuple[str, list[tuple[Any, ...]]]]:
    """Every row of every table, to compare before and after a refused write."""
    with engine.connect() as conn:
        return [
            (
                table,
                sorted(
                    tuple(map(repr, r)) for r in conn.execute(sa.text(f"SELECT * FROM {table}"))
                ),
            )
            for table in TABLES
        ]


def stored(engine: Engine, name: str) -> sa.Row[Any]:
    with engine.connect() as conn:
        return conn.execute(sa.select(S).where(S.c.name == name)).one()


def beat_view(store: Store, name: str, now: datetime) -> ScheduleRow | None:
    """The row as beat reads it at ``now`` (``None`` if beat would not pick it up then)."""
    with store.claim_due(now, 10, "fuzz") as batch:
        rows = [row for row in batch.schedules if row.name == name]
    return rows[0] if rows else None


# Refusals --------------------------------------------------------------------------------------


def assert_standard_error(exc: BaseException) -> ValidationError:
    """The standard refusal: a ValidationError naming a known field and the value given."""
    assert isinstance(exc, ValidationError), f"not a ValidationError: {exc!r}"
    assert exc.field in FIELDS or exc.field.startswith("options."), exc.field
    message = str(exc)
    # The value is shown as repr() shortened for long values (errors.shown).
    assert message.startswith(f"{exc.field}={shown(exc.value)}: "), message
    assert exc.problem, message
    assert "\n" not in exc.problem, message
    return exc


# Oracles ---------------------------------------------------------------------------------------


def oracle_slots(row: sa.Row[Any], after: datetime) -> Iterator[datetime] | None:
    """The slots after ``after`` computed without celery-dbeat's timing code, or ``None`` where
    no cheap oracle exists (zones with DST, 6-field or special cron syntax, solar)."""
    start, end = row.start_at, row.end_at
    if start is not None and after < start:
        after = start - timedelta(microseconds=1)

    def bounded(slots: Iterator[datetime]) -> Iterator[datetime]:
        for slot in slots:
            if end is not None and slot > end:
                return
            yield slot

    if row.kind == "interval":
        event("oracle: interval grid")
        anchor = row.start_at or row.anchor_at
        step = timedelta(seconds=row.every)
        n = max((after - anchor) // step + 1, 1)

        def grid(n: int = n) -> Iterator[datetime]:
            while True:
                yield anchor + n * step
                n += 1

        return bounded(grid())
    if row.kind == "once":
        event("oracle: once")
        return bounded(iter([row.run_at] if row.run_at > after else []))
    if row.kind == "cron" and _cronsim_agrees(row):
        event("oracle: cronsim")
        zone = ZoneInfo(row.timezone)
        sim = cronsim.CronSim(row.cron.strip(), after.astimezone(zone))
        return bounded(slot.astimezone(UTC) for slot in sim)
    return None


def _cronsim_agrees(row: sa.Row[Any]) -> bool:
    from tests.fuzz.strategies import FIXED_ZONES

    fields = row.cron.split()
    if row.timezone not in FIXED_ZONES or len(fields) != 5 or row.cron_days is not None:
        return False
    for field in fields:
        for part in field.split(","):
            base = part.split("/")[0]
            if not all(c in "0123456789-*" for c in part.replace("/", "")):
                return False
            if "/" in part and "-" in base and len(set(base.split("-"))) == 1:
                return False  # 5-5/15: cron(8) reads 5, cronsim 5/15 (test_cron_vs_cronsim.py)
    return True


# Acceptance ------------------------------------------------------------------------------------


def assert_utc(value: datetime | None, what: str) -> None:
    assert value is not None, f"{what} is None"
    assert value.tzinfo is not None, f"{what}={value!r}"
    assert value.utcoffset() == timedelta(0), f"{what}={value!r}"


def assert_usable(store: Store, name: str, created: datetime, payload: dict[str, Any]) -> None:
    """The accepted row ``name``, created at ``created``, is one beat can use and fire."""
    row = stored(store.engine, name)
    assert row.last_error is None, row.last_error
    for column in ("args", "kwargs", "options"):
        assert json.loads(getattr(row, column)) == payload[column], column
    if row.finished_at is not None:
        # Accepted but no slot left (a once in the past, bounds that exclude every slot).
        assert not row.enabled, row
        assert row.next_run_at is None, row
        slots = oracle_slots(row, created)
        assert slots is None or next(slots, None) is None, "finished although a slot is left"
        return
    assert_utc(row.next_run_at, "next_run_at")
    assert row.next_run_at > created, (row.next_run_at, created)
    expected = oracle_slots(row, created)
    if expected is not None:
        assert row.next_run_at == next(expected, None), "first slot differs from the oracle"
    if row.start_at is not None:
        assert row.next_run_at >= row.start_at
    if row.end_at is not None:
        assert row.next_run_at <= row.end_at
    if not row.enabled:
        return  # created paused: beat does not read it (resumed rows are checked by callers)
    due = row.due_at or row.next_run_at
    seen = beat_view(store, name, due)
    assert seen is not None, "beat does not pick the row up when it is due"
    _assert_plans(row, seen)
    _assert_fires(store, name, created)


def _spacing(row: sa.Row[Any], seen: ScheduleRow) -> timedelta:
    """The gap between the first two slots (a day if there is only one)."""
    from celery_dbeat.core.planning import timing_of

    assert seen.next_run_at is not None
    slots = list(islice(timing_of(seen).slots_after(seen.next_run_at), 1))
    return slots[0] - seen.next_run_at if slots else timedelta(days=1)


def _assert_plans(row: sa.Row[Any], seen: ScheduleRow) -> None:
    due = row.due_at or row.next_run_at
    spacing = _spacing(row, seen)
    for late in LATENESS:
        if late / spacing > 1_000:
            break  # a beat down that long on so frequent a schedule: slow, checked elsewhere
        now = due + late
        transition = plan(seen, now, RULES)
        assert transition.error is None, (now, transition.error)
        sent = [f for f in transition.fires if f.status.value == "pending"]
        for fire in sent:
            assert fire.slot <= now, (fire.slot, now)
            assert fire.task_id == fire_task_id(seen.uid, fire.slot)
        if seen.max_runs is not None:
            assert len(sent) <= seen.max_runs - seen.run_count
        assert sent or transition.fires, f"nothing recorded for a slot due at {due} (now {now})"
        if transition.finished:
            continue
        assert_utc(transition.next_run_at, "planned next_run_at")
        assert (transition.due_at or transition.next_run_at) > now
        expected = oracle_slots(row, now - timedelta(microseconds=1))
        if expected is not None and transition.due_at is None:
            first = next((s for s in expected if s > now), None)
            assert transition.next_run_at == first, (transition.next_run_at, first)


class StepClock:
    """A clock that lands exactly where it is set. (``FixedClock.set`` moves by a float number of
    seconds and misses by a microsecond after long jumps: see test_regressions.py.)"""

    def __init__(self, now: datetime) -> None:
        self._now = now
        self._mono = 0.0

    def now(self) -> datetime:
        return self._now

    def monotonic(self) -> float:
        return self._mono

    def set(self, now: datetime) -> None:
        self._mono += (now - self._now).total_seconds()
        self._now = now


def _settings() -> Settings:
    return Settings.from_mapping({"instance_name": "fuzz"})


def _assert_fires(store: Store, name: str, created: datetime) -> None:
    """Wake a ticker at each due instant: exactly the slot due is published, once."""
    clock = StepClock(created)
    published: list[tuple[PublishRequest, list[Any], dict[str, Any], dict[str, Any]]] = []

    def publish(request: PublishRequest, *payload: Any) -> None:
        published.append((request, *payload))

    ticker = Ticker(store, DatabaseLock(), publish, _settings(), clock)
    first = stored(store.engine, name)
    expected = oracle_slots(first, created)
    for i in range(TICKS):
        row = stored(store.engine, name)
        slot = row.next_run_at
        due = row.due_at or slot
        assert due >= clock.now(), (due, clock.now())
        if expected is not None:
            assert slot == next(expected, None), "slot differs from the oracle"
        clock.set(due)
        ticker.tick()
        assert len(published) == i + 1, f"tick {i} at {due}: {len(published)} publishes"
        request, args, kwargs, options = published[-1]
        assert (request.schedule_name, request.slot) == (name, slot)
        assert request.task_id == fire_task_id(row.uid, slot)
        assert (args, kwargs, options) == (
            json.loads(row.args),
            json.loads(row.kwargs),
            json.loads(row.options),
        )
        after = stored(store.engine, name)
        assert after.run_count == i + 1, after
        assert after.last_error is None, after
        if after.finished_at is None:
            assert_utc(after.next_run_at, "next_run_at after a fire")
            assert (after.due_at or after.next_run_at) > due
        else:  # finished: its last run, or no slot left
            left = None if expected is None else next(expected, None)
            assert after.max_runs == i + 1 or left is None, (after, left)
            break
