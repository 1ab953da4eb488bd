"""``manage.py dbeat_migrate``: create or upgrade celery-dbeat's tables.

It runs celery-dbeat's own Alembic migrations (as beat does at start-up with
``dbeat_auto_migrate``, and Django's ``migrate`` through the ``celery_dbeat`` migrations), whatever
Django has recorded: after the tables were dropped, or on a database given by ``--database-url``.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from celery_dbeat.config import mask_url
from celery_dbeat.core.errors import DBeatError
from celery_dbeat.store import create_engine, migrate

from ...conf import dbeat_settings


class Command(BaseCommand):
    help = "Create or upgrade celery-dbeat's tables in the schedule database."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--database-url",
            help="SQLAlchemy URL (default: the project's schedule database, as the admin uses)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            config = dbeat_settings()
            url = options["database_url"] or config.database_url
            engine = create_engine(url, config.engine_options)
            try:
                revision = migrate(engine)
            finally:
                engine.dispose()
        except DBeatError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"celery-dbeat tables at revision {revision} in {mask_url(url)}")
