"""The beats view: read-only heartbeats of the beat processes (who is alive, last tick,
version), newest heartbeat first."""

from __future__ import annotations

from typing import Any, ClassVar

from flask import g
from markupsafe import Markup
from typing_extensions import Unpack

from ...api import Schedules
from ...store.models import Beat
from .base import BEATS_ENDPOINT, Access, AdminSession, DBeatView, Where, badge
from .display import duration

__all__ = ["BeatView"]


def _state(view: BeatView, context: Any, beat: Beat, name: str) -> Markup:
    live = beat.name in g.get("dbeat_live_beats", ())
    age = view.schedules.clock.now() - beat.last_seen_at
    text = f"{'live' if live else 'silent'}, seen {duration(age)} ago"
    return badge(text, "success" if live else "secondary")


class BeatView(DBeatView):
    """Heartbeats: one row per running beat, written every ``dbeat_max_interval`` and removed
    when the beat stops cleanly; live by :meth:`celery_dbeat.api.Schedules.live_beats` (the
    run-now action's rule)."""

    can_create = False
    can_edit = False
    can_delete = False
    column_list = ("name", "hostname", "pid", "version", "started_at", "last_seen_at", "state")
    column_labels: ClassVar[dict[str, str]] = {
        "started_at": "Started",
        "last_seen_at": "Last tick",
        "state": "State",
    }
    column_sortable_list = ("name", "hostname", "started_at", "last_seen_at")
    column_default_sort = ("last_seen_at", True)
    column_searchable_list = ("name", "hostname")
    column_formatters: ClassVar[dict[str, Any]] = {"state": _state}

    row_model = Beat
    default_name, default_endpoint, default_url = "Beats", BEATS_ENDPOINT, "beats"

    def __init__(
        self, schedules: Schedules, session: AdminSession, access: Access, **where: Unpack[Where]
    ) -> None:
        self.schedules = schedules
        super().__init__(session, access, **where)

    def get_list(self, *args: Any, **kwargs: Any) -> Any:
        listed = super().get_list(*args, **kwargs)
        self.end_read()
        g.dbeat_live_beats = {beat.name for beat in self.schedules.live_beats()}
        return listed
