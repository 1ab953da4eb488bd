"""A schedule from beat_schedule in the Django admin: the API's rule and words (ConfigOwned).

An edit is refused on the "Edit anyway" box until it is ticked; a delete is refused (one by one
in "Delete selected", the others deleted); pause, resume and run now stay allowed.
"""

from __future__ import annotations

from typing import Any

import pytest

from celery_dbeat import ConfigOwned, Every
from celery_dbeat.core.definitions import Definition
from celery_dbeat.store.sync import sync_config
from tests.integration.django.support import (
    SCHEDULES,
    START,
    change_url,
    edit,
    form_errors,
    messages_of,
)

NIGHTLY = Definition.create(name="nightly", task="proj.tasks.nightly", schedule=Every(3600))
REFUSED = ConfigOwned("nightly").told(ConfigOwned.TICK_EDIT_ANYWAY)


@pytest.fixture
def nightly(api: Any) -> Any:
    """``nightly`` synced from beat_schedule, beside ``own``, made through the API."""
    sync_config(api.store, [NIGHTLY], START)
    api.add("own", "proj.tasks.own", Every(60))
    return api.get("nightly")


def act(client: Any, action: str, *ids: int, **extra: str) -> Any:
    data = {"action": action, "_selected_action": [str(i) for i in ids], **extra}
    return client.post(SCHEDULES, data, follow=True)


def test_the_change_page_of_a_beat_schedule_entry_says_so_and_offers_the_box_others_do_not(
    client: Any, api: Any, nightly: Any
) -> None:
    page = client.get(change_url(nightly.id))
    other = client.get(change_url(api.get("own").id))

    assert messages_of(page) == [ConfigOwned.ADMIN_NOTE]
    assert 'name="force"' in page.content.decode()
    assert ConfigOwned.EDIT_ANYWAY in page.content.decode()
    assert messages_of(other) == []
    assert 'name="force"' not in other.content.decode()


def test_an_edit_is_refused_on_the_box_in_the_apis_words_and_saved_with_it(
    client: Any, api: Any, nightly: Any
) -> None:
    refused = edit(client, nightly, every="2h")
    unchanged = api.get("nightly")
    saved = edit(client, nightly, every="2h", force="on")

    assert form_errors(refused) == {"force": [REFUSED]}
    assert REFUSED == (
        "'nightly' comes from beat_schedule, and the next beat start (or `dbeat sync`) puts its "
        "definition back: change beat_schedule instead (`dbeat sync --dry-run` shows what a sync "
        'does), or tick "Edit anyway" to have it changed until then'
    )
    assert unchanged == nightly
    assert saved.status_code == 302
    assert f"{ConfigOwned.forced('nightly')}." in messages_of(client.get(SCHEDULES))
    assert api.get("nightly").schedule == Every(7200)


def test_pause_and_resume_by_form_or_action_and_run_now_stay_allowed(
    client: Any, api: Any, nightly: Any
) -> None:
    paused = edit(client, nightly, enabled=False)
    state = api.get("nightly").state
    resumed = messages_of(act(client, "resume", nightly.id))
    triggered = messages_of(act(client, "trigger", nightly.id))

    assert (paused.status_code, state) == (302, "paused")
    assert "Resumed: nightly." in resumed
    assert any(m.startswith("Triggered: nightly (task id ") for m in triggered)
    assert [fire.manual for fire in api.history("nightly")] == [True]


def test_a_delete_is_refused_and_delete_selected_deletes_only_the_others(
    client: Any, api: Any, nightly: Any
) -> None:
    words = ConfigOwned("nightly", removal=True).told(None)
    own = api.get("own")

    single = client.post(f"{SCHEDULES}{nightly.id}/delete/", {"post": "yes"}, follow=True)
    confirm = act(client, "delete_selected", nightly.id, own.id)
    bulk = act(client, "delete_selected", nightly.id, own.id, post="yes")

    assert messages_of(single) == [f"Not deleted: {words}", ConfigOwned.ADMIN_NOTE]
    assert single.redirect_chain[-1][0] == change_url(nightly.id)
    assert b"Are you sure you want to delete the selected schedules?" in confirm.content
    assert messages_of(bulk) == [f"Schedule 'nightly' not deleted: {words}", "Deleted: own."]
    assert [info.name for info in api.list()] == ["nightly"]
