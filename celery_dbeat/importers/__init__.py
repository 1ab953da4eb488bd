"""Read the schedules of another Celery scheduler as celery-dbeat definitions.

One module per source: :mod:`.django_celery_beat` (its tables, read with SQLAlchemy) and
:mod:`.redbeat` (its Redis keys). Each turns every entry of its source into an
:class:`~celery_dbeat.importers.base.Imported`: the definition it becomes, or why it is skipped
(not the user's to import) or refused (celery-dbeat cannot represent it), and when the source
would have fired it next. Importers only read; ``celery dbeat import --from`` writes.

Firing times are carried by the definition alone, so reading the same source twice gives the same
definitions (an import is idempotent): an interval is anchored with ``start_at`` one period before
the source's next fire; cron and solar slots follow from the spec and its bounds.
"""

from __future__ import annotations

from .base import Imported, SourceRead, SourceUnavailable

__all__ = ["Imported", "SourceRead", "SourceUnavailable"]
