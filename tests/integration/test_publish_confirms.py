"""On RabbitMQ beat publishes with publisher confirms: ``basic.publish`` alone returns before the
broker has the message, so a message RabbitMQ refused or lost would be marked sent."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from celery import Celery
from kombu import Queue

from celery_dbeat.beat.scheduler import Scheduler
from tests.services import amqp_url_or_skip, unique_name


def scheduler(tmp_path: Path, broker: str, **conf: Any) -> Scheduler:
    app = Celery("confirms", set_as_current=False)
    app.conf.update(
        broker_url=broker, dbeat_database_url=f"sqlite:///{tmp_path / 's.sqlite3'}", **conf
    )
    return Scheduler(app, lazy=True)


def test_beat_asks_rabbitmq_to_confirm_every_publish(tmp_path: Path) -> None:
    beat = scheduler(tmp_path, amqp_url_or_skip())
    queue = Queue(unique_name("dbeat_confirms"), auto_delete=False)
    try:
        producer = beat.producer  # connects
        producer.publish({"n": 1}, routing_key=queue.name, declare=[queue])

        assert beat.connection.transport_options["confirm_publish"] is True
        channel: Any = producer.channel
        assert channel._confirm_selected is True  # the publish waited for basic.ack
        declared: Any = queue.bind(channel).queue_declare(passive=True)
        assert declared.message_count == 1
    finally:
        queue.bind(beat.connection.default_channel).delete()
        beat.connection.release()


@pytest.mark.parametrize(
    ("broker", "options", "expected"),
    [
        pytest.param("amqp://guest@localhost//", {"confirm_publish": False}, False, id="app-off"),
        pytest.param("amqp://guest@localhost//", {"max_retries": 1}, True, id="others-kept"),
        pytest.param("redis://localhost:6379/0", {}, None, id="redis"),
        pytest.param("memory://", {}, None, id="memory"),
    ],
)
def test_the_apps_own_choice_and_other_transports_are_left_alone(
    tmp_path: Path, broker: str, options: dict[str, Any], expected: bool | None
) -> None:
    beat = scheduler(tmp_path, broker, broker_transport_options=options)

    chosen = beat.connection.transport_options

    assert chosen.get("confirm_publish") == expected
    assert {k: v for k, v in chosen.items() if k != "confirm_publish"} == {
        k: v for k, v in options.items() if k != "confirm_publish"
    }
