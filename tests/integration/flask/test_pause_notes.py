"""Flask-Admin's pause action takes a typed note (the list page's note box, sent with the action
form), checked as the API checks a pause's note: a refused note is shown on the page and pauses
nothing; left empty, the note says the pause came from the admin."""

from __future__ import annotations

import re

import pytest

from celery_dbeat import Every
from celery_dbeat.api import Schedules
from celery_dbeat.core.definitions import MAX_PAUSE_NOTE
from tests.integration.flask.helpers import Browser, flashes


def _two(api: Schedules) -> list[int]:
    return [api.add(name, "proj.tasks.t", Every(60)).id for name in ("poll", "report")]


def test_the_list_page_has_a_note_box_sent_with_the_action_form(admin: Browser) -> None:
    page = admin.get("/admin/schedules/")

    (box,) = re.findall(r'<input[^>]*id="dbeat-pause-note"[^>]*>', page)
    assert 'name="pause_note"' in box
    assert 'form="action_form"' in box
    assert f'maxlength="{MAX_PAUSE_NOTE}"' in box
    assert 'id="action_form"' in page


def test_a_typed_note_is_the_pause_note_of_every_selected_schedule(
    api: Schedules, admin: Browser
) -> None:
    ids = _two(api)

    page = admin.action("pause", ids, pause_note="  alice: mail server down (INC-42) ")

    assert "success: Paused 2 schedule(s): poll, report" in flashes(page)
    assert {api.get(n).pause_note for n in ("poll", "report")} == {
        "alice: mail server down (INC-42)"
    }
    assert "alice: mail server down (INC-42)" in admin.get("/admin/schedules/")


def test_an_empty_note_falls_back_to_the_admins_own(api: Schedules, admin: Browser) -> None:
    ids = _two(api)

    admin.action("pause", ids, pause_note="   ")

    assert api.get("poll").pause_note == "paused from the admin"


@pytest.mark.parametrize(
    ("note", "problem"),
    [
        pytest.param("x" * (MAX_PAUSE_NOTE + 1), "is longer than 500 characters", id="long"),
        pytest.param("down\x07now", "contains the control character U+0007", id="control"),
    ],
)
def test_a_note_the_api_refuses_is_shown_on_the_page_and_pauses_nothing(
    api: Schedules, admin: Browser, note: str, problem: str
) -> None:
    ids = _two(api)

    page = admin.action("pause", ids, pause_note=note)

    (refused,) = [f for f in flashes(page) if f.startswith("danger")]
    assert refused.startswith("danger: Nothing paused: note=")
    assert problem in refused
    assert api.get("poll").enabled
    assert api.get("report").enabled
    assert [e.action for e in api.audit()] == ["create", "create"]
