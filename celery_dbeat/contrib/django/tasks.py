"""The task names of the project's Celery app: suggested by the schedule form's task field and
checked after a save (a name the app does not know is warned about, never refused: it may be
registered only in the workers; :mod:`celery_dbeat.task_names` has the rule and the words)."""

from __future__ import annotations

from celery_dbeat import task_names
from celery_dbeat.core.definitions import Definition

from .conf import project_celery_app

__all__ = [
    "check_slot_parameters",
    "registered_tasks",
    "suggested_task_names",
    "unknown_task_warning",
]


def registered_tasks() -> frozenset[str] | None:
    """The names the project's Celery app registers (``None`` without a project app), its task
    modules imported first, once, as a worker imports them at start-up."""
    app = project_celery_app()
    names = None if app is None else task_names.registered_tasks(app)
    return None if names is None else frozenset(str(name) for name in names)


def suggested_task_names() -> list[str]:
    """The registered names, sorted, without Celery's own (``celery.*``)."""
    return sorted(name for name in registered_tasks() or () if not name.startswith("celery."))


def unknown_task_warning(task: str) -> str | None:
    """What to say about a schedule's task the project's Celery app does not register."""
    names = registered_tasks()
    if names is None or task in names:
        return None
    warning = task_names.unknown_task_warning([task], project_celery_app().main, names)
    return warning[0].upper() + warning[1:] + "."


def check_slot_parameters(definition: Definition) -> None:
    """Refuse slot arguments the project's Celery app's task cannot take
    (:func:`celery_dbeat.task_names.check_slot_parameters`; nothing without a project app)."""
    app = project_celery_app()
    if app is not None:
        task_names.check_slot_parameters(app, definition)
