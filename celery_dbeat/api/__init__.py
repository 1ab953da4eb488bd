"""The typed management API that every surface (CLI, admin integrations, your code) calls:
:class:`Schedules` (:mod:`.writes`, :mod:`.reads`, :mod:`.session`) and :class:`Calendars`."""

from __future__ import annotations

from ..core.audit import Actor
from ..core.calendars import PreviewSlot
from ..core.explain import Explanation, Verdict
from ..core.health import UNHEALTHY_REASONS, ScheduleHealth
from ..core.load import Load
from ..core.timing import DstNote
from ..results import BeatInfo, FireInfo, ScheduleInfo
from ..store.audit import Entry
from ..store.backfill import BackfillReport
from ..store.sync import SyncReport
from .calendars import Calendar, Calendars
from .session import Session
from .specs import preview_spec, preview_spec_slots, spec_dst_notes
from .writes import Schedules

__all__ = [
    "UNHEALTHY_REASONS",
    "Actor",
    "BackfillReport",
    "BeatInfo",
    "Calendar",
    "Calendars",
    "DstNote",
    "Entry",
    "Explanation",
    "FireInfo",
    "Load",
    "PreviewSlot",
    "ScheduleHealth",
    "ScheduleInfo",
    "Schedules",
    "Session",
    "SyncReport",
    "Verdict",
    "preview_spec",
    "preview_spec_slots",
    "spec_dst_notes",
]
