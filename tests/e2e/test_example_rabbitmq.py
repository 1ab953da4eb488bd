"""The example (``example_project/demo.py``) on RabbitMQ: a worker, two beats, one of them killed.

The demo's own check is the verdict: every fire the beats recorded reached the worker once, and
nothing else did. It runs in a private folder (``EXAMPLE_VAR``: SQLite schedules, received list)
and under a private queue name (``EXAMPLE_QUEUE``), whose queue and exchanges are deleted after.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kombu import Connection

from tests.services import AMQP_URL, amqp_url_or_skip, unique_name

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

DEMO = Path(__file__).resolve().parents[2] / "example_project" / "demo.py"


@pytest.fixture
def example_queue() -> Iterator[str]:
    """A private queue name; the queue and the exchanges named after it are deleted after."""
    url = amqp_url_or_skip()
    queue = unique_name("dbeat-example")
    yield queue
    with Connection(url, connect_timeout=5) as connection:
        for kind, name in (("queue", queue), ("exchange", queue), ("exchange", f"{queue}.pidbox")):
            channel: Any = connection.channel()  # one each: any error closes a channel
            with contextlib.suppress(*connection.channel_errors):
                if kind == "queue":
                    channel.queue_delete(name)
                else:
                    channel.exchange_delete(name)
                channel.close()


def test_the_example_on_rabbitmq_delivers_every_fire_once_when_a_beat_is_killed(
    example_queue: str, tmp_path: Path
) -> None:
    env = {
        **os.environ,
        "EXAMPLE_VAR": str(tmp_path),
        "EXAMPLE_QUEUE": example_queue,
        "CELERY_BROKER_URL": "",  # --broker decides
        "DBEAT_DATABASE_URL": "",
        "DBEAT_REDIS_URL": "",
    }
    env = {key: value for key, value in env.items() if value}
    command = [sys.executable, str(DEMO), "--seconds", "24", "--kill-one"]
    command += ["--broker", AMQP_URL]
    done = subprocess.run(
        command, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert f"queue {example_queue}" in output, output
    assert "SIGKILL beat-1" in output, output
    assert "started beat-1b" in output, output
    recorded = re.search(r"(\d+) fires recorded, (\d+) deliveries, 0 duplicates, 0 missing", output)
    assert recorded is not None, output
    fires, deliveries = map(int, recorded.groups())
    assert fires == deliveries >= 3, output  # not a vacuous pass
    assert "OK: every fire reached the worker exactly once" in output
