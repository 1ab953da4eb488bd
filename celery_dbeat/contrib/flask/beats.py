"""The beats view: read-only heartbeats of the beat processes (who is alive, last tick,
version), newest heartbeat first."""

from __future__ import annotations

from typing import Any, ClassVar

from markupsafe import Markup

from ...clock import Clock, SystemClock
from ...store.models import Beat
from .base import BEATS_ENDPOINT, Access, AdminSession, DBeatView, badge
from .display import duration

__all__ = ["BeatView"]


def _state(view: BeatView, context: Any, beat: Beat, name: str) -> Markup:
    age = view.clock.now() - beat.last_seen_at
    live = age.total_seconds() <= view.live_within
    text = f"{'live' if live else 'silent'}, seen {duration(age)} ago"
    return badge(text, "success" if live else "secondary")


class BeatView(DBeatView):
    """Heartbeats: one row per running beat, written every ``dbeat_max_interval`` and removed
    when the beat stops cleanly. A beat is shown as live when its heartbeat is at most
    ``live_within`` seconds old (beat's default interval is 5 s; the CLI's ``status`` uses
    3 x ``dbeat_max_interval``)."""

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

    def __init__(
        self,
        session: AdminSession,
        access: Access,
        *,
        name: str = "Beats",
        category: str | None = None,
        endpoint: str = BEATS_ENDPOINT,
        url: str = "beats",
        live_within: float = 15.0,
        clock: Clock | None = None,
    ) -> None:
        self.live_within = live_within
        self.clock = clock or SystemClock()
        super().__init__(
            Beat, session, access, name=name, category=category, endpoint=endpoint, url=url
        )
