"""The Django admin on SQLite: Django's own database holds celery-dbeat's tables, no dbeat setting.

Every write must go through celery_dbeat.api.Schedules: validated by ``definition_from_form``
(the shared bad-input table), ``next_run_at`` moved by the API's rules, nothing stored on refusal.
"""

from __future__ import annotations

import html
import re
from datetime import timedelta
from typing import Any

import pytest
import sqlalchemy as sa

from celery_dbeat import Cron, Every, Once
from celery_dbeat.clock import FixedClock
from celery_dbeat.core.definitions import FORM_FIELDS, failure_note
from celery_dbeat.store.models import F, S
from celery_dbeat.store.runs import prune_history
from tests.bad_inputs import BadInput, bad_input_params
from tests.integration.conftest import lose_every_race
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
    messages_of,
    text_of,
)

# The list ----------------------------------------------------------------------------------------


@pytest.fixture
def three(api: Any, clock: FixedClock) -> None:
    api.add("daily-report", "proj.tasks.report", Cron("30 7 * * *", timezone="Europe/Paris"))
    api.add("poll-feed", "proj.tasks.poll", Every(30))
    api.add("launch", "proj.tasks.launch", Once(START + timedelta(days=1)), enabled=False)


@pytest.mark.usefixtures("three")
def test_the_schedule_list_shows_every_schedule_with_its_spec_and_state(client: Any) -> None:
    response = client.get(SCHEDULES)
    assert listed(response) == ["daily-report", "launch", "poll-feed"]
    page = text_of(response)
    assert "cron '30 7 * * *' Europe/Paris" in page
    assert "every 30s" in page
    assert "once 2024-05-07T09:00:00Z" in page
    assert "paused" in page


@pytest.mark.usefixtures("three")
@pytest.mark.parametrize(
    ("query", "names"),
    [
        pytest.param("q=report", ["daily-report"], id="search-name"),
        pytest.param("q=tasks.poll", ["poll-feed"], id="search-task"),
        pytest.param("kind__exact=interval", ["poll-feed"], id="filter-kind"),
        pytest.param("state=paused", ["launch"], id="filter-state-paused"),
        pytest.param("state=active", ["daily-report", "poll-feed"], id="filter-state-active"),
        pytest.param("origin__exact=api", ["daily-report", "launch", "poll-feed"], id="origin"),
    ],
)
def test_the_schedule_list_searches_and_filters(client: Any, query: str, names: list[str]) -> None:
    assert listed(client.get(f"{SCHEDULES}?{query}")) == names


# Creating through the form -----------------------------------------------------------------------


def test_a_schedule_created_in_the_form_is_stored_by_the_api_with_its_first_slot(
    client: Any, api: Any, clock: FixedClock
) -> None:
    response = client.post(ADD, form_data(name="report", cron="*/5 * * * *", args="[1, 2]"))
    assert response.status_code == 302, form_errors(response)
    info = api.get("report")
    assert (info.task, info.schedule, info.args, info.origin) == (
        "proj.tasks.add",
        Cron("*/5 * * * *"),
        [1, 2],
        "api",
    )
    assert info.next_run_at == START + timedelta(minutes=5)
    assert info.created_at == START


def test_an_interval_created_in_the_form_is_anchored_at_its_creation(
    client: Any, api: Any, clock: FixedClock
) -> None:
    data = form_data(name="poll", kind="interval", every="90s", cron="", misfire_grace="5m")
    assert client.post(ADD, data).status_code == 302
    info = api.get("poll")
    assert (info.schedule, info.misfire_grace) == (Every(90), 300.0)
    assert info.next_run_at == START + timedelta(seconds=90)


def test_a_jitter_set_in_the_form_reaches_the_stored_schedule(
    client: Any, api: Any, clock: FixedClock, site: Any
) -> None:
    response = client.post(ADD, form_data(name="spread", jitter="30s"))
    assert response.status_code == 302, form_errors(response)
    engine = sa.create_engine(site.sqlite_url)
    with engine.connect() as conn:
        stored = conn.execute(sa.text("SELECT jitter FROM dbeat_schedules")).scalar_one()
    engine.dispose()
    assert stored == 30.0


@pytest.mark.parametrize("case", bad_input_params())
def test_a_bad_input_is_refused_on_its_field_with_the_shared_message(
    client: Any, api: Any, case: BadInput
) -> None:
    response = client.post(ADD, form_data(**case.fields))
    errors = form_errors(response)
    field = case.error_field.split(".")[0]
    assert field in errors, errors
    (message,) = errors[field]
    assert case.message in message
    assert message.startswith(f"{case.error_field}=")
    assert case.message in text_of(response)
    assert api.list() == []


def test_a_save_that_races_another_writer_says_not_saved_try_again(
    client: Any, api: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    info = api.add("report", "proj.tasks.report", Cron("0 * * * *"))
    initial = client.get(change_url(info.id)).context["adminform"].form.initial
    values = {key: "" if value is None else value for key, value in initial.items()}
    lose_every_race(monkeypatch)

    response = client.post(change_url(info.id), form_data(**{**values, "args": "[7]"}), follow=True)

    assert messages_of(response) == [
        "Not saved: schedule 'report' was changed by someone else at the same time; nothing "
        "was stored: try again"
    ]
    monkeypatch.undo()
    assert api.get("report").args == []


def test_a_name_already_taken_is_refused_on_the_name_field(client: Any, api: Any) -> None:
    api.add("report", "proj.tasks.report", Cron("0 * * * *"))
    errors = form_errors(client.post(ADD, form_data(name="report")))
    assert errors == {"name": ["a schedule named 'report' exists already"]}
    assert [s.task for s in api.list()] == ["proj.tasks.report"]


def test_the_form_has_a_field_for_every_plain_form_field(site: Any) -> None:
    from celery_dbeat.contrib.django.forms import ScheduleForm

    # And the box that forces an edit of a schedule from beat_schedule (test_config_owned.py).
    assert sorted(ScheduleForm.base_fields) == sorted([*FORM_FIELDS, "force"])


# Editing -----------------------------------------------------------------------------------------


@pytest.fixture
def report(api: Any, clock: FixedClock) -> Any:
    """An hourly schedule created at 09:00 (next slot 10:00); the clock then moves to 09:30."""
    info = api.add("report", "proj.tasks.report", Cron("0 * * * *"), args=[1])
    clock.set(START + timedelta(minutes=30))
    return info


def test_saving_the_change_form_unchanged_changes_nothing(
    client: Any, api: Any, report: Any
) -> None:
    assert edit(client, report).status_code == 302
    after = api.get("report")
    assert (after.version, after.next_run_at, after.updated_at) == (
        report.version,
        report.next_run_at,
        report.updated_at,
    )


def test_a_payload_edit_keeps_next_run_at(client: Any, api: Any, report: Any) -> None:
    response = edit(client, report, args="[1, 2, 3]", options='{"queue": "io"}', task="p.t.x")
    assert response.status_code == 302, form_errors(response)
    after = api.get("report")
    assert (after.args, after.options, after.task) == ([1, 2, 3], {"queue": "io"}, "p.t.x")
    assert after.next_run_at == START + timedelta(hours=1)
    assert after.version == report.version + 1


def test_saving_an_interval_with_fractional_seconds_unchanged_keeps_its_timing(
    client: Any, api: Any, clock: FixedClock
) -> None:
    info = api.add("odd", "proj.tasks.o", Every(1234.567891))
    clock.set(START + timedelta(seconds=1))
    assert edit(client, info).status_code == 302
    after = api.get("odd")
    assert (after.schedule, after.next_run_at, after.version) == (
        Every(1234.567891),
        info.next_run_at,
        info.version,
    )


def test_a_timing_edit_recomputes_next_run_at_from_the_edit_time(
    client: Any, api: Any, report: Any
) -> None:
    assert edit(client, report, cron="*/20 * * * *").status_code == 302
    assert api.get("report").next_run_at == START + timedelta(minutes=40)


def test_a_bad_edit_is_refused_and_leaves_the_row_as_it_was(
    client: Any, api: Any, report: Any
) -> None:
    errors = form_errors(edit(client, report, timezone="Mars/Olympus"))
    assert "not a known IANA" in errors["timezone"][0]
    assert api.get("report") == report


def test_renaming_keeps_the_row_and_its_history(
    client: Any, api: Any, report: Any, site: Any
) -> None:
    insert_fire(site.sqlite_url, report.id, START)
    assert edit(client, report, name="hourly-report").status_code == 302
    renamed = api.get("hourly-report")
    assert renamed.id == report.id
    assert len(api.history("hourly-report")) == 1


def test_unticking_enabled_pauses_and_ticking_it_resumes_from_now(
    client: Any, api: Any, report: Any, clock: FixedClock
) -> None:
    assert edit(client, report, enabled=False).status_code == 302
    assert api.get("report").state == "paused"
    clock.set(START + timedelta(hours=3, minutes=10))
    assert edit(client, report, enabled="on").status_code == 302
    resumed = api.get("report")
    assert resumed.state == "active"
    # Resuming never fires the slots that fell inside the pause: beat computes from now.
    assert resumed.next_run_at is None or resumed.next_run_at > clock.now()


def test_a_schedule_from_beat_schedule_warns_that_beat_owns_it(client: Any, api: Any) -> None:
    from celery_dbeat.core.definitions import Definition
    from celery_dbeat.store.sync import sync_config

    definition = Definition.create(name="nightly", task="proj.tasks.n", schedule=Cron("0 3 * * *"))
    sync_config(api.store, [definition], START)
    response = client.get(change_url(api.get("nightly").id))
    assert any("beat_schedule" in m for m in messages_of(response))


def test_the_change_page_previews_the_next_slots_in_utc_and_the_schedule_zone(
    client: Any, api: Any, clock: FixedClock
) -> None:
    info = api.add("paris", "proj.tasks.p", Cron("30 7 * * *", timezone="Europe/Paris"))
    page = text_of(client.get(change_url(info.id)))
    assert "2024-05-07 05:30:00 UTC = 2024-05-07 07:30:00 CEST in Europe/Paris" in page
    assert "2024-05-11 05:30:00 UTC" in page


# Actions and deletion ----------------------------------------------------------------------------


def act(client: Any, action: str, *ids: int, **extra: str) -> Any:
    data = {"action": action, "_selected_action": [str(i) for i in ids], **extra}
    return client.post(SCHEDULES, data, follow=True)


def test_the_pause_and_resume_actions_go_through_the_api(
    client: Any, api: Any, report: Any, clock: FixedClock
) -> None:
    other = api.add("other", "proj.tasks.o", Every(60))
    response = act(client, "pause", report.id, other.id)
    assert "Paused: other, report." in messages_of(response)
    assert [s.state for s in api.list()] == ["paused", "paused"]
    response = act(client, "resume", report.id)
    assert "Resumed: report." in messages_of(response)
    assert api.get("report").state == "active"
    assert api.get("other").state == "paused"


def test_the_pause_action_keeps_the_note_typed_beside_it_and_the_pages_show_it(
    client: Any, api: Any, report: Any
) -> None:
    act(client, "pause", report.id, note="alice: mail server down (INC-42)")
    paused = api.get("report")
    assert (paused.state, paused.pause_note) == ("paused", "alice: mail server down (INC-42)")
    assert "alice: mail server down (INC-42)" in text_of(client.get(SCHEDULES))
    page = text_of(client.get(change_url(report.id)))
    assert "(person): alice: mail server down (INC-42)" in page

    api.resume("report")
    act(client, "pause", report.id)  # no note typed: one naming the user
    assert api.get("report").pause_note == "paused from the admin by admin"


def test_the_list_shows_the_state_word_and_the_note_in_a_column_of_its_own(
    client: Any, api: Any, report: Any
) -> None:
    api.pause("report", note=failure_note(3, None))

    page = client.get(SCHEDULES).content.decode()

    assert cell_of(page, "state") == "paused"
    assert cell_of(page, "note") == "paused after 3 consecutive failed runs"


def cell_of(page: str, column: str) -> str:
    """The text of the one row's ``column`` on a changelist page."""
    (cell,) = re.findall(rf'<td class="field-{column}">(.*?)</td>', page, re.S)
    return html.unescape(re.sub(r"<[^>]+>", "", cell)).strip()


def test_the_pages_show_an_active_schedules_failed_runs_in_a_row(
    client: Any, api: Any, report: Any
) -> None:
    api.update("report", pause_after_failures=5)
    with api.store.engine.begin() as conn:  # as the worker hook counts them
        conn.execute(sa.update(S).values(consecutive_failures=2))

    assert "2 failed runs in a row" in text_of(client.get(SCHEDULES))
    assert "2 (pauses at 5)" in text_of(client.get(change_url(report.id)))


def test_a_pause_note_too_long_is_refused_and_the_schedule_keeps_firing(
    client: Any, api: Any, report: Any
) -> None:
    act(client, "pause", report.id, note="x" * 501)
    assert api.get("report").state == "active"


def test_the_trigger_action_records_a_manual_fire_and_keeps_next_run_at(
    client: Any, api: Any, report: Any
) -> None:
    response = act(client, "trigger", report.id)
    (fire,) = api.history("report")
    assert (fire.manual, fire.status) == (True, "pending")
    assert f"report (task id {fire.task_id})" in messages_of(response)[0]
    assert api.get("report").next_run_at == report.next_run_at


def levels_and_messages(response: Any) -> list[tuple[str, str]]:
    return [(m.level_tag, str(m)) for m in response.context["messages"]]


def test_triggering_with_no_beat_running_warns_that_the_fire_waits_for_one(
    client: Any, api: Any, report: Any, site: Any, clock: FixedClock
) -> None:
    # A beat last seen 16 s ago: 3 x dbeat_max_interval (5 s) has passed.
    insert_beat(site.sqlite_url, "host-a:4242", clock.now() - timedelta(seconds=16))
    response = act(client, "trigger", report.id)
    (fire,) = api.history("report")
    assert levels_and_messages(response) == [
        (
            "warning",
            f"Triggered: report (task id {fire.task_id}), but no beat is running (none seen "
            "within 15s): the fire is sent when a beat starts.",
        )
    ]


def test_triggering_with_a_beat_running_says_the_fire_is_being_sent_now(
    client: Any, api: Any, report: Any, site: Any, clock: FixedClock
) -> None:
    insert_beat(site.sqlite_url, "host-a:4242", clock.now() - timedelta(seconds=14))
    other = api.add("other", "proj.tasks.o", Every(60))
    response = act(client, "trigger", report.id, other.id)
    ids = {f.task_id for name in ("report", "other") for f in api.history(name)}
    assert len(ids) == 2  # one fire each
    ((level, message),) = levels_and_messages(response)
    assert level == "success"
    assert message.startswith("Triggered: other (task id ")
    assert message.endswith(": being sent now by the running beat host-a:4242.")
    assert all(task_id in message for task_id in ids)


def test_the_live_rule_follows_dbeat_max_interval(
    client: Any, api: Any, report: Any, site: Any, clock: FixedClock
) -> None:
    from django.test import override_settings

    from celery_dbeat.contrib.django import schedules

    insert_beat(site.sqlite_url, "host-a:4242", clock.now() - timedelta(seconds=16))
    with override_settings(CELERY_DBEAT_MAX_INTERVAL=10):
        wide = schedules()
        wide.clock = clock
        assert wide.live_within == timedelta(seconds=30)
        response = act(client, "trigger", report.id)
        assert levels_and_messages(response)[0][0] == "success"
        assert "live, seen 16 s ago" in text_of(client.get(BEATS))


def test_an_action_the_api_refuses_is_reported_by_name(
    client: Any, api: Any, clock: FixedClock
) -> None:
    done = api.add("done", "proj.tasks.d", Once(START + timedelta(minutes=1)))
    with api.store.engine.begin() as conn:
        conn.execute(
            sa.text("UPDATE dbeat_schedules SET enabled = :f, finished_at = :t WHERE id = :i"),
            {"f": False, "t": START, "i": done.id},
        )
    response = act(client, "resume", done.id)
    assert any(m.startswith("done: name='done': has finished") for m in messages_of(response))


def history_of(client: Any, pk: int) -> list[str]:
    """What the schedule's History page lists: each entry's action, oldest first."""
    response = client.get(f"{SCHEDULES}{pk}/history/")
    assert response.status_code == 200
    return [entry.get_change_message() for entry in response.context["action_list"]]


def test_pause_resume_and_run_now_are_recorded_in_the_history_as_edits_are(
    client: Any, api: Any, report: Any, clock: FixedClock
) -> None:
    act(client, "pause", report.id)
    act(client, "resume", report.id)
    act(client, "trigger", report.id)
    assert edit(client, report, args="[2]").status_code == 302
    (fire,) = api.history("report")
    assert history_of(client, report.id) == [
        "Paused: paused from the admin by admin.",
        "Resumed from now, without catch-up.",
        f"Run now: task id {fire.task_id}.",
        "Changed Args.",
    ]
    page = text_of(client.get(f"{SCHEDULES}{report.id}/history/"))
    assert f"Run now: task id {fire.task_id}." in page
    assert "admin" in page  # who did it


def test_an_action_the_api_refuses_is_not_recorded_in_the_history(
    client: Any, api: Any, report: Any
) -> None:
    act(client, "resume", report.id)  # already active: nothing to do, but not refused
    with api.store.engine.begin() as conn:
        conn.execute(
            sa.text("UPDATE dbeat_schedules SET enabled = false, finished_at = :t"), {"t": START}
        )
    act(client, "resume", report.id)  # refused: it has finished
    assert history_of(client, report.id) == ["Resumed from now, without catch-up."]


def test_deleting_removes_the_schedule_and_its_history_through_the_api(
    client: Any, api: Any, report: Any, site: Any
) -> None:
    insert_fire(site.sqlite_url, report.id, START)
    response = client.post(f"{SCHEDULES}{report.id}/delete/", {"post": "yes"}, follow=True)
    assert response.status_code == 200
    assert api.list() == []
    with api.store.engine.connect() as conn:
        assert conn.execute(sa.text("SELECT COUNT(*) FROM dbeat_fires")).scalar() == 0


def test_the_delete_selected_action_removes_each_schedule(
    client: Any, api: Any, report: Any
) -> None:
    other = api.add("other", "proj.tasks.o", Every(60))
    act(client, "delete_selected", report.id, other.id, post="yes")
    assert api.list() == []


# History and beats -------------------------------------------------------------------------------


@pytest.fixture
def history(api: Any, report: Any, site: Any) -> Any:
    url = site.sqlite_url
    insert_fire(
        url,
        report.id,
        START,
        task_id="11111111-1111-1111-1111-111111111111",
        beat="host-a:1",
        sent_at=START + timedelta(seconds=1, milliseconds=250),
    )
    insert_fire(
        url,
        report.id,
        START + timedelta(hours=1),
        status="failed",
        task_id="22222222-2222-2222-2222-222222222222",
        beat="host-b:2",
        attempts=7,
        error="ConnectionError: broker down",
    )
    other = api.add("other", "proj.tasks.o", Every(60))
    insert_fire(url, other.id, START, task_id="33333333-3333-3333-3333-333333333333")
    return report


def test_the_fire_history_shows_slot_sent_at_lag_beat_task_id_status_attempts_error(
    client: Any, history: Any
) -> None:
    response = client.get(f"{FIRES}?schedule__id__exact={history.id}")
    assert len(response.context["cl"].result_list) == 2
    page = text_of(response)
    for shown in (
        "1.250 s",
        "host-a:1",
        "11111111-1111-1111-1111-111111111111",
        "failed",
        "host-b:2",
        "ConnectionError: broker down",
        ">7<",
    ):
        assert shown in page


@pytest.mark.parametrize(
    ("query", "count"),
    [
        pytest.param("status__exact=failed", 1, id="status"),
        pytest.param("q=33333333", 1, id="search-task-id"),
        pytest.param("q=report", 2, id="search-schedule-name"),
        pytest.param("", 3, id="all"),
    ],
)
def test_the_fire_history_filters_and_searches(
    client: Any, history: Any, query: str, count: int
) -> None:
    response = client.get(f"{FIRES}?{query}")
    assert len(response.context["cl"].result_list) == count


def test_the_fire_history_is_read_only(client: Any, history: Any) -> None:
    from celery_dbeat.contrib.django.models import Fire

    fire = Fire.objects.filter(schedule_id=history.id).first()
    assert client.get(f"{FIRES}{fire.pk}/change/").status_code == 200
    assert client.post(f"{FIRES}{fire.pk}/change/", {"status": "sent"}).status_code == 403
    assert client.get(f"{FIRES}add/").status_code == 403
    assert client.post(f"{FIRES}{fire.pk}/delete/", {"post": "yes"}).status_code == 403


def test_the_change_page_lists_recent_fires_and_links_the_full_history(
    client: Any, history: Any
) -> None:
    page = text_of(client.get(change_url(history.id)))
    assert "ConnectionError: broker down" in page
    assert f"{FIRES}?schedule__id__exact={history.id}" in page


def test_the_beats_page_lists_running_beats(client: Any, site: Any) -> None:
    insert_beat(site.sqlite_url, "host-a:4242", START)
    response = client.get(BEATS)
    assert listed(response) == ["host-a:4242"]
    assert client.get(f"{BEATS}add/").status_code == 403


def test_the_beats_page_says_live_by_the_trigger_actions_rule(
    client: Any, site: Any, clock: FixedClock
) -> None:
    insert_beat(site.sqlite_url, "host-a:1", clock.now() - timedelta(seconds=15))
    insert_beat(site.sqlite_url, "host-b:2", clock.now() - timedelta(seconds=16))
    page = text_of(client.get(BEATS))
    assert "live, seen 15 s ago" in page
    assert "silent, seen 16 s ago" in page


# Backfill ----------------------------------------------------------------------------------------


def test_the_backfill_action_asks_for_the_range_counts_then_queues_and_records_it(
    client: Any, api: Any, clock: FixedClock
) -> None:
    hourly = api.add(
        "hourly", "proj.tasks.h", Cron("0 * * * *"), start_at=START - timedelta(hours=12)
    )
    clock.set(START + timedelta(minutes=1))
    page = act(client, "backfill", hourly.id)
    assert page.templates[0].name == "admin/celery_dbeat/backfill.html"
    assert "Schedules: <code>hourly</code>" in text_of(page)
    rng = {"start": "2024-05-06T03:00:00Z", "end": "2024-05-06T08:00:00Z", "limit": "100"}

    dry = act(client, "backfill", hourly.id, apply="yes", dry_run="on", **rng)

    assert dry.templates[0].name == "admin/celery_dbeat/backfill.html"  # stays on the page
    assert messages_of(dry) == [
        "would queue 6 fire(s) of 'hourly' from 2024-05-06T03:00:00Z to 2024-05-06T08:00:00Z"
        " (0 of the 6 slot(s) in the range already sent or on their way); beats send them"
        " behind on-time fires"
    ]
    assert api.history("hourly") == []

    done = act(client, "backfill", hourly.id, apply="yes", **rng)

    assert listed(done) == ["hourly"]  # back on the list
    assert any(m.startswith("queued 6 fire(s) of 'hourly'") for m in messages_of(done))
    # The six slots wait as one queued run.
    assert [
        (f.slot, f.first_slot, f.slot_count, f.status, f.origin) for f in api.history("hourly")
    ] == [(START - timedelta(hours=1), START - timedelta(hours=6), 6, "queued", "backfill")]
    (entry,) = history_of(client, hourly.id)
    assert entry.startswith("Backfill: queued 6 fire(s) of 'hourly'")
    backfilled = [e for e in api.audit("hourly") if e.action == "backfill"]
    assert [(e.actor, e.surface) for e in backfilled] == [("admin", "django-admin")]


def test_a_backfill_dry_run_names_the_days_the_calendar_removes_and_a_paused_schedule_waiting(
    client: Any, api: Any, clock: FixedClock
) -> None:
    api.calendars.add("bank", dates="2024-05-04")
    daily = api.add(
        "daily", "proj.tasks.d", Cron("0 3 * * *"), start_at=START - timedelta(days=6),
        calendar="bank",
    )  # fmt: skip
    api.pause("daily")
    clock.set(START + timedelta(minutes=1))
    rng = {"start": "2024-05-01T00:00:00Z", "end": "2024-05-06T08:00:00Z", "limit": "100"}

    dry = act(client, "backfill", daily.id, apply="yes", dry_run="on", **rng)

    assert messages_of(dry) == [
        "would queue 5 fire(s) of 'daily' from 2024-05-01T03:00:00Z to 2024-05-06T03:00:00Z"
        " (0 of the 5 slot(s) in the range already sent or on their way; 1 excluded by calendar"
        " 'bank', never sent (2024-05-04T03:00:00Z)); 'daily' is paused: they wait, and once it"
        " is resumed beats send them behind on-time fires"
    ]


def test_the_backfill_action_leaves_pruned_slots_unless_resend_is_ticked(
    client: Any, api: Any, clock: FixedClock
) -> None:
    hourly = api.add(
        "hourly", "proj.tasks.h", Cron("0 * * * *"), start_at=START - timedelta(hours=12)
    )
    clock.set(START + timedelta(minutes=1))
    rng = {"start": "2024-05-06T06:00:00Z", "end": "2024-05-06T08:00:00Z", "limit": "100"}
    act(client, "backfill", hourly.id, apply="yes", **rng)
    with api.store.engine.begin() as conn:  # the beats sent them; then their history aged out
        conn.execute(sa.update(F).values(status="sent"))
    prune_history(api.store.engine, START)

    left = act(client, "backfill", hourly.id, apply="yes", **rng)
    resent = act(client, "backfill", hourly.id, apply="yes", resend="on", **rng)

    assert "3 at or before 2024-05-06T08:00:00Z, whose history was pruned" in messages_of(left)[0]
    assert messages_of(resent)[0].startswith("queued 3 fire(s) of 'hourly'")
    assert "3 of them at or before 2024-05-06T08:00:00Z" in messages_of(resent)[0]


def test_the_fire_history_marks_a_backfills_fires_as_dbeat_history_does_and_filters_by_it(
    client: Any, api: Any, clock: FixedClock, site: Any
) -> None:
    hourly = api.add(
        "hourly", "proj.tasks.h", Cron("0 * * * *"), start_at=START - timedelta(hours=12)
    )
    insert_fire(site.sqlite_url, hourly.id, START)  # beat's own, on time
    clock.set(START + timedelta(minutes=1))
    api.backfill("hourly", START - timedelta(hours=3), START - timedelta(hours=1))  # one run

    page = client.get(f"{FIRES}?schedule__id__exact={hourly.id}").content.decode()
    backfilled = client.get(f"{FIRES}?origin=backfill").context["cl"].result_list
    own = client.get(f"{FIRES}?origin=none").context["cl"].result_list

    assert re.findall(r'<td class="field-origin">(.*?)</td>', page) == ["-", "backfill"]
    assert [(f.slot, f.slot_count) for f in backfilled] == [(START - timedelta(hours=1), 3)]
    assert [f.slot for f in own] == [START]
    assert "08:00:00 UTC (backfill)" in text_of(client.get(change_url(hourly.id)))


def test_a_bad_backfill_range_is_shown_on_its_field_and_records_nothing(
    client: Any, api: Any, clock: FixedClock
) -> None:
    hourly = api.add(
        "hourly", "proj.tasks.h", Cron("0 * * * *"), start_at=START - timedelta(hours=12)
    )
    clock.set(START + timedelta(minutes=1))

    page = act(
        client,
        "backfill",
        hourly.id,
        apply="yes",
        start="yesterday",
        end="2024-05-06T08:00:00",
        limit="5",
    )

    errors = page.context["form"].errors
    assert errors["start"] == [
        "'yesterday' is not an ISO-8601 instant such as 2024-03-09T00:00:00Z"
    ]
    assert errors["end"] == ["'2024-05-06T08:00:00' needs a time zone offset, e.g. +00:00 or Z"]
    refused = act(
        client,
        "backfill",
        hourly.id,
        apply="yes",
        start="2024-05-05T00:00:00Z",
        end="2024-05-06T08:00:00Z",
        limit="5",
    )
    (message,) = messages_of(refused)
    assert message.startswith("hourly: ")
    assert "holds more than 5 slots (the limit)" in message
    assert api.history("hourly") == []
    assert history_of(client, hourly.id) == []


def test_the_list_links_to_the_next_24_hours(client: Any) -> None:
    page = client.get(SCHEDULES).content.decode()
    assert f'<a href="{SCHEDULES}load/" id="dbeat-load-link">Next 24 hours</a>' in page
    assert client.get(f"{SCHEDULES}load/").status_code == 200
