"""The schedule form: every spec kind (solar included) in its own labelled group, errors only on
the field at fault, the registered task names as suggestions, and the documented example app."""

from __future__ import annotations

import base64
import html
import json
import logging
import re
import sys
import textwrap
import types
from collections.abc import Iterator
from typing import Any

import pytest
from celery import Celery
from flask import Flask

import celery_dbeat.contrib.flask
from celery_dbeat import Every, Solar
from celery_dbeat.api import Schedules
from celery_dbeat.core.definitions import FORM_FIELDS, SPEC_COLUMNS
from celery_dbeat.core.fields import KIND_FIELDS, KIND_GROUPS
from celery_dbeat.core.timing.solar import EVENTS
from celery_dbeat.task_names import unknown_task_warning
from tests.bad_inputs import BadInput, bad_input_params
from tests.integration.flask.helpers import Browser, field_errors, flashes, make_app, rows
from tests.integration.flask.test_schedules import edit, form, schedule_id, shown_values

# Kinds and their fields --------------------------------------------------------------------------


def select_options(page: str, field: str) -> list[str]:
    select = re.search(rf'<select[^>]*id="{field}".*?</select>', page, re.S)
    assert select is not None, field
    return re.findall(r'value="([^"]*)"', select.group(0))


def fieldsets(page: str) -> dict[str, list[str]]:
    """The form fields inside each ``fieldset[data-dbeat-kind]``, by its kinds."""
    found = re.findall(
        r'<fieldset[^>]*data-dbeat-kind="([\w ]+)"[^>]*>(.*?)</fieldset>', page, re.S
    )
    return {kinds: re.findall(r'\bid="(\w+)"', body) for kinds, body in found}


def test_the_kind_select_offers_every_spec_kind_solar_included(admin: Browser) -> None:
    page = admin.get("/admin/schedules/new/")
    assert select_options(page, "kind") == ["cron", "rrule", "interval", "once", "solar"]
    assert select_options(page, "solar_event") == ["", *EVENTS]
    assert "solar: sunrise, sunset, dawn, dusk or solar noon at a place" in page


def test_each_kinds_fields_are_grouped_under_a_legend_naming_the_kind(admin: Browser) -> None:
    page = admin.get("/admin/schedules/new/")
    # The zone and its DST rules are one group, shown for cron and rrule.
    assert fieldsets(page) == {" ".join(kinds): list(fields) for kinds, fields in KIND_GROUPS}
    assert fieldsets(page)["cron rrule"] == ["timezone", "dst_gap", "dst_fold"]
    for kinds, _ in KIND_GROUPS:  # what a browser without the script shows above each group
        assert f"For kind <code>{' or '.join(kinds)}</code></legend>" in page
    # Every spec field is in exactly one group; the other fields stay outside the groups.
    grouped = [name for _, fields in KIND_GROUPS for name in fields]
    assert sorted(grouped) == sorted(c for c in SPEC_COLUMNS if c != "kind")
    assert [f for f in FORM_FIELDS if re.search(rf'\bid="{f}"', page)] == list(FORM_FIELDS)


def test_a_solar_schedule_is_created_listed_and_edited_from_the_form(
    api: Schedules, admin: Browser
) -> None:
    fields = {"kind": "solar", "solar_event": "sunset", "latitude": "48.85", "longitude": "2.35"}
    page = admin.post("/admin/schedules/new/", form(name="lights", cron="", **fields))
    assert "success: Record was successfully created." in flashes(page)
    lights = api.get("lights")
    assert lights.schedule == Solar("sunset", 48.85, 2.35)
    [row] = rows(page)
    assert row["spec"] == "solar sunset at 48.85, 2.35"
    assert row["next_run_at"] == "2024-05-06 19:13:50 UTC"  # Paris, 6 May 2024: 21:13 CEST

    url = f"/admin/schedules/edit/?id={schedule_id(api, 'lights')}"
    shown = shown_values(admin.get(url))
    assert {key: shown[key] for key in fields} == fields
    edit(admin, api, "lights", solar_event="sunrise")
    assert api.get("lights").schedule == Solar("sunrise", 48.85, 2.35)


def test_the_kind_filter_offers_solar(api: Schedules, admin: Browser) -> None:
    api.add("lights", "proj.tasks.lights", Solar("sunset", 48.85, 2.35))
    api.add("poll", "proj.tasks.poll", Every(30))
    page = admin.get("/admin/schedules/")
    found = re.search(r'<div id="filter-groups-data" class="d-none">(.*?)</div>', page, re.S)
    assert found is not None
    [kind_filter] = json.loads(html.unescape(found.group(1)))["Kind"]
    assert [value for value, _ in kind_filter["options"]] == list(KIND_FIELDS)
    filtered = admin.get(f"/admin/schedules/?flt0_{kind_filter['arg']}=solar")
    assert [r["name"] for r in rows(filtered)] == ["lights"]


# Errors stay on their own field ------------------------------------------------------------------

#: Valid values, none of them the default, in the fields a bad input does not touch.
OTHER_VALUES = {
    "timezone": "Europe/Paris",
    "args": '["keep"]',
    "kwargs": '{"a": 1}',
    "options": '{"queue": "io"}',
    "max_runs": "3",
    "misfire_grace": "90m",
}
SOLAR_BAD_INPUTS = [
    BadInput("solar-latitude", {"kind": "solar", "latitude": "91", "longitude": "2"}, "latitude"),
    BadInput(
        "solar-longitude", {"kind": "solar", "latitude": "1", "longitude": "east"}, "longitude"
    ),
    BadInput(
        "solar-no-event", {"kind": "solar", "solar_event": "", "latitude": "1"}, "solar_event"
    ),
]


@pytest.mark.parametrize(
    "case", [*bad_input_params(), *(pytest.param(c, id=c.id) for c in SOLAR_BAD_INPUTS)]
)
def test_a_bad_value_marks_only_its_own_field_and_keeps_the_others_as_typed(
    api: Schedules, admin: Browser, case: BadInput
) -> None:
    solar = {"solar_event": "sunset", "latitude": "48.85", "longitude": "2.35"}
    posted = form(**{**OTHER_VALUES, **solar, **case.fields})
    page = admin.post("/admin/schedules/new/", posted)
    field = case.error_field.split(".")[0]
    assert field_errors(page, field), "the bad field has its error"
    assert page.count("is-invalid") == 1, "no other field is marked invalid"
    for other in FORM_FIELDS:
        if other != field:
            assert field_errors(page, other) == [], other
    shown = shown_values(page)
    assert {k: shown[k] for k in posted if k != field and k in shown} == {
        k: v for k, v in posted.items() if k != field and k in shown
    }
    assert api.list() == []


# Task names ------------------------------------------------------------------------------------


def datalist(page: str) -> list[str] | None:
    found = re.search(r'<datalist id="dbeat-task-names">(.*?)</datalist>', page, re.S)
    return None if found is None else re.findall(r'<option value="([^"]*)">', found.group(1))


def test_the_task_field_suggests_the_registered_task_names(api: Schedules) -> None:
    registered = ["proj.tasks.report", "celery.backend_cleanup"]
    app, _ = make_app(api, task_names=lambda: registered)
    admin = Browser(app.test_client())
    page = admin.get("/admin/schedules/new/")
    assert re.search(r'<input[^>]*id="task"[^>]*list="dbeat-task-names"', page)
    assert datalist(page) == ["celery.backend_cleanup", "proj.tasks.report"]
    registered.append("proj.tasks.late")  # asked again on each page
    admin.post("/admin/schedules/new/", form(name="r", task="proj.tasks.report"))
    edit_page = admin.get(f"/admin/schedules/edit/?id={schedule_id(api, 'r')}")
    assert datalist(edit_page) == [
        "celery.backend_cleanup",
        "proj.tasks.late",
        "proj.tasks.report",
    ]


def test_a_task_name_not_registered_is_saved_with_a_warning(api: Schedules) -> None:
    app, _ = make_app(api, task_names=["proj.tasks.report"])
    admin = Browser(app.test_client())
    page = admin.post("/admin/schedules/new/", form(name="typo", task="proj.tasks.reprot"))
    assert flashes(page) == [
        "warning: Saved, but task 'proj.tasks.reprot' (did you mean proj.tasks.report?) is not "
        "registered in this Celery app: "
        "beat sends it all the same, but only a worker that registers this name can run it; "
        "check the name, and that your workers import the module that defines it (defined "
        "only in the workers' code is fine).",
        "success: Record was successfully created.",
    ]
    assert api.get("typo").task == "proj.tasks.reprot"
    page = edit(admin, api, "typo", task="proj.tasks.report")
    assert flashes(page) == ["success: Record was successfully saved."]


def test_with_an_api_that_knows_the_app_an_unknown_task_is_warned_once_not_logged_too(
    api: Schedules, database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    celery_app = Celery("proj", set_as_current=False)
    celery_app.conf.dbeat_database_url = database_url
    app_api = Schedules.from_app(celery_app)  # logs an unknown task for code that calls it
    registered = ["proj.tasks.report"]
    app, _ = make_app(app_api, task_names=registered)
    admin = Browser(app.test_client())

    with caplog.at_level(logging.WARNING, logger="celery_dbeat"):
        created = admin.post("/admin/schedules/new/", form(name="typo", task="proj.tasks.reprot"))
        edited = edit(admin, api, "typo", task="proj.tasks.other")
    app_api.close()

    assert [f for f in flashes(created) + flashes(edited) if "not registered" in f] == [
        f"warning: Saved, but {unknown_task_warning(['proj.tasks.reprot'], known=registered)}.",
        f"warning: Saved, but {unknown_task_warning(['proj.tasks.other'], known=registered)}.",
    ]
    assert [r.getMessage() for r in caplog.records if "not registered" in r.getMessage()] == []


def test_without_task_names_the_form_suggests_and_warns_nothing(
    api: Schedules, admin: Browser
) -> None:
    page = admin.get("/admin/schedules/new/")
    assert datalist(page) is None
    assert 'list="dbeat-task-names"' not in page
    page = admin.post("/admin/schedules/new/", form(task="anything.at.all"))
    assert flashes(page) == ["success: Record was successfully created."]


def test_task_names_given_as_one_string_are_refused(api: Schedules) -> None:
    with pytest.raises(TypeError, match="task_names: give a list of task names or a function"):
        make_app(api, task_names="proj.tasks.report")


# The documented example --------------------------------------------------------------------------


def docstring_example() -> str:
    """The code block of ``celery_dbeat.contrib.flask``'s docstring."""
    doc = celery_dbeat.contrib.flask.__doc__ or ""
    block = doc.split("::\n\n", 1)[1]
    lines = []
    for line in block.splitlines():
        if line and not line.startswith("    "):
            break
        lines.append(line)
    return textwrap.dedent("\n".join(lines))


@pytest.fixture
def documented_app(
    api: Schedules, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Flask]:
    """The docstring's app, run as written, with ``proj.celery`` standing for the reader's."""
    celery_app = Celery("proj", set_as_current=False)
    celery_app.conf.dbeat_database_url = database_url

    @celery_app.task(name="proj.tasks.report", shared=False)  # not in every later app
    def report() -> None: ...

    proj = types.ModuleType("proj")
    proj_celery = types.ModuleType("proj.celery")
    proj_celery.app = celery_app  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "proj", proj)
    monkeypatch.setitem(sys.modules, "proj.celery", proj_celery)
    monkeypatch.setenv("FLASK_SECRET_KEY", "documented")
    monkeypatch.setenv("OPS_PASSWORD", "hunter2")
    namespace: dict[str, Any] = {"__name__": "documented_example"}
    exec(compile(docstring_example(), "docstring", "exec"), namespace)
    app: Flask = namespace["app"]
    yield app
    for admin in app.extensions["admin"]:
        for view in admin._views:
            if hasattr(view, "schedules"):
                view.schedules.close()


def test_the_documented_example_runs_with_the_flask_extra_alone(documented_app: Flask) -> None:
    client = documented_app.test_client()
    refused = client.get("/admin/schedules/")
    assert refused.status_code == 401
    assert refused.headers["WWW-Authenticate"] == 'Basic realm="schedules"'
    wrong = base64.b64encode(b"ops:nope").decode()
    wrong_response = client.get("/admin/schedules/", headers={"Authorization": f"Basic {wrong}"})
    assert wrong_response.status_code == 401
    token = base64.b64encode(b"ops:hunter2").decode()
    page = client.get("/admin/schedules/new/", headers={"Authorization": f"Basic {token}"})
    assert page.status_code == 200
    suggested = datalist(page.get_data(as_text=True))
    assert suggested is not None
    assert "proj.tasks.report" in suggested
