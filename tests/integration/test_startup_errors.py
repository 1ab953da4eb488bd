"""A beat that celery-dbeat refuses to start says why in one line and exits with status 1.

Real ``celery beat`` processes: before the fix, a misspelt key or a bad ``beat_schedule`` entry
ended in a traceback through Celery's internals, hundreds of lines long for the latter (Celery's
redirected stderr logs it a few characters per line).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

PROJECT = """
from celery import Celery
app = Celery("startproj", broker="memory://")
app.conf.dbeat_database_url = {url!r}
app.conf.update({conf})
"""


def start_beat(tmp_path: Path, conf: str, *args: str) -> subprocess.CompletedProcess[str]:
    url = f"sqlite:///{tmp_path / 'schedules.sqlite3'}"
    (tmp_path / "startproj.py").write_text(PROJECT.format(url=url, conf=conf))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), os.getcwd()]))
    command = [sys.executable, "-m", "celery", "-A", "startproj", "beat", "-S", "dbeat", *args]
    return subprocess.run(
        command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60, check=False
    )


@pytest.mark.parametrize(
    ("conf", "line"),
    [
        pytest.param(
            "dbeat_max_intervall=5",
            "dbeat: beat cannot start: dbeat_max_intervall: unknown setting (misspelt?)",
            id="misspelt-key",
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
