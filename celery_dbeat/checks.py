"""Start-up checks: settings and services that would weaken a promise, found before they do.

Beat logs every finding at start-up; ``celery -A proj dbeat check`` prints them and exits non-zero
on an error. Each finding names what to change.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

import click
from sqlalchemy.engine import Engine

from .config import Settings
from .core.errors import SchemaVersionError
from .store import Store
from .store.database import check_schema
from .store.engine import database_findings

__all__ = [
    "Finding",
    "Level",
    "app_argument",
    "redis_findings",
    "redis_unavailable",
    "run_checks",
]

#: The only Redis eviction policy that never drops a key that has a TTL (every lock key has one).
SAFE_EVICTION = "noeviction"


class Level(str, enum.Enum):
    OK = "ok"
    WARNING = "warning"
    ERROR = "error"


@dataclass(frozen=True)
class Finding:
    level: Level
    topic: str
    message: str


def _settings(settings: Settings) -> list[Finding]:
    found = [Finding(Level.WARNING, "settings", text) for text in settings.warnings()]
    return found or [Finding(Level.OK, "settings", "timing settings are consistent")]


def app_argument(app: Any) -> str:
    """The Celery app as this process was given it (``celery -A proj.celery ...``), for the
    commands a message tells to run; else the app's name."""
    ctx = click.get_current_context(silent=True)
    given = None if ctx is None else ctx.find_root().params.get("app")
    return given if isinstance(given, str) and given else str(app.main or "<your Celery app>")


def _schema(engine: Engine, app: str | None) -> Finding:
    try:
        return Finding(Level.OK, "schema", f"at revision {check_schema(engine, app)}")
    except SchemaVersionError as exc:
        return Finding(Level.ERROR, "schema", str(exc))


def redis_findings(settings: Settings, client: Any) -> list[Finding]:
    """Whether Redis lets celery-dbeat in (:func:`redis_unavailable`; an ACL user refused a
    command, key or channel beats use is an error too), and whether it may evict lock keys."""
    from .redis_client import UNAVAILABLE, describe_client

    where = describe_client(client)
    try:
        client.ping()
    except UNAVAILABLE as exc:
        return [redis_unavailable(where, exc)]
    try:
        _use_as_beats_do(client, settings.redis_key_prefix)
    except UNAVAILABLE as exc:
        finding = redis_unavailable(where, exc)
        if finding.level is not Level.ERROR:
            return [finding]
        prefix = settings.redis_key_prefix
        return [
            Finding(
                Level.ERROR,
                "redis",
                f"Redis at {where} refuses a command beats send, as this user ({exc}): give "
                f"the ACL user the keys ~{prefix}* and the channel &{prefix}* with +set +eval "
                "+publish +subscribe, or set dbeat_redis_key_prefix to a prefix it may use",
            ),
            _eviction(client),
        ]
    return [_eviction(client)]


def redis_unavailable(where: str, exc: Exception) -> Finding:
    """What a failed Redis command means at start-up: refused credentials stop beat; anything
    else is an outage beats ride out."""
    from .redis_client import is_refused

    if is_refused(exc):
        return Finding(
            Level.ERROR,
            "redis",
            f"Redis at {where} refused the credentials ({exc}): fix the user and password in "
            "dbeat_redis_url (or dbeat_redis_options)",
        )
    return Finding(
        Level.WARNING,
        "redis",
        f"could not reach Redis at {where} ({exc}): until it is back, beats claim fires "
        "through the database",
    )


def _use_as_beats_do(client: Any, prefix: str) -> None:
    """Send each command beats and writers send, once: a claim and its release on a key under
    the prefix (:mod:`.locks.redis`), a change notification (:mod:`.notify.redis`; it wakes the
    running beats once, which costs them one early tick)."""
    from .locks.redis import RELEASE_SCRIPT
    from .notify import channel_name

    key, token = f"{prefix}check", "dbeat-check"
    pipe = client.pipeline(transaction=False)
    pipe.set(key, token, nx=True, px=1000)
    pipe.execute_command("EVAL", RELEASE_SCRIPT, 1, key, token)
    pipe.execute()
    client.publish(channel_name(prefix), b"1")


def _eviction(client: Any) -> Finding:
    # A cluster's nodes are configured one by one: read every primary (lock keys live there). A
    # Sentinel-managed client reads its current master.
    from .redis_client import is_cluster

    try:
        if is_cluster(client):
            configs = {
                node.name: client.get_redis_connection(node).config_get("maxmemory*")
                for node in client.get_primaries()
            }
        else:
            configs = {"": client.config_get("maxmemory*")}
    except Exception as exc:  # managed Redis often refuses CONFIG
        return Finding(
            Level.WARNING,
            "redis",
            f"could not read maxmemory-policy ({exc}); make sure it is '{SAFE_EVICTION}' or that "
            "maxmemory is never reached, or lock keys may be evicted",
        )
    unsafe, seen = [], []
    for node, config in sorted(configs.items()):
        policy = str(config.get("maxmemory-policy", ""))
        limit = int(config.get("maxmemory", 0) or 0)
        where = f"{node}: " if node else ""
        seen.append(f"{where}maxmemory-policy {policy or '?'}, maxmemory {limit}")
        if policy != SAFE_EVICTION and limit != 0:
            unsafe.append(f"{where}maxmemory-policy is {policy!r} with maxmemory {limit}")
    if not unsafe:
        return Finding(Level.OK, "redis", "; ".join(seen))
    return Finding(
        Level.WARNING,
        "redis",
        f"{'; '.join(unsafe)}: Redis may evict per-fire lock keys under memory pressure (the "
        f"database still prevents a second fire, but beats race for it); set maxmemory-policy "
        f"to {SAFE_EVICTION!r} or use a Redis of its own",
    )


def run_checks(
    settings: Settings,
    database: Engine | Store,
    redis_client: Any = None,
    *,
    app: str | None = None,
) -> list[Finding]:
    """Every finding for these settings, this database and (if given) this Redis client;
    ``app``: the Celery app as given to ``-A`` (:func:`app_argument`), for what to run."""
    engine = database.engine if isinstance(database, Store) else database
    findings = _settings(settings)
    findings.append(_schema(engine, app))
    findings += [
        Finding(Level(level), "database", text) for level, text in database_findings(engine)
    ]
    if redis_client is not None:
        findings += redis_findings(settings, redis_client)
    return findings
