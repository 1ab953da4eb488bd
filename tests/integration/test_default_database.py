"""Without ``dbeat_database_url``, beats started from different directories share one database.

Real ``celery beat`` processes. Before the fix each beat opened ``celerybeat-dbeat.sqlite3`` in its
working directory: two beats started from two directories each had a database of their own, saw
no sign of the other, and both sent every fire, silently. The default file is now in the user's
data directory (``$XDG_DATA_HOME/celery-dbeat/<app>.sqlite3``), and every beat logs where it is
and what that means for several beats.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

PROJECT = """
from celery import Celery
app = Celery("sharedproj", broker="memory://")
"""


@pytest.fixture
def beats(tmp_path: Path) -> Iterator[list[subprocess.Popen[bytes]]]:
    """Two beats of the same project, each started in a directory of its own."""
    (tmp_path / "sharedproj.py").write_text(PROJECT)
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([str(tmp_path), os.getcwd()]),
        XDG_DATA_HOME=str(tmp_path / "data"),
    )
    procs = []
    for name in ("a", "b"):
        cwd = tmp_path / name
        cwd.mkdir()
        command = [sys.executable, "-m", "celery", "-A", "sharedproj", "beat", "-S", "dbeat"]
        with (tmp_path / f"{name}.log").open("wb") as log:
            procs.append(
                subprocess.Popen(command, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT)
            )
    yield procs
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
    for proc in procs:
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def heartbeats(path: Path) -> int:
    if not path.exists():
        return 0
    engine = sa.create_engine(f"sqlite:///{path}")
    try:
        with engine.connect() as conn:
            return int(conn.execute(sa.text("SELECT count(*) FROM dbeat_beats")).scalar_one())
    except sa.exc.OperationalError:  # not migrated yet, or a writer holds the lock
        return 0
    finally:
        engine.dispose()


def test_two_beats_started_in_two_directories_share_the_default_database(
    tmp_path: Path, beats: list[subprocess.Popen[bytes]]
) -> None:
    shared = tmp_path / "data" / "celery-dbeat" / "sharedproj.sqlite3"

    deadline = time.monotonic() + 120
    while heartbeats(shared) < 2:
        assert all(proc.poll() is None for proc in beats), "a beat exited"
        assert time.monotonic() < deadline, "the two beats never met in one database"
        time.sleep(0.2)

    for proc in beats:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
    assert not list(tmp_path.glob("[ab]/*.sqlite3"))  # nothing in either working directory
    for name in ("a", "b"):
        log = (tmp_path / f"{name}.log").read_text()
        assert (
            f"dbeat: check settings: dbeat_database_url is not set: the schedules are in the "
            f"SQLite file {shared}, which only this user's beats on this host share" in log
        )
