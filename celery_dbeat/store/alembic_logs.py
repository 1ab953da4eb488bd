"""Keep Alembic's routine INFO lines out of the logs while celery-dbeat runs its own migrations.

Every Alembic ``MigrationContext`` logs "Context impl PostgresqlImpl." and "Will assume
transactional DDL." at INFO, and Alembic logs each plugin it sets up: checking the schema at
every beat start would put them in ``celery beat -l info``'s output, from a library the user
never called. A filter on those loggers (never a handler: logging is the application's) drops
such records, and only those logged while celery-dbeat code is on the stack: the user's own
Alembic runs keep theirs. A migration step ("Running upgrade 0003 -> 0004, ...") is an event,
not chatter, and passes; so does anything at WARNING or above.
"""

from __future__ import annotations

import logging
import sys
from types import FrameType

__all__ = ["ALEMBIC_LOGGERS"]

#: The Alembic loggers that chatter on every connection (their records only: a logger's filters
#: do not see its children's).
ALEMBIC_LOGGERS = ("alembic.runtime.migration", "alembic.runtime.plugins")

_OURS = __name__.split(".")[0] + "."


def _called_by_us() -> bool:
    frame: FrameType | None = sys._getframe(2)  # past this function and the filter
    while frame is not None:
        if str(frame.f_globals.get("__name__", "")).startswith(_OURS):
            return True
        frame = frame.f_back
    return False


class _OwnMigrationsFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.WARNING or str(record.msg).startswith("Running "):
            return True
        return not _called_by_us()


_FILTER = _OwnMigrationsFilter()

# Installed on import, before celery_dbeat.store imports Alembic (whose import sets up plugins,
# logging each). A logger holds a filter once, so importing again adds nothing.
for _name in ALEMBIC_LOGGERS:
    logging.getLogger(_name).addFilter(_FILTER)
