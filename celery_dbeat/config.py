"""Settings: every ``dbeat_*`` key, read once from ``app.conf`` and validated.

Keys may also be given in Celery's namespaced upper-case form (``CELERY_DBEAT_DATABASE_URL`` when
the app was configured with ``namespace="CELERY"``, as Django projects do).
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from datetime import timedelta
from typing import Any

from .durations import parse_duration
from .errors import ConfigurationError
from .misfire import MisfirePolicy, MisfireRules
from .urls import mask_url
from .validation import MAX_CATCHUP_LIMIT

__all__ = ["DEFAULT_DATABASE_URL", "Settings", "mask_url"]

DEFAULT_DATABASE_URL = "sqlite:///celerybeat-dbeat.sqlite3"


#: The misfire defaults are :class:`MisfireRules`' own, stated once there.
_RULES = MisfireRules()


def _default_instance() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


@dataclass(frozen=True)
class Settings:
    """Everything celery-dbeat reads from configuration. Durations are ``timedelta``."""

    #: SQLAlchemy URL of the schedule database.
    database_url: str = DEFAULT_DATABASE_URL
    #: Extra keyword arguments for ``sqlalchemy.create_engine``.
    engine_options: Mapping[str, Any] = field(default_factory=dict)
    #: Redis URL for per-fire locks; ``None`` claims fires by the database alone.
    redis_url: str | None = None
    redis_key_prefix: str = "dbeat:"
    #: Extra keyword arguments for the Redis client (TLS files, Sentinel's ``master_name``, ...).
    redis_options: Mapping[str, Any] = field(default_factory=dict)
    #: Default misfire policy of schedules that do not set their own.
    misfire_policy: MisfirePolicy = _RULES.policy
    #: Default grace window; ``None`` means unbounded.
    misfire_grace: timedelta | None = _RULES.grace
    #: After every beat was down, a slot at most this late is merely late and fires normally;
    #: older ones are missed. (While any beat runs, lateness is never a miss: see misfire.py.)
    misfire_tolerance: timedelta = _RULES.tolerance
    catchup_limit: int = _RULES.catchup_limit
    #: Life of a per-fire lock, and how long a recorded fire is left to the beat that recorded it;
    #: a beat not seen for this long is taken for dead.
    lock_ttl: timedelta = timedelta(seconds=30)
    #: Longest sleep between ticks: how quickly edits made elsewhere are seen at the latest.
    max_interval: timedelta = timedelta(seconds=5)
    #: Due schedules claimed per database transaction.
    batch_size: int = 500
    #: How long a fire that could not be published is retried before it is marked failed.
    publish_retry_window: timedelta = timedelta(hours=1)
    #: Upgrade the schema to this version's head at start-up.
    auto_migrate: bool = True
    #: Copy ``beat_schedule`` into the database at start-up.
    sync_beat_schedule: bool = True
    #: How long a run may take before it counts as lost, for schedules with an overlap policy
    #: that do not set their own ``max_run_time``.
    max_run_time: timedelta = timedelta(hours=1)
    #: Fire history older than this is pruned by beat, in bounded batches; 0 keeps it forever.
    history_retention: timedelta | None = timedelta(days=30)
    #: Serve Prometheus metrics on this port (needs ``celery-dbeat[metrics]``); ``None``: off.
    metrics_port: int | None = None
    #: Address the metrics server listens on (this host only, unless set to e.g. ``0.0.0.0``).
    metrics_address: str = "127.0.0.1"
    #: Name of this beat in fire history and logs.
    instance_name: str = field(default_factory=_default_instance)
    #: Added to this beat's clock; only for simulating skewed hosts in tests.
    clock_offset: timedelta = timedelta(0)

    @classmethod
    def from_app(cls, app: Any) -> Settings:
        # Celery's settings object resolves ``dbeat_x`` to ``CELERY_DBEAT_X`` by itself when the
        # app was configured with a namespace.
        known = {f"dbeat_{f.name}" for f in fields(cls)}
        namespace = f"{app.namespace}_".lower() if getattr(app, "namespace", None) else ""
        for key in list(app.conf.keys()):
            name = str(key).lower()
            if namespace and name.startswith(namespace):
                name = name[len(namespace) :]
            if name.startswith("dbeat_") and name not in known:
                raise ConfigurationError(
                    key, app.conf.get(key), "unknown setting (misspelt?)", hidden=True
                )
        values = {
            f.name: app.conf.get(f"dbeat_{f.name}")
            for f in fields(cls)
            if app.conf.get(f"dbeat_{f.name}") is not None
        }
        return cls.from_mapping(values)

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> Settings:
        """Build from ``{field: value}`` (keys without the ``dbeat_`` prefix), validating each."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ConfigurationError(
                f"dbeat_{unknown[0]}", values[unknown[0]], "unknown setting", hidden=True
            )
        clean: dict[str, Any] = {}
        for name, value in values.items():
            clean[name] = _validate(name, value)
        settings = cls(**clean)
        if settings.lock_ttl <= settings.max_interval:
            raise ConfigurationError(
                "dbeat_lock_ttl",
                settings.lock_ttl.total_seconds(),
                "must be longer than dbeat_max_interval "
                f"({settings.max_interval.total_seconds():g} s)",
            )
        return settings

    def warnings(self) -> list[str]:
        """Combinations that work but weaken a promise; beat logs them at start-up."""
        found = []
        if self.misfire_grace is not None and self.misfire_grace < self.misfire_tolerance:
            found.append(
                f"dbeat_misfire_grace ({self.misfire_grace.total_seconds():g} s) is shorter than "
                f"dbeat_misfire_tolerance ({self.misfire_tolerance.total_seconds():g} s)"
            )
        retention = self.history_retention
        if retention is not None:
            for name, kept in (
                ("dbeat_max_run_time", self.max_run_time),
                ("dbeat_publish_retry_window", self.publish_retry_window),
            ):
                if retention <= kept:
                    found.append(
                        f"dbeat_history_retention ({retention.total_seconds():g} s) is not longer "
                        f"than {name} ({kept.total_seconds():g} s): history still in use may be "
                        "pruned"
                    )
        return found

    @property
    def misfire_rules(self) -> MisfireRules:
        return MisfireRules(
            self.misfire_policy, self.misfire_tolerance, self.misfire_grace, self.catchup_limit
        )


def _duration(key: str, value: object, *, allow_zero: bool = False) -> timedelta:
    try:
        delta = parse_duration(value)
    except ValueError as exc:
        raise ConfigurationError(key, value, str(exc)) from None
    if delta < timedelta(0) or (delta == timedelta(0) and not allow_zero):
        raise ConfigurationError(key, value, "must be a positive duration")
    return delta


def _validate(name: str, value: Any) -> Any:
    key = f"dbeat_{name}"
    if name in ("database_url", "instance_name", "redis_key_prefix", "metrics_address"):
        if not isinstance(value, str) or not value:
            raise ConfigurationError(key, value, "must be a non-empty string")
        return value
    if name == "redis_url":
        if value is not None and (not isinstance(value, str) or "://" not in value):
            raise ConfigurationError(key, value, "must be a URL such as redis://localhost:6379/0")
        return value
    if name in ("engine_options", "redis_options"):
        if not isinstance(value, Mapping):
            target = "create_engine()" if name == "engine_options" else "Redis client"
            raise ConfigurationError(key, value, f"must be a dict of {target} arguments")
        return dict(value)
    if name == "misfire_policy":
        try:
            return MisfirePolicy(value)
        except ValueError:
            choices = ", ".join(p.value for p in MisfirePolicy)
            raise ConfigurationError(key, value, f"must be one of {choices}") from None
    if name == "misfire_grace":
        return None if value is None else _duration(key, value)
    if name == "history_retention":
        # 0 (or None) keeps history forever.
        kept = None if value is None else _duration(key, value, allow_zero=True)
        return kept or None
    if name == "metrics_port":
        if value is None:
            return None
        if isinstance(value, str) and value.strip().isdigit():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 65535:
            raise ConfigurationError(key, value, "must be a TCP port number from 0 to 65535")
        return value
    if name == "clock_offset":
        try:
            return parse_duration(value)
        except ValueError as exc:
            raise ConfigurationError(key, value, str(exc)) from None
    if name in ("misfire_tolerance",):
        return _duration(key, value, allow_zero=True)
    if name in ("lock_ttl", "max_interval", "publish_retry_window", "max_run_time"):
        return _duration(key, value)
    if name == "batch_size":
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigurationError(key, value, "must be a whole number >= 1")
        return value
    if name == "catchup_limit":
        if (
            isinstance(value, bool)
            or not isinstance(value, int)
            or not 0 <= value <= MAX_CATCHUP_LIMIT
        ):
            raise ConfigurationError(
                key, value, f"must be a whole number from 0 to {MAX_CATCHUP_LIMIT}"
            )
        return value
    if name in ("auto_migrate", "sync_beat_schedule"):
        if isinstance(value, str) and value.lower() in (
            "1",
            "true",
            "yes",
            "on",
            "0",
            "false",
            "no",
            "off",
        ):
            return value.lower() in ("1", "true", "yes", "on")
        if not isinstance(value, bool):
            raise ConfigurationError(key, value, "must be true or false")
        return value
    raise AssertionError(name)  # pragma: no cover - every field is handled above
