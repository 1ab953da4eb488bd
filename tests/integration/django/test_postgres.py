"""The admin's core flow on PostgreSQL (``timestamptz``), with the tables in a second database.

Django's own tables stay in the SQLite ``default``; ``DBEAT_DATABASE_ALIAS = "postgres"`` points
the admin's reads at the PostgreSQL database, whose URL the writes then default to as well.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from celery_dbeat.clock import FixedClock
from tests.integration.django.support import (
    ADD,
    FIRES,
    SCHEDULES,
    START,
    change_url,
    edit,
    form_data,
    insert_fire,
    listed,
    text_of,
)


@pytest.fixture
def pg_api(site: Any) -> Iterator[Any]:
    from django.test import override_settings

    from celery_dbeat.contrib.django import schedules

    site.require_postgres()
    with override_settings(DBEAT_DATABASE_ALIAS="postgres"):
        api = schedules()
        assert api.store.engine.dialect.name == "postgresql"
        api.clock = FixedClock(START)
        yield api


def test_create_edit_pause_trigger_and_history_on_postgresql(
    client: Any, pg_api: Any, site: Any
) -> None:
    response = client.post(ADD, form_data(name="report", cron="0 * * * *", timezone="Europe/Paris"))
    assert response.status_code == 302
    info = pg_api.get("report")
    assert info.next_run_at == START + timedelta(hours=1)
    assert listed(client.get(f"{SCHEDULES}?q=report")) == ["report"]

    pg_api.clock.set(START + timedelta(minutes=30))
    assert edit(client, info, args="[7]").status_code == 302
    edited = pg_api.get("report")
    assert (edited.args, edited.next_run_at) == ([7], info.next_run_at)
    assert edit(client, info, cron="*/20 * * * *").status_code == 302
    assert pg_api.get("report").next_run_at == START + timedelta(minutes=40)

    client.post(SCHEDULES, {"action": "pause", "_selected_action": [str(info.id)]})
    assert pg_api.get("report").state == "paused"
    client.post(SCHEDULES, {"action": "trigger", "_selected_action": [str(info.id)]})
    insert_fire(
        site.postgres_url,
        info.id,
        START,
        task_id="44444444-4444-4444-4444-444444444444",
        beat="pg-beat:1",
        sent_at=START + timedelta(milliseconds=500),
    )
    history = text_of(client.get(f"{FIRES}?schedule__id__exact={info.id}"))
    assert "0.500 s" in history
    assert "pg-beat:1" in history
    assert "pending" in history  # the manual fire, for a beat to publish
    page_text = text_of(client.get(change_url(info.id)))
    assert "2024-05-06 09:40:00 UTC = 2024-05-06 11:40:00 CEST in Europe/Paris" in page_text
