"""Pure: which schedules are unhealthy, from what their newest fires say.

A schedule is judged on its newest :data:`~celery_dbeat.store.health.HEALTH_WINDOW` (20) fires,
manual ones included; :func:`celery_dbeat.store.health.unhealthy_candidates` reads them.

* ``failed`` / ``revoked``: the newest of those fires that ended (its run finished, or
  publishing it failed for good) is a run that failed or was revoked. ``not published``: it is
  a fire the broker never took (fire status ``failed``). Any state: a paused or finished
  schedule is listed until its failed fire leaves the history (or a later run ends well).
* ``overdue``: an enabled schedule with a next run, whose runs are tracked (one of those fires
  has a report from the worker hook, and the hook has reported a finished run of some
  schedule: without the hook nothing is ever overdue), where no run succeeded within two
  periods: the newest success among those fires finished before ``now - 2 * period``, or there
  is none and the oldest fire with a report is older than that, where ``period = next_run_at -
  last_slot``. A schedule listed as failed is not listed again as overdue; one that beats are
  behind on is in the backlog (``Schedules.due``), not here.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

__all__ = ["UNHEALTHY_REASONS", "HealthCandidate", "ScheduleHealth", "judge"]

#: Why a schedule is listed.
UNHEALTHY_REASONS = ("failed", "revoked", "not published", "overdue")


@dataclass(frozen=True)
class ScheduleHealth:
    """An unhealthy schedule, and why."""

    name: str
    task: str
    #: ``active``, ``paused``, ``finished`` or ``error``, as ``ScheduleInfo.state``.
    state: str
    #: One of :data:`UNHEALTHY_REASONS`.
    reason: str
    #: The slot of the last fire that ended (the failed one), if any.
    last_slot: datetime | None
    #: When that fire's run ended (``None`` for a fire never published).
    last_finished_at: datetime | None
    #: The failed run's error, or why publishing failed; ``None`` when overdue.
    error: str | None
    task_id: str | None
    #: When the newest successful run (among the newest fires) finished.
    last_success_at: datetime | None
    #: ``next_run_at - last_slot``: the schedule's current period.
    period: timedelta | None


@dataclass(frozen=True)
class HealthCandidate:
    """A schedule :func:`unhealthy_candidates` found, with what its newest fires say."""

    name: str
    task: str
    enabled: bool
    finished_at: datetime | None
    last_error: str | None
    next_run_at: datetime | None
    last_slot: datetime | None
    #: ``not published``, ``failed`` or ``revoked`` when the last ended fire says so, else None.
    failure: str | None
    #: When the newest successful run in the window finished.
    success_at: datetime | None
    #: Without a success: the oldest slot in the window with a run report.
    tracked_since: datetime | None
    #: The last ended fire (its run finished, or it was never published), if any.
    last_fire_slot: datetime | None = None
    last_finished_at: datetime | None = None
    last_fire_error: str | None = None
    last_task_id: str | None = None


def _state(candidate: HealthCandidate) -> str:
    if candidate.finished_at is not None:
        return "finished"
    if candidate.last_error is not None:
        return "error"
    return "active" if candidate.enabled else "paused"


def judge(candidates: Iterable[HealthCandidate], now: datetime) -> list[ScheduleHealth]:
    """The unhealthy ones among ``candidates`` at ``now``, in their order, with the reason."""
    found = []
    for c in candidates:
        period = None
        if c.next_run_at is not None and c.last_slot is not None:
            period = c.next_run_at - c.last_slot
        if c.failure is not None:
            reason = c.failure
        else:
            since = c.success_at or c.tracked_since
            if period is None or since is None or now - since <= 2 * period:
                continue
            reason = "overdue"
        found.append(
            ScheduleHealth(
                name=c.name,
                task=c.task,
                state=_state(c),
                reason=reason,
                last_slot=c.last_fire_slot,
                last_finished_at=c.last_finished_at,
                error=None if reason == "overdue" else c.last_fire_error,
                task_id=c.last_task_id,
                last_success_at=c.success_at,
                period=period,
            )
        )
    return found
