"""Alerts: when a schedule's runs go wrong, and when they come right again.

Pure: no SQL, no Celery, no HTTP. A schedule is *in alert* from the start of an episode to the
next success of one of its runs. An episode starts when

- ``alert_after_failures`` runs failed in a row (kind ``failing``, named by the slot of the run
  that made the count), or
- a slot's run has not succeeded ``alert_deadline`` after the slot (kind ``missed``, named by
  that slot): the workers are down, the queue is stuck, or the run failed or still goes;

and ends with the schedule's next successful run (kind ``recovered``, named by the slot of the
episode it ends). One episode at a time: while a schedule is in alert, nothing else opens one.
Each alert is recorded once (the store's unique key ``(schedule, kind, episode slot)``) and
delivered at least once, always under the same id (:func:`alert_id`), so a receiver drops a
repeat as a worker does a fire's task id.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

__all__ = [
    "ALERT_ID_NAMESPACE",
    "AlertKind",
    "Step",
    "alert_id",
    "alert_payload",
    "missed_slot",
    "retry_delay",
    "step",
]

ALERT_ID_NAMESPACE = uuid.UUID("0b6f9d3e-2a41-4c7e-8f0d-5e9a1c7b3d24")


class AlertKind(str, enum.Enum):
    """What an alert says."""

    FAILING = "failing"  #: ``alert_after_failures`` runs failed in a row
    MISSED = "missed"  #: a slot's run had not succeeded by its ``alert_deadline``
    RECOVERED = "recovered"  #: a run succeeded: the episode is over


def alert_id(uid: str, kind: AlertKind | str, episode: datetime) -> str:
    """The alert's id: the same (schedule, kind, episode) gives the same id on every beat and
    at every delivery: ``uuid5(ALERT_ID_NAMESPACE, f"{uid}\\0{kind}\\0{episode in UTC}")``."""
    instant = episode.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    value = kind.value if isinstance(kind, AlertKind) else kind
    return str(uuid.uuid5(ALERT_ID_NAMESPACE, f"{uid}\x00{value}\x00{instant}"))


@dataclass(frozen=True)
class Step:
    """What one finished run does to its schedule's alert state: the alert it raises (if any),
    and the episode open after it (its kind and slot, ``None``: not in alert)."""

    raised: AlertKind | None
    open_kind: str | None
    open_slot: datetime | None


def step(
    *,
    succeeded: bool,
    failures: int,
    threshold: int | None,
    open_kind: str | None,
    open_slot: datetime | None,
    slot: datetime,
) -> Step:
    """The alert state after a run of ``slot`` finished (``failures``: the schedule's count of
    failed runs in a row, this one included), with ``threshold`` its ``alert_after_failures``.

    A success ends an open episode (``recovered``); a failure that makes the count reach the
    threshold opens a ``failing`` one, unless one is open already."""
    if succeeded:
        if open_kind is None:
            return Step(None, None, None)
        return Step(AlertKind.RECOVERED, None, None)
    if open_kind is None and threshold is not None and failures >= threshold:
        return Step(AlertKind.FAILING, AlertKind.FAILING.value, slot)
    return Step(None, open_kind, open_slot)


def missed_slot(oldest: datetime | None, deadline: float, now: datetime) -> datetime | None:
    """The slot that opens a ``missed`` episode at ``now``: ``oldest`` (the schedule's oldest
    slot since its newest success whose run has not succeeded) once ``deadline`` seconds past
    it; else ``None``."""
    if oldest is None or oldest + timedelta(seconds=deadline) > now:
        return None
    return oldest


#: The first retry of a delivery that failed waits this long; each next one twice as long, up to
#: :data:`MAX_RETRY_DELAY`.
FIRST_RETRY_DELAY = timedelta(seconds=10)
MAX_RETRY_DELAY = timedelta(minutes=10)


def retry_delay(attempts: int) -> timedelta:
    """How long after its ``attempts``-th failed delivery an alert is tried again."""
    delay: timedelta = FIRST_RETRY_DELAY * 2 ** min(max(0, attempts - 1), 16)
    return min(delay, MAX_RETRY_DELAY)


def _instant(value: datetime | None) -> str | None:
    if value is None:
        return None
    return value.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


def alert_payload(alert: Mapping[str, Any]) -> dict[str, Any]:
    """What an alert delivers (the task's keyword arguments; the webhook's JSON body): its id,
    kind, schedule (name and uid), the episode's slot, the slot of the run that raised it, the
    error, the count of failed runs, and when it was raised."""
    return {
        "alert_id": alert["alert_id"],
        "kind": alert["kind"],
        "schedule": alert["schedule"],
        "schedule_uid": alert["schedule_uid"],
        "episode": _instant(alert["episode_slot"]),
        "slot": _instant(alert["slot"]),
        "error": alert["error"],
        "failures": alert["failures"],
        "raised_at": _instant(alert["raised_at"]),
    }
