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
    try:
        config = client.config_get("maxmemory*")
    except Exception as exc:  # managed Redis often refuses CONFIG
        return Finding(
            Level.WARNING,
            "redis",
            f"could not read maxmemory-policy ({exc}); make sure it is '{SAFE_EVICTION}' or that "
            "maxmemory is never reached, or lock keys may be evicted",
        )
    policy = str(config.get("maxmemory-policy", ""))
    limit = int(config.get("maxmemory", 0) or 0)
    if policy == SAFE_EVICTION or limit == 0:
        return Finding(Level.OK, "redis", f"maxmemory-policy {policy or '?'}, maxmemory {limit}")
    return Finding(
        Level.WARNING,
        "redis",
        f"maxmemory-policy is {policy!r} with maxmemory {limit}: Redis may evict per-fire lock "
        f"keys under memory pressure (the database still prevents a second fire, but beats race "
        f"for it); set maxmemory-policy to {SAFE_EVICTION!r} or use a Redis of its own",
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
