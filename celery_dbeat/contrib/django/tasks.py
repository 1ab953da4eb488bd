"""The task names of the project's Celery app: suggested by the schedule form's task field and
checked after a save (a name the app does not know is warned about, never refused: it may be
registered only in the workers)."""

from __future__ import annotations

import threading

from celery.utils.log import get_logger

from .conf import project_celery_app

__all__ = ["registered_tasks", "suggested_task_names", "unknown_task_warning"]

logger = get_logger(__name__)

_lock = threading.Lock()
#: The apps whose task modules were imported (by ``id``), once per process.
_imported: set[int] = set()


def registered_tasks() -> frozenset[str] | None:
    """The names the project's Celery app registers (``None`` without a project app).

    Its task modules are imported first, once, as a worker imports them at start-up: the
    ``tasks`` modules ``app.autodiscover_tasks()`` finds and ``CELERY_IMPORTS``.
    """
    app = project_celery_app()
    if app is None:
        return None
    with _lock:
        first = id(app) not in _imported
        _imported.add(id(app))
    if first:
        try:
            app.loader.import_default_modules()
        except Exception:  # a broken tasks module must not break the admin
            logger.warning("could not import the task modules of %r", app.main, exc_info=True)
    try:
        return frozenset(str(name) for name in app.tasks)
    except RuntimeError:  # an app made with autofinalize=False, not finalized yet
        return None


def suggested_task_names() -> list[str]:
    """The registered names, sorted, without Celery's own (``celery.*``)."""
    return sorted(name for name in registered_tasks() or () if not name.startswith("celery."))


def unknown_task_warning(task: str) -> str | None:
    """What to say about a schedule's task the project's Celery app does not register."""
    names = registered_tasks()
    if names is None or task in names:
        return None
    app = project_celery_app()
    return (
        f"The task {task!r} is not registered in the Celery app {app.main!r}: the schedule is "
        "saved and beat sends it, but only a worker that registers this name can run it. "
        "Check the name, or that your workers import the module defining it."
    )
