"""celery-dbeat: a database-backed Celery beat that many instances can run at once.

Run it with ``celery -A proj beat -S celery_dbeat.Scheduler``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import (
    ConfigurationError,
    DBeatError,
    ScheduleNotFound,
    SchemaVersionError,
    ValidationError,
)
from .specs import Cron, Every, Once, Solar

if TYPE_CHECKING:
    from .scheduler import Scheduler

__all__ = [
    "ConfigurationError",
    "Cron",
    "DBeatError",
    "Every",
    "Once",
    "ScheduleNotFound",
    "Scheduler",
    "SchemaVersionError",
    "Solar",
    "ValidationError",
    "__version__",
]

__version__ = "0.1.0.dev0"


def __getattr__(name: str) -> Any:
    # The scheduler imports Celery's beat machinery; load it only when asked for, so that
    # `from celery_dbeat import Cron` in a settings module stays light.
    if name == "Scheduler":
        from .scheduler import Scheduler

        return Scheduler
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
