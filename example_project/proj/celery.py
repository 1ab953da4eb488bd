"""The example Celery app.

With no environment set it needs no servers: schedules in SQLite, database-only locks, and
kombu's filesystem transport as the broker, all under example_project/var/. Set
DBEAT_DATABASE_URL (e.g. postgresql+psycopg://postgres@127.0.0.1/test), DBEAT_REDIS_URL (locks,
e.g. redis://127.0.0.1:6379/1) and CELERY_BROKER_URL (RabbitMQ, e.g.
amqp://guest:guest@127.0.0.1:5672//, or Redis, e.g. redis://127.0.0.1:6379/0) to run the same
app on real services.

The queue is Celery's default (``celery``), which the Django example's beat publishes to
as well. EXAMPLE_QUEUE renames it, and with it everything the app creates on a broker (the
queue's direct exchange, the remote-control exchange ``<queue>.pidbox``), e.g. to keep a test
apart from anything else on the same RabbitMQ.
"""

from __future__ import annotations

import os
from pathlib import Path

from celery import Celery
from celery.schedules import crontab

from celery_dbeat import Cron, Every

VAR = Path(os.environ.get("EXAMPLE_VAR", Path(__file__).resolve().parent.parent / "var"))
BROKER_DIR = VAR / "broker"
for folder in (BROKER_DIR / "out", BROKER_DIR / "processed", BROKER_DIR / "control"):
    folder.mkdir(parents=True, exist_ok=True)

QUEUE = os.environ.get("EXAMPLE_QUEUE", "celery")

app = Celery("proj", include=["proj.tasks"])

broker_url = os.environ.get("CELERY_BROKER_URL")
if broker_url:
    app.conf.broker_url = broker_url
else:
    app.conf.broker_url = "filesystem://"
    app.conf.broker_transport_options = {
        "data_folder_in": str(BROKER_DIR / "out"),
        "data_folder_out": str(BROKER_DIR / "out"),
        "processed_folder": str(BROKER_DIR / "processed"),
        "control_folder": str(BROKER_DIR / "control"),
        "store_processed": False,
    }

app.conf.update(
    task_default_queue=QUEUE,  # Celery's defaults unless EXAMPLE_QUEUE is set
    control_exchange=QUEUE,
    timezone="Europe/London",
    dbeat_database_url=os.environ.get(
        "DBEAT_DATABASE_URL", f"sqlite:///{VAR / 'schedules.sqlite3'}"
    ),
    dbeat_redis_url=os.environ.get("DBEAT_REDIS_URL") or None,
    dbeat_max_interval=1,
    # Workers record how each fire ran (started, finished, outcome) in the fire history.
    imports=["celery_dbeat.beat.worker"],
    # The demo names its beats so the summary can say which one sent what.
    **(
        {"dbeat_instance_name": os.environ["EXAMPLE_BEAT_NAME"]}
        if "EXAMPLE_BEAT_NAME" in os.environ
        else {}
    ),
    beat_schedule={
        # celery-dbeat's own spec types: a cron with a seconds field, and an anchored interval.
        "every-ten-seconds": {
            "task": "proj.tasks.greet",
            "schedule": Cron("* * * * * */10"),
            "args": ["every ten seconds"],
        },
        "every-seven-seconds": {
            "task": "proj.tasks.greet",
            "schedule": Every(7),
            "args": ["every seven seconds"],
        },
        # Celery's own crontab works as-is, evaluated in app.conf.timezone.
        "every-minute": {
            "task": "proj.tasks.greet",
            "schedule": crontab(minute="*"),
            "args": ["every minute (crontab)"],
        },
        "nightly-report": {
            "task": "proj.tasks.greet",
            "schedule": crontab(hour=3, minute=30),
            "args": ["nightly report"],
            "misfire_policy": "skip",
        },
    },
)
