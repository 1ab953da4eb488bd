"""The schedule form: every kind (solar included), only the chosen kind's fields read and shown,
an error only on a field whose own value is bad, the project's task names suggested, and an
unknown task name warned about after the save."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest

from celery_dbeat import Every, Solar
from celery_dbeat.clock import FixedClock
from tests.integration.django.support import (
    ADD,
    SCHEDULES,
    START,
    change_url,
    edit,
    form_data,
    form_errors,
    messages_of,
    text_of,
)

# Kinds -------------------------------------------------------------------------------------------


def test_every_kind_is_offered_solar_included(client: Any) -> None:
    page = client.get(ADD).content.decode()
    select = re.search(r'<select name="kind".*?</select>', page, re.S)
    assert select is not None
    assert re.findall(r'<option value="(\w+)"', select.group(0)) == [
        "cron",
        "rrule",
        "interval",
        "once",
        "solar",
    ]


def test_a_solar_schedule_is_created_in_the_form_listed_and_saved_unchanged(
    client: Any, api: Any, clock: FixedClock
) -> None:
    data = form_data(
        name="lights", kind="solar", solar_event="sunset", latitude="48.85", longitude="2.35"
    )
    response = client.post(ADD, data)
    assert response.status_code == 302, form_errors(response)
    info = api.get("lights")
    assert info.schedule == Solar("sunset", 48.85, 2.35)
    assert info.next_run_at is not None
    assert START < info.next_run_at < START + timedelta(days=1)
    assert "sunset at 48.85, 2.35" in text_of(client.get(SCHEDULES))
    clock.set(START + timedelta(minutes=1))
    assert edit(client, info).status_code == 302
    after = api.get("lights")
    assert (after.schedule, after.next_run_at, after.version) == (
        info.schedule,
        info.next_run_at,
        info.version,
    )


@pytest.mark.parametrize(
    ("fields", "error_field", "message"),
    [
        pytest.param({}, "solar_event", "is required for a solar schedule", id="no-event"),
        pytest.param(
            {"solar_event": "sunset", "latitude": "91", "longitude": "2"},
            "latitude",
            "must be between -90 and 90",
            id="latitude-out-of-range",
        ),
        pytest.param(
            {"solar_event": "sunset", "latitude": "48", "longitude": "east"},
            "longitude",
            "must be a number",
            id="longitude-not-a-number",
        ),
    ],
)
def test_a_bad_solar_field_is_refused_on_its_field(
    client: Any, api: Any, fields: dict[str, str], error_field: str, message: str
) -> None:
    errors = form_errors(client.post(ADD, form_data(name="lights", kind="solar", **fields)))
    assert list(errors) == [error_field]
    assert message in errors[error_field][0]
    assert api.list() == []


def test_the_fields_of_other_kinds_are_ignored(client: Any, api: Any, clock: FixedClock) -> None:
    data = form_data(name="poll", kind="interval", every="45s", cron="61 * * * *")
    data.update(timezone="Mars/Olympus", run_at="soon", latitude="200", solar_event="noonish")
    response = client.post(ADD, data)
    assert response.status_code == 302, form_errors(response)
    assert api.get("poll").schedule == Every(45)


def test_each_kinds_fields_are_in_a_fieldset_the_kind_menus_script_shows_alone(
    client: Any,
) -> None:
    page = client.get(ADD).content.decode()
    groups = re.findall(r'<fieldset class="([^"]*dbeat-kind [^"]*)".*?</fieldset>', page, re.S)
    found = {}
    for classes in groups:
        match = re.search(rf'<fieldset class="{classes}".*?</fieldset>', page, re.S)
        assert match is not None
        kinds = tuple(c.removeprefix("dbeat-kind-") for c in classes.split() if "-kind-" in c)
        found[kinds] = re.findall(r'name="(\w+)"', match.group(0))
    # The zone and its DST rules show for cron and rrule alike.
    assert found == {
        ("cron",): ["cron", "cron_days"],
        ("rrule",): ["rrule"],
        ("cron", "rrule"): ["timezone", "dst_gap", "dst_fold"],
        ("interval",): ["every"],
        ("once",): ["run_at"],
        ("solar",): ["solar_event", "latitude", "longitude"],
    }
    assert 'document.getElementById("id_kind")' in page


# Errors only where they are ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "bad"),
    [
        pytest.param(
            {"kind": "interval", "every": "90s", "args": "["}, {"args"}, id="args-not-every"
        ),
        pytest.param(
            {"cron": "61 * * * *", "misfire_grace": "5m", "jitter": "30s", "max_run_time": "2h"},
            {"cron"},
            id="cron-not-durations",
        ),
        pytest.param(
            {"cron": "bad", "timezone": "Europe/Paris", "args": "[1]"}, {"cron"}, id="cron-only"
        ),
        pytest.param(
            {"cron": "bad", "timezone": "Mars/Olympus", "args": "[", "misfire_grace": "soon"},
            {"cron", "timezone", "args", "misfire_grace"},
            id="each-bad-field",
        ),
        pytest.param(
            {"kind": "solar", "solar_event": "sunrise", "latitude": "95", "longitude": "500"},
            {"latitude", "longitude"},
            id="both-solar-coordinates",
        ),
        pytest.param(
            {"start_at": "2025-02-01T00:00:00Z", "end_at": "2025-01-01T00:00:00Z", "args": "x"},
            {"args", "end_at"},
            id="bounds-crossed-and-args",
        ),
    ],
)
def test_an_error_is_shown_on_each_bad_field_and_on_no_good_one(
    client: Any, api: Any, fields: dict[str, str], bad: set[str]
) -> None:
    errors = form_errors(client.post(ADD, form_data(name="x", **fields)))
    assert set(errors) == bad
    for field, messages in errors.items():
        (message,) = messages
        assert message.startswith(f"{field}="), message
    assert api.list() == []


# Task names ---------------------------------------------------------------------------------------


@pytest.mark.usefixtures("celery_app")
def test_the_task_field_suggests_the_apps_task_names_in_a_datalist(client: Any) -> None:
    page = client.get(ADD).content.decode()
    assert re.search(r'<input[^>]*name="task"[^>]*list="id_task_names"', page)
    datalist = re.search(r'<datalist id="id_task_names">(.*?)</datalist>', page, re.S)
    assert datalist is not None
    offered = re.findall(r'value="([^"]+)"', datalist.group(1))
    # (and any shared_task this test process defined: they register with every app)
    assert {"proj.tasks.poll", "proj.tasks.report"} <= set(offered)
    assert offered == sorted(offered)
    assert not [name for name in offered if name.startswith("celery.")]


def test_without_a_celery_app_the_task_field_has_no_datalist(client: Any) -> None:
    page = client.get(ADD).content.decode()
    assert "<datalist" not in page
    assert re.search(r'<input[^>]*name="task"', page)


@pytest.mark.usefixtures("celery_app")
def test_an_unknown_task_name_is_saved_with_a_warning(client: Any, api: Any) -> None:
    response = client.post(ADD, form_data(name="typo", task="proj.tasks.reprot"), follow=True)
    assert api.get("typo").task == "proj.tasks.reprot"
    (warning,) = [m for m in response.context["messages"] if m.level_tag == "warning"]
    assert (
        "'proj.tasks.reprot' (did you mean proj.tasks.report?) is not registered in the Celery "
        "app 'proj'"
    ) in str(warning)
    assert any("was added successfully" in m for m in messages_of(response))


@pytest.mark.usefixtures("celery_app")
def test_a_registered_task_name_is_saved_without_a_warning(client: Any, api: Any) -> None:
    response = client.post(ADD, form_data(name="ok", task="proj.tasks.report"), follow=True)
    assert api.get("ok").task == "proj.tasks.report"
    assert [m.level_tag for m in response.context["messages"]] == ["success"]


# Serializers ------------------------------------------------------------------------------------


def test_a_serializer_the_project_app_accepts_is_saved(
    client: Any, api: Any, celery_app: Any
) -> None:
    posted = form_data(name="p", options='{"serializer": "pickle"}')
    refused = form_errors(client.post(ADD, posted))["options"]
    assert "is not in the app's accept_content ['json']" in refused[0]

    celery_app.conf.accept_content = ["json", "pickle"]
    client.post(ADD, posted, follow=True)

    assert api.get("p").options == {"serializer": "pickle"}


# Paused schedules -------------------------------------------------------------------------------


def test_a_paused_schedule_shows_no_next_run_on_the_list_and_change_pages(
    client: Any, api: Any, clock: FixedClock
) -> None:
    info = api.add("poll", "proj.tasks.poll", Every(60))
    api.add("other", "proj.tasks.poll", Every(60))
    api.pause("poll")
    next_run = "2024-05-06 09:01:00 UTC"
    listing = text_of(client.get(SCHEDULES))
    assert "none (paused)" in listing
    assert listing.count(next_run) == 1  # the active schedule's
    page = text_of(client.get(change_url(info.id)))
    assert "none (paused)" in page
    assert "none while paused; resumed now (without catch-up), it would fire at:" in page
    api.resume("poll")
    assert "none (paused)" not in text_of(client.get(change_url(info.id)))


# Slot arguments ---------------------------------------------------------------------------------


def test_the_slot_keywords_are_set_in_their_own_fieldset_and_saved(client: Any, api: Any) -> None:
    page = client.get(ADD).content.decode()
    assert "Slot arguments" in page
    posted = form_data(name="s", slot_kwarg="slot", previous_slot_kwarg="previous")
    assert client.post(ADD, posted).status_code == 302
    info = api.get("s")
    assert (info.slot_kwarg, info.previous_slot_kwarg) == ("slot", "previous")
    refused = form_errors(client.post(ADD, form_data(name="t", slot_kwarg="the slot")))
    assert "Python identifier" in refused["slot_kwarg"][0]


@pytest.mark.usefixtures("celery_app")
def test_a_slot_keyword_the_project_apps_task_cannot_take_is_refused_on_its_field(
    client: Any, api: Any
) -> None:
    posted = form_data(name="r", task="proj.tasks.report", args="[]", slot_kwarg="slot")
    refused = form_errors(client.post(ADD, posted))
    assert "task 'proj.tasks.report' takes no keyword argument 'slot'" in refused["slot_kwarg"][0]
    assert api.list() == []
    # A task the app does not register: only its workers can say.
    client.post(ADD, form_data(name="r", task="proj.tasks.elsewhere", slot_kwarg="slot"))
    assert api.get("r").slot_kwarg == "slot"
