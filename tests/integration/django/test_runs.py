"""The Django admin's side of run tracking: the overlap fields of the form, the run columns of
the fire history and the change page, and the beats page."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from celery_dbeat import Cron
from celery_dbeat.clock import FixedClock
from tests.integration.django.support import (
    ADD,
    BEATS,
    FIRES,
    SCHEDULES,
    START,
    change_url,
    edit,
    form_data,
    form_errors,
    insert_beat,
    insert_fire,
    listed,
    text_of,
)


def test_the_form_stores_the_overlap_policy_and_max_run_time(
    client: Any, api: Any, clock: FixedClock
) -> None:
    page = text_of(client.get(ADD))
    assert '<option value="buffer_one">buffer_one</option>' in page
    assert "default (allow)" in page

    response = client.post(ADD, form_data(name="sync", overlap_policy="skip", max_run_time="2h"))

    assert response.status_code == 302, form_errors(response)
    info = api.get("sync")
    assert (info.overlap_policy, info.max_run_time) == ("skip", 7200.0)


def test_the_change_form_shows_them_and_an_other_edit_keeps_them(
    client: Any, api: Any, clock: FixedClock
) -> None:
    info = api.add(
        "sync", "proj.tasks.sync", Cron("0 * * * *"), overlap_policy="buffer_one",
        max_run_time="90m",
    )  # fmt: skip
    initial = client.get(change_url(info.id)).context["adminform"].form.initial
    assert (initial["overlap_policy"], initial["max_run_time"]) == ("buffer_one", "5400")
    assert "Overlapping runs" in text_of(client.get(change_url(info.id)))

    assert edit(client, info, args="[7]").status_code == 302
    after = api.get("sync")
    assert (after.args, after.overlap_policy, after.max_run_time) == ([7], "buffer_one", 5400.0)
    assert after.next_run_at == info.next_run_at

    assert edit(client, info, overlap_policy="", max_run_time="").status_code == 302
    cleared = api.get("sync")
    assert (cleared.overlap_policy, cleared.max_run_time) == (None, None)


def test_the_schedule_list_filters_by_overlap_policy(
    client: Any, api: Any, clock: FixedClock
) -> None:
    api.add("a", "proj.tasks.a", Cron("0 * * * *"), overlap_policy="skip")
    api.add("b", "proj.tasks.b", Cron("0 * * * *"))
    assert listed(client.get(f"{SCHEDULES}?overlap_policy__exact=skip")) == ["a"]


@pytest.fixture
def runs(api: Any, clock: FixedClock, site: Any) -> Any:
    info = api.add("report", "proj.tasks.report", Cron("0 * * * *"))
    url = site.sqlite_url
    at = START + timedelta(hours=1)
    insert_fire(
        url, info.id, at, task_id="11111111-1111-1111-1111-111111111111",
        sent_at=at + timedelta(seconds=1), run_status="succeeded",
        started_at=at + timedelta(seconds=3), finished_at=at + timedelta(minutes=2),
        runtime=117.0, worker="celery@w1",
    )  # fmt: skip
    at += timedelta(hours=1)
    insert_fire(
        url, info.id, at, task_id="22222222-2222-2222-2222-222222222222",
        sent_at=at + timedelta(seconds=1), run_status="failed",
        started_at=at + timedelta(seconds=2), finished_at=at + timedelta(seconds=4),
        worker="celery@w2", run_error="KeyError: 'day'",
    )  # fmt: skip
    at += timedelta(hours=1)
    insert_fire(url, info.id, at, task_id="33333333-3333-3333-3333-333333333333")
    return info


def test_the_fire_history_shows_each_runs_status_start_run_time_worker_and_error(
    client: Any, runs: Any
) -> None:
    response = client.get(f"{FIRES}?schedule__id__exact={runs.id}")
    page = text_of(response)

    assert [f.outcome for f in response.context["cl"].result_list] == [
        "sent",
        "failed",
        "succeeded",
    ]
    for shown in (
        "2024-05-06 10:00:03 UTC",
        "117.000 s",
        "celery@w1",
        "2.000 s",  # from start to finish: the worker did not measure it
        "celery@w2",
        "KeyError: 'day'",
    ):
        assert shown in page
    for heading in ("run status", "run started at", "run time", "worker"):
        assert f">{heading}<" in page.lower()


@pytest.mark.parametrize(
    ("query", "task_ids"),
    [
        pytest.param("run_status=failed", ["22222222"], id="failed"),
        pytest.param("run_status=none", ["33333333"], id="no-report"),
        pytest.param("q=celery@w1", ["11111111"], id="search-worker"),
    ],
)
def test_the_fire_history_filters_by_run_status_and_searches_workers(
    client: Any, runs: Any, query: str, task_ids: list[str]
) -> None:
    response = client.get(f"{FIRES}?{query}")
    assert [f.task_id[:8] for f in response.context["cl"].result_list] == task_ids


def test_the_fire_page_and_the_change_page_show_the_run(client: Any, runs: Any) -> None:
    from celery_dbeat.contrib.django.models import Fire

    fire = Fire.objects.get(task_id__startswith="2222")
    detail = text_of(client.get(f"{FIRES}{fire.pk}/change/"))
    for shown in ("run started at", "2024-05-06 11:00:02 UTC", "2024-05-06 11:00:04 UTC"):
        assert shown in detail.replace("Run started at", "run started at")
    assert "KeyError: 'day'" in detail

    overview = text_of(client.get(change_url(runs.id)))
    assert "<th>run</th><th>started at</th><th>run time</th><th>worker</th>" in overview
    assert "<td>failed</td><td>2024-05-06 11:00:02 UTC</td><td>2.000 s</td>" in overview


def test_the_beats_page_shows_version_last_tick_and_whether_each_is_live(
    client: Any, site: Any, clock: FixedClock
) -> None:
    insert_beat(site.sqlite_url, "host-a:4242", START - timedelta(seconds=4))
    insert_beat(site.sqlite_url, "host-b:77", START - timedelta(minutes=10))
    page = text_of(client.get(BEATS))
    assert "0.1.0" in page
    assert "2024-05-06 08:59:56 UTC" in page
    assert "live, seen 4 s ago" in page
    assert "silent, seen 600 s ago" in page
