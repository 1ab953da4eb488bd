"""The task names a Celery app registers, and the one warning about schedules whose task is not
among them.

An unknown name is warned about, never refused: a task may be defined only in the workers' code,
which the beat, the CLI or an admin's web process need not import. Every surface says it in the
same words (:func:`unknown_task_warning`): ``dbeat add`` and ``update``, ``dbeat import`` (a file
or ``--from``), ``dbeat sync``, beat's own sync of ``beat_schedule`` (a log line) and both admins.
"""

from __future__ import annotations

import inspect
import logging
import threading
import weakref
from collections.abc import Collection, Iterable, Mapping
from typing import Any

from celery.utils.log import get_logger

from .core.definitions import Definition
from .core.errors import ValidationError
from .core.suggestions import did_you_mean

__all__ = [
    "app_task_warning",
    "check_slot_parameters",
    "registered_tasks",
    "unknown_task_warning",
    "unknown_tasks",
    "warn_unknown_tasks",
]

logger = get_logger(__name__)

_lock = threading.Lock()
#: The apps whose task modules this process imported (or tried to): once per app.
_imported: weakref.WeakSet[Any] = weakref.WeakSet()
#: The apps whose task modules failed to import: their names are not checked.
_failed: weakref.WeakSet[Any] = weakref.WeakSet()


def registered_tasks(app: Any) -> Collection[str] | None:
    """The task names ``app`` registers, after importing its task modules as a worker does at
    start-up (``app.loader.import_default_modules()``: ``imports``, ``include`` and the modules
    ``autodiscover_tasks()`` finds), once per app and process. ``None`` when they cannot be
    known: a task module fails to import (logged), or the app is not finalized
    (``autofinalize=False``)."""
    with _lock:  # held while importing: another thread must not read a half-filled registry
        if app not in _imported:
            _imported.add(app)
            _import_task_modules(app)
        failed = app in _failed
    if failed:  # the names would lack that module's tasks, each then "unknown"
        return None
    try:
        tasks: Collection[str] = app.tasks
    except RuntimeError:  # an app made with autofinalize=False, not finalized yet
        return None
    return tasks


def _import_task_modules(app: Any) -> None:
    if getattr(app.loader, "worker_initialized", False):
        return  # a worker or beat process imported them at start-up (loader.init_worker)
    try:
        app.loader.import_default_modules()
    except Exception:  # a broken task module must not break the command or the admin
        logger.warning(
            "could not import the task modules of the Celery app %r; task names are not checked",
            app.main,
            exc_info=True,
        )
        _failed.add(app)


def unknown_tasks(app: Any, definitions: Iterable[Definition]) -> dict[str, str]:
    """``{schedule name: task}`` for the definitions whose task ``app`` does not register
    (nothing when the registered names cannot be known)."""
    names = registered_tasks(app)
    if names is None:
        return {}
    return {d.name: d.task for d in definitions if d.task not in names}


def unknown_task_warning(
    tasks: Collection[str], app_name: str | None = None, known: Iterable[str] | None = ()
) -> str:
    """What every surface says about ``tasks`` (names the app does not register): a warning,
    since a task may be defined only in the workers' code. ``app_name``: the Celery app's
    ``main``, if known; ``known``: the names it registers, for the one each task most likely
    meant (:func:`~celery_dbeat.core.suggestions.did_you_mean`, as for a misspelt setting)."""
    names = list(known or ())
    shown = ", ".join(f"{task!r}{did_you_mean(task, names)}" for task in sorted(set(tasks)))
    app = f"the Celery app {app_name!r}" if app_name else "this Celery app"
    if len(set(tasks)) == 1:
        return (
            f"task {shown} is not registered in {app}: beat sends it all the same, but only a "
            "worker that registers this name can run it; check the name, and that your "
            "workers import the module that defines it (defined only in the workers' code is "
            "fine)"
        )
    return (
        f"tasks {shown} are not registered in {app}: beat sends them all the same, but only "
        "a worker that registers a name can run its task; check the names, and that your "
        "workers import the modules that define them (defined only in the workers' code is "
        "fine)"
    )


def warn_unknown_tasks(
    app: Any,
    definitions: Iterable[Definition],
    *,
    log: logging.Logger = logger,
    source: str = "beat_schedule: ",
) -> Mapping[str, str]:
    """Log :func:`unknown_task_warning` for ``definitions`` on ``log``, after ``source`` (by
    default: beat's ``beat_schedule`` sync); returns :func:`unknown_tasks`."""
    unknown = unknown_tasks(app, definitions)
    if unknown:
        log.warning("dbeat: %s%s", source, app_task_warning(app, unknown.values()))
    return unknown


def app_task_warning(app: Any, tasks: Collection[str]) -> str:
    """:func:`unknown_task_warning` for ``tasks`` (from :func:`unknown_tasks`) of ``app``, with
    the names it registers for the "did you mean"."""
    return unknown_task_warning(tasks, app.main, registered_tasks(app))


def check_slot_parameters(app: Any, definition: Definition) -> None:
    """Refuse (:class:`ValidationError` naming the field) slot arguments the task of
    ``definition`` cannot take: ``app`` registers it, and its ``run`` has no parameter of that
    name and no ``**kwargs`` (or the name is one its ``args`` fill already). A task the app does
    not register, or whose signature cannot be read, is not checked: only its workers can say."""
    asked = [
        (field, name)
        for field, name in (
            ("slot_kwarg", definition.slot_kwarg),
            ("previous_slot_kwarg", definition.previous_slot_kwarg),
        )
        if name is not None
    ]
    if not asked or registered_tasks(app) is None:
        return
    task = app.tasks.get(definition.task)
    if task is None:
        return
    try:
        signature = inspect.signature(task.run)
        signature.bind(*definition.args, **definition.kwargs)
    except (TypeError, ValueError):
        return  # its args or kwargs do not fit either: not the slot's business
    added: dict[str, str] = {}
    for field, name in asked:
        added[name] = "2000-01-01T00:00:00Z"
        try:
            signature.bind(*definition.args, **definition.kwargs, **added)
        except TypeError:
            raise ValidationError(
                field,
                name,
                f"task {definition.task!r} takes no keyword argument {name!r} (its signature "
                f"is {signature}): add the parameter, or **kwargs, to the task",
            ) from None
