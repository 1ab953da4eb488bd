"""Minimal inputs, found while fuzzing (by the properties, or by probing the edges of their
strategies), that once broke "refused with the standard error, or stored usable by beat": each
raised a traceback of its own (``was``) before the product was fixed. Kept as regression tests.

Every case asks for the same outcome: ``Schedules.add`` raises a ValidationError naming the field
and the value and stores nothing, or it stores a row that reads back exactly as given.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone
from typing import Any

import pytest
import sqlalchemy as sa

from celery_dbeat import Cron, Every, Once
from celery_dbeat.api import Schedules
from celery_dbeat.clock import FixedClock
from celery_dbeat.core.errors import ValidationError
from celery_dbeat.store import Store
from tests.fuzz import checks
from tests.fuzz.strategies import nested

UTC = timezone.utc
NOW = datetime(2024, 5, 6, 9, 0, tzinfo=UTC)
MINUS_5 = timezone(timedelta(hours=-5))
PLUS_5 = timezone(timedelta(hours=5))


def _case(id: str, field: str, was: type[BaseException], why: str, **arguments: Any) -> Any:
    """``was``: what ``add`` raised before the fix, instead of the ValidationError; ``why``."""
    arguments.setdefault("schedule", Every(60))
    return pytest.param(field, arguments, id=id)


#: (field the error must name, add() keyword arguments besides name and task)
ANY_BACKEND = [
    _case(
        "every-timedelta-beyond-100-years",
        "every",
        OverflowError,
        "Every(timedelta) skips parse_duration's 100-year bound; add() raises OverflowError "
        "computing the first slot",
        schedule=Every(timedelta(days=999_999_999)),
    ),
    _case(
        "interval-whose-first-slot-is-after-year-9999",
        "start_at",
        OverflowError,
        "start_at + every past datetime.max: add() raises OverflowError",
        schedule=Every("36500d"),
        start_at=datetime(9990, 1, 1, tzinfo=UTC),
    ),
    _case(
        "start-at-in-year-1-with-a-positive-offset",
        "start_at",
        OverflowError,
        "converting start_at to UTC leaves datetime's range: OverflowError",
        start_at=datetime(1, 1, 1, tzinfo=PLUS_5),
    ),
    _case(
        "once-at-datetime-max-with-a-negative-offset",
        "run_at",
        OverflowError,
        "converting run_at to UTC leaves datetime's range: OverflowError",
        schedule=Once(datetime.max.replace(tzinfo=MINUS_5)),
    ),
    _case(
        "cron-whose-first-slot-is-after-year-9999",
        "start_at",
        ValueError,
        "croniter passes year 9999: add() raises a bare ValueError('year 10000 is out of range')",
        schedule=Cron("0 0 1 1 *"),
        start_at=datetime(9999, 6, 1, tzinfo=UTC),
    ),
    _case(
        "start-at-given-as-a-date",
        "start_at",
        AttributeError,
        "require_aware() reads .tzinfo: AttributeError instead of a ValidationError",
        start_at=date(2024, 1, 1),
    ),
    _case(
        "once-at-given-as-a-string",
        "run_at",
        AttributeError,
        "require_aware() reads .tzinfo: AttributeError instead of a ValidationError",
        schedule=Once("2025-01-01T00:00:00Z"),  # type: ignore[arg-type]
    ),
    _case(
        "args-json-nested-deeper-than-the-recursion-limit",
        "args",
        RecursionError,
        "json.loads raises RecursionError, which parse_args does not catch",
        args="[" * 5000 + "]" * 5000,
    ),
    _case(
        "args-nested-deeper-than-the-recursion-limit",
        "args",
        RecursionError,
        "json.dumps raises RecursionError, which dump_json does not catch",
        args=[nested(3000)],
    ),
    _case(
        "args-integer-of-more-than-4300-digits",
        "args",
        ValueError,
        "json.dumps raises ValueError (int max str digits) that escapes as a bare ValueError "
        "without the field",
        args=[10**5000],
    ),
    _case(
        "options-with-string-and-integer-keys",
        "options",
        TypeError,
        "parse_options sorts the unknown keys: TypeError comparing str and int",
        options={1: 2, "eta": 3},
    ),
]
#: SQLite stores 64-bit integers.
SQLITE = [
    _case(
        "max-runs-beyond-64-bits",
        "max_runs",
        OverflowError,
        "no upper bound: the SQLite driver raises OverflowError",
        max_runs=2**70,
    ),
]
#: PostgreSQL's INTEGER columns and text without NUL.
POSTGRES = [
    _case(
        "max-runs-beyond-32-bits",
        "max_runs",
        sa.exc.DataError,
        "no upper bound: PostgreSQL raises DataError (integer out of range)",
        max_runs=2**40,
    ),
    _case(
        "catchup-limit-beyond-32-bits",
        "catchup_limit",
        sa.exc.DataError,
        "no upper bound: PostgreSQL raises DataError (integer out of range)",
        catchup_limit=2**40,
    ),
    _case(
        "task-holding-a-nul-character",
        "task",
        sa.exc.DataError,
        "PostgreSQL text cannot hold NUL: DataError instead of a ValidationError",
        task="proj.tasks.a\x00",
    ),
]


def _add_refuses_or_stores_exactly(store: Store, field: str, arguments: dict[str, Any]) -> None:
    before = checks.snapshot(store.engine)
    arguments = {"name": "r", "task": "proj.tasks.r", **arguments}
    api = Schedules(store, clock=FixedClock(NOW))
    try:
        info = api.add(**arguments)
        refused: ValidationError | None = None
    except ValidationError as exc:
        refused = checks.assert_standard_error(exc)
    if refused is not None:
        assert refused.field == field, str(refused)
        assert checks.snapshot(store.engine) == before
        return
    for key in ("args", "kwargs", "options"):
        if key in arguments and not isinstance(arguments[key], str):
            assert getattr(info, key) == arguments[key], key
    assert info.last_error is None


@pytest.mark.parametrize(("field", "arguments"), ANY_BACKEND + SQLITE)
def test_sqlite_refuses_with_the_standard_error_or_stores_exactly(
    sqlite_store: Store, field: str, arguments: dict[str, Any]
) -> None:
    _add_refuses_or_stores_exactly(sqlite_store, field, arguments)


@pytest.mark.parametrize(("field", "arguments"), POSTGRES)
def test_postgresql_refuses_with_the_standard_error_or_stores_exactly(
    postgres_store: Store, field: str, arguments: dict[str, Any]
) -> None:
    _add_refuses_or_stores_exactly(postgres_store, field, arguments)


def test_nested_non_string_keys_are_refused_rather_than_rewritten(sqlite_store: Store) -> None:
    # Was: only top-level kwargs keys were checked, and json.dumps turned the nested key 1 into
    # '1', so the task would have received {'a': {'1': 2}}.
    _add_refuses_or_stores_exactly(
        sqlite_store, "kwargs", {"schedule": Every(60), "kwargs": {"a": {1: 2}}}
    )


def test_a_fixed_clock_lands_exactly_on_the_instant_it_is_set_to() -> None:
    # Was: FixedClock.advance went through total_seconds(), a float, so a jump of centuries
    # landed a microsecond off and a ticker woken "at" a due slot saw nothing due.
    clock = FixedClock(datetime(2000, 1, 1, 0, 0, 0, 1, tzinfo=UTC))
    clock.set(datetime(2273, 1, 1, tzinfo=UTC))

    assert clock.now() == datetime(2273, 1, 1, tzinfo=UTC)
