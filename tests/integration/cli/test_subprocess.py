"""The CLI in a real process, loaded by Celery from ``-A module`` as users run it.

``celery -A proj dbeat ...`` finds the command through the ``celery.commands`` entry point. Until
the installed package declares it, the test declares it from a dist-info directory of its own; the
other tests add ``dbeat`` to Celery's command group by hand, which is what the entry point does.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

ENTRY_POINT = any(ep.name == "dbeat" for ep in entry_points(group="celery.commands"))

THROUGH_CELERY_GROUP = """
import sys
from celery.bin.celery import celery
from celery_dbeat.cli import dbeat
celery.add_command(dbeat)
sys.exit(celery(sys.argv[1:], prog_name="celery"))
"""


def write_project(tmp_path: Path, url: str) -> None:
    (tmp_path / "cliproj.py").write_text(
        "from celery import Celery\n"
        "app = Celery('cliproj')\n"
        f"app.conf.dbeat_database_url = {url!r}\n"
        "app.conf.beat_schedule = {'poll': {'task': 'cliproj.poll', 'schedule': 30}}\n"
        "@app.task(name='cliproj.poll')\n"
        "def poll() -> None: ...\n"
    )


def run(tmp_path: Path, command: list[str]) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), os.getcwd()]))
    return subprocess.run(
        command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60, check=False
    )


def via_group(*args: str) -> list[str]:
    return [sys.executable, "-c", THROUGH_CELERY_GROUP, "-A", "cliproj", "dbeat", *args]


def test_celery_a_module_dbeat_migrate_sync_and_list_work_in_a_real_process(
    tmp_path: Path,
) -> None:
    write_project(tmp_path, f"sqlite:///{tmp_path / 'db.sqlite3'}")

    migrate = run(tmp_path, via_group("migrate"))
    sync = run(tmp_path, via_group("sync"))
    listed = run(tmp_path, via_group("list"))

    assert (migrate.returncode, migrate.stderr) == (0, ""), migrate.stderr
    assert (sync.returncode, sync.stdout, sync.stderr) == (
        0,
        "synced 1 beat_schedule entries: created 1, updated 0, unchanged 0, disabled 0\n",
        "",  # the task is registered: no warning
    )
    assert listed.returncode == 0
    assert listed.stdout.splitlines()[1].split()[:4] == ["poll", "cliproj.poll", "every", "30s"]


def test_an_unreachable_database_ends_a_real_process_with_one_line_and_exit_4(
    tmp_path: Path,
) -> None:
    write_project(tmp_path, "postgresql+psycopg://postgres:s3cret@127.0.0.1:1/x")

    result = run(tmp_path, via_group("list"))

    assert result.returncode == 4
    assert result.stdout == ""
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert result.stderr.startswith(
        "Error: cannot reach the schedule database "
        "postgresql+psycopg://postgres:***@127.0.0.1:1/x: "
    )


def test_the_celery_executable_finds_dbeat_through_its_entry_point(tmp_path: Path) -> None:
    write_project(tmp_path, f"sqlite:///{tmp_path / 'db.sqlite3'}")
    if not ENTRY_POINT:
        # Not installed with the package yet: declare the same entry point from a dist-info
        # directory on the path, which is how an installed package declares it.
        info = tmp_path / "celery_dbeat_entry_point-0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text("Metadata-Version: 2.1\nName: celery-dbeat-entry-point\n")
        (info / "entry_points.txt").write_text(
            "[celery.commands]\ndbeat = celery_dbeat.cli:dbeat\n"
        )
    celery = shutil.which("celery", path=os.path.dirname(sys.executable)) or "celery"

    migrate = run(tmp_path, [celery, "-A", "cliproj", "dbeat", "migrate"])
    listed = run(tmp_path, [celery, "-A", "cliproj", "dbeat", "list", "--json"])

    assert migrate.returncode == 0, migrate.stderr
    assert (listed.returncode, listed.stdout) == (0, "[]\n")


def test_on_an_empty_database_each_command_says_to_migrate_the_app_given_with_a(
    tmp_path: Path,
) -> None:
    # Named "proj" as in the README: the commands must name the module given to -A instead.
    database = f"sqlite:///{tmp_path / 'db.sqlite3'}"
    (tmp_path / "sitecelery.py").write_text(
        "from celery import Celery\n"
        "app = Celery('proj')\n"
        f"app.conf.dbeat_database_url = {database!r}\n"
    )
    told = "run `celery -A sitecelery:app dbeat migrate`"

    def via(*args: str) -> list[str]:
        return [sys.executable, "-c", THROUGH_CELERY_GROUP, "-A", "sitecelery:app", *args]

    check = run(tmp_path, via("dbeat", "check"))
    listed = run(tmp_path, via("dbeat", "list"))
    migrate_check = run(tmp_path, via("dbeat", "migrate", "--check"))

    assert check.returncode == 1
    assert told in check.stdout
    assert (listed.returncode, migrate_check.returncode) == (4, 4)
    assert told in listed.stderr
    assert told in migrate_check.stderr
    assert "-A proj " not in check.stdout + listed.stderr + migrate_check.stderr
