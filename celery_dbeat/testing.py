"""For your own test suite: fail the build, not the deploy, when an entry of the app's
``beat_schedule`` would not work.

    # tests/test_beat_schedule.py
    from celery_dbeat.testing import assert_beat_schedule_ready

    from proj.celery import app

    def test_beat_schedule_is_ready():
        assert_beat_schedule_ready(app)

It needs no database, broker or Redis (``celery -A proj dbeat check --offline`` says the same
from a shell).
"""

from __future__ import annotations

from datetime import datetime

from celery import Celery

from .beat_schedule import check_entries
from .clock import SystemClock

__all__ = ["assert_beat_schedule_ready"]


def assert_beat_schedule_ready(app: Celery, *, now: datetime | None = None) -> None:
    """Raise ``AssertionError`` naming every ``beat_schedule`` entry with a problem, and each
    problem (:func:`celery_dbeat.beat_schedule.check_entries`, as a beat starting at ``now``,
    default now, would take the entries)."""
    checks = check_entries(app, now or SystemClock().now())
    problems = [f"{c.name}: {problem}" for c in checks for problem in c.problems]
    if problems:  # raised, not asserted: python -O must not silence it
        raise AssertionError("beat_schedule entries with problems:\n" + "\n".join(problems))
