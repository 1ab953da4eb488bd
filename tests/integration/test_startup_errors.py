"""A beat that celery-dbeat refuses to start says why in one line and exits with status 1.

Real ``celery beat`` processes: before the fix, a misspelt key or a bad ``beat_schedule`` entry
ended in a traceback through Celery's internals, hundreds of lines long for the latter (Celery's
redirected stderr logs it a few characters per line); a database URL SQLAlchemy cannot load did
too; only the first of two misspelt keys was named. A database or Redis refusing the credentials
left beat running, quietly retrying (a wrong password is not an outage), and a password cut in two
by its URL showed its tail in the driver's "cannot resolve host" on every retry. A database
unreachable at start-up was said once, then never again however long it lasted; one that answered
later with a refusal stopped beat with exit status 0 (Celery's loop takes the SystemExit of a tick
for a normal end).
"""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

import celery
import pytest
import sqlalchemy as sa

from celery_dbeat.beat.scheduler import Scheduler
from celery_dbeat.clock import FixedClock
from celery_dbeat.store.database import VERSION_TABLE, migrate
from tests.proxy import Proxy
from tests.services import (
    MYSQL_URL,
    POSTGRES_URL,
    mysql_user,
    private_database,
    reachable,
    redis_acl_user,
    unavailable,
    unique_name,
)

pytestmark = pytest.mark.slow

PROJECT = """
from celery import Celery
app = Celery("startproj", broker="memory://")
app.conf.dbeat_database_url = {url!r}
app.conf.update({conf})
"""


def beat_command(tmp_path: Path, conf: str, *args: str) -> tuple[list[str], dict[str, str]]:
    """The command line and environment of a beat of a project with ``conf``."""
    url = f"sqlite:///{tmp_path / 'schedules.sqlite3'}"
    (tmp_path / "startproj.py").write_text(PROJECT.format(url=url, conf=conf))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), os.getcwd()]))
    return [sys.executable, "-m", "celery", "-A", "startproj", "beat", "-S", "dbeat", *args], env


def start_beat(tmp_path: Path, conf: str, *args: str) -> subprocess.CompletedProcess[str]:
    command, env = beat_command(tmp_path, conf, *args)
    return subprocess.run(
        command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60, check=False
    )


@pytest.mark.parametrize(
    ("conf", "line"),
    [
        pytest.param(
            "dbeat_max_intervall=5",
            "dbeat: beat cannot start: dbeat_max_intervall: unknown setting "
            "(did you mean dbeat_max_interval?)",
            id="misspelt-key",
        ),
        pytest.param(
            "dbeat_max_intervall=5, dbeat_lokc_ttl=60",
            "dbeat: beat cannot start: dbeat_lokc_ttl: unknown setting (did you mean "
            "dbeat_lock_ttl?); dbeat_max_intervall: unknown setting (did you mean "
            "dbeat_max_interval?)",
            id="two-misspelt-keys",
        ),
        pytest.param(
            "dbeat_database_url='postgres://beat:s3cret@db.example/proj'",
            "dbeat: beat cannot start: dbeat_database_url='postgres://beat:***@db.example/proj': "
            "SQLAlchemy has no 'postgres' dialect; write "
            "postgresql+psycopg://beat:***@db.example/proj (psycopg 3: pip install "
            "'celery-dbeat[postgres]')",
            id="postgres-scheme",
        ),
        pytest.param(
            "beat_schedule={'report': {'task': 't', 'schedule': 'every tuesday'}}",
            "dbeat: beat cannot start: beat_schedule['report']={'schedule': 'every tuesday', "
            "'task': 't'}: unsupported schedule type str",
            id="bad-entry",
        ),
    ],
)
@pytest.mark.parametrize("loglevel", ["WARNING", "INFO"])
def test_a_configuration_celery_dbeat_refuses_stops_beat_with_one_line(
    tmp_path: Path, conf: str, line: str, loglevel: str
) -> None:
    result = start_beat(tmp_path, conf, f"--loglevel={loglevel}")

    said = [entry for entry in result.stderr.splitlines() if "dbeat: beat cannot start" in entry]
    assert result.returncode == 1, result.stderr
    assert len(said) == 1, result.stderr
    assert line in said[0]
    assert "Traceback" not in result.stdout + result.stderr
    assert len(result.stderr.splitlines()) <= 2, result.stderr


def assert_stopped_with_one_line(result: subprocess.CompletedProcess[str], *fragments: str) -> str:
    said = [entry for entry in result.stderr.splitlines() if "dbeat: beat cannot start" in entry]
    assert result.returncode == 1, result.stderr
    assert len(said) == 1, result.stderr
    for fragment in fragments:
        assert fragment in said[0]
    assert "Traceback" not in result.stdout + result.stderr
    return said[0]


@pytest.mark.parametrize("kind", ["postgresql", "mysql"])
def test_a_database_that_refuses_the_login_stops_beat_at_start_up(
    tmp_path: Path, kind: str
) -> None:
    if kind == "postgresql":  # the shared server trusts every role it knows: ask for another
        if not reachable(POSTGRES_URL, 5432):
            unavailable("postgresql", POSTGRES_URL, "connection refused")
        url = sa.make_url(POSTGRES_URL).set(username=unique_name("nobody"), password="s3cret")
        result = start_beat(tmp_path, f"dbeat_database_url={url.render_as_string(False)!r}")
    else:
        with mysql_user("right", "ALL ON *.*") as user:
            url = sa.make_url(MYSQL_URL).set(username=user, password="s3cret")
            result = start_beat(tmp_path, f"dbeat_database_url={url.render_as_string(False)!r}")

    assert_stopped_with_one_line(
        result,
        f"dbeat_database_url='{url.render_as_string(hide_password=True)}': the database refused "
        "celery-dbeat's login or rights: ",
        "; fix the user and password, or the user's grants",
    )
    assert "s3cret" not in result.stdout + result.stderr


def test_a_redis_that_refuses_the_credentials_stops_beat_at_start_up(
    tmp_path: Path, redis_url: str, redis_prefix: str
) -> None:
    with redis_acl_user(redis_url, redis_prefix) as user:
        url = redis_url.replace("redis://", f"redis://{user}:s3cret@", 1)
        result = start_beat(
            tmp_path, f"dbeat_redis_url={url!r}, dbeat_redis_key_prefix={redis_prefix!r}"
        )

    assert_stopped_with_one_line(
        result,
        f"dbeat: beat cannot start: Redis at {redis_url} refused the credentials (",
        "): fix the user and password in dbeat_redis_url (or dbeat_redis_options)",
    )
    assert "s3cret" not in result.stdout + result.stderr


#: Passwords a URL parser would cut in two (at an '@', or at a '/', '?' or '#' before the '@'),
#: each in the shapes that once leaked a part: as the host a driver cannot resolve, as a port in
#: SQLAlchemy's ValueError, as redis-py's host or port.
CUT = {
    "at": "HEADPART@TAILPART",
    "at-slash": "HEADPART@TAILPART/x",
    "at-query": "HEADPART@TAILPART?x",
    "at-port": "HEADPART@TAIL:99",
}
CUT_PASSWORD_URLS = [
    *(
        pytest.param(
            f"dbeat_database_url='{base}://u:{password}@127.0.0.1:{port}/db'", id=f"{kind}-{shape}"
        )
        for kind, base, port in (
            ("postgresql", "postgresql+psycopg", 5432),
            ("mysql", "mysql+pymysql", 3306),
        )
        for shape, password in CUT.items()
    ),
    pytest.param(
        "dbeat_redis_url='redis://u:HEADPART/TAILPART@127.0.0.1:6379/0'", id="redis-slash"
    ),
    *(
        pytest.param(
            f"dbeat_redis_url='redis://u:{password}@127.0.0.1:6379/0'", id=f"redis-{shape}"
        )
        for shape, password in CUT.items()
    ),
]


@pytest.mark.parametrize("conf", CUT_PASSWORD_URLS)
def test_a_password_cut_in_two_by_its_url_stops_beat_without_showing_any_of_it(
    tmp_path: Path, conf: str
) -> None:
    result = start_beat(tmp_path, conf)

    line = assert_stopped_with_one_line(result, "percent-encode")
    if "@TAIL" in conf:
        assert "'@' is %40" in line
    assert "HEADPART" not in result.stdout + result.stderr
    assert "TAIL" not in result.stdout + result.stderr


# A database unreachable at start-up -------------------------------------------------------------


def test_a_database_unreachable_at_start_up_is_said_again_every_minute_until_it_answers(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    folder = tmp_path / "not-yet"  # SQLite cannot open a file in a folder that is not there
    app = celery.Celery("dbeat-unreachable", set_as_current=False)
    app.conf.update(broker_url="memory://", dbeat_database_url=f"sqlite:///{folder / 'db'}")
    scheduler = Scheduler(app, lazy=True)
    clock = FixedClock(datetime(2024, 5, 6, 9, 0, tzinfo=timezone.utc))
    scheduler.clock = clock
    caplog.set_level(logging.INFO, logger="celery_dbeat")
    try:
        scheduler.setup_schedule()
        while clock.monotonic() < 185:
            clock.advance(scheduler.tick())
        errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]

        folder.mkdir()
        clock.advance(scheduler.tick())
    finally:
        scheduler.close()

    assert len(errors) == 4, errors
    assert "unreachable at start-up, retrying: " in errors[0]
    reminders = [re.findall(r"still unreachable (\d+) s after start-up", m) for m in errors[1:]]
    assert reminders == [["60"], ["120"], ["180"]]
    said = [r.getMessage() for r in caplog.records]
    assert "dbeat: schedule database reachable after 185.0 s; beat starts" in said


def _start(app: celery.Celery, caplog: pytest.LogCaptureFixture) -> list[str]:
    """Set beat up on ``app`` and tick it a few times; the ERROR lines it logged."""
    scheduler = Scheduler(app, lazy=True)
    scheduler.clock = FixedClock(datetime(2024, 5, 6, 9, 0, tzinfo=timezone.utc))
    caplog.set_level(logging.INFO, logger="celery_dbeat")
    try:
        scheduler.setup_schedule()
        for _ in range(3):
            scheduler.clock.advance(scheduler.tick())
    finally:
        scheduler.close()
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]


def test_a_database_that_answers_with_an_error_at_start_up_is_not_called_unreachable(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Before, any error at start-up but a refused login was "unreachable"."""
    path = tmp_path / "db.sqlite3"
    sa.create_engine(f"sqlite:///{path}").connect().close()  # an empty file: nothing to read
    app = celery.Celery("dbeat-read-only", set_as_current=False)
    read_only = f"sqlite:///file:{path}?mode=ro&uri=true"  # migrating it is refused
    app.conf.update(broker_url="memory://", dbeat_database_url=read_only)

    errors = _start(app, caplog)

    assert errors
    assert "answering with an error at start-up, retrying: " in errors[0]
    assert "readonly database" in errors[0]
    assert not [m for m in errors if "unreachable" in m]


def test_a_beat_schedule_entry_the_database_refuses_is_said_and_the_others_are_synced(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Before, the refused entry failed the whole sync at every start-up try: nothing fired."""
    url = f"sqlite:///{tmp_path / 'db.sqlite3'}"
    engine = sa.create_engine(url)
    migrate(engine)
    with engine.begin() as conn:  # a site rule, as a constraint would refuse it
        conn.execute(
            sa.text(
                "CREATE TRIGGER site_rule BEFORE INSERT ON dbeat_schedules WHEN NEW.name = 'bad'"
                " BEGIN SELECT RAISE(ABORT, 'name refused by a site rule'); END"
            )
        )
    app = celery.Celery("dbeat-refused-entry", set_as_current=False)
    app.conf.update(broker_url="memory://", dbeat_database_url=url)
    app.conf.beat_schedule = {
        name: {"task": f"tasks.{name}", "schedule": 60.0} for name in ("good", "bad", "fine")
    }

    errors = _start(app, caplog)

    with engine.connect() as conn:
        names = conn.execute(sa.text("SELECT name FROM dbeat_schedules ORDER BY name"))
        assert list(names.scalars()) == ["fine", "good"]
    engine.dispose()
    assert errors == [
        "dbeat: beat_schedule entry 'bad' not synced: the database refused it (name refused by a"
        " site rule); the other entries are synced"
    ]


@pytest.fixture
def pg_database(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with private_database("postgresql", tmp_path_factory) as url:
        yield url


@pytest.mark.parametrize("answer", ["refused-login", "unknown-schema"])
def test_a_refusal_found_once_the_database_answers_stops_beat_with_one_line_and_status_1(
    tmp_path: Path, pg_database: str, answer: str
) -> None:
    target = sa.make_url(pg_database)
    if answer == "refused-login":  # the shared server trusts every role it knows: ask for another
        url = target.set(username=unique_name("nobody"))
        said = "the database refused celery-dbeat's login or rights: "
    else:
        engine = sa.create_engine(target)
        migrate(engine)
        with engine.begin() as conn:
            conn.execute(sa.text(f"UPDATE {VERSION_TABLE} SET version_num = 'f00dfeedbeef'"))
        engine.dispose()
        url = target
        said = "the database schema is at revision 'f00dfeedbeef', which this celery-dbeat does not"
    proxy = Proxy(target.host or "127.0.0.1", target.port or 5432)
    proxy.cut()  # down first
    command, env = beat_command(
        tmp_path, f"dbeat_database_url={proxy.url_for(url.render_as_string(False))!r}"
    )
    beat = subprocess.Popen(
        command, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert beat.stderr is not None
        seen: list[str] = []
        while not any("unreachable at start-up" in line for line in seen):
            line = beat.stderr.readline()
            assert line, "".join(seen)  # beat ended before it said the database was unreachable
            seen.append(line)
        proxy.restore()  # then up, and refusing
        stdout, stderr = beat.communicate(timeout=60)
    finally:
        proxy.close()
        if beat.poll() is None:
            beat.kill()
            beat.wait()

    result = subprocess.CompletedProcess(command, beat.returncode, stdout, "".join(seen) + stderr)
    assert_stopped_with_one_line(result, said)
