"""Start-up checks: settings and services that would weaken a promise, found before they do.

Beat logs every finding at start-up; ``celery -A proj dbeat check`` prints them and exits non-zero
on an error. Each finding names what to change.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import Engine

from .config import Settings
from .errors import SchemaVersionError
from .store.database import check_schema, database_findings

__all__ = ["Finding", "Level", "run_checks"]

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


def _schema(engine: Engine) -> Finding:
    try:
        return Finding(Level.OK, "schema", f"at revision {check_schema(engine)}")
    except SchemaVersionError as exc:
        return Finding(Level.ERROR, "schema", str(exc))


def _redis(client: Any) -> Finding:
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


def run_checks(settings: Settings, engine: Engine, redis_client: Any = None) -> list[Finding]:
    """Every finding for these settings, this database and (if given) this Redis client."""
    findings = _settings(settings)
    findings.append(_schema(engine))
    findings += [
        Finding(Level(level), "database", text) for level, text in database_findings(engine)
    ]
    if redis_client is not None:
        findings.append(_redis(redis_client))
    return findings
