"""Settings: every ``dbeat_*`` key, read once from ``app.conf`` and validated.

Keys may also be given in Celery's namespaced upper-case form (``CELERY_DBEAT_DATABASE_URL`` when
the app was configured with ``namespace="CELERY"``, as Django projects do). Every problem is
reported at once: a misspelt key (with the key it most likely meant) and each bad value, in one
:class:`SettingsErrors` when there are several.

Without ``dbeat_database_url`` the schedules live in a SQLite file in this user's data directory
(:func:`default_database_url`), named after the app: not in the working directory, where two beats
started from two directories would each fire every schedule from a file of their own.
"""

from __future__ import annotations

import math
import os
import re
import socket
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from .core.definitions import check_webhook
from .core.durations import parse_duration
from .core.errors import ConfigurationError, DBeatError, ValidationError
from .core.misfire import MisfirePolicy, MisfireRules
from .core.suggestions import did_you_mean
from .core.urls import mask_url
from .core.validation import MAX_CATCHUP_LIMIT

__all__ = [
    "ENVIRONMENT",
    "SETTING_KEYS",
    "Settings",
    "SettingsErrors",
    "default_database_dir",
    "default_database_url",
    "mask_url",
    "misspelt_keys",
    "suggestion",
    "with_environment",
]


def default_database_dir() -> Path:
    """The folder of the SQLite file used when ``dbeat_database_url`` is not set: ``celery-dbeat``
    in this user's data directory (``$XDG_DATA_HOME``, else ``~/.local/share``; on Windows
    ``%LOCALAPPDATA%``). It does not depend on the working directory, so every beat and command
    this user starts on this host finds the same file."""
    try:
        if os.name == "nt":  # pragma: no cover - CI runs on Linux
            base = os.environ.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
        else:
            base = os.environ.get("XDG_DATA_HOME", "")
            if not os.path.isabs(base):  # the XDG spec: a relative value is ignored
                base = str(Path.home() / ".local" / "share")
    except RuntimeError:  # no HOME and no password entry (a container run as a bare UID)
        raise ConfigurationError(
            "dbeat_database_url",
            None,
            "is not set, and this user has no home directory for the default SQLite file; "
            "set dbeat_database_url (or HOME, or XDG_DATA_HOME)",
        ) from None
    return Path(base) / "celery-dbeat"


def default_database_url(app_name: str | None = None) -> str:
    """``sqlite:///<default_database_dir()>/<app_name>.sqlite3``: one file per Celery app, so two
    projects of one user never share (and disable each other's ``beat_schedule``)."""
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", app_name or "").strip("._") or "celery"
    return f"sqlite:///{default_database_dir() / stem}.sqlite3"


def suggestion(written: str, known: Iterable[str], *, prefix: str = "") -> str:
    """`` (did you mean X?)`` with the key of ``known`` closest to ``written``, or ``""``
    (:func:`~celery_dbeat.core.suggestions.did_you_mean`, as for task and calendar names).

    ``written`` starts with ``prefix`` (a namespace such as ``CELERY_``), which is kept but not
    compared; the suggestion is spelt as ``written`` is (upper case for upper case)."""
    return did_you_mean(written, known, prefix=prefix, as_written=True)


class SettingsErrors(ConfigurationError):
    """Several settings are invalid: each is in :attr:`errors`, and the message lists them all,
    so that one run shows every fix to make. ``key`` lists their keys."""

    def __init__(self, errors: Sequence[ConfigurationError]) -> None:
        self.errors = list(errors)
        self.key = ", ".join(error.key for error in self.errors)
        self.value = [error.value for error in self.errors]
        self.problem = "; ".join(str(error) for error in self.errors)
        DBeatError.__init__(self, self.problem)


def _raise_all(errors: Sequence[ConfigurationError]) -> None:
    if len(errors) == 1:
        raise errors[0]
    if errors:
        raise SettingsErrors(errors)


#: The misfire defaults are :class:`MisfireRules`' own, stated once there.
_RULES = MisfireRules()


def _default_instance() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


@dataclass(frozen=True)
class Settings:
    """Everything celery-dbeat reads from configuration. Durations are ``timedelta``."""

    #: SQLAlchemy URL of the schedule database (by default a SQLite file: see
    #: :func:`default_database_url`).
    database_url: str = field(default_factory=default_database_url)
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
    #: Most queued fires (catch-up of policy ``all``, backfill) one beat publishes a second;
    #: ``None``: as many as on-time fires leave room for.
    catchup_rate: float | None = None
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
    #: Audit entries (who edited what) older than this are pruned by beat, in bounded batches;
    #: 0 keeps them forever.
    audit_retention: timedelta | None = timedelta(days=90)
    #: Serve Prometheus metrics on this port (needs ``celery-dbeat[metrics]``); ``None``: off.
    metrics_port: int | None = None
    #: Address the metrics server listens on (this host only, unless set to e.g. ``0.0.0.0``).
    metrics_address: str = "127.0.0.1"
    #: Name of this beat in fire history and logs.
    instance_name: str = field(default_factory=_default_instance)
    #: Added to this beat's clock; only for simulating skewed hosts in tests.
    clock_offset: timedelta = timedelta(0)
    #: ``celery dbeat admin``'s login: the user name, and a werkzeug hash of its password (both
    #: or neither; without them the admin serves only on a loopback address). For the command,
    #: the environment's ``DBEAT_ADMIN_*`` win (:func:`with_environment`).
    admin_user: str | None = None
    admin_password_hash: str | None = field(default=None, repr=False)
    #: Signs ``celery dbeat admin``'s session cookie (its forms' CSRF tokens); ``None``: a random
    #: key per process, so a restart asks each open form to be loaded again.
    admin_secret_key: str | None = field(default=None, repr=False)
    #: Alerts (``celery_dbeat.core.alerts``): the Celery task and the webhook (an http(s) URL)
    #: they go to for schedules that name none of their own; how long a webhook may take to
    #: answer; how many times a failed delivery is retried (with a growing delay) before it is
    #: given up.
    alert_task: str | None = None
    alert_webhook: str | None = None
    alert_webhook_timeout: timedelta = timedelta(seconds=5)
    alert_retries: int = 5

    @classmethod
    def from_app(cls, app: Any) -> Settings:
        """The app's settings; every misspelt key and bad value is reported at once."""
        # Celery's settings object resolves ``dbeat_x`` to ``CELERY_DBEAT_X`` by itself when the
        # app was configured with a namespace.
        misspelt = misspelt_keys(app.conf.keys(), getattr(app, "namespace", None))
        values = {
            f.name: app.conf.get(f"dbeat_{f.name}")
            for f in fields(cls)
            if app.conf.get(f"dbeat_{f.name}") is not None
        }
        if "database_url" not in values:
            values["database_url"] = default_database_url(getattr(app, "main", None))
        return cls.from_mapping(values, errors=misspelt)

    @classmethod
    def from_mapping(
        cls, values: Mapping[str, Any], *, errors: Sequence[ConfigurationError] = ()
    ) -> Settings:
        """Build from ``{field: value}`` (keys without the ``dbeat_`` prefix), validating each.
        Raises one :class:`ConfigurationError` naming every problem, ``errors`` (found by the
        caller) included."""
        found = list(errors)
        known = [f.name for f in fields(cls)]
        for name in sorted(set(values) - set(known)):
            key = f"dbeat_{name}"
            problem = "unknown setting" + suggestion(key, SETTING_KEYS)
            found.append(ConfigurationError(key, values[name], problem, hidden=True))
        clean: dict[str, Any] = {}
        for name, value in values.items():
            if name in known:
                try:
                    clean[name] = _validate(name, value)
                except ConfigurationError as exc:
                    found.append(exc)
        _raise_all(found)
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
        """Combinations that work but weaken a promise; beat logs them at start-up, its banner
        and ``celery dbeat check`` show them."""
        found = self._database_warnings()
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

    def _database_warnings(self) -> list[str]:
        # Beats that each use a SQLite file of their own cannot see each other at all (not even
        # their heartbeats): each sends every fire. Only the path can tell.
        file = _sqlite_file(self.database_url)
        if file is None:
            return []
        if not file:
            return [
                "dbeat_database_url is an in-memory SQLite database, private to this process: "
                "another beat would send every fire again, and `celery dbeat` commands see "
                "nothing; give a file or a database server"
            ]
        path = Path(file)
        if path.parent == default_database_dir():
            return [
                f"dbeat_database_url is not set: the schedules are in the SQLite file {path}, "
                "which only this user's beats on this host share; a beat on another host, or "
                "of another user or container, would use a file of its own and send every fire "
                "again; set dbeat_database_url to the database every beat uses"
            ]
        if not path.is_absolute():
            return [
                f"dbeat_database_url names a SQLite file relative to the working directory "
                f"({path.absolute()} here): a beat started in another directory would use a "
                f"file of its own and send every fire again; give an absolute path "
                f"(sqlite:///{path.absolute()})"
            ]
        return []

    @property
    def misfire_rules(self) -> MisfireRules:
        return MisfireRules(
            self.misfire_policy, self.misfire_tolerance, self.misfire_grace, self.catchup_limit
        )


#: Every key celery-dbeat reads from ``app.conf``.
SETTING_KEYS = tuple(f"dbeat_{f.name}" for f in fields(Settings))

#: The settings an environment variable may give instead (it wins over ``app.conf``): the
#: admin's login and secret, which a deployment keeps out of the code.
ENVIRONMENT = {
    "admin_user": "DBEAT_ADMIN_USER",
    "admin_password_hash": "DBEAT_ADMIN_PASSWORD_HASH",
    "admin_secret_key": "DBEAT_ADMIN_SECRET_KEY",
}


def with_environment(settings: Settings, environ: Mapping[str, str]) -> Settings:
    """``settings`` with the values ``environ`` gives for the variables of :data:`ENVIRONMENT`
    (an empty one counts as unset), validated as the settings are; an error names the variable.
    Only ``celery dbeat admin`` reads them, so a beat never fails over an admin's variable."""
    found, clean = [], {}
    for name, variable in ENVIRONMENT.items():
        value = environ.get(variable)
        if value:
            try:
                clean[name] = _validate(name, value)
            except ConfigurationError as exc:
                found.append(ConfigurationError(variable, None, exc.problem, hidden=True))
    _raise_all(found)
    return replace(settings, **clean)


def misspelt_keys(keys: Iterable[object], namespace: str | None = None) -> list[ConfigurationError]:
    """An error for each of ``keys`` that looks like a celery-dbeat setting (``dbeat_*``, or
    ``<NAMESPACE>_DBEAT_*``) but is none, naming the key it most likely meant. The value is left
    out of the message: a misspelt key may hold a secret."""
    found = []
    for written in sorted(str(key) for key in keys):
        prefix = ""
        if namespace and written.lower().startswith(f"{namespace}_".lower()):
            prefix = written[: len(namespace) + 1]
        name = written[len(prefix) :].lower()
        if name.startswith("dbeat_") and name not in SETTING_KEYS:
            meant = suggestion(written, SETTING_KEYS, prefix=prefix) or " (misspelt?)"
            found.append(ConfigurationError(written, None, f"unknown setting{meant}", hidden=True))
    return found


def _sqlite_file(url: str) -> str | None:
    """The file of a SQLite URL as written (``""`` in memory); ``None`` for other databases."""
    try:
        parsed = sa.make_url(url)
    except (sa.exc.ArgumentError, ValueError):  # ValueError: a port that is not a number
        return None  # refused with its reason when the engine is made
    if parsed.get_backend_name() != "sqlite":
        return None
    database = parsed.database or ""
    in_memory = database in ("", ":memory:") or parsed.query.get("mode") == "memory"
    return "" if in_memory else database


#: A werkzeug password hash: ``scrypt:32768:8:1$<salt>$<hex>`` or ``pbkdf2:sha256:...$...$...``.
_PASSWORD_HASH = re.compile(r"(scrypt|pbkdf2)(:[a-z0-9:]+)?\$[^$]+\$[0-9a-f]+")


def _admin_value(key: str, value: Any) -> str | None:
    secret = key != "dbeat_admin_user"  # never in a message
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise ConfigurationError(key, value, "must be a non-empty string", hidden=secret)
    if not secret and (":" in value or not value.isprintable()):
        # HTTP basic auth sends "user:password": a user name cannot hold the colon.
        raise ConfigurationError(key, value, "must not hold ':' or control characters")
    if key == "dbeat_admin_password_hash" and not _PASSWORD_HASH.fullmatch(value):
        raise ConfigurationError(
            key,
            value,
            "is not a werkzeug password hash (scrypt:...$salt$hash, never the password itself); "
            "make one with `celery -A proj dbeat admin --hash-password`",
            hidden=True,
        )
    return value


def _duration(key: str, value: object, *, allow_zero: bool = False) -> timedelta:
    try:
        delta = parse_duration(value)
    except ValueError as exc:
        raise ConfigurationError(key, value, str(exc)) from None
    if delta < timedelta(0) or (delta == timedelta(0) and not allow_zero):
        raise ConfigurationError(key, value, "must be a positive duration")
    return delta


#: The words a boolean setting may be given as (from an environment variable).
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


def _validate(name: str, value: Any) -> Any:
    key = f"dbeat_{name}"
    if name in ("database_url", "instance_name", "redis_key_prefix", "metrics_address"):
        if not isinstance(value, str) or not value:
            raise ConfigurationError(key, value, "must be a non-empty string")
        return value
    if name in ("admin_user", "admin_password_hash", "admin_secret_key"):
        return _admin_value(key, value)
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
    if name in ("history_retention", "audit_retention"):
        # 0 (or None) keeps history forever.
        kept = None if value is None else _duration(key, value, allow_zero=True)
        return kept or None
    if name == "alert_task":
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise ConfigurationError(key, value, "must be a task name, or None")
        return value
    if name == "alert_webhook":
        try:
            return check_webhook(value, key)
        except ValidationError as exc:
            raise ConfigurationError(key, value, exc.problem) from None
    if name == "alert_retries":
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 100:
            raise ConfigurationError(key, value, "must be a whole number from 0 to 100")
        return value
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
    if name == "misfire_tolerance":
        return _duration(key, value, allow_zero=True)
    if name in (
        "lock_ttl",
        "max_interval",
        "publish_retry_window",
        "max_run_time",
        "alert_webhook_timeout",
    ):
        return _duration(key, value)
    if name == "batch_size":
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigurationError(key, value, "must be a whole number >= 1")
        return value
    if name == "catchup_rate":
        if value is None:
            return None
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not math.isfinite(value)
            or value <= 0
        ):
            raise ConfigurationError(
                key, value, "must be a number of fires a second > 0, or None for no cap"
            )
        return float(value)
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
        if isinstance(value, str) and value.lower() in (*_TRUE, *_FALSE):
            return value.lower() in _TRUE
        if not isinstance(value, bool):
            raise ConfigurationError(key, value, "must be true or false")
        return value
    raise AssertionError(name)  # pragma: no cover - every field is handled above
