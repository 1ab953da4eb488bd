"""Warnings a command prints without failing: schedules whose task the app does not register
(:mod:`celery_dbeat.task_names`, the same words on every surface)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import click

from ..core.definitions import Definition
from ..task_names import app_task_warning, unknown_tasks

__all__ = ["warn_unknown_tasks"]


def warn_unknown_tasks(
    app: Any, definitions: Iterable[Definition], *, err: bool = True
) -> Mapping[str, str]:
    """Print ``warning: ...`` about the definitions whose task ``app`` does not register (on
    stderr, or with ``err=False`` on stdout as part of a report); returns ``{schedule: task}``."""
    unknown = unknown_tasks(app, definitions)
    if unknown:
        click.echo(f"warning: {app_task_warning(app, unknown.values())}", err=err)
    return unknown
