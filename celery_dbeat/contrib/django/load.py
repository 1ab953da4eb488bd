"""The load page of the Django admin (``<admin>/celery_dbeat/schedule/load/``): the next 24 hours
of every schedule drawn (server-rendered SVG from :mod:`celery_dbeat.core.loadchart`), the herds
with the schedules that make them and a hint, and the last day's lag and failed runs."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils.safestring import mark_safe

from ...core.loadchart import again_text, forecast_svg, past_svg
from .conf import schedules

__all__ = ["LOAD_TEMPLATE", "load_view"]

LOAD_TEMPLATE = "celery_dbeat/load.html"


def load_view(model_admin: admin.ModelAdmin[Any], request: HttpRequest) -> HttpResponse:
    """Shown to users who may view schedules; the tables-missing page while they are not
    usable."""
    if not model_admin.has_view_or_change_permission(request):
        raise PermissionDenied
    if missing := model_admin.tables_missing(request):
        return missing
    load = schedules().load()
    herds = [
        {"herd": herd, "at": f"{herd.at:%Y-%m-%d %H:%M}", "again": again_text(herd)}
        for herd in load.herds
    ]
    context = {
        **model_admin.admin_site.each_context(request),
        "title": "Next 24 hours",
        "opts": model_admin.opts,
        "load": load,
        "herds": herds,
        # Built from escaped parts: names and specs are escaped by loadchart.
        "forecast": mark_safe(forecast_svg(load)),
        "past": mark_safe(past_svg(load.past)) if load.past else None,
    }
    return TemplateResponse(request, LOAD_TEMPLATE, context)
