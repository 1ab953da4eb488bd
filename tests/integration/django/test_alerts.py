"""The Django admin's side of alerts: the alert fields of the edit form, and the schedules in
alert on the list and the edit page."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from celery_dbeat import Cron
from celery_dbeat.store.models import S
from tests.integration.conftest import at
from tests.integration.django.support import SCHEDULES, change_url, text_of
from tests.integration.django.test_admin import cell_of


def test_the_list_and_the_edit_page_show_the_alert_episode_and_fields(
    client: Any, api: Any
) -> None:
    info = api.add(
        "report",
        "proj.tasks.report",
        Cron("0 2 * * *"),
        alert_after_failures=2,
        alert_task="proj.tasks.on_alert",
    )
    assert cell_of(client.get(SCHEDULES).content.decode(), "alert") == "-"
    with api.store.engine.begin() as conn:  # as the worker hook records the episode
        conn.execute(sa.update(S).values(alert_kind="failing", alert_episode=at("02:00")))

    assert cell_of(client.get(SCHEDULES).content.decode(), "alert") == (
        "failing since 2024-05-06T02:00:00+00:00"
    )
    page = client.get(change_url(info.id)).content.decode()
    for field in ("alert_after_failures", "alert_deadline", "alert_task", "alert_webhook"):
        assert f'name="{field}"' in page, field
    assert 'value="proj.tasks.on_alert"' in page
    assert "failing since 2024-05-06T02:00:00+00:00" in text_of(client.get(change_url(info.id)))
