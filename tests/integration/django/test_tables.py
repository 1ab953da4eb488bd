"""Until celery-dbeat's tables are there (and at this version's revision), every celery-dbeat
admin page says what to do instead of failing, and ``manage.py check`` warns, without an error
that would stop ``migrate`` itself.

The tables are looked for in the ``spare`` SQLite file (``DBEAT_DATABASE_ALIAS = "spare"``),
absent when each test starts.
"""

from __future__ import annotations

import io
from typing import Any

import pytest
import sqlalchemy as sa

from tests.integration.django.support import ADD, BEATS, FIRES, SCHEDULES, form_data, text_of

MISSING = "celery-dbeat's tables are missing in {}: run `python manage.py migrate --database spare`"


def shown(message: str) -> str:
    """A check's message as the admin page shows it: each `command` as code."""
    parts = message.split("`")
    return "".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(parts))


def dbeat_issues(**kwargs: Any) -> list[tuple[str, str, int]]:
    from django.core.checks import run_checks

    return [(i.id, i.msg, i.level) for i in run_checks(**kwargs) if i.id.startswith("celery_dbeat")]


def alembic(url: str, revision: str) -> None:
    from celery_dbeat.store import create_engine, migrate

    engine = create_engine(url)
    try:
        migrate(engine, revision)
    finally:
        engine.dispose()


def execute(url: str, *statements: str) -> None:
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        for statement in statements:
            conn.execute(sa.text(statement))
    engine.dispose()


PAGES = [
    pytest.param("get", SCHEDULES, id="schedule-list"),
    pytest.param("get", ADD, id="schedule-add"),
    pytest.param("get", f"{SCHEDULES}1/change/", id="schedule-change"),
    pytest.param("get", f"{SCHEDULES}1/delete/", id="schedule-delete"),
    pytest.param("get", f"{SCHEDULES}1/history/", id="schedule-history"),
    pytest.param("post", ADD, id="schedule-add-posted"),
    pytest.param("post", SCHEDULES, id="schedule-action"),
    pytest.param("get", FIRES, id="fire-list"),
    pytest.param("get", f"{FIRES}1/change/", id="fire-change"),
    pytest.param("get", BEATS, id="beat-list"),
    pytest.param("get", f"{BEATS}host:1/change/", id="beat-change"),
]


@pytest.mark.parametrize(("method", "url"), PAGES)
def test_every_admin_page_says_the_tables_are_missing_and_how_to_create_them(
    client: Any, on_spare: str, method: str, url: str
) -> None:
    if method == "post":
        response = client.post(url, form_data(name="x", action="pause", _selected_action="1"))
    else:
        response = client.get(url)
    assert response.status_code == 503
    page = text_of(response)
    assert shown(MISSING.format(on_spare)) in page
    assert "Traceback" not in page


def test_the_page_is_shown_only_to_users_who_may_see_the_schedules(on_spare: str) -> None:
    from django.test import Client

    response = Client().get(SCHEDULES)
    assert response.status_code == 302
    assert response["Location"].startswith("/admin/login/")


def test_the_admin_works_once_migrate_created_the_tables(client: Any, on_spare: str) -> None:
    from django.core.management import call_command

    assert client.get(SCHEDULES).status_code == 503
    call_command("migrate", database="spare", verbosity=0, skip_checks=False, stderr=io.StringIO())
    assert client.get(SCHEDULES).status_code == 200
    assert client.post(ADD, form_data(name="made")).status_code == 302
    assert "made" in text_of(client.get(SCHEDULES))


def test_check_warns_that_the_tables_are_missing_and_migrate_still_runs(on_spare: str) -> None:
    from django.core.checks import WARNING
    from django.core.management import call_command

    assert dbeat_issues() == [("celery_dbeat.W003", MISSING.format(on_spare), WARNING)]
    # What ``manage.py migrate --database spare`` does: its checks warn, then it migrates.
    err = io.StringIO()
    call_command("migrate", database="spare", verbosity=0, skip_checks=False, stderr=err)
    assert "celery_dbeat.W003" in err.getvalue()
    assert dbeat_issues() == []


def test_check_naming_only_other_databases_does_not_look_for_the_tables(on_spare: str) -> None:
    assert dbeat_issues(databases=["default"]) == []
    assert [i[0] for i in dbeat_issues(databases=["spare"])] == ["celery_dbeat.W003"]


def test_tables_older_than_this_celery_dbeat_are_reported_with_migrate(
    client: Any, on_spare: str
) -> None:
    from celery_dbeat.contrib.django.tables import alembic_head

    alembic(on_spare, "0002")
    expected = (
        f"celery-dbeat's tables in {on_spare} are at revision '0002', older than this "
        f"celery-dbeat's {alembic_head()!r}: run `python manage.py migrate --database spare`"
    )
    assert [i[:2] for i in dbeat_issues()] == [("celery_dbeat.W003", expected)]
    assert shown(expected) in text_of(client.get(SCHEDULES))


def test_tables_dropped_after_migrate_recorded_them_are_reported_with_dbeat_migrate(
    on_spare: str,
) -> None:
    from django.core.management import call_command

    call_command("migrate", database="spare", verbosity=0)
    execute(on_spare, "DROP TABLE dbeat_beats")
    ((check_id, message, _),) = dbeat_issues()
    assert check_id == "celery_dbeat.W003"
    assert message.endswith(
        "run `python manage.py dbeat_migrate` (Django has recorded celery_dbeat's migrations "
        "as applied already)"
    )


def test_tables_a_newer_celery_dbeat_wrote_are_reported_with_upgrade(
    client: Any, on_spare: str
) -> None:
    url = on_spare
    alembic(url, "head")
    execute(url, "UPDATE dbeat_alembic_version SET version_num = '9999'")
    expected = (
        f"celery-dbeat's tables in {url} are at revision '9999', which this celery-dbeat does "
        "not know (a newer version wrote them): upgrade celery-dbeat"
    )
    assert [i[:2] for i in dbeat_issues()] == [("celery_dbeat.W004", expected)]
    response = client.get(SCHEDULES)
    assert response.status_code == 503
    assert shown(expected) in text_of(response)


def test_the_project_site_has_no_finding_about_its_tables(site: Any) -> None:
    assert dbeat_issues() == []
