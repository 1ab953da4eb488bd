"""A schedule's state, defined once: ``finished``, ``error``, ``active`` or ``paused``.

The rule is a table, so that every surface derives its form from it: Python objects
(:func:`schedule_state`), SQLAlchemy (``store.schedules.state_expression``) and the Django ORM (the
admin's state filter) each read :data:`RULE` rather than spelling the order out again.
"""

from __future__ import annotations

import enum
from typing import Any

__all__ = ["OTHERWISE", "RULE", "STATES", "PauseSource", "schedule_state", "state_note"]

#: In order, the first rule that holds names the state: ``(state, column, test)``, where the test
#: is ``"set"`` (not NULL) or ``"true"`` (a flag that is on).
RULE: tuple[tuple[str, str, str], ...] = (
    ("finished", "finished_at", "set"),
    ("error", "last_error", "set"),
    ("active", "enabled", "true"),
)
#: The state when no rule holds.
OTHERWISE = "paused"
STATES = ("active", "paused", "finished", "error")


def schedule_state(row: Any) -> str:
    """The state of anything with the rule's columns as attributes (a row, a model, an info)."""
    for state, column, test in RULE:
        value = getattr(row, column)
        if (value is True) if test == "true" else (value is not None):
            return state
    return OTHERWISE


def state_note(row: Any) -> str:
    """What every surface shows beside a schedule's state (in a column of its own, so that the
    state column holds only the state word): a paused schedule's note (who paused it and why,
    or ``paused after 3 consecutive failed runs``), an active one's failed runs in a row, else
    ``""``. ``row``: as for :func:`schedule_state`, with ``pause_note`` and
    ``consecutive_failures``."""
    state = schedule_state(row)
    if state == OTHERWISE:
        return str(row.pause_note or "")
    if state == "active" and row.consecutive_failures:
        return f"{row.consecutive_failures} failed runs in a row"
    return ""


class PauseSource(str, enum.Enum):
    """What paused a schedule (``pause_source``, beside its ``pause_note`` and ``paused_at``)."""

    PERSON = "person"  #: a pause through the API, the CLI or an admin
    CONFIG = "config"  #: ``enabled: False`` in ``beat_schedule``
    FAILURES = "failures"  #: ``pause_after_failures`` consecutive failed runs
