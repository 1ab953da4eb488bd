"""The load page: the next 24 hours of every schedule drawn (fires per minute, the herds and
the schedules that make them, with a hint), and the last day's lag and failed runs per hour.
Server-rendered SVG (:mod:`celery_dbeat.core.loadchart`); no script."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, abort, make_response
from flask.typing import ResponseReturnValue
from flask_admin import BaseView, expose
from jinja2 import BaseLoader, ChoiceLoader, FileSystemLoader
from markupsafe import Markup

from ...api import Schedules
from ...core.loadchart import again_text, forecast_svg, past_svg
from .base import SCHEMA_TEMPLATE, TEMPLATES, Access, schema_problem

__all__ = ["LOAD_ENDPOINT", "LoadView"]

LOAD_ENDPOINT = "dbeat_load"
LOAD_TEMPLATE = "celery_dbeat/load.html"


class LoadView(BaseView):
    """``<admin url>/load/``: read-only; the host's access rule and the schema check of the
    other celery-dbeat views."""

    def __init__(
        self,
        schedules: Schedules,
        access: Access,
        *,
        name: str = "Next 24 hours",
        category: str | None = None,
        endpoint: str = LOAD_ENDPOINT,
        url: str = "load",
    ) -> None:
        self.schedules = schedules
        self.access = access
        super().__init__(name=name, category=category, endpoint=endpoint, url=url)

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

    def is_accessible(self) -> bool:
        return bool(self.access.is_accessible())

    def inaccessible_callback(self, name: str, **kwargs: Any) -> ResponseReturnValue:
        if self.access.on_refused is not None:
            return self.access.on_refused()
        abort(403)

    def _handle_view(self, name: str, **kwargs: Any) -> ResponseReturnValue | None:
        refused: ResponseReturnValue | None = super()._handle_view(name, **kwargs)
        if refused is not None:
            return refused
        problem = schema_problem(self.schedules.store.engine)
        if problem is not None:
            return make_response(self.render(SCHEMA_TEMPLATE, dbeat_schema=problem), 503)
        return None

    def create_blueprint(self, admin: Any) -> Blueprint:
        blueprint: Blueprint = super().create_blueprint(admin)
        loaders: list[BaseLoader] = [FileSystemLoader(TEMPLATES)]
        if blueprint.jinja_loader is not None:
            loaders.append(blueprint.jinja_loader)
        blueprint.jinja_loader = ChoiceLoader(loaders)
        return blueprint
