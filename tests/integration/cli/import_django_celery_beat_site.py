"""Create django-celery-beat data with django-celery-beat itself, in a process of its own.

    python import_django_celery_beat_site.py DATABASE_URL < scenario.json > state.json

Configures Django (``USE_TZ = True``, ``TIME_ZONE = 'America/New_York'``, so a timestamp read in the
wrong zone is off by hours) with ``django_celery_beat`` on DATABASE_URL (PostgreSQL or SQLite),
runs its migrations, then follows the scenario, a JSON object:

* ``beat_schedule``: ``{name: {"task": ..., "every": seconds}}``, the Celery app's;
* ``setup_scheduler``: run ``DatabaseScheduler.setup_schedule()``, which stores the app's
  ``beat_schedule`` and its own ``celery.backend_cleanup`` entry;
* ``tasks``: ``PeriodicTask`` fields, with ``interval``, ``crontab``, ``solar`` or ``clocked`` the
  fields of that schedule model; instants as ISO-8601;
* ``fire``: names whose run is recorded by django-celery-beat's ``ModelEntry`` (``next(entry)``
  then ``save()``, as its beat does after sending);
* ``check``: names whose ``ModelEntry.is_due()`` is asked (it disables a one-off that has run);
* ``ask``: names whose next fire django-celery-beat is asked for, after all of the above.

Prints ``{"tasks": {name: {last_run_at, date_changed, start_time, total_run_count, enabled}},
"due": {name: {"at": instant asked, "due": is_due, "in": seconds until the next fire}}}``.
Django's settings are process-global, hence a process of its own.
"""

from __future__ import annotations

import json
import sys
from datetime import datetime, timedelta, timezone
from typing import Any

import django
import sqlalchemy as sa
from celery import Celery
from django.conf import settings


def configure(url: str) -> None:
    parts = sa.make_url(url)
    if parts.get_backend_name() == "sqlite":
        database = {"ENGINE": "django.db.backends.sqlite3", "NAME": parts.database}
    else:
        database = {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": parts.database,
            "USER": parts.username or "",
            "PASSWORD": parts.password or "",
            "HOST": parts.host or "",
            "PORT": str(parts.port or ""),
        }
    settings.configure(
        INSTALLED_APPS=["django_celery_beat"],
        DATABASES={"default": database},
        USE_TZ=True,
        TIME_ZONE="America/New_York",
    )
    django.setup()


def instant(value: str | None) -> datetime | None:
    return None if value is None else datetime.fromisoformat(value)


def main() -> None:
    configure(sys.argv[1])
    from django.core.management import call_command
    from django_celery_beat import models
    from django_celery_beat.schedulers import DatabaseScheduler, ModelEntry

    call_command("migrate", verbosity=0)
    scenario: dict[str, Any] = json.load(sys.stdin)
    app = Celery("proj", set_as_current=True)
    app.conf.update(timezone="UTC")
    app.conf.beat_schedule = {
        name: {"task": entry["task"], "schedule": timedelta(seconds=entry["every"])}
        for name, entry in scenario.get("beat_schedule", {}).items()
    }
    if scenario.get("setup_scheduler"):
        DatabaseScheduler(app=app, lazy=True).setup_schedule()

    for fields in scenario.get("tasks", []):
        fields = dict(fields)
        if "interval" in fields:
            fields["interval"], _ = models.IntervalSchedule.objects.get_or_create(
                **fields["interval"]
            )
        if "crontab" in fields:
            fields["crontab"], _ = models.CrontabSchedule.objects.get_or_create(**fields["crontab"])
        if "solar" in fields:
            fields["solar"], _ = models.SolarSchedule.objects.get_or_create(**fields["solar"])
        if "clocked" in fields:
            fields["clocked"], _ = models.ClockedSchedule.objects.get_or_create(
                clocked_time=instant(fields["clocked"]["clocked_time"])
            )
        for key in ("start_time", "expires", "last_run_at"):
            if key in fields:
                fields[key] = instant(fields[key])
        models.PeriodicTask.objects.create(**fields)

    for name in scenario.get("fire", []):
        entry = ModelEntry(models.PeriodicTask.objects.get(name=name), app=app)
        next(entry).save()
    for name in scenario.get("check", []):
        ModelEntry(models.PeriodicTask.objects.get(name=name), app=app).is_due()

    def iso(value: datetime | None) -> str | None:
        return None if value is None else value.isoformat()

    due = {}
    for name in scenario.get("ask", []):
        entry = ModelEntry(models.PeriodicTask.objects.get(name=name), app=app)
        asked_at = datetime.now(timezone.utc)
        is_due, seconds = entry.is_due()
        due[name] = {"at": iso(asked_at), "due": is_due, "in": seconds}

    tasks = {
        task.name: {
            "last_run_at": iso(task.last_run_at),
            "date_changed": iso(task.date_changed),
            "start_time": iso(task.start_time),
            "total_run_count": task.total_run_count,
            "enabled": task.enabled,
        }
        for task in models.PeriodicTask.objects.all()
    }
    json.dump({"tasks": tasks, "due": due}, sys.stdout)


if __name__ == "__main__":
    main()
