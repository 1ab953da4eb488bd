"""RedBeat's entries, read from its Redis keys (RedBeat itself need not be installed).

Where RedBeat keeps them (2.x), under ``redbeat_key_prefix`` (default ``redbeat:``):

* ``<prefix><name>``: a hash with ``definition`` (name, task, args, kwargs, options, schedule,
  enabled) and ``meta`` (last_run_at, total_run_count), JSON written by ``RedBeatJSONEncoder``;
* ``<prefix>:schedule``: a sorted set of entry keys by due time; RedBeat fires only what it lists,
  so that is what is read;
* ``<prefix>:statics``: the names RedBeat copied from ``beat_schedule`` (skipped: celery-dbeat's
  beat syncs ``beat_schedule`` itself);
* ``<prefix>:lock``: held while a RedBeat beat runs.

What maps to what: interval -> ``Every`` (``relative=True`` only where Celery's rounding keeps a
fixed grid), crontab -> ``Cron`` in the app's ``timezone`` (RedBeat stores no zone: Celery
evaluates its crontabs there), rrule -> ``Every`` or ``Rrule`` (:mod:`.redbeat_rrules`). RedBeat
cannot store a solar schedule (its encoder has none).

RedBeat's next fire: never run (no ``last_run_at``), at once; else the schedule's first event
after ``last_run_at``. An interval's ``start_at`` is that next fire less one period.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, timezone
from typing import Any
from zoneinfo import ZoneInfo

from celery.schedules import crontab

from ..beat_schedule import spec_from_celery
from ..core.definitions import Definition
from ..core.errors import ConfigurationError, ValidationError
from ..core.specs import Cron, Every
from ..core.timing import build_timing
from ..core.urls import mask_url
from .base import Imported, SourceRead, SourceUnavailable, build
from .celery_specs import (
    crontab_spec,
    crontab_text,
    is_celery_cleanup,
    relative_next,
    relative_problem,
)
from .redbeat_rrules import rrule_fields, rrule_text

__all__ = ["RedBeatSettings", "app_zone", "read_redbeat"]

UTC = timezone.utc
#: Options RedBeat reads itself and never hands to the Redis client.
INTERNAL_OPTIONS = frozenset(
    {"retry_period", "cluster", "sentinels", "service_name", "sentinel_kwargs", "startup_nodes"}
)
_CHUNK = 500
#: Before every DTSTART a rule may have (core.timing.EARLIEST_YEAR).
_BEFORE_ANY_DTSTART = datetime(1900, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class RedBeatSettings:
    """Where RedBeat keeps its entries, by RedBeat's rules for the app's configuration."""

    url: str
    prefix: str
    lock_key: str | None
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def schedule_key(self) -> str:
        return self.prefix + ":schedule"

    @property
    def statics_key(self) -> str:
        return self.prefix + ":statics"

    @classmethod
    def from_app(
        cls, app: Any, *, url: str | None = None, prefix: str | None = None
    ) -> RedBeatSettings:
        """``redbeat_redis_url``, else ``broker_url``; ``redbeat_key_prefix``, else
        ``redbeat:``; ``redbeat_redis_options`` (only when set, as RedBeat does) with
        ``redbeat_redis_use_ssl``. ``url`` and ``prefix`` override them."""
        conf = app.conf
        source = "--source-url" if url else "redbeat_redis_url"
        url = url or conf.get("redbeat_redis_url")
        if not url:
            source, url = "broker_url", conf.get("broker_url")
        if not isinstance(url, str) or not url:
            raise SourceUnavailable(
                "no Redis URL for RedBeat: set redbeat_redis_url (or broker_url), or give "
                "--source-url"
            )
        if prefix is None:
            prefix = conf.get("redbeat_key_prefix", "redbeat:")
        lock_key = conf.get("redbeat_lock_key", prefix + ":lock")
        if lock_key and not lock_key.startswith(prefix):
            lock_key = prefix + lock_key
        options = {}
        if "redbeat_redis_options" in conf:
            given = conf["redbeat_redis_options"] or {}
            if given.get("cluster") or given.get("sentinels"):
                raise SourceUnavailable(
                    "RedBeat's cluster and sentinel options are not read here: give --source-url "
                    "(redis://master:6379/0, or celery-dbeat's sentinel:// or redis+cluster:// URL)"
                )
            options = {k: v for k, v in given.items() if k not in INTERNAL_OPTIONS}
        if url.startswith(("redis-sentinel", "redis-cluster")):
            raise SourceUnavailable(
                f"{mask_url(url)}: RedBeat's own Sentinel and Cluster URLs are not read here: give "
                "--source-url (redis://master:6379/0, or celery-dbeat's sentinel:// or "
                "redis+cluster:// URL)"
            )
        _check_url(url, source)
        use_ssl = conf.get("redbeat_redis_use_ssl") or conf.get("broker_use_ssl")
        if url.startswith("rediss") and isinstance(use_ssl, Mapping):
            options = {**use_ssl, **options}
        return cls(str(url), str(prefix), lock_key or None, options)


def _check_url(url: str, source: str) -> None:
    """Refuse a URL RedBeat cannot have used, naming where it came from (``--source-url``,
    ``redbeat_redis_url`` or ``broker_url``), never celery-dbeat's own ``dbeat_redis_url``."""
    from ..redis_client import check_url

    if not url.lower().startswith(("redis", "unix://", "sentinel://")):
        raise SourceUnavailable(
            f"{source}={mask_url(url)!r}: not a Redis URL, so RedBeat's entries are not there; "
            "give --source-url with the Redis RedBeat used (redis://HOST:6379/DB)"
        )
    try:
        check_url(url, setting=source)
    except ConfigurationError as exc:
        raise SourceUnavailable(str(exc)) from None


def app_zone(app: Any) -> str:
    """The zone Celery evaluates a crontab without ``nowfun`` in (the app's ``timezone``), named
    as ``beat_schedule`` sync names it."""
    spec = spec_from_celery(crontab(), app)
    assert isinstance(spec, Cron)
    return spec.timezone


# RedBeat's JSON ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Interval:
    every: float
    relative: bool


@dataclass(frozen=True)
class _Crontab:
    fields: dict[str, Any]


@dataclass(frozen=True)
class _RRule:
    fields: dict[str, Any]


def _instant(stamp: Any, minutes: Any) -> datetime:
    zone = timezone(timedelta(minutes=minutes)) if minutes else UTC
    return datetime.fromtimestamp(stamp, tz=zone)


def _object(d: dict[str, Any]) -> Any:
    """``RedBeatJSONDecoder.dict_to_object``, into this module's plain records."""
    if "__type__" not in d:
        return d
    kind, body = d["__type__"], {k: v for k, v in d.items() if k != "__type__"}
    if kind == "datetime":
        zone = body.pop("timezone", "UTC")
        tz = (
            timezone(timedelta(minutes=zone / 60))
            if isinstance(zone, (int, float))
            else ZoneInfo(zone)
        )
        return datetime(tzinfo=tz, **body)
    if kind == "interval":
        return _Interval(float(body["every"]), bool(body.get("relative")))
    if kind == "crontab":
        return _Crontab(body)
    if kind == "weekday":
        return f"weekday({body.get('wkday')})"
    if kind == "rrule":
        for key in ("dtstart", "until"):
            minutes = body.pop(f"{key}_tz", 0)
            if body.get(key) is not None:
                body[key] = _instant(body[key], minutes)
        return _RRule(body)
    return d


def _decode(text: str) -> Any:
    try:
        return json.loads(text, object_hook=_object)
    except (ValueError, KeyError, TypeError, OverflowError, RecursionError) as exc:
        # ZoneInfoNotFoundError is a KeyError; a bad datetime field a TypeError or ValueError.
        raise ValueError(f"not RedBeat's JSON ({type(exc).__name__}: {exc})") from None


def _text(value: Any) -> str | None:
    return value.decode() if isinstance(value, bytes) else value


# Reading ---------------------------------------------------------------------------------


def read_redbeat(client: Any, settings: RedBeatSettings, *, zone: str, now: datetime) -> SourceRead:
    """Every entry listed in RedBeat's schedule set. ``zone``: the app's (:func:`app_zone`).
    ``now`` only decides which fires RedBeat owes; the definitions do not depend on it."""
    keys = [str(_text(k)) for k in client.zrange(settings.schedule_key, 0, -1)]
    statics = {str(_text(n)) for n in client.smembers(settings.statics_key)}
    values: list[Any] = []
    for start in range(0, len(keys), _CHUNK):
        with client.pipeline(transaction=False) as pipe:
            for key in keys[start : start + _CHUNK]:
                pipe.hget(key, "definition")
                pipe.hget(key, "meta")
            values.extend(pipe.execute())
    entries = []
    for i, key in enumerate(keys):
        fallback = key[len(settings.prefix) :] if key.startswith(settings.prefix) else key
        texts = _text(values[2 * i]), _text(values[2 * i + 1])
        try:
            entries.append(_entry(key, fallback, *texts, settings, statics, zone, now))
        except (ArithmeticError, ValueError) as exc:  # instants beyond the calendar, NaN periods
            entries.append(Imported.refuse(fallback, f"{key}: cannot be read ({exc})"))
    warnings = []
    if not keys:
        warnings.append(
            f"nothing is listed in {settings.schedule_key}: is the key prefix "
            f"{settings.prefix!r} RedBeat's (redbeat_key_prefix, --key-prefix)?"
        )
    if settings.lock_key and client.exists(settings.lock_key):
        warnings.append(
            f"RedBeat's lock {settings.lock_key} is held: a RedBeat beat is running; stop it "
            "before importing for real, or the fires it sends until then are sent again by "
            "celery-dbeat (docs/tutorial/migrating.md)"
        )
    where = f"RedBeat at {mask_url(settings.url)} ({settings.prefix}*)"
    return SourceRead(where, sorted(entries, key=lambda e: e.name), warnings)


def _entry(
    key: str,
    fallback: str,
    definition_text: str | None,
    meta_text: str | None,
    settings: RedBeatSettings,
    statics: set[str],
    zone: str,
    now: datetime,
) -> Imported:
    if not definition_text:
        return Imported.skip(
            fallback,
            f"{key} is listed in {settings.schedule_key} without a definition (RedBeat "
            "drops such keys)",
        )
    try:
        definition = _decode(definition_text)
        meta = _decode(meta_text) if meta_text else {}
    except ValueError as exc:
        return Imported.refuse(fallback, f"{key}: {exc}")
    if not isinstance(definition, dict) or not isinstance(meta, dict):
        return Imported.refuse(fallback, f"{key}: its definition or meta is not a JSON object")
    name = str(definition["name"]) if definition.get("name") is not None else fallback
    if name in statics:
        return Imported.skip(
            name,
            f"RedBeat copied it from beat_schedule ({settings.statics_key}); celery-dbeat's beat "
            "syncs beat_schedule itself at start-up",
        )
    task, schedule = definition.get("task"), definition.get("schedule")
    args, kwargs = definition.get("args") or [], definition.get("kwargs") or {}
    options, enabled = definition.get("options") or {}, definition.get("enabled", True)
    last = meta.get("last_run_at")
    if last is not None and not isinstance(last, datetime):
        return Imported.refuse(name, f"meta last_run_at={last!r} is not a datetime")
    fields: dict[str, Any] = {}
    if isinstance(schedule, _Interval):
        every = timedelta(seconds=schedule.every)
        what = f"interval every {schedule.every:g}s" + (", relative" if schedule.relative else "")
        zone_of_last = last.tzinfo if last else None
        problem = relative_problem(every, zone_of_last) if schedule.relative else None
        if problem:
            return Imported.refuse(name, f"{what}: {problem}")
        fields["schedule"] = Every(schedule.every)
        if last is not None:
            upcoming = relative_next(last, every) if schedule.relative else last + every
            fields["start_at"] = upcoming - every
    elif isinstance(schedule, _Crontab):
        what = f"crontab {crontab_text(schedule.fields)!r} in {zone}"
        if is_celery_cleanup(name, task, schedule.fields, args, kwargs, options):
            return Imported.skip(
                name,
                "Celery's own daily result cleanup, which beat adds when the result backend "
                "does not expire results itself; celery-dbeat's beat adds it the same way "
                "(docs/tutorial/migrating.md)",
            )
        try:
            fields["schedule"] = crontab_spec(schedule.fields, zone)
        except ValidationError as exc:
            return Imported.refuse(name, f"{what}: {exc.problem}")
    elif isinstance(schedule, _RRule):
        what = f"rrule {rrule_text(schedule.fields)}"
        found = rrule_fields(schedule.fields, last)
        if isinstance(found, str):
            return Imported.refuse(name, f"{what}: {found}")
        fields.update(found)
    else:
        kind = schedule.get("__type__") if isinstance(schedule, dict) else type(schedule).__name__
        return Imported.refuse(
            name, f"schedule of type {kind!r}: RedBeat writes interval, crontab and rrule only"
        )
    notes = fields.pop("notes", ())
    imported = build(
        name,
        what,
        source_next=None,
        notes=notes,
        task=task,
        args=args,
        kwargs=kwargs,
        options=options,
        enabled=enabled,
        **fields,
    )
    if imported.definition is None or not enabled:
        return imported
    kind = {_Interval: "interval", _Crontab: "crontab", _RRule: "rrule"}[type(schedule)]
    return replace(imported, source_next=_source_next(kind, imported.definition, last, now))


def _source_next(
    kind: str, definition: Definition, last: datetime | None, now: datetime
) -> datetime | None:
    """When RedBeat would fire the (enabled) entry next (module docstring)."""
    spec = definition.spec
    if kind == "rrule":
        # The first occurrence after the last run; never run, the first of all (DTSTART).
        timing = definition.timing(definition.start_at or now)
        return timing.first_after(last or definition.start_at or _BEFORE_ANY_DTSTART)
    if last is None:
        return now  # never run: due at once
    if kind == "interval":
        assert definition.start_at is not None
        return definition.start_at + timedelta(seconds=spec["every"])
    return build_timing(**spec).first_after(last)
