"""Failures end with one ``Error: ...`` line on stderr, no traceback, and a meaningful exit code:
1 bad input or name conflict, 2 malformed command line, 3 unknown schedule, 4 database problem,
5 an edit that raced another writer's."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from celery_dbeat.store import Store, migrate
from tests.bad_inputs import VALID, BadInput, bad_input_params
from tests.integration.cli.conftest import Cli, make_app
from tests.integration.conftest import lose_every_race
from tests.services import MYSQL_URL, POSTGRES_URL, mysql_user, reachable, unavailable, unique_name

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
    "case",
    [
        p
        for p in bad_input_params()
        # `update` cannot change the kind to an interval without --every, nor rename
        if p.values[0].fields.get("kind") != "interval" and "name" not in p.values[0].fields
    ],
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


@pytest.mark.parametrize(
    "command", [["update", "s", "--args", "[1]"], ["pause", "s"]], ids=lambda c: c[0]
)
def test_an_edit_that_races_another_writer_exits_5_saying_try_again_and_stores_nothing(
    cli: Cli, monkeypatch: pytest.MonkeyPatch, command: list[str]
) -> None:
    cli.ok("add", "s", "proj.tasks.s", "--every", "1m")
    before = cli.ok("show", "s", "--json")
    lose_every_race(monkeypatch)

    line = cli.fails(*command, code=5)

    assert line == (
        "Error: schedule 's' was changed by someone else at the same time; nothing was stored: "
        "try again"
    )
    monkeypatch.undo()
    assert cli.ok("show", "s", "--json") == before


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


@pytest.mark.parametrize("command", ["list", "check"])
@pytest.mark.parametrize("kind", ["postgresql", "mysql"])
def test_a_database_refusing_the_login_exits_4_saying_so_not_that_it_is_unreachable(
    kind: str, command: str
) -> None:
    if kind == "postgresql":  # the shared server trusts every role it knows: ask for another
        url = sa.make_url(POSTGRES_URL).set(username=unique_name("nobody"), password="s3cret")
        if not reachable(POSTGRES_URL, 5432):
            unavailable("postgresql", POSTGRES_URL, "connection refused")
        line = Cli(make_app(url.render_as_string(False))).fails(command, code=4)
    else:
        with mysql_user("right", "ALL ON *.*") as user:
            url = sa.make_url(MYSQL_URL).set(username=user, password="s3cret")
            line = Cli(make_app(url.render_as_string(False))).fails(command, code=4)

    assert line.startswith(
        f"Error: the schedule database {url.render_as_string(hide_password=True)} refused "
        "celery-dbeat's login or rights: "
    )
    assert line.endswith("; fix the user and password in dbeat_database_url, or the user's grants")
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


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        pytest.param(
            "postgres://u:s3cret@h/db",
            "SQLAlchemy has no 'postgres' dialect; write postgresql+psycopg://u:***@h/db "
            "(psycopg 3: pip install 'celery-dbeat[postgres]')",
            id="postgres-scheme",
        ),
        pytest.param(
            "postgresql+psycopg3://u@h/db",
            "SQLAlchemy has no 'postgresql+psycopg3' dialect; write postgresql+psycopg://u@h/db "
            "(psycopg 3: pip install 'celery-dbeat[postgres]')",
            id="psycopg3-driver-name",
        ),
        pytest.param(
            "mysql://u:s3cret@h/db",
            "its driver MySQLdb (SQLAlchemy's for mysql://) is not installed; write "
            "mysql+pymysql://u:***@h/db (PyMySQL: pip install 'celery-dbeat[mysql]')",
            id="mysql-scheme",
        ),
        pytest.param(
            "mariadb://u@h/db",
            "its driver MySQLdb (SQLAlchemy's for mariadb://) is not installed; write "
            "mariadb+pymysql://u@h/db (PyMySQL: pip install 'celery-dbeat[mysql]')",
            id="mariadb-scheme",
        ),
        pytest.param(
            "mysql+mysqldb://u:s3cret@h/db",
            "its driver MySQLdb (SQLAlchemy's for mysql+mysqldb://) is not installed; write "
            "mysql+pymysql://u:***@h/db (PyMySQL: pip install 'celery-dbeat[mysql]'), or "
            "install MySQLdb",
            id="driver-chosen-by-name",
        ),
        pytest.param(
            "sqlite3:///schedules.db",
            "SQLAlchemy has no 'sqlite3' dialect; write sqlite:///schedules.db",
            id="sqlite3-scheme",
        ),
        pytest.param(
            "mongodb://h/db",
            "SQLAlchemy has no 'mongodb' dialect; celery-dbeat works with postgresql+psycopg://, "
            "mysql+pymysql:// (or mariadb+pymysql://) and sqlite:///PATH URLs",
            id="unsupported",
        ),
    ],
)
def test_a_database_url_that_cannot_work_says_which_url_to_write_and_what_to_install(
    url: str, problem: str
) -> None:
    if importlib.util.find_spec("MySQLdb") is not None:
        pytest.skip("mysqlclient is installed here")
    cli = Cli(make_app(url))

    line = cli.fails("list", code=1)

    masked = url.replace(":s3cret@", ":***@")
    assert line == f"Error: dbeat_database_url={masked!r}: {problem}"


@pytest.mark.parametrize(
    ("url", "module", "extra"),
    [
        pytest.param("postgresql+psycopg://u:pw@h/db", "psycopg", "postgres", id="psycopg"),
        pytest.param("mysql+pymysql://u:pw@h/db", "pymysql", "mysql", id="pymysql"),
    ],
)
def test_a_missing_driver_module_names_the_extra_to_install(
    url: str, module: str, extra: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # import fails as if not installed
    cli = Cli(make_app(url))

    line = cli.fails("list", code=1, fragment=f"its driver {module} cannot be imported")

    assert line.startswith(f"Error: dbeat_database_url={url.replace(':pw@', ':***@')!r}: ")
    assert line.endswith(f": pip install 'celery-dbeat[{extra}]'")


#: Passwords with a character that ends them early in a URL; the parts must never be shown.
#: An '@' once leaked through the driver's "failed to resolve host", the port in SQLAlchemy's
#: ValueError (a traceback), or redis-py's host.
CUT_AT = {
    "at": "HEADPART@TAILPART",
    "at-slash": "HEADPART@TAILPART/x",
    "at-query": "HEADPART@TAILPART?x",
    "at-port": "HEADPART@TAIL:99",
}
CUT_PASSWORDS = [
    *(
        pytest.param(
            {"dbeat_database_url": f"{base}://u:{password}@127.0.0.1:{port}/db"},
            "'@' is %40",
            id=f"{kind}-{shape}",
        )
        for kind, base, port in (
            ("postgresql", "postgresql+psycopg", 5432),
            ("mysql", "mysql+pymysql", 3306),
        )
        for shape, password in CUT_AT.items()
    ),
    *(
        pytest.param(
            {"dbeat_redis_url": f"redis://u:{password}@127.0.0.1:6379/0"},
            "'@' is %40",
            id=f"redis-{shape}",
        )
        for shape, password in CUT_AT.items()
    ),
    pytest.param(
        {"dbeat_redis_url": "redis://u:HEADPART/TAILPART@127.0.0.1:6379/0"},
        "percent-encode it",
        id="redis-slash",
    ),
    pytest.param(
        {"dbeat_redis_url": "redis://:HEADPART#TAILPART@127.0.0.1:6379/0"},
        "percent-encode it",
        id="redis-hash",
    ),
    pytest.param(
        {"dbeat_redis_url": "sentinel://u:HEADPART@TAILPART/x@127.0.0.1:26379;sentinel://h:1"},
        "'@' is %40",
        id="sentinel-at-slash",
    ),
]


@pytest.mark.parametrize(("conf", "fragment"), CUT_PASSWORDS)
@pytest.mark.parametrize(
    "command",
    [["list"], ["check"], ["status"], ["migrate"], ["show", "x"], ["export"], ["sync"]],
    ids=lambda c: c[0],
)
def test_a_password_cut_in_two_by_the_url_is_refused_without_showing_any_of_it(
    sqlite_url: str, conf: dict[str, str], fragment: str, command: list[str]
) -> None:
    conf = dict(conf)
    cli = Cli(make_app(conf.pop("dbeat_database_url", sqlite_url), **conf))

    result = cli(*command)

    assert result.exit_code == 1, result.output
    assert len(result.stderr.splitlines()) == 1, result.output
    assert fragment in result.stderr
    assert "HEADPART" not in result.output
    assert "TAIL" not in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize(
    ("source", "url", "code"),
    [
        pytest.param(
            "django-celery-beat",
            "postgresql+psycopg://u:HEADPART@TAIL:99@127.0.0.1:5432/db",
            1,
            id="django-celery-beat-at-port",
        ),
        pytest.param(
            "django-celery-beat",
            "mysql+pymysql://u:HEADPART@TAILPART/x@127.0.0.1:3306/db",
            1,
            id="django-celery-beat-at-slash",
        ),
        pytest.param(
            "redbeat", "redis://u:HEADPART@TAILPART?x@127.0.0.1:6379/0", 4, id="redbeat-at-query"
        ),
        pytest.param(
            "redbeat", "redis://u:HEADPART@TAIL:99@127.0.0.1:6379/0", 4, id="redbeat-at-port"
        ),
    ],
)
def test_an_import_source_url_that_cuts_its_password_in_two_is_refused_without_showing_it(
    cli: Cli, source: str, url: str, code: int
) -> None:
    line = cli.fails("import", "--from", source, "--source-url", url, code=code)

    assert "'@' is %40" in line
    assert "HEADPART" not in line
    assert "TAIL" not in line


def test_a_password_written_percent_encoded_is_not_taken_for_a_cut_one() -> None:
    url = "postgresql+psycopg://u:HEAD%40TAIL%2Fx@127.0.0.1:1/db"

    line = Cli(make_app(url)).fails("list", code=4, fragment="cannot reach the schedule database")

    assert "HEAD" not in line


def test_a_sqlite_path_holding_at_signs_is_not_taken_for_a_password(tmp_path: Path) -> None:
    folder = tmp_path / "a@b"
    folder.mkdir()
    cli = Cli(make_app(f"sqlite:///{folder}/c@d.sqlite3"))

    cli.ok("migrate")
    assert cli.ok("list", "--json") == "[]\n"
