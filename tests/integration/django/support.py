"""Helpers for the Django admin tests: URLs, form data, and reading what a response shows."""

from __future__ import annotations

import html
from datetime import datetime, timezone
from typing import Any

import sqlalchemy as sa

from celery_dbeat.core.definitions import FORM_FIELDS
from tests.bad_inputs import VALID

# The management API's clock in the tests that fix it: the integration tests' START.
from tests.integration.conftest import START as START

UTC = timezone.utc

ADMIN = "/admin/celery_dbeat"
SCHEDULES = f"{ADMIN}/schedule/"
ADD = f"{SCHEDULES}add/"
FIRES = f"{ADMIN}/fire/"
BEATS = f"{ADMIN}/beat/"


def change_url(pk: int) -> str:
    return f"{SCHEDULES}{pk}/change/"


def form_data(**overrides: Any) -> dict[str, str]:
    """What the add/change form posts: every field, the shared VALID values, enabled ticked.

    ``enabled=False`` leaves the checkbox out, as a browser does when it is not ticked.
    """
    data: dict[str, Any] = {name: "" for name in FORM_FIELDS if name != "enabled"}
    data.update(VALID, enabled="on")
    data.update(overrides)
    if data["enabled"] is False:
        del data["enabled"]
    return {key: str(value) for key, value in data.items()}


def edit(client: Any, info: Any, **changes: Any) -> Any:
    """Open the change page, change some fields, save: as a person does."""
    initial = client.get(change_url(info.id)).context["adminform"].form.initial
    values = {key: "" if value is None else value for key, value in initial.items()}
    values.update(changes)
    return client.post(change_url(info.id), form_data(**values))


def form_errors(response: Any) -> dict[str, list[str]]:
    """The form's errors by field (``__all__`` for those on no field)."""
    assert response.status_code == 200, response.status_code
    return {
        field: list(errors) for field, errors in response.context["adminform"].form.errors.items()
    }


def messages_of(response: Any) -> list[str]:
    return [str(m) for m in response.context["messages"]] if response.context else []


def text_of(response: Any) -> str:
    """The page as a person reads its text (entities decoded)."""
    return html.unescape(response.content.decode())


def listed(response: Any) -> list[str]:
    """The names on a changelist page, in order."""
    assert response.status_code == 200, response.status_code
    return [str(obj) for obj in response.context["cl"].result_list]


def insert_fire(url: str, schedule_id: int, slot: datetime, **columns: Any) -> None:
    """A fire row as beat writes it (``status`` ``sent`` unless told otherwise)."""
    from celery_dbeat.store.models import F

    values: dict[str, Any] = {
        "schedule_id": schedule_id,
        "slot": slot,
        "manual": False,
        "status": "sent",
        "slot_count": 1,
        "recorded_at": slot,
        "attempts": 1,
    }
    values.update(columns)
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.execute(sa.insert(F).values(**values))
    engine.dispose()


def insert_beat(url: str, name: str, seen: datetime) -> None:
    from celery_dbeat.store.models import B

    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.execute(
            sa.insert(B).values(
                name=name,
                hostname=name.split(":")[0],
                pid=int(name.split(":")[1]),
                version="0.1.0",
                started_at=seen,
                last_seen_at=seen,
            )
        )
    engine.dispose()
