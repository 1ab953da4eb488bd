"""Rows holding an instant that cannot be read: every admin page shows them with their error.

PostgreSQL keeps ``'-infinity'`` and ``'infinity'`` in a timestamp column (psycopg refuses to
load them); SQLite keeps any text (Django's converters refuse it). Before the models' field read
every value itself (``contrib/django/fields.py``), one such row made the schedule list, its change
and history pages, the fire list and the actions answer 500; beat, the CLI and the API already
set such a row aside with its error. The field installs nothing on the project's own connections:
the last test checks that a plain query there still refuses ``'infinity'`` as psycopg does.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest
import sqlalchemy as sa

from celery_dbeat import Every
from celery_dbeat.clock import FixedClock
from celery_dbeat.store.models import S
from tests.integration.django.support import (
    FIRES,
    SCHEDULES,
    START,
    change_url,
    edit,
    listed,
    messages_of,
    text_of,
)


@dataclass
class Backend:
    """The admin's schedule database: the management API on it, and its URL."""

    api: Any
    url: str

    def execute(self, sql: str) -> None:
        engine = sa.create_engine(self.url)
        with engine.begin() as conn:
            conn.execute(sa.text(sql))
        engine.dispose()

    def column(self, name: str, column: str) -> Any:
        """A column of the row ``name``, as celery-dbeat reads it (raises if it cannot)."""
        engine = sa.create_engine(self.url)
        with engine.connect() as conn:
            value = conn.execute(sa.select(S.c[column]).where(S.c.name == name)).scalar_one()
        engine.dispose()
        return value


@pytest.fixture
def backend(request: pytest.FixtureRequest, site: Any) -> Iterator[Backend]:
    """``sqlite``: the tables in Django's own (SQLite) database; ``postgres``: in the PostgreSQL
    database of the ``postgres`` alias (``DBEAT_DATABASE_ALIAS``). The API's clock at START."""
    from django.test import override_settings

    from celery_dbeat.contrib.django import schedules

    if request.param == "sqlite":
        api = schedules()
        api.clock = FixedClock(START)
        yield Backend(api, site.sqlite_url)
        return
    url = site.require_postgres()
    with override_settings(DBEAT_DATABASE_ALIAS="postgres"):
        api = schedules()
        api.clock = FixedClock(START)
        yield Backend(api, url)


#: (backend, column, value written by hand, where the list shows it)
CORRUPT = [
    pytest.param("postgres", "next_run_at", "'-infinity'", "next_run", id="pg-next-run"),
    pytest.param("postgres", "last_slot", "'infinity'", "last_fired", id="pg-last-slot"),
    pytest.param("postgres", "start_at", "'infinity'", "spec", id="pg-start-at"),
    pytest.param("postgres", "end_at", "'-infinity'", "spec", id="pg-end-at"),
    pytest.param("sqlite", "next_run_at", "'2024-01-99 25:61:00'", "next_run", id="sqlite-next"),
    pytest.param("sqlite", "last_slot", "'garbage'", "last_fired", id="sqlite-last-slot"),
    pytest.param("sqlite", "start_at", "'yesterday'", "spec", id="sqlite-start-at"),
]
ON_EACH_CORRUPTION = pytest.mark.parametrize(
    ("backend", "column", "value", "shown_in"), CORRUPT, indirect=["backend"]
)


@pytest.fixture
def good_and_bad(backend: Backend) -> tuple[Any, Any]:
    """Two minutely schedules, each with a run-now fire; ``bad`` is then corrupted by the test."""
    made = []
    for name in ("good", "bad"):
        made.append(backend.api.add(name, f"proj.tasks.{name}", Every(60)))
        backend.api.trigger(name)
    return made[0], made[1]


def corrupt(backend: Backend, column: str, value: str) -> None:
    backend.execute(f"UPDATE dbeat_schedules SET {column} = {value} WHERE name = 'bad'")


def cells(response: Any, name: str) -> dict[str, str]:
    """The changelist row of schedule ``name``, as ``{column: text}``."""
    import re

    page = response.content.decode()
    row = next(r for r in page.split("<tr")[1:] if f">{name}</a>" in r)
    found = re.findall(r'<t[dh] class="field-([\w]+)[^"]*"[^>]*>(.*?)</t[dh]>', row, re.S)
    return {key: " ".join(re.sub("<[^>]+>", " ", text).split()) for key, text in found}


@ON_EACH_CORRUPTION
def test_the_list_shows_a_row_that_cannot_be_read_with_its_error_and_every_other_row(
    client: Any, backend: Backend, good_and_bad: Any, column: str, value: str, shown_in: str
) -> None:
    corrupt(backend, column, value)
    response = client.get(SCHEDULES)
    assert listed(response) == ["bad", "good"]
    good, bad = cells(response, "good"), cells(response, "bad")
    assert (good["state"], good["next_run"], good["error"]) == (
        "active",
        "2024-05-06 09:01:00 UTC",
        "-",
    )
    assert bad["state"] == "error"
    assert "cannot be read" in bad[shown_in]
    if shown_in != "next_run":
        assert bad["next_run"] == "none (error)"  # set aside: nothing is sent
    full = text_of(response)
    assert f'title="stored value of {column} cannot be read (not a readable timestamp: ' in full
    assert "correct it in SQL, or give the schedule's timing again" in full
    for order in ("4", "-4", "5"):  # by next run, by last slot: the database sorts
        assert sorted(listed(client.get(f"{SCHEDULES}?o={order}"))) == ["bad", "good"]


@ON_EACH_CORRUPTION
def test_the_change_page_says_what_cannot_be_read_and_saving_it_as_shown_repairs_the_row(
    client: Any, backend: Backend, good_and_bad: Any, column: str, value: str, shown_in: str
) -> None:
    corrupt(backend, column, value)
    _, bad = good_and_bad
    response = client.get(change_url(bad.id))
    (note,) = [m for m in messages_of(response) if "cannot be read" in m]
    assert note.startswith(f"The stored value of {column} cannot be read (not a readable ")
    assert "Saving the form stores the schedule again as the form shows it" in note
    if column in ("start_at", "end_at"):
        assert f"the form shows {column} empty" in note
        assert response.context["adminform"].form.initial[column] in (None, "")
    page = text_of(response)
    assert "none while its stored values cannot be read; saved as shown" in page

    backend.api.clock.set(START + timedelta(seconds=90))
    assert edit(client, bad).status_code == 302
    repaired = backend.api.get("bad")
    assert (repaired.last_error, repaired.state) == (None, "active")
    assert repaired.next_run_at == START + timedelta(minutes=2)  # on its grid, from the save on
    assert backend.column("bad", column) == getattr(repaired, column)  # readable again
    again = client.get(change_url(bad.id))
    assert not [m for m in messages_of(again) if "cannot be read" in m]


@ON_EACH_CORRUPTION
def test_the_history_and_fire_pages_of_a_row_that_cannot_be_read_open(
    client: Any, backend: Backend, good_and_bad: Any, column: str, value: str, shown_in: str
) -> None:
    from celery_dbeat.contrib.django.conf import database_alias
    from celery_dbeat.contrib.django.models import Fire

    corrupt(backend, column, value)
    _, bad = good_and_bad
    assert client.get(f"{change_url(bad.id).removesuffix('change/')}history/").status_code == 200
    everything = text_of(client.get(FIRES))
    assert ">good</a>" in everything
    assert ">bad</a>" in everything
    only_bad = client.get(f"{FIRES}?schedule__id__exact={bad.id}")
    assert len(only_bad.context["cl"].result_list) == 1
    fire = Fire.objects.using(database_alias()).get(schedule_id=bad.id)
    assert client.get(f"{FIRES}{fire.id}/change/").status_code == 200


@ON_EACH_CORRUPTION
def test_pause_resume_and_run_now_act_on_a_row_that_cannot_be_read(
    client: Any, backend: Backend, good_and_bad: Any, column: str, value: str, shown_in: str
) -> None:
    corrupt(backend, column, value)
    _, bad = good_and_bad
    selected = {"_selected_action": [str(bad.id)]}
    assert client.post(SCHEDULES, {"action": "pause", **selected}).status_code == 302
    assert backend.api.get("bad").enabled is False
    assert client.post(SCHEDULES, {"action": "resume", **selected}).status_code == 302
    assert backend.api.get("bad").enabled is True
    backend.api.clock.advance(1)  # a run-now fire of its own
    assert client.post(SCHEDULES, {"action": "trigger", **selected}).status_code == 302
    assert [fire.manual for fire in backend.api.history("bad")] == [True, True]


@pytest.mark.parametrize(
    ("backend", "value"),
    [pytest.param("postgres", "'infinity'", id="pg"), pytest.param("sqlite", "'x'", id="sqlite")],
    indirect=["backend"],
)
def test_a_fire_holding_an_instant_that_cannot_be_read_shows_it_as_such(
    client: Any, backend: Backend, value: str
) -> None:
    info = backend.api.add("report", "proj.tasks.report", Every(60))
    backend.api.trigger("report")
    backend.execute(f"UPDATE dbeat_fires SET sent_at = {value}, started_at = {value}")
    listing = client.get(FIRES)
    (fire,) = listing.context["cl"].result_list
    assert (fire.sent_at, fire.started_at, fire.lag) == (None, None, None)
    assert fire.unreadable.columns == ("sent_at", "started_at")
    shown = text_of(listing)
    assert shown.count(">cannot be read</span>") == 2
    assert "stored value of sent_at, started_at cannot be read (sent_at: not a readable" in shown
    assert "give the schedule's timing again" not in shown  # beat writes fires, not people
    assert client.get(f"{FIRES}{fire.id}/change/").status_code == 200
    recent = text_of(client.get(change_url(info.id)))
    assert recent.count(">cannot be read</span>") == 2


def test_values_gives_an_unreadable_instant_for_what_cannot_be_read(
    backend_postgres: Backend,
) -> None:
    from celery_dbeat.contrib.django.conf import database_alias
    from celery_dbeat.contrib.django.fields import UnreadableInstant
    from celery_dbeat.contrib.django.models import Schedule

    backend_postgres.api.add("bad", "proj.tasks.bad", Every(60))
    corrupt(backend_postgres, "end_at", "'infinity'")
    schedules = Schedule.objects.using(database_alias())
    (end_at,) = schedules.values_list("end_at", flat=True)
    assert end_at == UnreadableInstant("infinity", "")
    assert str(end_at) == "not a readable timestamp: 'infinity'"
    assert schedules.get().end_at is None
    assert schedules.filter(end_at__gt=START).count() == 1  # the database compares it


@pytest.fixture
def backend_postgres(site: Any) -> Iterator[Backend]:
    from django.test import override_settings

    from celery_dbeat.contrib.django import schedules

    url = site.require_postgres()
    with override_settings(DBEAT_DATABASE_ALIAS="postgres"):
        yield Backend(schedules(), url)


def test_the_projects_own_connection_is_left_as_psycopg_makes_it(
    client: Any, backend_postgres: Backend
) -> None:
    """No loader is installed on Django's connection: a plain query there refuses 'infinity'
    as psycopg always does, after the admin read a row holding it."""
    from django.db import DataError, connections

    backend_postgres.api.add("bad", "proj.tasks.bad", Every(60))
    corrupt(backend_postgres, "next_run_at", "'infinity'")
    assert client.get(SCHEDULES).status_code == 200
    with connections["postgres"].cursor() as cursor:
        cursor.execute("SELECT next_run_at FROM dbeat_schedules")
        with pytest.raises(DataError, match="infinity"):
            cursor.fetchall()
