"""Integration fixtures: real databases, real Redis, and a clock that only moves when told.

The surface suites (cli/, django/, flask/) are integration tests too and share these.

* ``store``: a migrated :class:`Store` on each backend of ``database_url``;
* ``api``: the management API (:class:`celery_dbeat.api.Schedules`) on ``store``, on ``clock``;
* ``lock_backend`` / ``lock``: every :class:`FireLock` implementation (database, Redis);
* ``clock``: a :class:`FixedClock` at :data:`START`;
* ``publisher`` / ``failing_publisher``: stand-ins for the broker;
* ``tables``: write schedules through ``sync_config`` or straight into the tables, read rows back;
* ``make_ticker``: a :class:`Ticker` with test settings;
* :func:`lose_every_race`: every edit loses a race with another writer.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, cast

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Connection, Row

from celery_dbeat.api import Schedules
from celery_dbeat.beat.ticker import Ticker
from celery_dbeat.clock import FixedClock
from celery_dbeat.config import Settings
from celery_dbeat.core.definitions import Definition
from celery_dbeat.core.fires import PublishRequest, fire_task_id
from celery_dbeat.locks import DatabaseLock, FireLock
from celery_dbeat.store import Fire, Schedule, Store
from celery_dbeat.store import schedules as store_schedules
from celery_dbeat.store.sync import SyncReport, sync_config
from tests.services import install_schema

UTC = timezone.utc
#: A Monday, on the hour. Every test's clock starts here unless it says otherwise.
START = datetime(2024, 5, 6, 9, 0, tzinfo=UTC)

S = cast(sa.Table, Schedule.__table__)
F = cast(sa.Table, Fire.__table__)


def at(hh_mm: str, day: datetime = START) -> datetime:
    """``at("13:10")`` is 13:10 UTC on :data:`START`'s day; ``at("13:10:30")`` works too."""
    parts = [int(p) for p in hh_mm.split(":")]
    hour, minute, second = [*parts, 0, 0][:3]
    return day.replace(hour=hour, minute=minute, second=second, microsecond=0)


# Stores ------------------------------------------------------------------------------------------


#: The store of the running test, for :func:`task_id_of` (a schedule's task ids derive from its
#: ``uid``, which only the database knows).
_stores: list[Store] = []


@pytest.fixture
def store(database_url: str) -> Iterator[Store]:
    """A store on a fresh, migrated database (each backend in turn).

    Leases follow the test's :class:`FixedClock` (``server_clock=False``), so a test can move
    time past them; tests/integration/test_skew.py covers the database-clock leases beats use.
    """
    install_schema(database_url)
    store = Store(database_url, server_clock=False)
    _stores.append(store)
    yield store
    _stores.remove(store)
    store.close()


def uid_of(name: str, store: Store | None = None) -> str:
    """The identity of schedule ``name`` in ``store`` (default: the running test's ``store``)."""
    with (store or _stores[-1]).engine.connect() as conn:
        return str(conn.execute(sa.select(S.c.uid).where(S.c.name == name)).scalar_one())


def task_id_of(
    name: str, slot: datetime, *, manual: bool = False, store: Store | None = None
) -> str:
    """The task id of schedule ``name``'s fire of ``slot``: :func:`fire_task_id` of its
    ``uid`` in ``store`` (default: the running test's ``store``)."""
    return fire_task_id(uid_of(name, store), slot, manual=manual)


@pytest.fixture
def open_store(database_url: str) -> Iterator[Callable[[], Store]]:
    """More stores on the same database, each with its own engine (as another beat process)."""
    stores: list[Store] = []

    def make() -> Store:
        stores.append(Store(database_url, server_clock=False))
        return stores[-1]

    yield make
    for store in stores:
        store.close()


# Locks -------------------------------------------------------------------------------------------


@dataclass
class LockBackend:
    """How to make a lock of one backend for a given owner (a beat)."""

    name: str
    #: ``False`` for the database backend, which grants every key and lets the fire rows decide.
    exclusive: bool
    make: Callable[[str], FireLock]


@pytest.fixture(params=["database", "redis"])
def lock_backend(request: pytest.FixtureRequest) -> Iterator[LockBackend]:
    made: list[FireLock] = []
    if request.param == "database":

        def make(owner: str) -> FireLock:
            made.append(DatabaseLock())
            return made[-1]

        yield LockBackend("database", exclusive=False, make=make)
    else:
        from celery_dbeat.locks.redis import RedisLock

        url = request.getfixturevalue("redis_url")
        prefix = request.getfixturevalue("redis_prefix")

        def make(owner: str) -> FireLock:
            made.append(RedisLock(url, prefix=prefix, owner=owner))
            return made[-1]

        yield LockBackend("redis", exclusive=True, make=make)
    for lock in made:
        lock.close()


@pytest.fixture
def lock(lock_backend: LockBackend) -> FireLock:
    """The lock of beat ``beat-1`` on each backend."""
    return lock_backend.make("beat-1")


# Time and publishing -----------------------------------------------------------------------------


@pytest.fixture
def clock() -> FixedClock:
    """A clock at :data:`START` that moves only when the test says (``set``, ``advance``)."""
    return FixedClock(START)


@pytest.fixture
def api(store: Store, clock: FixedClock) -> Iterator[Schedules]:
    """The management API on ``store``, writing at ``clock``'s time."""
    with Schedules(store, clock=clock) as api:
        yield api


Call = tuple[PublishRequest, list[Any], dict[str, Any], dict[str, Any]]


class RecordingPublisher(list[Call]):
    """A broker that accepts everything: a list of ``(request, args, kwargs, options)``."""

    def __call__(
        self,
        request: PublishRequest,
        args: list[Any],
        kwargs: dict[str, Any],
        options: dict[str, Any],
    ) -> None:
        self.append((request, args, kwargs, options))

    @property
    def fires(self) -> list[tuple[str, datetime]]:
        """``(schedule name, slot)`` of every publish, in publish order."""
        return [(request.schedule_name, request.slot) for request, *_ in self]

    @property
    def task_ids(self) -> list[str]:
        return [request.task_id for request, *_ in self]


class FailingPublisher:
    """A broker that is down: every publish raises; attempts are kept."""

    def __init__(self) -> None:
        self.attempts: list[PublishRequest] = []

    def __call__(
        self,
        request: PublishRequest,
        args: list[Any],
        kwargs: dict[str, Any],
        options: dict[str, Any],
    ) -> None:
        self.attempts.append(request)
        raise ConnectionError("broker down")


@pytest.fixture
def publisher() -> RecordingPublisher:
    return RecordingPublisher()


@pytest.fixture
def failing_publisher() -> FailingPublisher:
    return FailingPublisher()


def settings(instance_name: str = "beat-1", **overrides: Any) -> Settings:
    return Settings.from_mapping({"instance_name": instance_name, **overrides})


@pytest.fixture
def make_ticker(
    store: Store, publisher: RecordingPublisher, clock: FixedClock
) -> Callable[..., Ticker]:
    """``make_ticker(**settings)``; store, publisher, clock and lock default to the fixtures'."""

    def make(
        *,
        store: Store = store,
        lock: FireLock | None = None,
        publish: Callable[..., None] = publisher,
        clock: FixedClock = clock,
        **overrides: Any,
    ) -> Ticker:
        return Ticker(store, lock or DatabaseLock(), publish, settings(**overrides), clock)

    return make


#: The type of the ``make_ticker`` fixture.
MakeTicker = Callable[..., Ticker]


def run(
    ticker: Ticker, clock: FixedClock, until: datetime, *, step: timedelta | None = None
) -> int:
    """Tick like beat does until ``until`` (inclusive); return the number of ticks.

    Between ticks the clock moves by ``step``, or by the sleep ``tick()`` asked for. The last move
    is shortened so that a tick happens exactly at ``until``.
    """
    ticks = 0
    while True:
        sleep = ticker.tick()
        ticks += 1
        assert ticks < 20_000, "beat is spinning: tick() keeps asking for no sleep"
        if clock.now() >= until:
            return ticks
        delta = step if step is not None else timedelta(seconds=sleep)
        clock.set(min(clock.now() + delta, until))


def slots(first: datetime, step: timedelta, last: datetime) -> list[datetime]:
    """``first, first + step, ...`` up to and including ``last``: slots by arithmetic."""
    count = (last - first) // step + 1 if last >= first else 0
    return [first + n * step for n in range(count)]


def fires(
    name: str, instants: list[datetime], store: Store | None = None
) -> list[tuple[str, datetime, str]]:
    """The ``(schedule name, slot, task id)`` beat publishes for each of ``instants``."""
    return [(name, t, task_id_of(name, t, store=store)) for t in instants]


@contextmanager
def on_each_statement(store: Store, seen: Callable[[Any, str], None]) -> Iterator[None]:
    """``seen(cursor, statement)`` before each statement ``store`` sends meanwhile."""

    def listener(conn: Any, cursor: Any, statement: str, *_: Any) -> None:
        seen(cursor, statement)

    sa.event.listen(store.engine, "before_cursor_execute", listener)
    try:
        yield
    finally:
        sa.event.remove(store.engine, "before_cursor_execute", listener)


@contextmanager
def statements_sent(store: Store) -> Iterator[list[str]]:
    """The statements ``store`` sends meanwhile (an ``executemany`` counts once)."""
    statements: list[str] = []
    with on_each_statement(store, lambda _cursor, statement: statements.append(statement)):
        yield statements


def published(publisher: RecordingPublisher) -> list[tuple[str, datetime, str]]:
    """What ``publisher`` received, as :func:`fires` writes it."""
    return [(r.schedule_name, r.slot, r.task_id) for r, *_ in publisher]


# The tables --------------------------------------------------------------------------------------


@dataclass
class Tables:
    """Write schedules into a store's tables and read back what beat made of them: through
    ``sync_config`` (as beat's start-up does) or as raw rows, bypassing the management API."""

    store: Store

    def sync(self, definitions: Iterable[Definition], now: datetime) -> SyncReport:
        return sync_config(self.store, definitions, now)

    def insert(self, name: str, now: datetime = START, **columns: Any) -> int:
        """Insert a row directly, bypassing validation (as raw SQL or an old version would)."""
        values: dict[str, Any] = {
            "name": name,
            "task": "tasks.raw",
            "args": "[]",
            "kwargs": "{}",
            "options": "{}",
            "enabled": True,
            "origin": "api",
            "kind": "cron",
            "cron": "0 * * * *",
            "timezone": "UTC",
            "anchor_at": now,
            "run_count": 0,
            "version": 1,
            "created_at": now,
            "updated_at": now,
        }
        values.update(columns)
        with self.store.engine.begin() as conn:
            result = conn.execute(sa.insert(S).values(**values))
            (key,) = result.inserted_primary_key or (None,)
        assert key is not None
        return int(key)

    def update(self, name: str, **values: Any) -> None:
        with self.store.engine.begin() as conn:
            conn.execute(sa.update(S).where(S.c.name == name).values(**values))

    def row(self, name: str) -> Row[Any]:
        with self.store.engine.connect() as conn:
            return conn.execute(sa.select(S).where(S.c.name == name)).one()

    def rows(self) -> list[Row[Any]]:
        with self.store.engine.connect() as conn:
            return list(conn.execute(sa.select(S).order_by(S.c.name)))

    def fires(self, name: str | None = None) -> list[Row[Any]]:
        """Fire rows (of one schedule, or all) with the schedule's name, oldest slot first."""
        query = sa.select(F, S.c.name).join(S, S.c.id == F.c.schedule_id)
        if name is not None:
            query = query.where(S.c.name == name)
        with self.store.engine.connect() as conn:
            return list(conn.execute(query.order_by(F.c.slot, S.c.name)))

    def execute(self, sql: str, **params: Any) -> None:
        with self.store.engine.begin() as conn:
            conn.execute(sa.text(sql), params)

    def refuse(
        self, event: str, table: str, message: str, *, when: str = "", constraint: bool = True
    ) -> None:
        """A site rule: a trigger that refuses every ``event`` (INSERT, UPDATE, DELETE) on
        ``table`` (for which ``when`` holds: SQL over ``NEW`` and ``OLD``) with ``message``, as a
        constraint would (``constraint``), or as a plain error (PostgreSQL's RAISE EXCEPTION,
        MySQL's SIGNAL '45000'; SQLite has none: a trigger's RAISE is a constraint failed)."""
        dialect = self.store.engine.dialect.name
        name = f"dbeat_test_refuse_{event.lower()}_{table}"
        if dialect == "postgresql":
            code = "USING ERRCODE = 'check_violation', MESSAGE = " if constraint else ""
            self.execute(
                f"CREATE FUNCTION {name}() RETURNS trigger AS $$ BEGIN"
                f" RAISE EXCEPTION {code}'{message}'; END $$ LANGUAGE plpgsql"
            )
            self.execute(
                f"CREATE TRIGGER {name} BEFORE {event} ON {table} FOR EACH ROW"
                f"{f' WHEN ({when})' if when else ''} EXECUTE FUNCTION {name}()"
            )
        elif dialect in ("mysql", "mariadb"):
            # 1048 (a column refused NULL) is one of the errors MySQL drivers raise as integrity
            # errors; SQLSTATE 45000 is an error of the user's own.
            state = "'23000' SET MYSQL_ERRNO = 1048," if constraint else "'45000' SET"
            signal = f"SIGNAL SQLSTATE {state} MESSAGE_TEXT = '{message}'"
            self.execute(
                f"CREATE TRIGGER {name} BEFORE {event} ON {table} FOR EACH ROW"
                f" BEGIN {f'IF {when} THEN {signal}; END IF' if when else signal}; END"
            )
        else:
            assert constraint, "SQLite's triggers refuse as a constraint does"
            self.execute(
                f"CREATE TRIGGER {name} BEFORE {event} ON {table}"
                f"{f' WHEN {when}' if when else ''} BEGIN SELECT RAISE(ABORT, '{message}'); END"
            )


@pytest.fixture
def tables(store: Store) -> Tables:
    """The schedule and fire tables of ``store``, read and written directly."""
    return Tables(store)


# Races -------------------------------------------------------------------------------------------


def lose_every_race(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make every read of a schedule by the API's writes find a row that another writer changes
    (and commits) before this write: what happens when two people save the same schedule."""
    read = store_schedules.find_schedule

    def read_then_lose_the_race(
        conn: Connection, name: str | None, schedule_id: int | None = None
    ) -> Row[Any] | None:
        row = read(conn, name, schedule_id)
        if row is not None:
            conn.execute(sa.update(S).where(S.c.id == row.id).values(version=S.c.version + 1))
        return row

    monkeypatch.setattr(store_schedules, "find_schedule", read_then_lose_the_race)
