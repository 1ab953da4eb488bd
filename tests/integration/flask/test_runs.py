"""Flask-Admin's side of run tracking: the overlap fields of the form, the run columns of the
fire history, and the beats (heartbeats) view."""

from __future__ import annotations

import re
from datetime import timedelta

import sqlalchemy as sa

from celery_dbeat import Cron
from celery_dbeat.api import Schedules
from celery_dbeat.clock import FixedClock
from celery_dbeat.core.fires import RunStatus
from celery_dbeat.store import Fire
from celery_dbeat.store.runs import RunEvent, record_runs
from tests.integration.conftest import START, MakeTicker, RecordingPublisher
from tests.integration.flask.helpers import (
    ON_SQLITE_AND_POSTGRESQL,
    Browser,
    flashes,
    heartbeat,
    make_app,
    rows,
)
from tests.integration.flask.test_schedules import edit, form, schedule_id, shown_values


@ON_SQLITE_AND_POSTGRESQL
def test_the_form_offers_the_overlap_policies_and_stores_both_fields(
    api: Schedules, admin: Browser
) -> None:
    page = admin.get("/admin/schedules/new/")
    select = re.search(r'<select[^>]*id="overlap_policy".*?</select>', page, re.S)
    assert select is not None
    assert re.findall(r'value="([^"]*)"', select.group(0)) == ["", "allow", "skip", "buffer_one"]
    assert "default (allow)" in select.group(0)
    assert 'id="max_run_time"' in page

    admin.post("/admin/schedules/new/", form(name="sync", overlap_policy="skip", max_run_time="2h"))

    info = api.get("sync")
    assert (info.overlap_policy, info.max_run_time) == ("skip", 7200.0)


def test_the_edit_form_shows_the_stored_overlap_fields_and_an_other_edit_keeps_them(
    api: Schedules, admin: Browser
) -> None:
    api.add(
        "sync", "proj.tasks.sync", Cron("0 * * * *"), overlap_policy="buffer_one",
        max_run_time="90m",
    )  # fmt: skip
    page = admin.get(f"/admin/schedules/edit/?id={schedule_id(api, 'sync')}")
    values = shown_values(page)
    assert (values["overlap_policy"], values["max_run_time"]) == ("buffer_one", "5400")
    overlap = re.search(r'id="dbeat-overlap">([^<]*)<', page)
    assert overlap is not None
    assert overlap.group(1) == "buffer_one (runs lost after 1 h 30 min)"

    assert "success: Record was successfully saved." in flashes(
        edit(admin, api, "sync", args="[7]")
    )
    info = api.get("sync")
    assert (info.args, info.overlap_policy, info.max_run_time) == ([7], "buffer_one", 5400.0)

    edit(admin, api, "sync", overlap_policy="", max_run_time="")
    info = api.get("sync")
    assert (info.overlap_policy, info.max_run_time) == (None, None)


def test_the_list_filters_by_overlap_policy(api: Schedules, admin: Browser) -> None:
    api.add("a", "proj.tasks.a", Cron("0 * * * *"), overlap_policy="skip")
    api.add("b", "proj.tasks.b", Cron("0 * * * *"))
    listed = rows(admin.get("/admin/schedules/?flt0_overlap_policy_equals=skip"))
    assert [row["name"] for row in listed] == ["a"]


@ON_SQLITE_AND_POSTGRESQL
def test_the_history_shows_each_runs_status_start_run_time_worker_and_error(
    api: Schedules,
    admin: Browser,
    clock: FixedClock,
    publisher: RecordingPublisher,
    make_ticker: MakeTicker,
) -> None:
    api.add("hourly", "proj.tasks.report", Cron("0 * * * *"))
    ticker = make_ticker(max_interval=1)
    for hour in (10, 11, 12):
        clock.set(START.replace(hour=hour))
        ticker.tick()
    ok, bad, running = publisher.task_ids
    at = START.replace(hour=10, second=3)
    record_runs(
        api.store.engine,
        [
            RunEvent(ok, RunStatus.STARTED, at, worker="celery@w1"),
            RunEvent(ok, RunStatus.SUCCEEDED, at + timedelta(minutes=2), runtime=120.0),
            RunEvent(bad, RunStatus.STARTED, at + timedelta(hours=1), worker="celery@w2"),
            RunEvent(
                bad, RunStatus.FAILED, at + timedelta(hours=1, seconds=1), runtime=0.75,
                error="KeyError: 'day'",
            ),
            RunEvent(running, RunStatus.STARTED, at + timedelta(hours=2), worker="celery@w1"),
        ],
    )  # fmt: skip

    page = admin.get("/admin/fires/?flt0_schedule_is=hourly")

    shown = [
        (r["status"], r["run_status"], r["started_at"], r["runtime"], r["worker"], r["error"])
        for r in rows(page)
    ]
    assert shown == [
        ("sent", "started", "2024-05-06 12:00:03 UTC", "", "celery@w1", ""),
        ("sent", "failed", "2024-05-06 11:00:03 UTC", "750 ms", "celery@w2", "KeyError: 'day'"),
        ("sent", "succeeded", "2024-05-06 10:00:03 UTC", "2 min", "celery@w1", ""),
    ]
    failed = rows(admin.get("/admin/fires/?flt0_schedule_is=hourly&flt1_run_equals=failed"))
    assert [r["task_id"] for r in failed] == [bad]


def test_the_fire_details_show_the_run(
    api: Schedules,
    admin: Browser,
    clock: FixedClock,
    publisher: RecordingPublisher,
    make_ticker: MakeTicker,
) -> None:
    api.add("hourly", "proj.tasks.report", Cron("0 * * * *"))
    clock.set(START.replace(hour=10))
    make_ticker(max_interval=1).tick()
    [task_id] = publisher.task_ids
    record_runs(
        api.store.engine,
        [RunEvent(task_id, RunStatus.REVOKED, START.replace(hour=10, minute=1))],
    )
    [fire] = api.history("hourly")
    fire_id = _fire_id(api, task_id)

    page = admin.get(f"/admin/fires/details/?id={fire_id}")

    for label, value in (("Run", "revoked"), ("Finished", "2024-05-06 10:01:00 UTC")):
        assert re.search(rf"<b>{label}</b>\s*</td>\s*<td>\s*(<[^>]*>)?{re.escape(value)}", page)
    assert fire.outcome == "revoked"


def _fire_id(api: Schedules, task_id: str) -> int:
    with api.store.engine.connect() as conn:
        return int(conn.execute(sa.select(Fire.id).where(Fire.task_id == task_id)).scalar_one())


def test_the_beats_view_lists_heartbeats_live_or_silent(
    api: Schedules, admin: Browser, clock: FixedClock
) -> None:
    clock.set(START + timedelta(hours=2))
    heartbeat(api, "host:1", timedelta(seconds=3))
    heartbeat(api, "host:2", timedelta(hours=1))

    listed = rows(admin.get("/admin/beats/"))

    assert [(r["name"], r["version"], r["last_seen_at"], r["state"]) for r in listed] == [
        ("host:1", "9.9", "2024-05-06 10:59:57 UTC", "live, seen 3 s ago"),
        ("host:2", "9.9", "2024-05-06 10:00:00 UTC", "silent, seen 1 h ago"),
    ]
    assert admin.client.get("/admin/beats/new/").status_code in (302, 404)


def test_the_beats_view_calls_a_beat_live_by_the_apis_rule(
    api: Schedules, clock: FixedClock
) -> None:
    """``Schedules.from_app`` sets ``live_within`` to 3 x dbeat_max_interval: a beat ticking
    every 60 s is live 2 minutes after its heartbeat, as the run-now action counts it."""
    api.live_within = timedelta(minutes=3)
    heartbeat(api, "slow:1", timedelta(minutes=2))
    heartbeat(api, "gone:1", timedelta(minutes=4))
    app, _ = make_app(api)

    listed = rows(Browser(app.test_client()).get("/admin/beats/"))

    assert [(r["name"], r["state"]) for r in listed] == [
        ("slow:1", "live, seen 2 min ago"),
        ("gone:1", "silent, seen 4 min ago"),
    ]
    assert [beat.name for beat in api.live_beats()] == ["slow:1"]
