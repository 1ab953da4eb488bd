"""The CLI refuses a ``serializer`` the app's workers would not accept (its ``accept_content``)
on every write, and takes one they do: ``add``, a file ``import`` (checked whole before anything
is written) and ``import --from`` (the entry refused with its reason, the others imported)."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

from celery.schedules import schedule
from redbeat import RedBeatSchedulerEntry

from tests.integration.cli.conftest import Cli, shown

PICKLE = '{"serializer": "pickle"}'
REFUSED = (
    "options.serializer='pickle': is not in the app's accept_content ['json'], so workers would "
    "refuse its messages; use 'json', or add 'pickle' to accept_content (CELERY_ACCEPT_CONTENT in "
    "Django settings)"
)


def test_add_refuses_pickle_unless_the_app_accepts_it(cli: Cli) -> None:
    line = cli.fails("add", "p", "proj.tasks.p", "--every", "1m", "--options", PICKLE, code=1)
    assert line == f"Error: {REFUSED}"

    cli.app.conf.accept_content = ["json", "pickle"]
    cli.ok("add", "p", "proj.tasks.p", "--every", "1m", "--options", PICKLE)

    assert shown(cli, "p")["options"] == {"serializer": "pickle"}


def test_an_import_file_with_one_refused_serializer_writes_nothing(
    cli: Cli, tmp_path: Path
) -> None:
    entries = [
        {"name": name, "task": "proj.tasks.x", "kind": "interval", "every": 60, "options": options}
        for name, options in (("fine", {}), ("pickled", {"serializer": "pickle"}))
    ]
    path = tmp_path / "in.json"
    path.write_text(json.dumps({"version": 1, "schedules": entries}))

    line = cli.fails("import", str(path), code=1)

    assert line == f"Error: {path}: schedules[1] ('pickled'): {REFUSED}"
    assert cli.ok("list", "--json") == "[]\n"


def _redbeat_entries(cli: Cli, redis_url: str, redis_prefix: str) -> None:
    cli.app.conf.update(redbeat_redis_url=redis_url, redbeat_key_prefix=f"{redis_prefix}rb:")
    every = schedule(timedelta(minutes=5))
    for name, options in (("plain", {}), ("pickled", {"serializer": "pickle"})):
        RedBeatSchedulerEntry(name, "proj.tasks.x", every, options=options, app=cli.app).save()


def test_import_from_refuses_an_entry_whose_serializer_the_workers_refuse(
    cli: Cli, redis_url: str, redis_prefix: str
) -> None:
    _redbeat_entries(cli, redis_url, redis_prefix)

    result = cli.run("import", "--from", "redbeat")

    assert result.exit_code == 1
    assert f"refused    pickled  {REFUSED}" in result.stdout.splitlines()
    assert [s["name"] for s in json.loads(cli.ok("list", "--json"))] == ["plain"]


def test_import_from_takes_a_serializer_the_app_accepts(
    cli: Cli, redis_url: str, redis_prefix: str
) -> None:
    _redbeat_entries(cli, redis_url, redis_prefix)
    cli.app.conf.accept_content = ["json", "pickle"]

    result = cli.run("import", "--from", "redbeat")

    assert result.exit_code == 0, result.output
    assert shown(cli, "pickled")["options"] == {"serializer": "pickle"}


def _pickled_beat_schedule(cli: Cli) -> None:
    options = {"serializer": "pickle"}
    cli.app.conf.beat_schedule = {"p": {"task": "proj.tasks.p", "schedule": 60, "options": options}}


def test_sync_refuses_a_beat_schedule_entry_the_workers_would_refuse(cli: Cli) -> None:
    _pickled_beat_schedule(cli)

    line = cli.fails("sync", code=1)

    assert line.startswith("Error: beat_schedule['p']=")
    assert line.endswith(REFUSED)


def test_sync_stores_a_beat_schedule_entry_the_workers_accept(cli: Cli) -> None:
    _pickled_beat_schedule(cli)
    cli.app.conf.accept_content = ["json", "pickle"]

    cli.ok("sync")

    assert shown(cli, "p")["options"] == {"serializer": "pickle"}
