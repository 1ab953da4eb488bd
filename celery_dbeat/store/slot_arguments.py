"""The previous slot of the fires leased to be published whose schedule asks for it
(``previous_slot_kwarg``; :mod:`celery_dbeat.core.slot_arguments` says what it is).

Found when a fire is leased to be published, from the schedule as it is then, not stored with
the fire: a fire's slots are recorded in bulk (a catch-up or a backfill is a queued run of up to
500 slots in one row, a backfill's slots need not follow each other), so storing each one's
previous slot would cost a list per row and a column every other schedule pays for, while
finding it costs a few steps of the spec for only the schedules that ask. The price: an edit of
the spec or the calendar between a fire's recording and its publishing (a few seconds, or a
backlog's wait) is what its previous slot follows. A fire whose previous slot cannot be found
(its schedule's spec or calendar went bad since it was recorded) is not sent with a wrong one:
it is recorded failed with the reason, as a fire that cannot be published is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

import sqlalchemy as sa
from celery.utils.log import get_logger
from sqlalchemy.engine import Connection

from ..core.calendars import Calendar
from ..core.errors import ValidationError
from ..core.fires import PublishRequest, ScheduleRow
from ..core.planning import timing_of
from ..core.slot_arguments import previous_slot
from ..core.timing import Timing
from .calendars import CalendarCache
from .isolation import set_fire_aside
from .models import F, S
from .reading import PLAN_COLUMNS, chunked

__all__ = ["with_previous_slots"]

logger = get_logger(__name__)


def with_previous_slots(
    conn: Connection,
    requests: Sequence[PublishRequest],
    rows: Mapping[int, ScheduleRow] | None = None,
) -> list[PublishRequest]:
    """``requests`` (fires leased on ``conn``, in its transaction), each whose schedule asks for
    its previous slot with it; the schedules not in ``rows`` (by id) are read. Costs nothing when
    none asks. A fire whose previous slot cannot be found is set aside and left out."""
    asking = {r.schedule_id for r in requests if r.previous_slot_kwarg is not None}
    if not asking:
        return list(requests)
    known = {i: row for i, row in (rows or {}).items() if i in asking}
    for chunk in chunked(sorted(asking - set(known))):
        for read in conn.execute(sa.select(*PLAN_COLUMNS).where(S.c.id.in_(chunk))):
            known[read.id] = ScheduleRow.from_row(read)
    calendars = CalendarCache().read(conn, [row.calendar for row in known.values()])
    finders: dict[int, tuple[Timing, Calendar | None] | str] = {}
    for i, row in known.items():
        calendar = None if row.calendar is None else calendars.get(row.calendar)
        if isinstance(calendar, str) or (row.calendar is not None and calendar is None):
            finders[i] = calendar or f"calendar {row.calendar!r} does not exist"
            continue
        try:
            finders[i] = (timing_of(row), calendar)
        except ValidationError as exc:
            finders[i] = str(exc)
    found = []
    for request in requests:
        if request.previous_slot_kwarg is None:
            found.append(request)
            continue
        finder = finders.get(request.schedule_id, "its schedule is gone")
        if isinstance(finder, str):
            _set_aside(conn, request, finder)
            continue
        timing, calendar = finder
        before = previous_slot(timing, request.slot, calendar, manual=request.manual)
        found.append(replace(request, previous_slot=before))
    return found


def _set_aside(conn: Connection, request: PublishRequest, why: str) -> None:
    error = f"not sent: its previous slot (previous_slot_kwarg) cannot be found: {why}"
    logger.error(
        "dbeat: fire of %s slot=%s task_id=%s set aside: %s",
        request.schedule_name,
        request.slot.isoformat(),
        request.task_id,
        error,
    )
    fire_id = conn.execute(sa.select(F.c.id).where(F.c.task_id == request.task_id)).scalar()
    if fire_id is not None:
        set_fire_aside(conn, fire_id, error)
