"""The explanation page of the Django admin (``<admin>/celery_dbeat/fire/explain/``): why a slot
did or did not fire (:meth:`celery_dbeat.api.Schedules.explain`, as ``dbeat explain`` says it),
linked from each slot of the fire history."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html

from ...core.errors import DBeatError
from ...core.formats import parse_instant
from .conf import schedules
from .display import utc

__all__ = ["EXPLAIN_TEMPLATE", "explain_link", "explain_view"]

EXPLAIN_TEMPLATE = "celery_dbeat/explain.html"


def explain_url(model_admin: admin.ModelAdmin[Any], **query: str) -> str:
    url: str = reverse("admin:celery_dbeat_fire_explain", current_app=model_admin.admin_site.name)
    return f"{url}?{urlencode(query)}"


def explain_link(model_admin: admin.ModelAdmin[Any], fire: Any) -> str:
    """The fire's ``why?`` link (none for a run now, which is no slot)."""
    if fire.manual:
        return "-"
    link: str = format_html(
        '<a href="{}" class="dbeat-explain">why?</a>', explain_url(model_admin, id=str(fire.pk))
    )
    return link


def explain_view(model_admin: admin.ModelAdmin[Any], request: HttpRequest) -> HttpResponse:
    """The slot of the fire ``?id=``, or ``?schedule=NAME`` and ``?slot=INSTANT`` (without a
    slot: its latest); shown to users who may view fires."""
    if not model_admin.has_view_or_change_permission(request):
        raise PermissionDenied
    if missing := model_admin.tables_missing(request):
        return missing
    name, slot = request.GET.get("schedule"), request.GET.get("slot")
    if "id" in request.GET:
        text = request.GET["id"]
        fire = model_admin.model.objects.filter(pk=int(text)).first() if text.isdigit() else None
        if fire is None or fire.manual or fire.slot is None:
            raise Http404("no such fire of a slot")
        name, slot = fire.schedule.name, fire.slot.isoformat()
    if not name:
        raise Http404("no schedule named")
    context: dict[str, Any] = {
        **model_admin.admin_site.each_context(request),
        "opts": model_admin.opts,
        "name": name,
        "title": f"Why? {name}",
    }
    try:
        said = schedules().explain(name, slot=parse_instant(slot) if slot else None)
    except (DBeatError, LookupError, ValueError) as exc:
        context["error"] = str(exc)
        return TemplateResponse(request, EXPLAIN_TEMPLATE, context, status=404)
    nearest = [
        (utc(near), explain_url(model_admin, schedule=name, slot=near.isoformat()))
        for near in said.nearest
        if near is not None
    ]
    history = reverse("admin:celery_dbeat_fire_changelist", current_app=model_admin.admin_site.name)
    context.update(
        said=said,
        slot=utc(said.slot),
        details=[(k, v) for k, v in said.as_json()["details"].items() if v is not None],
        nearest=nearest,
        history_url=f"{history}?{urlencode({'q': name})}",
    )
    return TemplateResponse(request, EXPLAIN_TEMPLATE, context)
