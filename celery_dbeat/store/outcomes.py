"""The outcomes of runs counted on their schedules: ``consecutive_failures``, the pause that
``pause_after_failures`` asks for when it reaches that number, and the alerts of
``alert_after_failures`` (``failing`` when the count reaches it, ``recovered`` at the next
success, :mod:`celery_dbeat.core.alerts`), recorded under the same row locks.

:func:`~celery_dbeat.store.runs.record_runs` calls :func:`lock_outcomes` before it writes a
flush of runs and :func:`count_outcomes` after, in the same transaction. The count lives on the
schedule's row, not in the fire history, so the prunes (by age, beyond a ``history_limit``)
cannot undo it: a monthly schedule counts its failures across the 30 days' retention.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..core.alerts import AlertKind, step
from ..core.audit import Action, Actor, Surface
from ..core.definitions import failure_note
from ..core.fires import RunStatus
from ..core.states import PauseSource
from . import audit
from .alerts import RaisedAlert, raise_alert
from .models import F, S
from .reading import chunked
from .schedules import pause_values

__all__ = ["Counted", "FailurePause", "Outcomes", "count_outcomes", "lock_outcomes"]

#: The run statuses that count towards ``pause_after_failures`` (a revoked run is neither).
_OUTCOMES = (RunStatus.SUCCEEDED.value, RunStatus.FAILED.value)
#: What counting a schedule's outcomes reads of its row.
_COUNTED = (
    S.c.id,
    S.c.name,
    S.c.enabled,
    S.c.finished_at,
    S.c.pause_after_failures,
    S.c.consecutive_failures,
    S.c.uid,
    S.c.alert_after_failures,
    S.c.alert_kind,
    S.c.alert_episode,
)


@dataclass(frozen=True)
class FailurePause:
    """A schedule paused by its ``pause_after_failures``, in the transaction that wrote the
    failed run that made the count."""

    schedule: str
    failures: int
    note: str


@dataclass(frozen=True)
class Outcomes:
    """What :func:`lock_outcomes` read under the locks, before the runs are written: each
    finished run's schedule and outcome so far, and each of those schedules' row."""

    schedule_of: dict[str, int]
    before: dict[str, str | None]
    schedules: dict[int, Any]
    #: Each finished run's slot (a run now's: when it was asked for).
    slot_of: dict[str, Any]


@dataclass(frozen=True)
class Counted:
    """What :func:`count_outcomes` did besides counting: the pauses and the alerts."""

    paused: list[FailurePause]
    alerts: list[RaisedAlert]


def lock_outcomes(conn: Connection, runs: Sequence[dict[str, Any]]) -> Outcomes:
    """Lock the schedule rows of the runs that succeeded or failed, in id order (as beats and
    edits lock them), and read what those runs' fires recorded before this write.

    Every writer of outcomes takes these locks first, so the workers that report runs of one
    schedule at once count them one after the other, each reading the count the one before it
    committed; the fires' outcomes are read with a locking read (the newest committed rows, at
    any isolation level), so that a run reported twice (redelivered) is counted once."""
    ids = [r["t_id"] for r in runs if r["t_status"] in _OUTCOMES]
    schedule_of: dict[str, int] = {}
    slot_of: dict[str, Any] = {}
    for chunk in chunked(ids):  # a fire's schedule and slot never change: no lock needed
        fired = sa.select(F.c.task_id, F.c.schedule_id, F.c.slot).where(F.c.task_id.in_(chunk))
        for task_id, schedule_id, slot in conn.execute(fired):
            schedule_of[task_id] = schedule_id
            slot_of[task_id] = slot
    locking = conn.dialect.name != "sqlite"  # SQLite's writer holds the whole database
    schedules: dict[int, Any] = {}
    for chunk in chunked(sorted(set(schedule_of.values()))):
        query = sa.select(*_COUNTED).where(S.c.id.in_(chunk)).order_by(S.c.id)
        for row in conn.execute(query.with_for_update() if locking else query):
            schedules[row.id] = row
    before: dict[str, str | None] = {}
    for chunk in chunked(list(schedule_of)):
        seen = sa.select(F.c.task_id, F.c.run_status).where(F.c.task_id.in_(chunk))
        before.update(conn.execute(seen.with_for_update() if locking else seen).all())
    return Outcomes(schedule_of, before, schedules, slot_of)


def count_outcomes(conn: Connection, outcomes: Outcomes, runs: Sequence[dict[str, Any]]) -> Counted:
    """Apply the outcomes of ``runs`` (just written) to their schedules' ``consecutive_failures``
    in the order they came, and pause each enabled schedule whose count reaches its
    ``pause_after_failures``, with a note naming the error of the run that reached it and an
    entry in the audit trail as the worker that reported it.

    A success resets the count; a failure adds one unless the run had already been recorded
    failed; a retried, revoked or started run changes nothing. Each success and each failure
    counted steps the schedule's alert episode (:func:`~celery_dbeat.core.alerts.step`), and
    each alert it raises is recorded (:func:`.alerts.raise_alert`) as the worker that reported
    the run."""
    counts = {i: row.consecutive_failures for i, row in outcomes.schedules.items()}
    episodes = {i: (row.alert_kind, row.alert_episode) for i, row in outcomes.schedules.items()}
    reached: dict[int, dict[str, Any]] = {}
    alerts: list[RaisedAlert] = []
    for run in runs:
        schedule_id = outcomes.schedule_of.get(run["t_id"])
        if schedule_id not in counts or run["t_status"] not in _OUTCOMES:
            continue
        succeeded = run["t_status"] == RunStatus.SUCCEEDED.value
        if succeeded:
            counts[schedule_id] = 0
        elif outcomes.before.get(run["t_id"]) != RunStatus.FAILED.value:
            counts[schedule_id] += 1
            limit = outcomes.schedules[schedule_id].pause_after_failures
            if limit is not None and counts[schedule_id] >= limit:
                reached.setdefault(schedule_id, run)
        else:
            continue  # a failure reported again
        if succeeded and outcomes.before.get(run["t_id"]) == RunStatus.SUCCEEDED.value:
            continue  # a success reported again does not end a later episode
        raised = _step_alert(conn, outcomes, episodes, schedule_id, run, counts[schedule_id])
        if raised is not None:
            alerts.append(raised)
    for schedule_id, count in counts.items():
        if count != outcomes.schedules[schedule_id].consecutive_failures:
            conn.execute(
                sa.update(S).where(S.c.id == schedule_id).values(consecutive_failures=count)
            )
    paused: list[FailurePause] = []
    for schedule_id, run in sorted(reached.items()):
        row = outcomes.schedules[schedule_id]
        if not row.enabled or row.finished_at is not None:
            continue
        note = failure_note(row.pause_after_failures, run["t_error"])
        # When the run failed, as the worker saw it (as the fire history shows it).
        now = run["t_finished"]
        with audit.watch(conn, row.name, _worker(run), Action.PAUSE, now):
            conn.execute(
                sa.update(S)
                .where(S.c.id == schedule_id, S.c.enabled == sa.true())
                .values(
                    enabled=False,
                    **pause_values(note, PauseSource.FAILURES, now),
                    updated_at=now,
                    version=S.c.version + 1,
                )
            )
        paused.append(FailurePause(row.name, row.pause_after_failures, note))
    return Counted(paused, alerts)


def _worker(run: dict[str, Any]) -> Actor:
    return Actor((run["t_worker"] or "").strip() or "worker", Surface.WORKER.value)


def _step_alert(
    conn: Connection,
    outcomes: Outcomes,
    episodes: dict[int, tuple[str | None, Any]],
    schedule_id: int,
    run: dict[str, Any],
    failures: int,
) -> RaisedAlert | None:
    """Step ``schedule_id``'s alert episode (in ``episodes``, which follows it for the next run
    of the same flush) for ``run``; record the alert it raises."""
    row = outcomes.schedules[schedule_id]
    slot = outcomes.slot_of[run["t_id"]]
    succeeded = run["t_status"] == RunStatus.SUCCEEDED.value
    open_kind, open_slot = episodes[schedule_id]
    after = step(
        succeeded=succeeded,
        failures=failures,
        threshold=row.alert_after_failures,
        open_kind=open_kind,
        open_slot=open_slot,
        slot=slot,
    )
    if after.raised is None:
        return None
    episodes[schedule_id] = (after.open_kind, after.open_slot)
    # A recovery is named by the episode it ends (its slot lost only to a hand edit).
    ended = after.raised is AlertKind.RECOVERED and open_slot is not None
    episode = open_slot if ended else slot
    return raise_alert(
        conn,
        schedule=row,
        open_kind=open_kind,
        open_slot=open_slot,
        kind=after.raised,
        episode=episode,
        slot=slot,
        error=None if succeeded else run["t_error"],
        failures=failures,
        at=run["t_finished"],
        actor=_worker(run),
    )
