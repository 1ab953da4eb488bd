"""Where a schedule or a fire comes from: the values of their ``origin`` columns, which every
layer reads (the store writes them, the API and the surfaces decide by them)."""

from __future__ import annotations

__all__ = ["API_ORIGIN", "APPLIED_ORIGINS", "BACKFILL_ORIGIN", "CONFIG_ORIGIN", "REMOVED_ORIGIN"]

#: A schedule made through the API (the CLI, an admin, an import, your code).
API_ORIGIN = "api"
#: A schedule from the app's ``beat_schedule``, whose next sync puts its definition back.
CONFIG_ORIGIN = "config"
#: A schedule whose entry left ``beat_schedule``: disabled, kept with its history.
REMOVED_ORIGIN = "config:removed"
#: The origins ``Schedules.apply`` applies definitions as.
APPLIED_ORIGINS = (API_ORIGIN, CONFIG_ORIGIN)
#: ``dbeat_fires.origin`` of the fires a backfill recorded (NULL: beat's own).
BACKFILL_ORIGIN = "backfill"
