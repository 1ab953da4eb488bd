"""The reads behind the load picture (:mod:`celery_dbeat.core.load`): the timing columns of the
schedules that will fire, in chunks by id, as the driver gives them (the instants converted here,
once per value), and the calendars they name (read as beat reads them,
:class:`~celery_dbeat.store.calendars.CalendarCache`); the last day's fires sent, their lag and
the failed runs.

No transaction stays open while the rows are counted: each read ends its own (a page view must
not hold one past the database's session limits). Every statement is bounded, whatever the size
of the history: the last day is read from at most :data:`LAG_SAMPLE` fires, by primary key, from
the first recorded since the day began (:func:`_first_id`, a bisection of the ids) to the
newest. Up to that many ids, all of them (exact); beyond, one id in each of :data:`LAG_SAMPLE`
equal strides of them (a stratified sample: a herd's fires count as much as the fires around
it), each counting for the ids it stands for, and the result says the figures are estimates.
"""

from __future__ import annotations

import random
from collections import namedtuple
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlalchemy.types import NullType

from ..core.definitions import SPEC_COLUMNS
from ..core.fires import FireStatus, RunStatus
from ..core.lastday import PastDay, past_day
from ..core.load import HORIZON, ROW_COLUMNS, Load, LoadCounter
from ..core.origins import BACKFILL_ORIGIN
from .calendars import CalendarCache
from .models import F, S
from .reading import UNREADABLE, chunked, read_rows
from .types import UTCDateTime

__all__ = ["CHUNK", "LAG_SAMPLE", "load", "past"]

#: Schedule rows read per statement.
CHUNK = 5_000
#: Most fires of the last day read; beyond, a sample of this many.
LAG_SAMPLE = 10_000

_HOUR = timedelta(hours=1)
#: How long before its slot a fire may have been recorded (clocks a few seconds apart, a slow
#: transaction): the fires of the day are among those recorded since it began, less this.
_EARLY = timedelta(hours=1)

_COLUMNS = (S.c.id, *(S.c[name] for name in ROW_COLUMNS))


#: What places a schedule's slots when it has no jitter, bounds or run limit (its spec), and its
#: calendar: schedules alike in these are counted as one (:func:`_shared`).
_SHARED_BY = (*(S.c[name] for name in SPEC_COLUMNS), S.c.calendar)
_FIRING = sa.and_(S.c.enabled.is_(True), S.c.finished_at.is_(None), S.c.last_error.is_(None))
_SHAREABLE = sa.and_(
    S.c.kind.in_(["cron", "solar"]),
    S.c.jitter.is_(None),
    S.c.start_at.is_(None),
    S.c.end_at.is_(None),
    S.c.max_runs.is_(None),
)
_Shared = namedtuple("_Shared", [c.name for c in _COLUMNS])  # type: ignore[misc]


def load(conn: Connection, start: datetime, *, top: int = 5, herd_at: float | None = None) -> Load:
    """Fires per minute in the 24 hours from ``start`` of the enabled, unfinished schedules
    without an error, and the day before ``start``."""
    counter = LoadCounter(start, herd_at=herd_at)
    calendars = CalendarCache()
    asked: set[str] = set()

    def read_calendars(names: set[str]) -> None:
        # A name left out of what is read is a calendar that does not exist.
        nonlocal asked
        if names - asked:
            counter.calendars.update(calendars.read(conn, names - asked))
            asked |= names

    shared = _shared(conn)
    conn.rollback()  # read only: end the transaction before counting
    read_calendars({r.calendar for r, _, _ in shared if r.calendar is not None})
    for row, members, names in shared:
        counter.add_shared(row, members, names)
    last_id = None
    while True:
        query = (
            sa.select(*_COLUMNS).where(_FIRING, sa.not_(_SHAREABLE)).order_by(S.c.id).limit(CHUNK)
        )
        if last_id is not None:
            query = query.where(S.c.id > last_id)
        rows, problems = _timing_rows(conn, query)
        if not rows:
            break
        read_calendars({r.calendar for r in rows if r.calendar is not None})
        conn.rollback()
        counter.add(r for r in rows if r.id not in problems)
        counter.unreadable += len(problems)
        counter.schedules += len(problems)
        last_id = rows[-1].id
    day = past(conn, start)
    conn.rollback()
    return replace(counter.result(top=top), past=day)


def _shared(conn: Connection) -> list[tuple[Any, int, list[str]]]:
    """The cron and solar schedules without jitter, bounds or run limit, one row per timing
    and calendar they share (most of a large population: thousands on ``0 * * * *``), with how
    many share it and the names of the first and the last of them (by id). One aggregate (a
    hash, where a window ranking them would sort every row), then the names by primary key."""
    count, first, last = sa.func.count(), sa.func.min(S.c.id), sa.func.max(S.c.id)
    query = (
        sa.select(*_SHARED_BY, count.label("members"), first.label("first"), last.label("last"))
        .where(_FIRING, _SHAREABLE)
        .group_by(*_SHARED_BY)
    )
    groups = list(conn.execute(query))
    ids = sorted({i for g in groups for i in (g.first, g.last)})
    names: dict[int, str] = {}
    for chunk in chunked(ids):
        for i, name in conn.execute(sa.select(S.c.id, S.c.name).where(S.c.id.in_(chunk))):
            names[i] = name
    out = []
    for g in groups:
        timing = {c.name: g._mapping[c.name] for c in _SHARED_BY}
        values = {**dict.fromkeys(_Shared._fields), **timing, "id": g.first, "run_count": 0}
        sample = [names[i] for i in dict.fromkeys((g.first, g.last)) if i in names]
        row = _Shared(**{**values, "name": sample[0] if sample else ""})
        out.append((row, int(g.members), sample))
    return out


def _timing_rows(
    conn: Connection, query: sa.Select[Any], key: sa.Column[Any] | None = None
) -> tuple[list[Any], dict[int, str]]:
    """The rows of ``query`` (schedule columns, or fire columns of id column ``key``) through
    :func:`_untyped`; a chunk holding a value that cannot be read is read again through
    :func:`~celery_dbeat.store.reading.read_rows`, which sets that row aside."""
    try:
        return _untyped(conn, query), {}
    except UNREADABLE:
        return read_rows(conn, query, key=key)


def _untyped(conn: Connection, query: sa.Select[Any]) -> list[Any]:
    """The rows of ``query`` as the driver gives them, without the column types' processing of
    each value (the cost of reading 100,000 schedules through :class:`UTCDateTime` was that of
    counting them). PostgreSQL's driver gives aware instants already; on the other backends the
    instants are made aware UTC here (SQLite's text parsed), once per value."""
    columns = list(query.selected_columns)
    untyped = [sa.type_coerce(c, NullType()).label(c.name) for c in columns]
    rows = conn.execute(query.with_only_columns(*untyped)).all()
    # Tuples with named fields: what the counter reads of each row ten times over, the fastest.
    shape = namedtuple("_Row", [c.name for c in columns])  # type: ignore[misc]
    if conn.dialect.name == "postgresql":
        return [shape._make(row) for row in rows]
    instants = [i for i, c in enumerate(columns) if isinstance(c.type, UTCDateTime)]
    out = []
    for row in rows:
        values = list(row)
        for i in instants:
            value = values[i]
            if value is None:
                continue
            if isinstance(value, str):  # SQLite keeps text
                value = datetime.fromisoformat(value)
            values[i] = value.replace(tzinfo=timezone.utc) if value.tzinfo is None else value
        out.append(shape._make(values))
    return out


def _first_id(conn: Connection, day: datetime) -> int | None:
    """The first id of the fires recorded since ``day`` began (less :data:`_EARLY`): every fire
    of the day has it or a higher one, in whatever order of slots the fires were recorded (a
    backfill or a catch-up records old slots late). All ids when they are fewer than
    :data:`LAG_SAMPLE`; else a bisection of the ids by the primary key (ids grow as fires are
    recorded), one probe a step, each probe judged by when its fire was recorded or sent and by
    its slot, so a fire recorded long ago and sent late moves the bound down, never up."""
    lowest, newest = conn.execute(sa.select(sa.func.min(F.c.id), sa.func.max(F.c.id))).one()
    if lowest is None or newest is None or newest - lowest < LAG_SAMPLE:
        return None if lowest is None else int(lowest)
    since = day - _EARLY
    probe = sa.select(F.c.id, F.c.recorded_at, F.c.sent_at, F.c.slot).order_by(F.c.id).limit(1)
    lo, hi = lowest, newest + 1
    while lo < hi:
        mid = (lo + hi) // 2
        try:
            fire = conn.execute(probe.where(F.c.id >= mid)).first()
        except UNREADABLE:  # a value the driver cannot read: take the fire as recent
            fire = None
        if fire is None or any(
            at is not None and at >= bound
            for at, bound in ((fire.recorded_at, since), (fire.sent_at, since), (fire.slot, day))
        ):
            hi = mid
        else:
            lo = int(fire.id) + 1
    return int(lo)


def past(conn: Connection, end: datetime) -> PastDay:
    """The day before ``end``: fires sent (those a backfill sent apart) and failed runs per
    hour, and the lag of the fires beat sent (a backfill's are left out), read as the module
    docstring says. Only the fires still in the history count: those of a schedule with a
    ``history_limit`` beyond its newest are pruned (``history_limited`` says how many)."""
    day = end - HORIZON
    first = _first_id(conn, day)
    newest = conn.execute(sa.select(sa.func.max(F.c.id))).scalar()
    query = sa.select(
        F.c.id, F.c.slot, F.c.sent_at, F.c.status, F.c.manual, F.c.origin, F.c.run_status
    )
    query = query.where(F.c.slot >= day, F.c.slot < end)
    rows: list[Any] = []
    weight = 1.0
    if first is not None and newest is not None:
        low, high = first, max(first, newest)
        if high - low < LAG_SAMPLE:
            rows = _timing_rows(conn, query.where(F.c.id.between(low, high)), F.c.id)[0]
        else:
            # One id at random in each of LAG_SAMPLE equal strides (stratified: no period of
            # the history can line up with the stride); the same ids on every read.
            weight = (high - low + 1) / LAG_SAMPLE
            rng = random.Random(low)
            ids = [low + int((i + rng.random()) * weight) for i in range(LAG_SAMPLE)]
            for chunk in chunked(ids):
                rows += _timing_rows(conn, query.where(F.c.id.in_(chunk)), F.c.id)[0]
    limited = conn.execute(
        sa.select(sa.func.count()).where(S.c.history_limit.is_not(None))
    ).scalar_one()
    sent = [0.0] * 24
    backfilled = [0.0] * 24
    failed = [0.0] * 24
    lags = []
    for r in rows:
        if r.slot is None:  # a value that cannot be read: the fire is left out
            continue
        hour = min(int((r.slot - day) // _HOUR), 23)
        if r.status == FireStatus.SENT.value and not r.manual and r.sent_at is not None:
            sent[hour] += weight
            if r.origin == BACKFILL_ORIGIN:  # sent long after its slot on purpose: not lag
                backfilled[hour] += weight
            else:
                lags.append((r.slot, (r.sent_at - r.slot).total_seconds()))
        if r.run_status == RunStatus.FAILED.value:
            failed[hour] += weight
    return past_day(
        end,
        lags,
        [round(n) for n in sent],
        [round(n) for n in failed],
        sampled=weight > 1,
        backfilled=[round(n) for n in backfilled],
        history_limited=int(limited),
    )
