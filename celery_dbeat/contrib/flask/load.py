"""The load page: the next 24 hours of every schedule drawn (fires per minute, the herds and
the schedules that make them, with a hint), and the last day's lag and failed runs per hour.
Server-rendered SVG (:mod:`celery_dbeat.core.loadchart`); no script."""

from __future__ import annotations

from typing import Any

from flask_admin import expose
from markupsafe import Markup
from sqlalchemy.engine import Engine
from typing_extensions import Unpack

from ...api import Schedules
from ...core.loadchart import again_text, forecast_svg, past_svg
from .base import Access, GuardedView, Where

__all__ = ["LOAD_ENDPOINT", "LoadView"]

LOAD_ENDPOINT = "dbeat_load"
LOAD_TEMPLATE = "celery_dbeat/load.html"


class LoadView(GuardedView):
    """``<admin url>/load/``: read-only."""

    default_name, default_endpoint, default_url = "Next 24 hours", LOAD_ENDPOINT, "load"

    def __init__(self, schedules: Schedules, access: Access, **where: Unpack[Where]) -> None:
        self.schedules = schedules
        super().__init__(access=access, **where)

    @expose("/")
    def index(self) -> Any:
        load = self.schedules.load()
        return self.render(
            LOAD_TEMPLATE,
            load=load,
            forecast=Markup(forecast_svg(load)),
            past=Markup(past_svg(load.past)) if load.past else None,
            again=again_text,
        )

    def schema_engine(self) -> Engine:
        return self.schedules.store.engine
