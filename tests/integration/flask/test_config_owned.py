"""A schedule from beat_schedule in Flask-Admin: the API's rule and words (ConfigOwned).

An edit is refused, on the "Edit anyway" box and in a flash, until the box is ticked; a delete
is refused (one by one in a bulk delete, the others deleted); pause, resume and run now stay
allowed.
"""

from __future__ import annotations

import html
import re
from typing import Any

import pytest

from celery_dbeat import ConfigOwned, Every
from celery_dbeat.api import Schedules
from celery_dbeat.core.definitions import Definition
from celery_dbeat.store.sync import sync_config
from tests.integration.conftest import START
from tests.integration.flask.helpers import ON_SQLITE_AND_POSTGRESQL, Browser, field_errors, flashes
from tests.integration.flask.test_schedules import edit, schedule_id

NIGHTLY = Definition.create(name="nightly", task="proj.tasks.nightly", schedule=Every(3600))
REFUSED = ConfigOwned("nightly").told(ConfigOwned.TICK_EDIT_ANYWAY)


@pytest.fixture
def nightly(api: Schedules) -> Schedules:
    """``nightly`` synced from beat_schedule, beside ``own``, made through the API."""
    sync_config(api.store, [NIGHTLY], START)
    api.add("own", "proj.tasks.own", Every(60))
    return api


def box(page: str) -> str | None:
    """The "Edit anyway" checkbox of an edit page, if it has one."""
    found = re.search(r'<input[^>]*\bid="force"[^>]*>', page)
    return found.group(0) if found else None


def test_the_edit_page_of_a_beat_schedule_entry_says_so_and_offers_the_box_others_do_not(
    nightly: Schedules, admin: Browser
) -> None:
    page = admin.get(f"/admin/schedules/edit/?id={schedule_id(nightly, 'nightly')}")
    other = admin.get(f"/admin/schedules/edit/?id={schedule_id(nightly, 'own')}")

    assert 'type="checkbox"' in (box(page) or "")
    assert ConfigOwned.EDIT_ANYWAY in page
    note = re.search(r'id="dbeat-config-owned">(.*?)</p>', page, re.S)
    assert note is not None
    assert html.unescape(note.group(1)) == ConfigOwned.ADMIN_NOTE
    assert box(other) is None
    assert "dbeat-config-owned" not in other


@ON_SQLITE_AND_POSTGRESQL
def test_an_edit_is_refused_without_the_box_in_the_apis_words_and_saved_with_it(
    nightly: Schedules, admin: Browser
) -> None:
    before = nightly.get("nightly")

    refused = edit(admin, nightly, "nightly", every="2h")
    unchanged = nightly.get("nightly")
    saved = edit(admin, nightly, "nightly", every="2h", force="y")

    assert field_errors(refused, "force") == [REFUSED]
    assert f"danger: Schedule not saved: {REFUSED}" in flashes(refused)
    assert REFUSED == (
        "'nightly' comes from beat_schedule, and the next beat start (or `dbeat sync`) puts its "
        "definition back: change beat_schedule instead (`dbeat sync --dry-run` shows what a sync "
        'does), or tick "Edit anyway" to have it changed until then'
    )
    assert unchanged == before
    assert f"warning: Saved, but {ConfigOwned.forced('nightly')}." in flashes(saved)
    assert nightly.get("nightly").schedule == Every(7200)


def test_pause_and_resume_by_form_or_action_and_run_now_stay_allowed(
    nightly: Schedules, admin: Browser
) -> None:
    edit(admin, nightly, "nightly", enabled="")
    paused = nightly.get("nightly").state
    resumed = flashes(admin.action("resume", [schedule_id(nightly, "nightly")]))
    admin.action("pause", [schedule_id(nightly, "nightly")])
    triggered = flashes(admin.action("trigger", [schedule_id(nightly, "nightly")]))

    assert paused == "paused"
    assert resumed == ["success: Resumed 1 schedule(s): nightly"]
    assert nightly.get("nightly").state == "paused"
    assert triggered[0].startswith("warning: Run now recorded for 1 schedule(s): nightly")
    assert [fire.manual for fire in nightly.history("nightly")] == [True]


@ON_SQLITE_AND_POSTGRESQL
def test_a_delete_is_refused_and_a_bulk_delete_deletes_only_the_others(
    nightly: Schedules, admin: Browser
) -> None:
    words = ConfigOwned("nightly", removal=True).told(None)
    ids: list[Any] = [schedule_id(nightly, "nightly"), schedule_id(nightly, "own")]

    single = admin.post("/admin/schedules/delete/", {"id": ids[0]})
    bulk = admin.action("delete", ids)

    assert f"danger: Schedule 'nightly' not deleted: {words}" in flashes(single)
    assert flashes(bulk) == [
        f"danger: Schedule 'nightly' not deleted: {words}",
        "success: Deleted 1 schedule(s): own",
    ]
    assert [info.name for info in nightly.list()] == ["nightly"]
