"""The schedule database: its schema kept at the version the code knows (migrations, checks),
and :class:`Store`, the database as a beat uses it, the one interface between the beat
(:mod:`celery_dbeat.beat`) and SQL. Engines are made by :mod:`.engine`.

Each of :class:`Store`'s docstrings is that operation's contract: what it locks, what it returns,
what it raises. Every method that reaches the database raises what a database error raises
(:mod:`.failures` says what each kind means: a conflict, lost connectivity, a refusal); a write
the database refuses for one schedule's values sets that schedule aside instead, and says so in
what it returns. ``now`` and leases are on the beat's clock; a method that compares them with
leases other beats wrote moves them onto the database clock first (:mod:`.clock`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, NamedTuple

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.engine import Connection, Engine

from ..core.audit import Actor
from ..core.errors import DBeatError, SchemaVersionError
from ..core.fires import PublishRequest
from ..notify.database import DatabaseListener, notifies_through_database
from . import alerts, audit, beats, due, fires, queue, runs
from .alerts import AlertDelivery, RaisedAlert
from .clock import DatabaseClock
from .due import DueBatch, Peek
from .engine import IDLE_IN_TRANSACTION, create_engine
from .failures import driver_message, is_auth_failure, is_conflict
from .runs import RecordedRuns, RunEvent
from .schedules import count_due, paused_counts

__all__ = [
    "VERSION_TABLE",
    "Backlog",
    "Store",
    "check_schema",
    "create_engine",
    "driver_message",
    "is_auth_failure",
    "is_conflict",
    "migrate",
    "migrate_command",
]

VERSION_TABLE = "dbeat_alembic_version"
MIGRATIONS = Path(__file__).parent / "migrations"
#: MySQL/MariaDB lock names are server-wide: one per database, so that migrations of other
#: databases on the same server do not wait on each other.
_MYSQL_LOCK_NAME = "CONCAT('celery_dbeat_migrate_', MD5(DATABASE()))"
_PG_LOCK_KEY = 0x64626561  # "dbea"


def _config(connection: Connection | None = None) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["connection"] = connection
    return config


def _head() -> str:
    head = ScriptDirectory.from_config(_config()).get_current_head()
    assert head is not None
    return head


def _current(connection: Connection) -> str | None:
    context = MigrationContext.configure(connection, opts={"version_table": VERSION_TABLE})
    return context.get_current_revision()


def _refuse_unknown(revision: str) -> None:
    """Refuse a schema at a revision this celery-dbeat does not know (a newer one wrote it)."""
    try:
        known = ScriptDirectory.from_config(_config()).get_revision(revision) is not None
    except Exception:
        known = False
    if not known:
        raise SchemaVersionError(
            f"the database schema is at revision {revision!r}, which this celery-dbeat does not "
            "know (it was written by a newer version); upgrade celery-dbeat"
        )


def migrate_command(app: str | None = None) -> str:
    """The command that creates or upgrades the tables, for the Celery app ``app`` (as given to
    ``-A``); without one, a placeholder that says what to put there."""
    return f"`celery -A {app or '<your Celery app>'} dbeat migrate`"


def check_schema(engine: Engine, app: str | None = None) -> str:
    """Raise :class:`SchemaVersionError` unless the schema is at this version's head; its
    message names ``app`` (:func:`migrate_command`)."""
    with engine.connect() as connection:
        current = _current(connection)
    head = _head()
    if current == head:
        return current
    if current is None:
        raise SchemaVersionError(
            f"the celery-dbeat tables are not installed; run {migrate_command(app)} "
            "or set dbeat_auto_migrate=True"
        )
    _refuse_unknown(current)
    raise SchemaVersionError(
        f"the database schema is at revision {current!r}, older than {head!r}; run "
        f"{migrate_command(app)} or set dbeat_auto_migrate=True"
    )


_MIGRATION_WAIT_S = 120


@contextmanager
def _migration(engine: Engine) -> Iterator[Connection]:
    """A transaction that holds the migration lock until it has committed.

    Several beats starting at once migrate one after another. On MySQL/MariaDB the lock is a
    session's ``GET_LOCK``, released only after the transaction commits: released before, the
    next beat would read the version row still uncommitted and run the last migration again.
    The lock is named after the database, as PostgreSQL's advisory locks are scoped to it.
    """
    with engine.connect() as connection:
        backend = connection.dialect.name
        if backend in ("mysql", "mariadb"):
            got = connection.execute(
                sa.text(f"SELECT GET_LOCK({_MYSQL_LOCK_NAME}, :s)"), {"s": _MIGRATION_WAIT_S}
            ).scalar()
            connection.commit()
            if got != 1:
                raise DBeatError(
                    f"another process held this database's migration lock for over "
                    f"{_MIGRATION_WAIT_S} s; look for a migration still running, then retry"
                )
            try:
                with connection.begin():
                    yield connection
            finally:
                connection.execute(sa.text(f"SELECT RELEASE_LOCK({_MYSQL_LOCK_NAME})"))
                connection.commit()
        else:
            with connection.begin():
                if backend == "postgresql":  # released as the transaction ends
                    connection.execute(
                        sa.text("SELECT pg_advisory_xact_lock(:k)"), {"k": _PG_LOCK_KEY}
                    )
                # SQLite: the engine's BEGIN IMMEDIATE already holds the database's write lock.
                yield connection


def migrate(engine: Engine, revision: str = "head") -> str:
    """Upgrade the schema to ``revision`` (default: the newest). Safe to call from many processes.

    Refuses a database whose schema is newer than this version of celery-dbeat.
    """
    with _migration(engine) as connection:
        current = _current(connection)
        if current is not None:
            _refuse_unknown(current)
        if revision == "head" and current == _head():
            return current
        command.upgrade(_config(connection), revision)
        new = _current(connection)
    assert new is not None
    return new


class Backlog(NamedTuple):
    """What waits (:meth:`Store.backlog`)."""

    #: Schedules due now.
    due: int
    #: Queued slots (catch-up, backfill).
    queued: int
    #: Paused schedules by pause source (``unknown``: paused before the source was recorded).
    paused: dict[str, int]


class Store:
    """A schedule database as beat uses it. Accepts an ``Engine`` (left open) or a URL (an
    engine made by :func:`.engine.create_engine`, closed by :meth:`close`; a URL that cannot
    work raises :data:`.failures.BAD_URL` at once, before any connection). Constructing it does
    no I/O."""

    def __init__(
        self,
        engine: Engine | str,
        *,
        engine_options: dict[str, Any] | None = None,
        idle_in_transaction: timedelta = IDLE_IN_TRANSACTION,
        server_clock: bool = True,
    ):
        if isinstance(engine, Engine):
            self.engine, self._owns_engine = engine, False
        else:
            self.engine = create_engine(
                engine, engine_options, idle_in_transaction=idle_in_transaction
            )
            self._owns_engine = True
        #: The clock leases and writes are taken on (:mod:`.clock`); ``server_clock=False``
        #: turns the database server's off, for tests that move a fake clock past leases.
        self.clock = DatabaseClock(self.engine.dialect.name, enabled=server_clock)

    def close(self) -> None:
        """Release the connections of an engine this store made (one it was handed stays open)."""
        if self._owns_engine:
            self.engine.dispose()

    # Start-up ---------------------------------------------------------------------------------

    def migrate(self) -> str:
        """Create or upgrade the tables to the newest revision (:func:`migrate`)."""
        return migrate(self.engine)

    def change_listener(self) -> DatabaseListener | None:
        """A listener woken by the database's own change notifications (PostgreSQL through
        psycopg 3), or ``None`` where it has none (beats then poll). No I/O until it listens."""
        return DatabaseListener(self.engine) if notifies_through_database(self.engine) else None

    @property
    def publishes_ahead(self) -> bool:
        """Whether a beat gains by publishing one batch while it records the next: not on
        SQLite, whose one writer at a time serialises them anyway."""
        return self.engine.dialect.name != "sqlite"

    # The due path -----------------------------------------------------------------------------

    def peek(self) -> Peek:
        """What is due next (:class:`.due.Peek`), with a reading of the database clock in the
        same query. Locks nothing. The schedules whose earliest stored instant cannot be read
        are set aside first (counted in ``set_aside``)."""
        return due.peek(self.engine, self.clock)

    def claim_due(
        self, now: datetime, limit: int, beat: str, late_since: datetime | None = None
    ) -> AbstractContextManager[DueBatch]:
        """Lock up to ``limit`` due schedules (and ones asking for a recompute) in a transaction,
        ``FOR UPDATE SKIP LOCKED`` (rows other beats hold are left to them; SQLite: the
        database's write lock), and yield them as a :class:`.due.DueBatch` to plan and record.

        Schedules due since ``late_since`` (merely late: they came due while beats ran) are taken
        before those due longer (missed while every beat was down, resolved by their misfire
        policy), each group oldest first: after a long outage the first pass over every schedule
        takes a while, and a schedule it has already planned comes due again meanwhile; its
        on-time slot goes first rather than behind the rest of the pass. A row whose values
        cannot be read is set aside (``set_aside``). The transaction commits when the block exits
        normally and rolls back on an exception."""
        return due.claim_due(self.engine, self.clock, now, limit, beat, late_since)

    # Recorded fires: each is returned with its recorded task id, to be published --------------

    def claim_stale_pending(
        self, now: datetime, lease_until: datetime, limit: int
    ) -> list[PublishRequest]:
        """Take over up to ``limit`` recorded fires whose lease is over at ``now`` (their beat
        died or was paused; a run-now fire is recorded so), oldest lease first, leasing them
        until ``lease_until``; rows another beat is taking are skipped."""
        return fires.claim_stale_pending(self.engine, self.clock, now, lease_until, limit)

    def claim_queued(
        self, now: datetime, lease_until: datetime, limit: int, beat: str
    ) -> list[PublishRequest]:
        """Lease up to ``limit`` queued slots (catch-up, backfill) whose time has come to
        ``beat`` until ``lease_until``: from the queued rows with the oldest slots, each row's
        oldest first. Each becomes a PENDING fire, as if recorded now, so a beat that dies with
        them leaves them to another's :meth:`claim_stale_pending`."""
        return queue.claim_queued(self.engine, self.clock, now, lease_until, limit, beat)

    def release_buffered(
        self,
        now: datetime,
        lease_until: datetime,
        default_max_run_time: timedelta,
        beat: str,
        limit: int,
    ) -> list[PublishRequest]:
        """Turn up to ``limit`` buffered fires (overlap policy ``buffer_one``) whose schedule has
        no run going on at ``now`` (a run is over once older than the schedule's
        ``max_run_time``, default ``default_max_run_time``) into PENDING fires leased to
        ``beat`` until ``lease_until``. The buffered fire of a paused schedule waits for its
        resume."""
        return runs.release_buffered(
            self.engine, self.clock, now, lease_until, default_max_run_time, beat, limit
        )

    def extend_leases(
        self, task_ids: Sequence[str], held_until: datetime, now: datetime, lease_until: datetime
    ) -> tuple[set[str], datetime]:
        """Extend to ``lease_until`` the leases of the fires ``task_ids`` this beat holds until
        ``held_until`` (as recorded: a compare-and-set). Returns the task ids still held, and
        their new lease: a fire another beat took over meanwhile (its lease ran out), or that
        was sent, is not among them."""
        return fires.extend_leases(self.engine, self.clock, task_ids, held_until, now, lease_until)

    def mark_sent(self, task_ids: Sequence[str], now: datetime, beat: str) -> list[str]:
        """Mark the PENDING fires ``task_ids`` sent by ``beat``. A fire the database refuses to
        mark (a constraint, a site rule) costs its schedule, not the others: it is recorded
        ``failed``, saying that it reached the broker, so no beat takes it over and publishes it
        again, and its schedule is set aside with the error. Returns the names of the schedules
        set aside."""
        return fires.mark_sent(self.engine, task_ids, now, beat)

    def mark_publish_failed(
        self, task_id: str, error: str, retry_at: datetime, *, give_up: bool
    ) -> list[str]:
        """Record a failed publish of fire ``task_id`` (to be tried again at ``retry_at``, or,
        with ``give_up``, no more). A refused write sets its schedule aside, as
        :meth:`mark_sent`'s does; returns the names of the schedules set aside."""
        return fires.mark_publish_failed(self.engine, task_id, error, retry_at, give_up=give_up)

    # Beats ------------------------------------------------------------------------------------

    def heartbeat(self, beat: Mapping[str, Any], now: datetime) -> list[tuple[datetime, datetime]]:
        """Upsert the heartbeat row of ``beat`` (``name``, ``hostname``, ``pid``, ``version``,
        ``started_at``) seen ``now``, deleting those unseen for a day; return every beat's
        ``(started_at, last_seen_at)``, this one's included."""
        return beats.heartbeat(self.engine, beat, now)

    def forget_beat(self, name: str) -> None:
        """Delete the heartbeat row of beat ``name`` (a clean stop)."""
        beats.forget_beat(self.engine, name)

    # Upkeep: each prune deletes in transactions of 1,000 rows, for 0.2 s of ``monotonic`` ------

    def prune_history(self, before: datetime, monotonic: Callable[[], float]) -> int:
        """Delete fires whose slot is older than ``before``; return how many. Unpublished fires
        are kept whatever their age; each schedule's ``pruned_until`` follows."""
        return runs.prune_history(self.engine, before, monotonic=monotonic)

    def prune_history_limits(self, after: int, monotonic: Callable[[], float]) -> tuple[int, int]:
        """Delete the fires of each schedule beyond its ``history_limit`` newest (by slot), going
        on from the schedule after id ``after``. Returns how many fires were deleted and the
        ``after`` of the next call (``0`` once the pass is over: start again from the first).
        Unpublished fires are kept and not counted; each schedule's ``pruned_until`` follows."""
        return runs.prune_history_limits(self.engine, after, monotonic=monotonic)

    def prune_audit(self, before: datetime, monotonic: Callable[[], float]) -> int:
        """Delete audit entries older than ``before``; return how many."""
        return audit.prune_audit(self.engine, before, monotonic=monotonic)

    def backlog(self, now: datetime) -> Backlog:
        """What waits at ``now`` (one connection, no lock)."""
        with self.engine.connect() as conn:
            return Backlog(count_due(conn, now), queue.queued_backlog(conn)[0], paused_counts(conn))

    def recent_successes(self, since: datetime) -> list[tuple[str, datetime]]:
        """``(schedule name, newest successful finish)`` for runs that succeeded after
        ``since``."""
        return runs.recent_successes(self.engine, since)

    # Workers ----------------------------------------------------------------------------------

    def record_runs(self, events: Sequence[RunEvent]) -> RecordedRuns:
        """Apply worker events to the fires they belong to (events of other tasks match no row),
        and pause the schedules whose ``pause_after_failures`` they complete
        (:func:`.outcomes.count_outcomes`), in the same transaction.

        A run that already finished is not reopened by a late or redelivered "started". When the
        database refuses a value of one run, the runs are tried one by one, each in a savepoint,
        and the others written; the runs refused for their own values are returned, not
        written. Raises (having written nothing) when the database cannot be written: retrying
        later loses nothing."""
        return runs.record_runs(self.engine, events)

    # Alerts (celery_dbeat.core.alerts) -------------------------------------------------------

    def open_missed(self, now: datetime, actor: Actor) -> list[RaisedAlert]:
        """Record a ``missed`` alert for each enabled schedule with an ``alert_deadline``, not
        in alert, whose oldest slot since its newest success has no successful run and is past
        its deadline at ``now`` (a beat's own fire of the last day, sent or to be sent), and put
        the schedule in alert, with an audit entry as ``actor``; return the alerts recorded.

        Each schedule is decided in its own transaction under its row lock, taken ``SKIP
        LOCKED`` (a row another writer holds is looked at again next time), after reading its
        runs again: any number of beats may call this at once, and a success committed first
        wins. Nothing is recorded twice (the alerts' unique key)."""
        return alerts.open_missed(self.engine, now, actor)

    def claim_alerts(self, now: datetime, lease_until: datetime, limit: int) -> list[AlertDelivery]:
        """Lease to this beat, until ``lease_until``, up to ``limit`` undelivered alerts whose
        next attempt is due at ``now`` and whose lease (another beat's) is over, oldest first,
        counting an attempt on each (a compare-and-set: one beat wins each)."""
        return alerts.claim_alerts(self.engine, self.clock, now, lease_until, limit)

    def finish_alert(
        self,
        id_: int,
        now: datetime,
        *,
        error: str | None = None,
        retry_in: timedelta | None = None,
    ) -> None:
        """Record the delivery of alert ``id_`` at ``now``: delivered (no ``error``), to be
        tried again ``retry_in`` from now, or given up (an ``error`` and no ``retry_in``)."""
        alerts.finish_alert(self.engine, self.clock, id_, now, error=error, retry_in=retry_in)

    def schedules_in_alert(self) -> list[tuple[str, str, datetime]]:
        """``(name, episode kind, episode slot)`` of every schedule in alert, by name."""
        with self.engine.connect() as conn:
            return alerts.schedules_in_alert(conn)
