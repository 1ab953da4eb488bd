"""Turn the app's ``beat_schedule`` into validated definitions, without changing when they fire.

Accepted as an entry's ``schedule``: ``celery_dbeat.Cron/Every/Once``, ``celery.schedules.crontab``
(evaluated in the app's ``timezone``, as Celery's beat does), ``celery.schedules.solar``,
``celery.schedules.schedule``, a
``timedelta`` or a number of seconds. Anything else is refused with an error naming the entry.

As Celery's beat does, the entries include ``celery.backend_cleanup`` (daily at 04:00) when the
app's results must be deleted by a task (:func:`default_entries`).
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from celery import Celery
from celery.app.backends import by_url
from celery.backends.base import DisabledBackend
from celery.exceptions import ImproperlyConfigured
from celery.schedules import crontab, schedule, solar
from celery.utils.log import get_logger

from .core.definitions import CREATE_ARGUMENTS, Definition
from .core.errors import ConfigurationError, ValidationError
from .core.formats import iso
from .core.specs import SPEC_CLASSES, Cron, Every, Solar, Spec
from .core.validation import check_accepted
from .task_names import check_slot_parameters, registered_tasks, unknown_task_warning

__all__ = [
    "CLEANUP_CRONTAB",
    "CLEANUP_OPTIONS",
    "CLEANUP_TASK",
    "EntryCheck",
    "EntryNames",
    "check_entries",
    "crontab_field_text",
    "default_entries",
    "definitions_from_app",
    "iter_definitions",
    "spec_from_celery",
    "validate_entries",
]

logger = get_logger(__name__)

#: Celery's task that deletes expired results (``app.backend.cleanup()``), and the entry its
#: beat gives it: daily at 04:00, expiring after 12 hours (``install_default_entries``).
CLEANUP_TASK = "celery.backend_cleanup"
CLEANUP_CRONTAB = {
    "minute": "0",
    "hour": "4",
    "day_of_month": "*",
    "month_of_year": "*",
    "day_of_week": "*",
}
CLEANUP_OPTIONS = {"expires": 12 * 3600}

#: Keys an entry may have: Celery's own, plus celery-dbeat's per-schedule settings.
ENTRY_KEYS = frozenset({*CREATE_ARGUMENTS, "relative"})


def _zone_name(zone: Any) -> str:
    """The IANA name of a tzinfo (zoneinfo ``key``, pytz ``zone``); UTC for a zero offset."""
    name = getattr(zone, "key", None) or getattr(zone, "zone", None)
    if name:
        return str(name)
    if zone is not None and zone.utcoffset(None) == timedelta(0):
        return "UTC"
    raise ValueError(f"time zone {zone!r} has no IANA name; use a zoneinfo.ZoneInfo")


def _crontab_zone(value: Any, app: Celery) -> str:
    # A crontab is evaluated in the zone of its nowfun() when it has one (Celery's own rule),
    # else in the app's timezone.
    if value.nowfun is not None:
        return _zone_name(value.nowfun().tzinfo)
    return _zone_name(app.timezone)


def crontab_field_text(value: Any) -> str:
    """A crontab field as given or stored (text, a number, or numbers), without spaces."""
    if isinstance(value, str):
        return value.replace(" ", "")
    if isinstance(value, int):
        return str(value)
    if isinstance(value, Iterable):
        return ",".join(str(v) for v in sorted(value))
    return str(value)


def spec_from_celery(value: Any, app: Celery) -> Spec:
    """The stored spec equivalent of a Celery schedule object (or our own spec)."""
    if isinstance(value, SPEC_CLASSES):
        return value
    source: Any = value  # Celery's schedule classes are not fully typed
    if isinstance(value, crontab):
        expr = " ".join(
            crontab_field_text(part)
            for part in (
                source._orig_minute,
                source._orig_hour,
                source._orig_day_of_month,
                source._orig_month_of_year,
                source._orig_day_of_week,
            )
        )
        # Celery's crontab needs both day fields to match, unlike cron(8)'s either-or.
        return Cron(expr, timezone=_crontab_zone(source, app), days="all")
    if isinstance(value, solar):
        return Solar(source.event, source.lat, source.lon)
    if isinstance(value, schedule):
        return Every(source.run_every.total_seconds())
    if isinstance(value, timedelta):
        return Every(value.total_seconds())
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return Every(float(value))
    raise ValueError(
        f"unsupported schedule type {type(value).__qualname__}; use crontab, solar, schedule, "
        "a timedelta, seconds, or celery_dbeat.Cron/Rrule/Every/Once/Solar"
    )


def _definition(name: str, entry: Mapping[str, Any], app: Celery) -> Definition:
    unknown = sorted(set(entry) - ENTRY_KEYS)
    if unknown:
        raise ValueError(f"unknown key {unknown[0]!r}")
    if "task" not in entry or "schedule" not in entry:
        raise ValueError("needs 'task' and 'schedule'")
    fields = {key: value for key, value in entry.items() if key != "relative"}
    fields["schedule"] = spec_from_celery(entry["schedule"], app)
    fields["args"] = entry.get("args") or ()
    definition = Definition.create(name=name, **fields)
    # The app is known here: its workers' accept_content decides, as in Schedules.from_app.
    check_accepted(definition.options, app.conf.accept_content)
    check_slot_parameters(app, definition)
    return definition


def default_entries(app: Celery) -> dict[str, dict[str, Any]]:
    """The entries Celery's beat adds to ``beat_schedule`` by itself
    (``Scheduler.install_default_entries``): ``celery.backend_cleanup`` daily at 04:00 in the
    app's zone, when ``result_expires`` is set and the result backend does not expire results
    itself (a database, MongoDB, the file system), unless the app has an entry of that name.
    Unlike Celery's beat, not without a result backend: there is nothing to clean.

    Decided on the backend's class: beat itself never connects to the result backend."""
    if CLEANUP_TASK in (app.conf.beat_schedule or {}) or not app.conf.result_expires:
        return {}
    try:
        found: Any = by_url(app.conf.result_backend, app.loader)  # (class, url), typed otherwise
        backend = found[0]
    except (ImportError, ImproperlyConfigured) as exc:
        logger.warning(
            "dbeat: %s not scheduled: the result backend cannot be loaded: %s", CLEANUP_TASK, exc
        )
        return {}
    if backend.supports_autoexpire or issubclass(backend, DisabledBackend):
        return {}
    return {
        CLEANUP_TASK: {
            "task": CLEANUP_TASK,
            "schedule": crontab(**CLEANUP_CRONTAB),
            "options": dict(CLEANUP_OPTIONS),
        }
    }


def _entries(app: Celery) -> Iterator[tuple[str, Any]]:
    """The app's entries, then Celery's :func:`default_entries` (none of the app's names), by
    name; read from the app's own dict, not copied."""
    yield from (app.conf.beat_schedule or {}).items()
    yield from default_entries(app).items()


def _entry_definition(name: str, entry: Any, app: Celery) -> Definition:
    try:
        if not isinstance(entry, Mapping):
            raise ValueError("must be a dict with 'task' and 'schedule'")
        return _definition(name, entry, app)
    except (ValueError, ValidationError) as exc:
        raise ConfigurationError(f"beat_schedule[{name!r}]", entry, str(exc)) from None


def iter_definitions(app: Celery) -> Iterator[Definition]:
    """Every ``beat_schedule`` entry as a definition, with Celery's :func:`default_entries`,
    made one at a time as they are taken (a beat's sync holds a chunk of them, never all).
    Raises on the first bad entry, naming it."""
    for name, entry in _entries(app):
        yield _entry_definition(name, entry, app)


def definitions_from_app(app: Celery) -> list[Definition]:
    """:func:`iter_definitions` as a list."""
    return list(iter_definitions(app))


def validate_entries(app: Celery) -> list[Definition]:
    """Check every entry as :func:`iter_definitions` makes it, raising on the first bad one,
    naming it, without keeping them: returns the first definition of each task (what the
    unknown-task warning needs), so its size is the number of tasks, not of entries."""
    by_task: dict[str, Definition] = {}
    for definition in iter_definitions(app):
        by_task.setdefault(definition.task, definition)
    return list(by_task.values())


class EntryNames(Container[str]):
    """Whether a name is one of the app's entries (or :func:`default_entries`): looked up in the
    app's own ``beat_schedule``, so that a beat's sync needs no set of every name."""

    def __init__(self, app: Celery) -> None:
        self._configured = app.conf.beat_schedule or {}
        self._defaults = default_entries(app)

    def __contains__(self, name: object) -> bool:
        return name in self._configured or name in self._defaults


@dataclass(frozen=True)
class EntryCheck:
    """One ``beat_schedule`` entry as :func:`check_entries` finds it: its task, what is wrong
    with it (nothing: a beat would sync and fire it), and its next slots."""

    name: str
    task: str | None
    problems: tuple[str, ...]
    next_slots: tuple[datetime, ...]


def check_entries(app: Celery, now: datetime, count: int = 3) -> list[EntryCheck]:
    """Every entry of the app's ``beat_schedule`` (Celery's :func:`default_entries` included)
    checked as a beat starting at ``now`` would take it, with no database, broker or Redis:
    it parses and validates (its options too, its ``serializer`` among the workers'
    ``accept_content``), the app registers its task (its task modules imported as a worker
    does), and its spec yields a slot after ``now`` (the next ``count`` are listed). ``dbeat
    check --offline`` and :func:`celery_dbeat.testing.assert_beat_schedule_ready` say it."""
    registered = registered_tasks(app)
    checks = []
    for name, entry in _entries(app):
        task = entry.get("task") if isinstance(entry, Mapping) else None
        try:
            definition = _entry_definition(name, entry, app)
        except ConfigurationError as exc:
            checks.append(EntryCheck(name, task, (str(exc),), ()))
            continue
        problems = []
        if registered is None:
            problems.append(
                "the tasks the app registers cannot be known (a task module fails to import, "
                "or the app is not finalized): see the log"
            )
        elif definition.task not in registered:
            problems.append(unknown_task_warning([definition.task], app.main, registered))
        slots = tuple(definition.timing(definition.start_at or now).preview(now, count))
        if not slots:
            problems.append(f"no slot after {iso(now)}: a beat would never fire it")
        checks.append(EntryCheck(name, definition.task, tuple(problems), slots))
    return checks
