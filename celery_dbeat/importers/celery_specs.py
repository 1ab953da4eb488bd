"""Celery's schedule semantics, as both sources store Celery schedules: crontab fields matched the
way ``celery.schedules.crontab`` matches them, relative intervals, and Celery's own cleanup entry.

A crontab is turned into a :class:`~celery_dbeat.core.specs.Cron` field by field: the field's text
is kept when celery-dbeat's parser reads it as the same set of values Celery does (so ``*/15``
stays ``*/15`` and keeps its wildcard DST rules, as ``beat_schedule`` sync stores it), and is
otherwise written as the values Celery matches (``fri-sun``, which Celery wraps around the week,
becomes ``0,5-6``). A crontab Celery itself refuses (``day_of_week='7'``: Celery's days run 0-6)
never fires in the source; it is refused, not guessed at.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from celery.schedules import crontab
from croniter import croniter

from ..beat_schedule import CLEANUP_CRONTAB, CLEANUP_OPTIONS, CLEANUP_TASK, crontab_field_text
from ..core.errors import ValidationError
from ..core.specs import Cron
from ..core.timing import CronSpec

__all__ = [
    "CLEANUP_TASK",
    "CRONTAB_FIELDS",
    "crontab_spec",
    "crontab_text",
    "is_celery_cleanup",
    "relative_next",
    "relative_problem",
]

#: Celery's crontab fields in cron order, with the values each may hold.
CRONTAB_FIELDS = (
    ("minute", 0, 59),
    ("hour", 0, 23),
    ("day_of_month", 1, 31),
    ("month_of_year", 1, 12),
    ("day_of_week", 0, 6),
)


def crontab_text(fields: Mapping[str, Any]) -> str:
    """``minute hour day_of_month month_of_year day_of_week`` as the source stores them."""
    return " ".join(crontab_field_text(fields.get(name, "*")) for name, _, _ in CRONTAB_FIELDS)


def _compact(values: set[int], low: int, high: int) -> str:
    """``{0, 5, 6}`` -> ``0,5-6``; every value of the field -> ``*``."""
    if values == set(range(low, high + 1)):
        return "*"
    if not values:
        return "-"  # matches nothing: refused by the parser, naming the field
    parts: list[str] = []
    ordered = sorted(values)
    start = previous = ordered[0]
    for value in [*ordered[1:], None]:
        if value is not None and value == previous + 1:
            previous = value
            continue
        parts.append(str(start) if start == previous else f"{start}-{previous}")
        if value is not None:
            start = previous = value
    return ",".join(parts)


def _dbeat_values(index: int, text: str, low: int, high: int) -> set[int] | None:
    """The values celery-dbeat's parser reads ``text`` as, for field ``index``; ``None`` if it
    refuses the text or reads something that is not a plain set of values (``L``, ``W``)."""
    probe = ["*"] * 5
    probe[index] = text
    try:
        spec = CronSpec.parse(" ".join(probe), "UTC", days="all")
        expanded = croniter(" ".join(spec.fields)).expanded[index]
    except (ValidationError, ValueError, KeyError):
        return None
    if expanded == ["*"]:
        return set(range(low, high + 1))
    values: set[int] = set()
    for value in expanded:
        if not isinstance(value, int):
            return None
        values.add(0 if index == 4 and value == 7 else value)  # cron's Sunday is 0 or 7
    return values


def crontab_spec(fields: Mapping[str, Any], zone: str) -> Cron:
    """The :class:`Cron` matching what ``crontab(**fields)`` matches, evaluated in ``zone``.

    Raises :class:`ValidationError` (field ``crontab``) when Celery refuses the fields.
    """
    arguments = {name: fields.get(name, "*") for name, _, _ in CRONTAB_FIELDS}
    try:
        parsed: Any = crontab(**arguments)
    except (ValueError, TypeError) as exc:
        raise ValidationError(
            "crontab",
            crontab_text(arguments),
            f"Celery's crontab refuses it ({exc}), so the source never fires it (Celery's days of "
            "the week run 0-6, Sunday is 0); correct it in the source and import again",
        ) from None
    texts = []
    for index, (name, low, high) in enumerate(CRONTAB_FIELDS):
        matched = {int(v) for v in getattr(parsed, name)}
        text = crontab_field_text(arguments[name])
        if _dbeat_values(index, text, low, high) != matched:
            text = _compact(matched, low, high)
        texts.append(text)
    # Celery's crontab needs both day fields to match, unlike cron(8)'s either-or.
    return Cron(" ".join(texts), timezone=zone, days="all")


#: What Celery rounds a relative interval's runs down to, by the interval's size.
_ROUNDED_TO = ((86_400, "day"), (3_600, "hour"), (60, "minute"), (1, "second"))


def relative_next(last_run_at: datetime, every: timedelta) -> datetime:
    """When a ``schedule(every, relative=True)`` last run at ``last_run_at`` is due: Celery rounds
    ``last_run_at + every`` down to the day, hour or minute (by the size of ``every``), then to
    the second."""
    end = last_run_at + every
    seconds = every.total_seconds()
    if seconds >= 86_400:
        end = end.replace(hour=0, minute=0, second=0)
    elif seconds >= 3_600:
        end = end.replace(minute=0, second=0)
    elif seconds >= 60:
        end = end.replace(second=0)
    return end.replace(microsecond=0)


def relative_problem(every: timedelta, zone: Any) -> str | None:
    """Why a relative interval cannot be an interval of elapsed time, or ``None`` if it can: its
    rounding keeps it on a fixed grid only when ``every`` is a whole number of the unit it is
    rounded to (and, for days, local midnights are a fixed distance apart)."""
    seconds = every.total_seconds()
    unit, word = next((size, word) for size, word in _ROUNDED_TO if seconds >= size or size == 1)
    if seconds % unit:
        return (
            f"relative=True rounds each run down to the {word}, so every={seconds:g}s drifts "
            "off any fixed grid; celery-dbeat intervals are elapsed time: use a Cron, or "
            "relative=False"
        )
    if unit == 86_400 and zone is not None:
        offsets = {datetime(2021, month, 1, tzinfo=zone).utcoffset() for month in (1, 7)}
        if len(offsets) > 1:
            return (
                f"relative=True rounds each run down to midnight in {zone}, which moves with "
                "daylight saving time; celery-dbeat intervals are elapsed time: use a Cron"
            )
    return None


def is_celery_cleanup(
    name: str,
    task: Any,
    crontab_fields: Mapping[str, Any] | None,
    args: Any,
    kwargs: Any,
    options: Mapping[str, Any],
) -> bool:
    """Whether an entry is the ``celery.backend_cleanup`` a beat adds by itself: that name and
    task, daily at 04:00, no arguments, and only the 12-hour ``expires`` Celery gives it. An
    entry of that name changed in any way is the user's, and imported."""
    if name != CLEANUP_TASK or task != CLEANUP_TASK or crontab_fields is None:
        return False
    fields = {key: crontab_field_text(crontab_fields.get(key, "*")) for key in CLEANUP_CRONTAB}
    return (
        fields == CLEANUP_CRONTAB and not args and not kwargs and dict(options) == CLEANUP_OPTIONS
    )
