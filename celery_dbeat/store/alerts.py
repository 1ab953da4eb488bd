"""Alerts behind :class:`.database.Store` (whose docstrings state the contract): recording an
alert once per episode (:func:`raise_alert`, called by the worker's outcome count and by
:func:`open_missed`), and leasing undelivered alerts to the beat that delivers them
(:func:`claim_alerts`, :func:`finish_alert`).

Exactly once is the database's: every writer of a schedule's alert state holds the schedule's
row lock (the outcome count takes it for the runs it counts; :func:`open_missed` takes it with
``SKIP LOCKED``), reads the state under it, and the unique key ``(schedule_id, kind,
episode_slot)`` refuses a second record of the same alert whatever happens.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from ..core.alerts import AlertKind, alert_id, missed_slot
from ..core.audit import Action, Actor
from ..core.fires import FireStatus, RunStatus
from . import audit
from .clock import DatabaseClock
from .engine import skips_locked
from .isolation import storable
from .models import AL, F, S
from .reading import read_rows

__all__ = [
    "AlertDelivery",
    "RaisedAlert",
    "claim_alerts",
    "finish_alert",
    "open_missed",
    "raise_alert",
    "schedules_in_alert",
]

#: The fire states whose run a ``missed`` deadline waits for: sent, or to be sent (a fire the
#: misfire, overlap or calendar rules chose not to send is not missed; catch-up and backfill
#: fires of old slots are not watched either, see :func:`_oldest_unsucceeded`).
_WATCHED = (
    FireStatus.PENDING.value,
    FireStatus.SENT.value,
    FireStatus.FAILED.value,
    FireStatus.BUFFERED.value,
)
#: How far before its deadline a slot is still looked at: a schedule given a deadline today is
#: not alerted for the runs of last month.
_LOOKBACK = timedelta(days=1)


@dataclass(frozen=True)
class RaisedAlert:
    """An alert just recorded."""

    alert_id: str
    schedule: str
    kind: str
    episode_slot: datetime
    slot: datetime | None
    error: str | None
    failures: int


def raise_alert(
    conn: Connection,
    *,
    schedule: Any,
    open_kind: str | None,
    open_slot: datetime | None,
    kind: AlertKind,
    episode: datetime,
    slot: datetime | None,
    error: str | None,
    failures: int,
    at: datetime,
    actor: Actor,
) -> RaisedAlert | None:
    """Record alert ``kind`` of ``episode`` for ``schedule`` (a row with ``id``, ``uid`` and
    ``name``, locked, in the episode ``open_kind`` of ``open_slot``), to deliver from ``at``,
    set (or, for a recovery, clear) the schedule's episode, and add an entry to the audit trail
    as ``actor``; ``None`` (nothing written) when this alert is recorded already."""
    exists = sa.select(AL.c.id).where(
        AL.c.schedule_id == schedule.id, AL.c.kind == kind.value, AL.c.episode_slot == episode
    )
    if conn.execute(exists).first() is not None:
        return None
    uid = schedule.uid or str(schedule.id)
    raised = RaisedAlert(
        alert_id(uid, kind, episode),
        schedule.name,
        kind.value,
        episode,
        slot,
        storable(error, 2000),
        failures,
    )
    conn.execute(
        sa.insert(AL).values(
            alert_id=raised.alert_id,
            schedule_id=schedule.id,
            schedule_name=schedule.name,
            kind=raised.kind,
            episode_slot=episode,
            slot=slot,
            error=raised.error,
            failures=failures,
            raised_at=at,
            next_attempt_at=at,
            attempts=0,
        )
    )
    opened = kind is not AlertKind.RECOVERED
    new_kind, new_episode = (kind.value, episode) if opened else (None, None)
    conn.execute(
        sa.update(S)
        .where(S.c.id == schedule.id)
        .values(alert_kind=new_kind, alert_episode=new_episode)
    )
    change = {
        "alert_kind": [open_kind, new_kind],
        "alert_episode": [_text(open_slot), _text(new_episode)],
        "alert_id": [None, raised.alert_id],
    }
    audit.record(conn, [audit.row_entry(actor, Action.ALERT, at, schedule.name, uid, change)])
    return raised


def _text(instant: datetime | None) -> str | None:
    return None if instant is None else instant.isoformat()


# Missed deadlines (a beat's upkeep) -------------------------------------------------------------

_ALERT_STATE = (S.c.id, S.c.uid, S.c.name, S.c.alert_kind, S.c.alert_episode, S.c.alert_deadline)


def _oldest_unsucceeded(conn: Connection, schedule_id: int, deadline: float, now: datetime) -> Any:
    """The oldest slot of ``schedule_id`` whose run has not succeeded and whose deadline is over
    at ``now``, among a beat's own fires (not a run now, a queued catch-up or a backfill), sent
    or to be sent, after its newest success (a run now's included) and with a deadline after
    that success finished: the slots still queued behind the run that ended an episode belong to
    it, and do not open another as the workers catch up."""
    newest_success = sa.select(sa.func.max(F.c.slot), sa.func.max(F.c.finished_at)).where(
        F.c.schedule_id == schedule_id, F.c.run_status == RunStatus.SUCCEEDED.value
    )
    after, finished = conn.execute(newest_success).one()
    span = timedelta(seconds=deadline)
    due_by = now - span
    query = sa.select(sa.func.min(F.c.slot)).where(
        F.c.schedule_id == schedule_id,
        F.c.manual == sa.false(),
        F.c.origin.is_(None),
        F.c.status.in_(_WATCHED),
        sa.or_(F.c.run_status.is_(None), F.c.run_status != RunStatus.SUCCEEDED.value),
        F.c.slot <= due_by,
        F.c.slot > due_by - _LOOKBACK,
    )
    if after is not None:
        query = query.where(F.c.slot > after)
    if finished is not None:
        query = query.where(F.c.slot > _aware(finished) - span)
    return conn.execute(query).scalar()


def _aware(value: Any) -> datetime:
    """An aggregate's instant (``max`` loses the column type: text on SQLite)."""
    instant: datetime = datetime.fromisoformat(value) if isinstance(value, str) else value
    return instant if instant.tzinfo is not None else instant.replace(tzinfo=timezone.utc)


def _overdue(conn: Connection, now: datetime) -> list[tuple[int, float]]:
    """The schedules watched by a deadline (enabled, not in alert) with a fire that
    :func:`_oldest_unsucceeded` would look at and whose deadline is over, whatever their newest
    success: one query for them all, and a query per schedule only for those (a beat's upkeep
    ran two per watched schedule, 11 s a pass with 10,000 of them)."""
    watched = (
        S.c.alert_deadline.is_not(None),
        S.c.alert_kind.is_(None),
        S.c.enabled == sa.true(),
    )
    shortest, longest = conn.execute(
        sa.select(sa.func.min(S.c.alert_deadline), sa.func.max(S.c.alert_deadline)).where(*watched)
    ).one()
    if shortest is None:
        return []
    oldest = sa.func.min(F.c.slot).label("oldest")
    query = (
        sa.select(S.c.id, S.c.alert_deadline, oldest)
        .join(F, F.c.schedule_id == S.c.id)
        .where(
            *watched,
            F.c.manual == sa.false(),
            F.c.origin.is_(None),
            F.c.status.in_(_WATCHED),
            sa.or_(F.c.run_status.is_(None), F.c.run_status != RunStatus.SUCCEEDED.value),
            F.c.slot <= now - timedelta(seconds=shortest),
            F.c.slot > now - timedelta(seconds=longest) - _LOOKBACK,
        )
        .group_by(S.c.id, S.c.alert_deadline)
    )
    return [
        (row.id, row.alert_deadline)
        for row in conn.execute(query)
        if _aware(row.oldest) <= now - timedelta(seconds=row.alert_deadline)
    ]


def open_missed(engine: Engine, now: datetime, actor: Actor) -> list[RaisedAlert]:
    """:meth:`.database.Store.open_missed`."""
    with engine.connect() as conn:
        candidates = [
            (schedule_id, deadline)
            for schedule_id, deadline in _overdue(conn, now)
            if _oldest_unsucceeded(conn, schedule_id, deadline, now) is not None
        ]
    raised: list[RaisedAlert] = []
    for schedule_id, _deadline in candidates:
        with engine.begin() as conn:
            query = sa.select(*_ALERT_STATE).where(S.c.id == schedule_id)
            if skips_locked(engine):
                query = query.with_for_update(skip_locked=True)
            row = conn.execute(query).first()
            if row is None or row.alert_kind is not None or row.alert_deadline is None:
                continue  # locked by another writer (it looks again next pass), or in alert
            # Read again under the lock: a success committed meanwhile ends it.
            oldest = _oldest_unsucceeded(conn, row.id, row.alert_deadline, now)
            slot = missed_slot(oldest, row.alert_deadline, now)
            if slot is None:
                continue
            done = raise_alert(
                conn,
                schedule=row,
                open_kind=None,
                open_slot=None,
                kind=AlertKind.MISSED,
                episode=slot,
                slot=slot,
                error=f"no successful run {row.alert_deadline:g} s after the slot",
                failures=0,
                at=now,
                actor=actor,
            )
            if done is not None:
                raised.append(done)
    return raised


# Delivery ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AlertDelivery:
    """An alert leased to one beat to deliver, with where it goes (``None``: the settings')."""

    id: int
    alert_id: str
    kind: str
    schedule: str
    schedule_uid: str | None
    episode_slot: datetime
    slot: datetime | None
    error: str | None
    failures: int
    raised_at: datetime
    #: Deliveries tried so far, this one included.
    attempts: int
    task: str | None
    webhook: str | None

    def as_mapping(self) -> dict[str, Any]:
        return {
            "alert_id": self.alert_id,
            "kind": self.kind,
            "schedule": self.schedule,
            "schedule_uid": self.schedule_uid,
            "episode_slot": self.episode_slot,
            "slot": self.slot,
            "error": self.error,
            "failures": self.failures,
            "raised_at": self.raised_at,
        }


def claim_alerts(
    engine: Engine, clock: DatabaseClock, now: datetime, lease_until: datetime, limit: int
) -> list[AlertDelivery]:
    """:meth:`.database.Store.claim_alerts`."""
    claimed: list[AlertDelivery] = []
    with engine.begin() as conn:
        now, lease_until = clock.moved(conn, now, lease_until)
        free = sa.or_(AL.c.lease_until.is_(None), AL.c.lease_until <= now)
        query = (
            sa.select(
                AL,
                S.c.uid.label("schedule_uid"),
                S.c.alert_task.label("task"),
                S.c.alert_webhook.label("webhook"),
            )
            .join(S, S.c.id == AL.c.schedule_id)
            .where(AL.c.next_attempt_at <= now, free)
            .order_by(AL.c.next_attempt_at, AL.c.id)
            .limit(limit)
        )
        rows = conn.execute(query).all()
        for row in rows:
            won = conn.execute(
                sa.update(AL)
                .where(AL.c.id == row.id, AL.c.next_attempt_at.is_not(None), free)
                .values(lease_until=lease_until, attempts=AL.c.attempts + 1)
            ).rowcount
            if won != 1:
                continue  # another beat leased it first
            claimed.append(
                AlertDelivery(
                    row.id,
                    row.alert_id,
                    row.kind,
                    row.schedule_name,
                    row.schedule_uid,
                    row.episode_slot,
                    row.slot,
                    row.error,
                    row.failures,
                    row.raised_at,
                    row.attempts + 1,
                    row.task,
                    row.webhook,
                )
            )
    return claimed


def finish_alert(
    engine: Engine,
    clock: DatabaseClock,
    id_: int,
    now: datetime,
    *,
    error: str | None = None,
    retry_in: timedelta | None = None,
) -> None:
    """:meth:`.database.Store.finish_alert`."""
    with engine.begin() as conn:
        now = clock.now(conn, now)
        values: dict[str, Any]
        if error is None:
            values = {"delivered_at": now, "next_attempt_at": None, "last_error": None}
        elif retry_in is not None:
            values = {"next_attempt_at": now + retry_in, "last_error": storable(error, 2000)}
        else:
            values = {
                "gave_up_at": now,
                "next_attempt_at": None,
                "last_error": storable(error, 2000),
            }
        conn.execute(
            sa.update(AL)
            .where(AL.c.id == id_, AL.c.next_attempt_at.is_not(None))
            .values(lease_until=None, **values)
        )


def schedules_in_alert(conn: Connection) -> list[tuple[str, str, datetime]]:
    """``(name, episode kind, episode slot)`` of every schedule in alert, by name."""
    query = (
        sa.select(S.c.name, S.c.alert_kind, S.c.alert_episode)
        .where(S.c.alert_kind.is_not(None))
        .order_by(S.c.name)
    )
    return [(r.name, r.alert_kind, r.alert_episode) for r in conn.execute(query)]


def alerting_schedules(conn: Connection) -> list[Any]:
    """Every column of the schedules in alert, by name (rows whose values cannot be read left
    out, as every read of whole rows does)."""
    query = sa.select(S).where(S.c.alert_kind.is_not(None)).order_by(S.c.name)
    return list(read_rows(conn, query)[0])


def recent_alerts(conn: Connection, limit: int) -> Sequence[Any]:
    """The ``limit`` newest alerts, newest first."""
    query = sa.select(AL).order_by(AL.c.raised_at.desc(), AL.c.id.desc()).limit(limit)
    return conn.execute(query).all()
