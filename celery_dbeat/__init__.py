"""celery-dbeat: a database-backed Celery beat that many instances can run at once.

Run it with ``celery -A proj beat -S celery_dbeat.Scheduler``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._version import __version__
from .core import errors
from .core.errors import *  # noqa: F403  (the exception tree: celery_dbeat.core.errors)
from .core.fires import fire_task_id
from .core.specs import Cron, Every, Once, Rrule, Solar

if TYPE_CHECKING:
    from .beat.scheduler import Scheduler

__all__ = ["Cron", "Every", "Once", "Rrule", "Scheduler", "Solar", "__version__", "fire_task_id"]
__all__ += errors.__all__


def __getattr__(name: str) -> Any:
    # The scheduler imports Celery's beat machinery; load it only when asked for, so that
    # `from celery_dbeat import Cron` in a settings module stays light.
    if name == "Scheduler":
        from .beat.scheduler import Scheduler

        return Scheduler
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
