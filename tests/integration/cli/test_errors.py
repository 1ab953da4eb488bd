"""Failures end with one ``Error: ...`` line on stderr, no traceback, and a meaningful exit code:
1 bad input or conflict, 2 malformed command line, 3 unknown schedule, 4 database problem."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

from celery_dbeat.store import Store, migrate
from tests.bad_inputs import VALID, BadInput, bad_input_params
from tests.integration.cli.conftest import Cli, make_app

#: Form fields whose option is spelt differently.
OPTION = {"timezone": "--tz", "run_at": "--at"}


def add_command(fields: dict[str, Any]) -> list[str]:
    """``add NAME TASK --...`` for a form (a valid cron schedule with ``fields`` overridden)."""
    form = {**VALID, **fields}
    args = ["add", form.pop("name"), form.pop("task")]
    kind = form.pop("kind")
    if kind == "interval":
        form.pop("cron")
        form.pop("timezone")
    for key, value in form.items():
        args += [OPTION.get(key, "--" + key.replace("_", "-")), str(value)]
    return args


@pytest.mark.parametrize("case", bad_input_params())
def test_every_shared_bad_input_is_refused_by_add_with_one_line_naming_the_field(
    cli: Cli, case: BadInput
) -> None:
    line = cli.fails(*add_command(case.fields), code=1, fragment=case.message)

    assert f"{case.error_field}=" in line
    assert cli.ok("list", "--json") == "[]\n"


@pytest.mark.parametrize(
    "case", [p for p in bad_input_params() if p.values[0].fields.get("kind") != "interval"]
)
def test_every_shared_bad_input_is_refused_by_update_and_changes_nothing(
    cli: Cli, case: BadInput
) -> None:
    cli.ok(*add_command({}))
    before = cli.ok("show", "bad-input", "--json")
    args = add_command(case.fields)[3:]  # the options, without "add NAME TASK"
    if "task" in case.fields:
        args += ["--task", case.fields["task"]]

    line = cli.fails("update", "bad-input", *args, code=1, fragment=case.message)

    assert f"{case.error_field}=" in line
    assert cli.ok("show", "bad-input", "--json") == before


def test_a_bad_zone_names_the_tz_option_too(cli: Cli) -> None:
    line = cli.fails("add", "s", "t", "--cron", "* * * * *", "--tz", "Mars/Olympus", code=1)

    assert line == (
        "Error: timezone='Mars/Olympus': is not a known IANA time zone "
        "(for example 'America/New_York') (--tz)"
    )


@pytest.mark.parametrize(
    ("options", "fragment"),
    [
        pytest.param(
            ["--every", "soon"], "every='soon': expected seconds or a duration", id="bad-duration"
        ),
        pytest.param(
            ["--at", "2099-01-01T00:00:00"],
            "run_at='2099-01-01T00:00:00': needs a time",
            id="instant-without-offset",
        ),
        pytest.param(
            ["--every", "1m", "--max-runs", "many"],
            "max_runs='many': must be a whole",
            id="max-runs-not-a-number",
        ),
        pytest.param(
            ["--every", "1m", "--priority", "300"],
            "options.priority=300: ",
            id="priority-out-of-range",
        ),
    ],
)
def test_bad_values_of_other_options_exit_1_naming_the_field_and_value(
    cli: Cli, options: list[str], fragment: str
) -> None:
    cli.fails("add", "s", "proj.tasks.s", *options, code=1, fragment=fragment)


@pytest.mark.parametrize(
    "command",
    [
        ["show", "nope"],
        ["update", "nope", "--args", "[]"],
        ["remove", "nope"],
        ["pause", "nope"],
        ["resume", "nope"],
        ["trigger", "nope"],
        ["history", "nope"],
        ["preview", "nope"],
    ],
    ids=lambda c: c[0],
)
def test_an_unknown_name_exits_3(cli: Cli, command: list[str]) -> None:
    cli.fails(*command, code=3, fragment="no schedule named 'nope'")


def test_resuming_a_finished_schedule_exits_1_saying_why(cli: Cli) -> None:
    cli.ok("add", "past", "proj.tasks.p", "--at", "2001-01-01T00:00:00Z")

    cli.fails("resume", "past", code=1, fragment="has finished (no slot left)")


@pytest.mark.parametrize(
    "url",
    [
        pytest.param("postgresql+psycopg://postgres:s3cret@127.0.0.1:1/x", id="postgresql"),
        pytest.param("mysql+pymysql://root:s3cret@127.0.0.1:1/x", id="mysql"),
    ],
)
@pytest.mark.parametrize("command", [["list"], ["migrate"], ["status"], ["show", "x"]])
def test_an_unreachable_database_exits_4_with_its_masked_url(url: str, command: list[str]) -> None:
    cli = Cli(make_app(url))

    line = cli.fails(*command, code=4, fragment="cannot reach the schedule database ")

    assert url.replace(":s3cret@", ":***@") in line
    assert "s3cret" not in line


def test_the_unreachable_example_from_the_issue_exits_4(cli: Cli) -> None:
    cli.app.conf.dbeat_database_url = "postgresql+psycopg://postgres@127.0.0.1:1/x"

    line = cli.fails("list", code=4)

    assert line.startswith(
        "Error: cannot reach the schedule database postgresql+psycopg://postgres@127.0.0.1:1/x: "
    )


def test_a_sqlite_file_that_cannot_be_opened_exits_4(tmp_path: Path) -> None:
    cli = Cli(make_app(f"sqlite:///{tmp_path}/missing/dir/db.sqlite3"))

    cli.fails("list", code=4, fragment="unable to open database file")


def test_a_database_without_the_tables_exits_4_and_says_to_migrate(sqlite_url: str) -> None:
    cli = Cli(make_app(sqlite_url))

    cli.fails("list", code=4, fragment="not installed; run `celery -A proj dbeat migrate`")


def test_a_schema_newer_than_this_version_exits_4(sqlite_url: str) -> None:
    store = Store(sqlite_url)
    migrate(store.engine)
    with store.engine.begin() as conn:
        conn.exec_driver_sql("UPDATE dbeat_alembic_version SET version_num = '9999'")
    store.close()
    cli = Cli(make_app(sqlite_url))

    cli.fails("list", code=4, fragment="which this celery-dbeat does not know")


def test_a_bad_dbeat_setting_exits_1_naming_the_key(sqlite_url: str) -> None:
    cli = Cli(make_app(sqlite_url, dbeat_lock_ttl=1))

    cli.fails("list", code=1, fragment="dbeat_lock_ttl=1.0: must be longer than dbeat_max_interval")


def test_a_url_sqlalchemy_cannot_parse_exits_1(sqlite_url: str) -> None:
    cli = Cli(make_app("not a url"))

    cli.fails("list", code=1, fragment="dbeat_database_url='not a url'")


def test_a_missing_database_driver_names_the_extra_to_install() -> None:
    if importlib.util.find_spec("MySQLdb") is not None:
        pytest.skip("mysqlclient is installed here")
    cli = Cli(make_app("mysql+mysqldb://u:pw@h/db"))

    line = cli.fails("list", code=1, fragment="mysql+mysqldb://u:***@h/db is not installed")

    assert "celery-dbeat[mysql]" in line
